"""py_cluster.py - what the Python benchmarks share: a one-owner local cluster
started with `<build>/fluxon up` in a temporary directory and stopped with
`fluxon down` (also when the benchmark fails), and the CPU model for the
header line.

The build directory is $FX_BUILD_DIR, else where `fluxon` was imported from
(<build>/python/..).
"""
import contextlib
import os
import platform
import shutil
import subprocess
import tempfile

import fluxon

BUILD = os.environ.get("FX_BUILD_DIR") or os.path.dirname(
    os.path.dirname(os.path.abspath(fluxon.__file__)))
CLI = os.path.join(BUILD, "fluxon")


@contextlib.contextmanager
def local_cluster(dram):
    """Yields the owner's client socket of a fresh cluster with `dram` of memory."""
    d = tempfile.mkdtemp(prefix="fx-pybench-")
    try:
        up = subprocess.run([CLI, "up", "--dir", d, "--dram", dram], capture_output=True,
                            text=True, timeout=120)
        if up.returncode != 0:
            raise SystemExit("fluxon up failed (%d): %s" % (up.returncode, up.stderr))
        yield up.stdout.split()[0]
    finally:
        subprocess.run([CLI, "down", "--dir", d], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, timeout=60)
        shutil.rmtree(d, ignore_errors=True)


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"
