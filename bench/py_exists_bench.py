#!/usr/bin/env python3
"""py_exists_bench.py - Client.batch_exists from Python: keys per second.

Starts a one-owner cluster with `<build>/fluxon up` in a temporary directory,
stores KEYS keys, then asks batch_exists of BATCH keys at a time (half of them
stored) over all of them, ROUNDS rounds, and prints the median keys/s with the
range. Every answer is checked. The cluster is stopped with `fluxon down` also
when the run fails.

    PYTHONPATH=build/python python3 bench/py_exists_bench.py

The build directory comes from $FX_BUILD_DIR, else from where `fluxon` was
imported (<build>/python/..).
"""
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import fluxon

KEYS = 4096
BATCH = 512
ROUNDS = 7

BUILD = os.environ.get("FX_BUILD_DIR") or os.path.dirname(
    os.path.dirname(os.path.abspath(fluxon.__file__)))
CLI = os.path.join(BUILD, "fluxon")


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def run(sock):
    c = fluxon.Client(sock)
    try:
        stored = ["ex-%d" % i for i in range(KEYS)]
        c.batch_put(stored, [b"v"] * KEYS)
        asked = [("ex-%d" if i % 2 == 0 else "nx-%d") % i for i in range(KEYS)]
        batches = [asked[i:i + BATCH] for i in range(0, KEYS, BATCH)]
        want = [[(i + j) % 2 == 0 for j in range(BATCH)] for i in range(0, KEYS, BATCH)]
        rates = []
        for _ in range(ROUNDS):
            t0 = time.perf_counter()
            got = [c.batch_exists(b) for b in batches]
            rates.append(KEYS / (time.perf_counter() - t0))
            if got != want:
                raise SystemExit("py_exists_bench: batch_exists answered wrong")
    finally:
        c.close()
    print("py_exists_bench: %d keys stored, batch_exists of %d keys (half present), "
          "median of %d rounds; %s" % (KEYS, BATCH, ROUNDS, cpu_model()))
    print("  batch_exists %10.0f keys/s  (min %.0f, max %.0f)"
          % (statistics.median(rates), min(rates), max(rates)))


def main():
    d = tempfile.mkdtemp(prefix="fx-pybench-")
    try:
        up = subprocess.run([CLI, "up", "--dir", d, "--dram", "64MB"], capture_output=True,
                            text=True, timeout=120)
        if up.returncode != 0:
            sys.exit("py_exists_bench: fluxon up failed (%d): %s" % (up.returncode, up.stderr))
        run(up.stdout.split()[0])
    finally:
        subprocess.run([CLI, "down", "--dir", d], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, timeout=60)
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
