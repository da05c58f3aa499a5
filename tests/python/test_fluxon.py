"""test_fluxon.py - the `fluxon` Python module against a real local cluster.

FluxonTest's cluster is cluster_util.ClusterTest's: `<build>/fluxon up --dir
<tmp> --dram 256MB`, stopped with `fluxon down` (also when setUpClass fails). Run by
ctest as python.test_fluxon with PYTHONPATH=<build>/python and the interpreter
the module was built for; by hand:

    PYTHONPATH=build/python /usr/bin/python3 tests/python/test_fluxon.py -v

The build directory comes from $FX_BUILD_DIR, else from where `fluxon` was
imported (<build>/python/..). numpy is required (scripts/deps.sh installs
python3-numpy): the zero-copy and DLPack checks compare addresses with it.
"""
import array
import gc
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest

import fluxon
from cluster_util import BUILD, ClusterTest, run_threads

try:
    import numpy as np
except ImportError:  # a failure in the tests that need it, not a skip
    np = None

try:
    import torch
except ImportError:  # optional: its tests skip
    torch = None


class FakeCpuTensor:
    """What batch_get_into / batch_put_from read of a CPU torch tensor, over a
    numpy array, without the buffer protocol (as torch has none)."""

    class _Device:
        def __init__(self, kind):
            self.type = kind

    def __init__(self, arr, device="cpu", contiguous=True):
        self.arr = arr
        self.device = self._Device(device)
        self.nbytes = arr.nbytes
        self._contiguous = contiguous

    def data_ptr(self):
        return self.arr.ctypes.data

    def is_contiguous(self):
        return self._contiguous


def pattern(n, seed):
    """n bytes that differ per seed."""
    return bytes((i * 131 + seed * 7 + (i >> 8)) & 0xFF for i in range(n))


