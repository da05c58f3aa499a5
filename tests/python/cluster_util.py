"""cluster_util.py - a local Fluxon cluster per test class, for the Python tests.

ClusterTest.setUpClass starts one with `<build>/fluxon up --dir <tmp> --dram
256MB` and class cleanups stop it with `fluxon down` and remove the directory,
also when setUpClass fails; cls.client is a fluxon.Client on it; cls.dir is
the cluster's directory, removed afterwards. run_threads starts and joins
test threads. The build
directory comes from $FX_BUILD_DIR, else from where `fluxon` was imported
(<build>/python/..), as in test_fluxon.py.
"""
import os
import shutil
import subprocess
import tempfile
import threading
import unittest

import fluxon

BUILD = os.environ.get("FX_BUILD_DIR") or os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.abspath(fluxon.__file__))))
CLI = os.path.join(BUILD, "fluxon")


class ClusterTest(unittest.TestCase):
    DRAM = "256MB"

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="fx-py-%s-" % cls.__name__)
        cls.addClassCleanup(shutil.rmtree, cls.dir, ignore_errors=True)
        cls.addClassCleanup(subprocess.run, [CLI, "down", "--dir", cls.dir],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60)
        up = subprocess.run([CLI, "up", "--dir", cls.dir, "--dram", cls.DRAM],
                            capture_output=True, text=True, timeout=120)
        if up.returncode != 0:
            raise RuntimeError("fluxon up failed (%d): %s" % (up.returncode, up.stderr))
        cls.socket = up.stdout.split()[0]
        cls.client = fluxon.Client(cls.socket)
        cls.addClassCleanup(cls.client.close)

    def key(self, name=""):
        """A key of this test only."""
        return "%s/%s" % (self.id(), name)


def run_threads(target, n):
    """Runs target(0) .. target(n - 1) on n threads and waits for them all."""
    threads = [threading.Thread(target=target, args=(t,)) for t in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
