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
import statistics
import time

import fluxon
from py_cluster import cpu_model, local_cluster

KEYS = 4096
BATCH = 512
ROUNDS = 7


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
    with local_cluster("64MB") as sock:
        run(sock)


if __name__ == "__main__":
    main()