class FluxonTest(ClusterTest):
    def need_numpy(self):
        if np is None:
            self.fail("numpy is missing for %s: run scripts/deps.sh (python3-numpy)"
                      % sys.executable)

    def addr(self, obj):
        """The address of the first byte of a buffer-protocol object."""
        return np.frombuffer(obj, dtype=np.uint8).ctypes.data

    # ---- put / get --------------------------------------------------------------------

    def test_roundtrip_buffer_types(self):
        c = self.client
        ints = array.array("i", range(1000))
        backing = bytearray(pattern(5000, 3))
        values = {
            "bytes": pattern(70000, 1),
            "bytearray": bytearray(pattern(1234, 2)),
            "memoryview": memoryview(backing)[100:4100],
            "array": ints,
        }
        for name, v in values.items():
            c.put(self.key(name), v)
        for name, v in values.items():
            want = bytes(v)  # array.array: its machine bytes
            h = c.get(self.key(name))
            self.assertIsInstance(h, fluxon.MemHolder)
            self.assertEqual(len(h), len(want), name)
            self.assertEqual(h.access(), want, name)
            self.assertEqual(bytes(memoryview(h)), want, name)
            self.assertEqual(h.source, "memory")
            h.release()
        back = array.array("i")
        back.frombytes(c.get(self.key("array")).access())
        self.assertEqual(back, ints)

    def test_noncontiguous_buffer_is_refused(self):
        with self.assertRaises(BufferError):
            self.client.put(self.key(), memoryview(b"abcdef")[::2])
        with self.assertRaises(TypeError):
            self.client.put(self.key(), "a str is not a buffer")

    def test_str_and_bytes_keys(self):
        c = self.client
        k = self.key("ключ-\u00e9")
        c.put(k, b"via str")
        self.assertEqual(c.get(k.encode("utf-8")).access(), b"via str")  # str is UTF-8
        bk = b"\x00\xff binary \x01" + self.key().encode()
        c.put(bk, b"via bytes")
        self.assertEqual(c.get(bk).access(), b"via bytes")
        self.assertEqual(c.get_blocking(bk).access(), b"via bytes")
        with self.assertRaises(TypeError):
            c.put(42, b"x")
        with self.assertRaises(fluxon.Error):
            c.put("", b"x")  # keys are 1..4096 bytes

    def test_empty_value(self):
        c = self.client
        c.put(self.key(), b"")
        h = c.get(self.key())
        self.assertEqual(len(h), 0)
        self.assertEqual(h.access(), b"")
        self.assertEqual(memoryview(h).nbytes, 0)
        self.assertEqual(c.get_size(self.key()), 0)
        h.release()

    def test_large_value(self):
        v = os.urandom(16 << 20)
        self.client.put(self.key(), v)
        with self.client.get(self.key()) as h:
            self.assertEqual(memoryview(h), v)

    def test_key_not_found(self):
        c = self.client
        self.assertTrue(issubclass(fluxon.KeyNotFound, fluxon.Error))
        with self.assertRaises(fluxon.KeyNotFound) as cm:
            c.get(self.key("missing"))
        self.assertIsInstance(cm.exception, fluxon.Error)
        self.assertEqual(cm.exception.code, -1)  # FX_ENOTFOUND
        self.assertIn("KeyNotFound", str(cm.exception))
        # The message names the key as given (keys over 64 long are cut).
        for missing in ("nf-%d-%s" % (os.getpid(), self._testMethodName[:20]),
                        b"nf-bytes-%d" % os.getpid()):
            for call in (lambda: c.get(missing), lambda: c.delete(missing),
                         lambda: c.get_size(missing),
                         lambda: c.get_into(missing, bytearray(8))):
                with self.assertRaises(fluxon.KeyNotFound) as cm:
                    call()
                self.assertIn("key %r" % (missing,), str(cm.exception))

    def test_delete(self):
        c = self.client
        c.put(self.key(), b"gone soon")
        h = c.get(self.key())
        c.delete(self.key())
        self.assertFalse(c.exists(self.key()))
        with self.assertRaises(fluxon.KeyNotFound):
            c.get(self.key())
        self.assertEqual(h.access(), b"gone soon")  # holders taken stay valid
        h.release()

    def test_near_cache_follows_overwrites(self):
        # Released values stay in the reading client (the near cache); an
        # overwrite by another client reaches it through the invalidation.
        other = fluxon.Client(self.socket)
        self.addCleanup(other.close)
        k = self.key()
        self.client.put(k, b"first")
        other.get(k).release()
        h = other.get(k)
        self.assertEqual(bytes(h.access()), b"first")
        h.release()
        self.client.put(k, b"second")
        deadline = time.monotonic() + 2
        seen = b"first"
        while seen != b"second" and time.monotonic() < deadline:
            h = other.get(k)
            seen = bytes(h.access())
            h.release()
            time.sleep(0.01)
        self.assertEqual(seen, b"second")
        other.set_near_cache(0)
        other.set_near_cache(max_bytes=1 << 20)
        with self.assertRaises(ValueError):
            other.set_near_cache(-1)
        with self.assertRaises(TypeError):
            other.set_near_cache("1MB")

    # ---- MemHolder ----------------------------------------------------------------------

    def test_holder_unchanged_by_overwrite_until_released(self):
        c = self.client
        old, new = pattern(100000, 10), pattern(100000, 11)
        c.put(self.key(), old)
        h = c.get(self.key())
        mv = memoryview(h)
        c.put(self.key(), new)
        self.assertEqual(c.get(self.key()).access(), new)
        self.assertEqual(h.access(), old)
        self.assertEqual(mv, old)
        mv.release()
        h.release()

    def test_memoryview_is_zero_copy_and_readonly(self):
        self.need_numpy()
        c = self.client
        c.put(self.key(), pattern(4096, 5))
        h = c.get(self.key())
        mv1, mv2 = memoryview(h), memoryview(h)
        self.assertTrue(mv1.readonly)
        self.assertEqual(mv1.obj, h)
        a1, a2 = self.addr(mv1), self.addr(mv2)
        self.assertEqual(a1, a2)  # both views see the holder's own bytes
        self.assertEqual(a1, np.from_dlpack(h).ctypes.data)
        self.assertNotEqual(a1, self.addr(h.access()))  # access() is the copy
        with self.assertRaises(TypeError):  # no writable export
            c.get_into(self.key(), h)
        with self.assertRaises(TypeError):
            memoryview(h)[0] = 0
        self.assertEqual(mv1, pattern(4096, 5))
        mv1.release()
        mv2.release()
        h.release()

    def test_views_keep_holder_alive_and_block_release(self):
        c = self.client
        v = pattern(3000, 7)
        c.put(self.key(), v)
        h = c.get(self.key())
        mv = memoryview(h)
        with self.assertRaises(BufferError):
            h.release()
        self.assertFalse(h.released)
        del h
        gc.collect()
        c.put(self.key(), b"overwritten")
        self.assertEqual(mv, v)  # the view still holds the holder
        h = mv.obj
        mv.release()
        h.release()  # no view left: now it may go
        self.assertTrue(h.released)

    def test_release_is_idempotent(self):
        c = self.client
        c.put(self.key(), b"abc")
        h = c.get(self.key())
        h.release()
        h.release()
        self.assertTrue(h.released)
        self.assertEqual(len(h), 3)
        self.assertEqual(h.source, "memory")
        with self.assertRaises(ValueError):
            h.access()
        with self.assertRaises(BufferError):
            memoryview(h)
        with self.assertRaises(BufferError):
            h.__dlpack__()
        with c.get(self.key()) as h2:
            self.assertEqual(h2.access(), b"abc")
        self.assertTrue(h2.released)

    def test_dlpack_numpy(self):
        self.need_numpy()
        c = self.client
        v = pattern(65536, 9)
        c.put(self.key(), v)
        h = c.get(self.key())
        self.assertEqual(h.__dlpack_device__(), (1, 0))
        base = sys.getrefcount(h)
        a = np.from_dlpack(h)
        self.assertEqual(sys.getrefcount(h), base + 1)  # the tensor holds the holder
        self.assertEqual(a.dtype, np.uint8)
        self.assertEqual(a.shape, (len(v),))
        self.assertEqual(a.tobytes(), v)
        self.assertEqual(a.ctypes.data, self.addr(h))  # zero-copy
        with self.assertRaises(BufferError):
            h.release()
        del h
        gc.collect()
        c.put(self.key(), b"overwritten")
        self.assertEqual(a.tobytes(), v)  # still valid through the tensor alone
        h = c.get(self.key())
        self.assertEqual(h.access(), b"overwritten")
        b = np.from_dlpack(h)
        base = sys.getrefcount(h)
        del b  # numpy renamed the capsule and calls the deleter: once
        gc.collect()
        self.assertEqual(sys.getrefcount(h), base - 1)
        h.release()
        del a

    def test_dlpack_capsule_protocol(self):
        c = self.client
        c.put(self.key(), b"capsule")
        h = c.get(self.key())
        base = sys.getrefcount(h)
        cap = h.__dlpack__()
        self.assertIn('"dltensor"', repr(cap))
        self.assertEqual(sys.getrefcount(h), base + 1)
        with self.assertRaises(BufferError):
            h.release()
        del cap  # never consumed: the capsule's destructor calls the deleter
        self.assertEqual(sys.getrefcount(h), base)
        cap = h.__dlpack__(stream=None)
        del cap
        with self.assertRaises(BufferError):
            h.__dlpack__(stream=1)  # CPU: no stream
        h.release()

    # ---- get_into -----------------------------------------------------------------------

    def test_get_into(self):
        c = self.client
        v = pattern(1000, 4)
        c.put(self.key(), v)
        exact = bytearray(len(v))
        self.assertEqual(c.get_into(self.key(), exact), len(v))
        self.assertEqual(exact, v)
        bigger = bytearray(b"\xa5" * 1500)
        self.assertEqual(c.get_into(self.key(), bigger), len(v))
        self.assertEqual(bigger[:1000], v)
        self.assertEqual(bigger[1000:], b"\xa5" * 500)
        small = bytearray(b"\x5a" * 999)
        with self.assertRaises(fluxon.Error) as cm:
            c.get_into(self.key(), small)
        self.assertIn("too small", str(cm.exception))
        self.assertIn("1000", str(cm.exception))
        self.assertEqual(small, b"\x5a" * 999)  # untouched
        window = bytearray(2000)
        self.assertEqual(c.get_into(self.key(), memoryview(window)[500:]), len(v))
        self.assertEqual(window[500:1500], v)
        with self.assertRaises(TypeError):
            c.get_into(self.key(), b"read-only" * 200)

    # ---- batches ------------------------------------------------------------------------

    def test_batch_put_and_get_hits_and_misses(self):
        c = self.client
        keys = [self.key("k%d" % i) for i in range(10)]
        vals = [pattern(100 + 997 * i, i) for i in range(10)]
        vals[3] = bytearray(vals[3])
        vals[4] = memoryview(vals[4])
        self.assertIsNone(c.batch_put(keys, vals))
        ask = [keys[0], self.key("miss1"), keys[5], self.key("miss2"), keys[9], keys[3]]
        got = c.batch_get(ask)
        self.assertEqual(len(got), 6)
        self.assertIsNone(got[1])
        self.assertIsNone(got[3])
        for g, i in ((got[0], 0), (got[2], 5), (got[4], 9), (got[5], 3)):
            self.assertIsInstance(g, fluxon.MemHolder)
            self.assertEqual(g.access(), bytes(vals[i]))
            g.release()
        self.assertIsNone(c.batch_put([], []))
        self.assertEqual(c.batch_get([]), [])
        with self.assertRaises(ValueError):
            c.batch_put(keys, vals[:3])
        for lone in (keys[0], keys[0].encode(), bytearray(b"abc")):  # one key, not a list
            with self.assertRaises(TypeError):
                c.batch_get(lone)
            with self.assertRaises(TypeError):
                c.batch_put(lone, [b"x"] * len(lone))

    def test_batch_larger_than_batch_max(self):
        c = self.client
        n = fluxon.BATCH_MAX + 5
        keys = [self.key(str(i)) for i in range(n)]
        c.batch_put(keys, [str(i).encode() for i in range(n)])
        got = c.batch_get(keys + [self.key("miss")])
        self.assertIsNone(got[-1])
        self.assertEqual([g.access() for g in got[:-1]], [str(i).encode() for i in range(n)])
        for g in got[:-1]:
            g.release()

    def test_batch_put_reports_each_key(self):
        c = self.client
        too_big = bytes((256 << 20) + 1)  # more than the whole 256 MB segment
        keys = [self.key("a"), self.key("big"), self.key("b")]
        with self.assertRaises(fluxon.NoSpace) as cm:
            c.batch_put(keys, [b"1", too_big, b"2"])
        r = cm.exception.results
        self.assertEqual(len(r), 3)
        self.assertIsNone(r[0])
        self.assertIsInstance(r[1], fluxon.NoSpace)
        self.assertIs(r[1], cm.exception)
        self.assertIsNone(r[2])
        self.assertEqual(c.get(keys[0]).access(), b"1")  # the others were stored
        self.assertEqual(c.get(keys[2]).access(), b"2")
        self.assertFalse(c.exists(keys[1]))

    def test_batch_exists(self):
        c = self.client
        keys = [self.key("e%d" % i) for i in range(6)]
        c.batch_put(keys[:4], [b"v"] * 4)
        c.delete(keys[1])
        c.put(keys[2], b"overwritten")
        ask = keys + [keys[0].encode(), keys[3]]
        got = c.batch_exists(ask)
        self.assertEqual(got, [True, False, True, True, False, False, True, True])
        self.assertTrue(all(type(g) is bool for g in got))
        self.assertEqual(got, [c.exists(k) for k in ask])  # agrees key by key
        self.assertEqual(c.batch_exists([]), [])
        with self.assertRaises(fluxon.Error) as cm:
            c.batch_exists([keys[0], b"", keys[2]])
        self.assertEqual(cm.exception.code, -3)  # FX_EINVAL, naming the key
        self.assertIn("b''", str(cm.exception))
        with self.assertRaises(fluxon.Error):
            c.batch_exists([keys[0], "x" * 4097])
        for lone in (keys[0], keys[0].encode()):
            with self.assertRaises(TypeError):
                c.batch_exists(lone)
        with self.assertRaises(TypeError):
            c.batch_exists([keys[0], 7])

    def test_batch_exists_larger_than_batch_max(self):
        c = self.client
        n = fluxon.BATCH_MAX + 5
        keys = [self.key(str(i)) for i in range(n)]
        c.batch_put(keys[::2], [b"x"] * len(keys[::2]))
        self.assertEqual(c.batch_exists(keys), [i % 2 == 0 for i in range(n)])

    def test_prefix_hits(self):
        c = self.client
        keys = [self.key("t%d" % i) for i in range(8)]
        c.batch_put(keys[:5], [b"kv"] * 5)
        self.assertEqual(c.prefix_hits(keys[:5]), 5)
        self.assertEqual(c.prefix_hits(keys), 5)
        self.assertEqual(c.prefix_hits([keys[6]] + keys[:5]), 0)  # the first key missing
        self.assertEqual(c.prefix_hits(keys[:2] + [keys[7]] + keys[2:5]), 2)
        self.assertEqual(c.prefix_hits([k.encode() for k in keys[:3]]), 3)
        self.assertEqual(c.prefix_hits([]), 0)
        with self.assertRaises(fluxon.Error) as cm:
            c.prefix_hits([keys[0], ""])
        self.assertEqual(cm.exception.code, -3)
        self.assertIn("key 1", str(cm.exception))
        with self.assertRaises(TypeError):
            c.prefix_hits(keys[0])
        # Across the FX_BATCH_MAX chunks: all stored, then a miss after them.
        n = fluxon.BATCH_MAX + 3
        long_keys = [self.key("long%d" % i) for i in range(n)]
        c.batch_put(long_keys, [b"y"] * n)
        self.assertEqual(c.prefix_hits(long_keys), n)
        self.assertEqual(c.prefix_hits(long_keys + [self.key("none")]), n)
        c.delete(long_keys[fluxon.BATCH_MAX + 1])
        self.assertEqual(c.prefix_hits(long_keys), fluxon.BATCH_MAX + 1)
    # ---- copying batches (issue 21) --------------------------------------------------

    def test_batch_get_into_bytearray_and_memoryview(self):
        c = self.client
        keys = [self.key("a"), self.key("b"), self.key("miss"), self.key("small"), self.key("e")]
        vals = [pattern(1000, 1), pattern(3, 2), None, pattern(500, 3), b""]
        self.assertEqual(c.batch_put_from([keys[i] for i in (0, 1, 3, 4)],
                                          [vals[i] for i in (0, 1, 3, 4)]), [0, 0, 0, 0])
        big = bytearray(b"\xee" * 2000)
        small = bytearray(b"\xee" * 499)
        view = memoryview(bytearray(16))
        got = c.batch_get_into(keys, [big, view, bytearray(8), small, bytearray(1)])
        self.assertEqual(got, [1000, 3, -1, -3, 0])
        self.assertEqual(bytes(big[:1000]), vals[0])
        self.assertEqual(big[1000:], b"\xee" * 1000)  # nothing past the value
        self.assertEqual(bytes(view[:3]), vals[1])
        self.assertEqual(small, b"\xee" * 499)  # too small: untouched
        with self.assertRaises(ValueError):
            c.batch_get_into(keys, [big])
        with self.assertRaises(BufferError):  # read-only
            c.batch_get_into(keys[:1], [b"x" * 2000])
        with self.assertRaises(TypeError):
            c.batch_get_into(keys[:1], [12])
        self.assertEqual(c.batch_get_into([], []), [])

    def test_batch_put_from_reject_if_exists(self):
        c = self.client
        keys = [self.key("old"), self.key("new")]
        c.put(keys[0], b"old")
        self.assertEqual(c.batch_put_from(keys, [memoryview(b"x1"), bytearray(b"x2")],
                                          reject_if_exists=True), [-8, 0])
        self.assertEqual(c.get(keys[0]).access(), b"old")
        self.assertEqual(c.get(keys[1]).access(), b"x2")
        self.assertEqual(c.batch_put_from(keys, [b"y1", b"y2"]), [0, 0])
        self.assertEqual(c.get(keys[0]).access(), b"y1")
        with self.assertRaises(ValueError):
            c.batch_put_from(keys, [b"1"])

    def test_batch_delete(self):
        c = self.client
        keys = [self.key("a"), self.key("absent"), self.key("b")]
        c.batch_put_from([keys[0], keys[2]], [b"1", b"2"])
        self.assertEqual(c.batch_delete(keys), [0, -1, 0])
        self.assertFalse(c.exists(keys[0]))
        self.assertEqual(c.batch_get_into(keys, [bytearray(4)] * 3), [-1, -1, -1])
        self.assertEqual(c.batch_delete([]), [])

    def test_batch_io_more_than_batch_max(self):
        c = self.client
        n = fluxon.BATCH_MAX + 3
        keys = [self.key(str(i)) for i in range(n)]
        self.assertEqual(c.batch_put_from(keys, [str(i).encode() for i in range(n)]), [0] * n)
        bufs = [bytearray(8) for _ in range(n)]
        got = c.batch_get_into(keys, bufs)
        self.assertEqual(got, [len(str(i)) for i in range(n)])
        self.assertEqual(bytes(bufs[-1][:got[-1]]), str(n - 1).encode())

    def test_batch_io_numpy(self):
        self.need_numpy()
        c = self.client
        keys = [self.key(str(i)) for i in range(4)]
        src = [np.arange(1024, dtype=np.float32) * i for i in range(4)]
        self.assertEqual(c.batch_put_from(keys, src), [0] * 4)
        dst = [np.zeros(1024, dtype=np.float32) for _ in range(4)]
        self.assertEqual(c.batch_get_into(keys, dst), [4096] * 4)
        for a, b in zip(src, dst):
            self.assertTrue(np.array_equal(a, b))
        with self.assertRaises((BufferError, ValueError)):  # not C-contiguous
            c.batch_get_into(keys[:1], [np.zeros((64, 64), dtype=np.float32)[:, ::2]])
        # Raw addresses, as tensor.data_ptr() gives them.
        out = np.zeros((4, 1024), dtype=np.float32)
        ptrs = [out[i].ctypes.data for i in range(4)]
        self.assertEqual(c.batch_get_into_ptrs(keys, ptrs, [4096] * 4), [4096] * 4)
        self.assertTrue(np.array_equal(out[3], src[3]))
        self.assertEqual(c.batch_get_into_ptrs(keys[:1], ptrs[:1], [100]), [-3])
        self.assertEqual(c.batch_put_from_ptrs(keys[:2], ptrs[2:], [4096, 4096]), [0, 0])
        self.assertEqual(c.get(keys[0]).access(), src[2].tobytes())
        with self.assertRaises(ValueError):
            c.batch_get_into_ptrs(keys, ptrs, [4096])

    def test_batch_io_tensor_like(self):
        self.need_numpy()
        c = self.client
        keys = [self.key("t0"), self.key("t1")]
        src = [FakeCpuTensor(np.full(300, 7, dtype=np.int16)),
               FakeCpuTensor(np.arange(50, dtype=np.int64))]
        self.assertEqual(c.batch_put_from(keys, src), [0, 0])
        dst = [FakeCpuTensor(np.zeros(300, dtype=np.int16)),
               FakeCpuTensor(np.zeros(50, dtype=np.int64))]
        self.assertEqual(c.batch_get_into(keys, dst), [600, 400])
        self.assertTrue(np.array_equal(dst[1].arr, src[1].arr))
        with self.assertRaises(ValueError):
            c.batch_get_into(keys[:1], [FakeCpuTensor(np.zeros(300, np.int16), device="cuda")])
        with self.assertRaises(ValueError):
            c.batch_get_into(keys[:1], [FakeCpuTensor(np.zeros(300, np.int16), contiguous=False)])

    @unittest.skipIf(torch is None, "torch is not importable")
    def test_batch_io_torch(self):
        c = self.client
        keys = [self.key("a"), self.key("b")]
        src = [torch.arange(256, dtype=torch.float32), torch.ones(10, dtype=torch.int32)]
        self.assertEqual(c.batch_put_from(keys, src), [0, 0])
        dst = [torch.zeros(256, dtype=torch.float32), torch.zeros(10, dtype=torch.int32)]
        self.assertEqual(c.batch_get_into(keys, dst), [1024, 40])
        self.assertTrue(torch.equal(src[0], dst[0]) and torch.equal(src[1], dst[1]))
        out = torch.zeros(256, dtype=torch.float32)
        nbytes = out.element_size() * out.numel()  # Debian's torch 1.13 has no .nbytes
        self.assertEqual(c.batch_get_into_ptrs(keys[:1], [out.data_ptr()], [nbytes]), [1024])
        self.assertTrue(torch.equal(out, src[0]))

    # ---- threads ------------------------------------------------------------------------

    def test_threads_put_get_concurrently(self):
        c = self.client
        rounds, errors = 40, []
        start = threading.Barrier(8)

        def work(t):
            try:
                start.wait()
                for i in range(rounds):
                    k = self.key("t%d/%d" % (t, i % 5))
                    v = pattern(20000 + 100 * t + i, t * 1000 + i)
                    c.put(k, v)
                    with c.get(k) as h:
                        if h.access() != v:
                            errors.append("thread %d round %d: wrong value" % (t, i))
                    buf = bytearray(len(v))
                    if c.get_into(k, buf) != len(v) or buf != v:
                        errors.append("thread %d round %d: wrong get_into" % (t, i))
            except Exception as e:  # reported below, with the thread
                errors.append("thread %d: %r" % (t, e))

        run_threads(work, 8)
        self.assertEqual(errors, [])

    def test_blocking_call_releases_the_gil(self):
        # A fake owner that accepts and never answers: fluxon.Client() blocks in
        # fx_connect on another thread, with a 10-minute FLUXON_TIMEOUT_MS. This
        # thread then reads the hello and closes the connection, which ends that
        # call at once. Were the GIL held during the call, this thread could not
        # run until the call timed out, and the test would hang past its ctest
        # timeout (300 s) instead.
        path = os.path.join(self.dir, "silent.sock")
        srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        srv.bind(path)
        srv.listen(1)
        outcome = []

        def connect():
            try:
                fluxon.Client(path)
            except fluxon.Error as e:
                outcome.append(e)

        saved = os.environ.get("FLUXON_TIMEOUT_MS")
        os.environ["FLUXON_TIMEOUT_MS"] = "600000"
        try:
            t = threading.Thread(target=connect, daemon=True)
            t.start()
            conn, _ = srv.accept()
            self.assertTrue(conn.recv(64))  # the client's hello: it is in the call
            self.assertTrue(t.is_alive())
            conn.close()  # the owner "goes away": the call fails now
            t.join(60)
            self.assertFalse(t.is_alive())
        finally:
            srv.close()
            if saved is None:
                del os.environ["FLUXON_TIMEOUT_MS"]
            else:
                os.environ["FLUXON_TIMEOUT_MS"] = saved
        self.assertEqual(len(outcome), 1)
        self.assertIsInstance(outcome[0], fluxon.Error)

    def test_close_while_threads_use_the_client(self):
        c2 = fluxon.Client(self.socket)
        go, errors, counts = threading.Event(), [], [0] * 4

        def work(t):
            go.wait()
            try:
                while True:
                    c2.put(self.key(str(t)), b"x" * 1000)
                    c2.get(self.key(str(t))).release()
                    counts[t] += 1
            except fluxon.Error as e:
                if "closed" not in str(e):
                    errors.append(repr(e))
            except Exception as e:
                errors.append(repr(e))

        threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
        for t in threads:
            t.start()
        go.set()
        while sum(counts) < 20:
            time.sleep(0.001)
        c2.close()
        for t in threads:
            t.join()
        self.assertEqual(errors, [])

    # ---- client lifetime ----------------------------------------------------------------

    def test_context_manager_closes(self):
        with fluxon.Client(self.socket) as c2:
            self.assertFalse(c2.closed)
            c2.put(self.key(), b"cm")
            self.assertEqual(c2.get(self.key()).access(), b"cm")
        self.assertTrue(c2.closed)
        with self.assertRaises(fluxon.Error) as cm:
            c2.put(self.key(), b"after")
        self.assertEqual(cm.exception.code, -4)  # FX_ECONN, as README says: .code is set
        self.assertIn("closed", str(cm.exception))
        with self.assertRaises(fluxon.Error):
            c2.get(self.key())
        with self.assertRaises(fluxon.Error):
            c2.batch_get([self.key()])
        with self.assertRaises(fluxon.Error):
            with c2:
                pass
        c2.close()  # idempotent
        self.assertEqual(self.client.get(self.key()).access(), b"cm")

    def test_close_with_live_holders_keeps_them_valid(self):
        c2 = fluxon.Client(self.socket)
        v = pattern(50000, 12)
        c2.put(self.key(), v)
        h = c2.get(self.key())
        mv = memoryview(h)
        c2.close()
        with self.assertRaises(fluxon.Error):
            c2.get(self.key())
        self.assertEqual(h.access(), v)  # closing waits for the last holder
        self.assertEqual(mv, v)
        del c2
        gc.collect()
        self.assertEqual(mv, v)
        mv.release()
        h.release()

    def test_default_socket_from_environment(self):
        saved = os.environ.get("FLUXON_SOCKET")
        try:
            os.environ["FLUXON_SOCKET"] = self.socket
            with fluxon.Client() as c2:
                c2.put(self.key(), b"env")
            del os.environ["FLUXON_SOCKET"]
            with self.assertRaises(fluxon.Error) as cm:
                fluxon.Client()
            self.assertIn("FLUXON_SOCKET", str(cm.exception))
            with self.assertRaises(fluxon.Error):
                fluxon.Client(os.path.join(self.dir, "no-such.sock"))
        finally:
            if saved is not None:
                os.environ["FLUXON_SOCKET"] = saved

    # ---- queries, put options, leases ---------------------------------------------------

    def test_exists_get_size_count_prefix(self):
        c = self.client
        p = self.key("p") + "/"
        self.assertFalse(c.exists(p + "0"))
        for i in range(3):
            c.put(p + str(i), b"v" * (10 * i + 1))
        self.assertTrue(c.exists(p + "1"))
        self.assertTrue(c.exists((p + "1").encode()))
        self.assertEqual(c.get_size(p + "2"), 21)
        deadline = time.monotonic() + 10  # the prefix index is eventually consistent
        while c.count_prefix(p) != 3 and time.monotonic() < deadline:
            time.sleep(0.01)
        self.assertEqual(c.count_prefix(p), 3)
        self.assertEqual(c.count_prefix(p.encode()), 3)
        self.assertGreaterEqual(c.count_prefix(), 3)

    def test_put_options(self):
        c = self.client
        k = self.key()
        c.put(k, b"first", reject_if_exists=True)  # absent: stored
        with self.assertRaises(fluxon.AlreadyExists) as cm:
            c.put(k, b"second", reject_if_exists=True)
        self.assertIsInstance(cm.exception, fluxon.Error)
        self.assertEqual(c.get(k).access(), b"first")
        c.put(k, b"third", reject_if_inflight_same_key=True)  # nothing in flight
        self.assertEqual(c.get(k).access(), b"third")
        with self.assertRaises(TypeError):
            c.put(k, b"x", 0)  # options are keyword-only

    def test_leases(self):
        c = self.client
        lease = c.lease_allocate(60000)
        self.assertIsInstance(lease, int)
        self.assertGreater(lease, 0)
        c.put(self.key(), b"leased", lease_id=lease)
        c.lease_keepalive(lease)
        self.assertEqual(c.get(self.key()).access(), b"leased")
        with self.assertRaises(fluxon.Error):
            c.lease_keepalive(lease + 1000000)  # unknown: Stale
        with self.assertRaises(fluxon.Error):
            c.put(self.key("x"), b"v", lease_id=lease + 1000000)
        with self.assertRaises(OverflowError):
            c.put(self.key("x"), b"v", lease_id=-1)

    def test_short_lease_expires(self):
        c = self.client
        lease = c.lease_allocate(200)
        c.put(self.key(), b"short", lease_id=lease)
        deadline = time.monotonic() + 15
        while c.exists(self.key()) and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertFalse(c.exists(self.key()))
        with self.assertRaises(fluxon.Error):
            c.lease_keepalive(lease)


class MasterLossTest(unittest.TestCase):
    """An owner whose master died answers MasterUnavailable after master_wait.

    A cluster of its own, started from the binaries (not `fluxon up`) so that the
    owner gets master_wait: 500ms: one master, one owner, killed and stopped here.
    """

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="fx-py-ml-")
        cls.addClassCleanup(shutil.rmtree, cls.dir, ignore_errors=True)
        cls.procs = []
        cls.addClassCleanup(cls.kill_all)
        port_file = os.path.join(cls.dir, "master.addr")
        cls.master = cls.spawn([os.path.join(BUILD, "fluxon-master"), "--listen",
                                "127.0.0.1:0", "--port-file", port_file], "master.log")
        addr = None
        deadline = time.monotonic() + 30
        while addr is None and time.monotonic() < deadline:
            try:
                with open(port_file) as f:
                    line = f.read()
                addr = line.strip() if line.endswith("\n") else None
            except FileNotFoundError:
                pass
            time.sleep(0.05)
        if addr is None:
            raise RuntimeError("the master wrote no port file")
        cls.socket = os.path.join(cls.dir, "owner.sock")
        yaml = os.path.join(cls.dir, "owner.yaml")
        with open(yaml, "w") as f:
            f.write("master: %s\nmaster_wait: 500ms\nfluxonkv_spec:\n  memory_size: 16MB\n"
                    "  client_socket: %s\n  prefault: false\n" % (addr, cls.socket))
        cls.owner = cls.spawn([os.path.join(BUILD, "fluxon-owner"), "--config", yaml],
                              "owner.log")
        cls.client = None
        deadline = time.monotonic() + 60
        while cls.client is None:
            try:
                cls.client = fluxon.Client(cls.socket)
            except fluxon.Error:
                if time.monotonic() > deadline or cls.owner.poll() is not None:
                    raise
                time.sleep(0.05)
        cls.addClassCleanup(cls.client.close)

    @classmethod
    def spawn(cls, argv, log):
        with open(os.path.join(cls.dir, log), "w") as out:
            p = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT)
        cls.procs.append(p)
        return p

    @classmethod
    def kill_all(cls):
        for p in cls.procs:
            if p.poll() is None:
                p.kill()
            p.wait()

    def test_master_unavailable(self):
        c = self.client
        c.put("kept", b"held value")
        h = c.get("kept")
        self.master.kill()
        self.master.wait()
        # A call sent before the owner noticed the loss fails at once (it was
        # in flight to the dead master); wait until the owner knows, so that
        # the call below is one that waits for a master.
        log = os.path.join(self.dir, "owner.log")
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with open(log) as f:
                if "lost the connection to the master" in f.read():
                    break
            time.sleep(0.02)
        t0 = time.monotonic()
        with self.assertRaises(fluxon.MasterUnavailable) as cm:
            c.delete("kept")
        took = time.monotonic() - t0
        self.assertTrue(issubclass(fluxon.MasterUnavailable, fluxon.Error))
        self.assertEqual(cm.exception.code, -14)  # FX_EMASTER
        self.assertIn("MasterUnavailable", str(cm.exception))
        self.assertFalse(str(cm.exception).startswith("MasterUnavailable: MasterUnavailable"))
        self.assertGreater(took, 0.2)  # it waited for master_wait (500 ms)
        self.assertLess(took, 10)
        with self.assertRaises(fluxon.MasterUnavailable):
            c.put("new", b"x")
        with self.assertRaises(fluxon.MasterUnavailable):  # the batch waits like the others
            c.batch_exists(["kept", "new"])
        with self.assertRaises(fluxon.MasterUnavailable):
            c.prefix_hits(["kept"])
        self.assertEqual(h.access(), b"held value")  # holders outlive the master
        h.release()
        self.assertIsNone(self.owner.poll(), "the owner still runs")
        self.owner.terminate()
        self.assertEqual(self.owner.wait(timeout=30), 0)


if __name__ == "__main__":
    unittest.main()
