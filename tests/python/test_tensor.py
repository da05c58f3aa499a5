"""test_tensor.py - put_tensor / get_tensor (fluxon.tensor) against a real local cluster.

The cluster is cluster_util.ClusterTest's (`fluxon up` / `fluxon down`). numpy is
required (scripts/deps.sh installs python3-numpy); the torch tests skip when
`import torch` fails (python3-torch, also installed by scripts/deps.sh). By hand:

    PYTHONPATH=build/python /usr/bin/python3 tests/python/test_tensor.py -v
"""
import gc
import struct
import unittest

import fluxon
from fluxon import tensor as fxt
from cluster_util import ClusterTest

import numpy as np

try:
    import torch
except ImportError:  # optional: its tests skip
    torch = None

DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float16", "float32", "float64", "complex64", "complex128"]
SHAPES = [(), (0,), (1,), (7,), (3, 4), (2, 0, 5), (2, 3, 4, 5)]


def sample(dtype, shape, seed):
    """Deterministic values of dtype that differ per seed and per element."""
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape, dtype=np.int64))
    dt = np.dtype(dtype)
    if dt.kind == "b":
        v = rng.integers(0, 2, n).astype(bool)
    elif dt.kind in "iu":
        info = np.iinfo(dt)
        v = rng.integers(info.min, info.max, n, dtype=dt, endpoint=True)
    elif dt.kind == "f":
        v = (rng.standard_normal(n) * 1000).astype(dt)
    else:
        v = (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(dt)
    return v.reshape(shape)


def holder_of(arr):
    """The MemHolder under a numpy array from get_tensor (through its bases)."""
    b = arr
    while b is not None and not isinstance(b, fluxon.MemHolder):
        b = b.obj if isinstance(b, memoryview) else getattr(b, "base", None)
    return b


def addr(obj):
    return np.frombuffer(obj, dtype=np.uint8).ctypes.data


def data_offset(h):
    return struct.unpack_from("<I", h, 8)[0]


class TensorTest(ClusterTest):
    def test_client_has_the_tensor_calls(self):
        self.assertIsInstance(self.client, fluxon.Client)
        self.assertTrue(issubclass(fluxon.Client, fluxon._native.Client))
        for name in ("put_tensor", "get_tensor", "batch_put_tensor", "batch_get_tensor"):
            self.assertTrue(callable(getattr(self.client, name)), name)
        with fluxon.Client(self.socket) as c2:  # the subclass keeps the context manager
            c2.put_tensor(self.key(), np.arange(3))
        self.assertTrue(c2.closed)

    def test_roundtrip_dtypes_and_shapes(self):
        c = self.client
        for i, dtype in enumerate(DTYPES):
            for j, shape in enumerate(SHAPES):
                want = sample(dtype, shape, 100 * i + j)
                k = self.key("%s-%d" % (dtype, j))
                c.put_tensor(k, want)
                got = c.get_tensor(k)
                what = "%s %s" % (dtype, shape)
                self.assertIsInstance(got, np.ndarray, what)
                self.assertEqual(got.dtype, np.dtype(dtype), what)
                self.assertEqual(got.shape, shape, what)
                self.assertTrue(np.array_equal(got, want), what)
                self.assertFalse(got.flags.writeable, what)
        self.assertEqual(c.get_tensor(self.key("float32-0"), like="numpy").shape, ())

    def test_zero_copy_view_of_the_holder(self):
        c = self.client
        want = sample("float64", (64, 33), 7)
        c.put_tensor(self.key(), want)
        got = c.get_tensor(self.key())
        h = holder_of(got)
        self.assertIsInstance(h, fluxon.MemHolder)
        off = data_offset(h)
        self.assertEqual(off % fxt.HEADER_ALIGN, 0)
        self.assertEqual(len(h), off + want.nbytes)
        self.assertEqual(got.ctypes.data, addr(h) + off)  # the holder's own bytes
        self.assertEqual(addr(h), np.from_dlpack(h).ctypes.data)
        with self.assertRaises(ValueError):
            got[0, 0] = 1.0  # read-only
        with self.assertRaises(BufferError):
            h.release()  # the array holds an export of the holder
        # from_holder on a holder of one's own is the same view.
        mine = c.get(self.key())
        view = fxt.from_holder(mine)
        self.assertEqual(view.ctypes.data, addr(mine) + data_offset(mine))
        self.assertTrue(np.array_equal(view, want))

    def test_array_outlives_its_holder_and_overwrites(self):
        c = self.client
        old, new = sample("int32", (1000,), 1), sample("int32", (1000,), 2)
        c.put_tensor(self.key(), old)
        got = c.get_tensor(self.key())  # no other reference to its holder
        gc.collect()
        c.put_tensor(self.key(), new)
        c.delete(self.key())
        c.put_tensor(self.key(), new)
        self.assertTrue(np.array_equal(c.get_tensor(self.key()), new))
        self.assertTrue(np.array_equal(got, old))  # unchanged, still mapped
        h = holder_of(got)
        self.assertFalse(h.released)
        del got
        gc.collect()
        h.release()  # no view left: now it may go
        self.assertTrue(h.released)

    def test_non_contiguous_and_byte_order(self):
        c = self.client
        big = sample("float64", (20, 30), 3)
        cases = {"slice": big[::3, 1::2], "transpose": big.T, "big-endian": big.astype(">f8"),
                 "fortran": np.asfortranarray(big)}
        for name, a in cases.items():
            c.put_tensor(self.key(name), a)
            got = c.get_tensor(self.key(name))
            self.assertEqual(got.shape, a.shape, name)
            self.assertTrue(got.dtype.isnative, name)
            self.assertTrue(np.array_equal(got, a), name)
            self.assertTrue(got.flags.c_contiguous, name)
        self.assertEqual(c.get_tensor(self.key("big-endian")).dtype, np.float64)

    def test_put_options_and_module_functions(self):
        c = self.client
        fluxon.put_tensor(c, self.key(), np.ones(4), reject_if_exists=True)
        with self.assertRaises(fluxon.AlreadyExists):
            c.put_tensor(self.key(), np.zeros(4), reject_if_exists=True)
        self.assertTrue(np.array_equal(fluxon.get_tensor(c, self.key()), np.ones(4)))
        with self.assertRaises(fluxon.KeyNotFound):
            c.get_tensor(self.key("missing"))

    def test_values_that_are_not_tensors(self):
        c = self.client
        good = fxt.encode_tensor(np.arange(10, dtype=np.int64))
        off = data_offset(good)
        bad_magic = bytearray(good)
        bad_magic[0:4] = b"NOPE"
        bad_version = bytearray(good)
        bad_version[4] = 9
        bad_dtype = bytearray(good)
        bad_dtype[fxt._FIXED.size + 8:fxt._FIXED.size + 13] = b"int99"
        bad_offset = bytearray(good)
        struct.pack_into("<I", bad_offset, 8, off + 1)
        cases = {"plain": b"just bytes, no header", "empty": b"", "short": good[:8],
                 "magic": bad_magic, "version": bad_version, "dtype": bad_dtype,
                 "offset": bad_offset, "cut": good[:-8], "longer": good + b"\0" * 8}
        for name, v in cases.items():
            k = self.key(name)
            c.put(k, bytes(v))
            with self.assertRaises(fxt.TensorFormatError, msg=name) as cm:
                c.get_tensor(k)
            e = cm.exception
            self.assertIsInstance(e, fluxon.Error, name)
            self.assertIsInstance(e, ValueError, name)
            self.assertEqual(e.code, -3, name)
            self.assertIn(repr(k), str(e), name)
        with self.assertRaises(fxt.TensorFormatError):
            c.batch_get_tensor([self.key("plain")])

    def test_refused_arrays_and_arguments(self):
        c = self.client
        for a in (np.array(["text"]), np.array([object()]), np.zeros(2, dtype="M8[s]"),
                  np.zeros(2, dtype=[("x", "i4")])):
            with self.assertRaises(TypeError, msg=str(a.dtype)):
                c.put_tensor(self.key(), a)
        self.assertFalse(c.exists(self.key()))
        with self.assertRaises(ValueError):
            c.put_tensor(self.key(), np.zeros((1,) * 65))  # more than MAX_NDIM
        c.put_tensor(self.key("ok"), np.zeros(2))
        with self.assertRaises(ValueError):
            c.get_tensor(self.key("ok"), like="jax")

    def test_batch_forms(self):
        c = self.client
        n = fluxon.BATCH_MAX + 3
        keys = [self.key(str(i)) for i in range(n)]
        arrays = [sample(DTYPES[i % len(DTYPES)], (i % 5, 3), i) for i in range(n)]
        self.assertEqual(c.batch_put_tensor(keys, arrays), [0] * n)
        got = c.batch_get_tensor(keys + [self.key("miss")])
        self.assertIsNone(got[-1])
        for i in range(n):
            self.assertEqual(got[i].dtype, arrays[i].dtype)
            self.assertTrue(np.array_equal(got[i], arrays[i]), i)
            self.assertEqual(got[i].ctypes.data, addr(holder_of(got[i])) + data_offset(
                holder_of(got[i])))
        rc = c.batch_put_tensor([keys[0], self.key("new")], [np.ones(1), np.ones(2)],
                                reject_if_exists=True)
        self.assertEqual(rc, [-8, 0])  # AlreadyExists for the stored one only
        self.assertTrue(np.array_equal(c.get_tensor(keys[0]), arrays[0]))
        with self.assertRaises(ValueError):
            c.batch_put_tensor(keys[:2], arrays[:1])
        self.assertEqual(c.batch_get_tensor([]), [])


@unittest.skipIf(torch is None, "torch is not importable")
class TorchTensorTest(ClusterTest):
    TORCH_DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16",
                    "float32", "float64", "complex64", "complex128"]

    def sample_torch(self, name, shape, seed):
        if name == "bfloat16":
            return torch.from_numpy(sample("float32", shape, seed).copy()).to(torch.bfloat16)
        return torch.from_numpy(sample(name, shape, seed).copy())

    def test_roundtrip_torch_dtypes_and_shapes(self):
        c = self.client
        for i, name in enumerate(self.TORCH_DTYPES):
            for j, shape in enumerate(SHAPES):
                want = self.sample_torch(name, shape, 10 * i + j)
                k = self.key("%s-%d" % (name, j))
                c.put_tensor(k, want)
                got = c.get_tensor(k, like="torch")
                what = "%s %s" % (name, shape)
                self.assertIsInstance(got, torch.Tensor, what)
                self.assertEqual(got.dtype, getattr(torch, name), what)
                self.assertEqual(tuple(got.shape), shape, what)
                self.assertTrue(torch.equal(got, want), what)
                if name != "bfloat16":  # the same value read as numpy
                    self.assertTrue(np.array_equal(c.get_tensor(k), want.numpy()), what)

    def test_torch_is_zero_copy_through_dlpack(self):
        c = self.client
        want = self.sample_torch("float32", (128, 16), 5)
        c.put_tensor(self.key(), want)
        h = c.get(self.key())
        got = fxt.from_holder(h, like="torch")
        self.assertEqual(got.data_ptr(), addr(h) + data_offset(h))
        with self.assertRaises(BufferError):
            h.release()  # the DLPack tensor holds the holder
        via_get = c.get_tensor(self.key(), like="torch")
        self.assertTrue(torch.equal(via_get, want))
        c.put_tensor(self.key(), torch.zeros(3))  # an overwrite
        del h
        gc.collect()
        self.assertTrue(torch.equal(got, want))
        self.assertTrue(torch.equal(via_get, want))

    def test_torch_inputs(self):
        c = self.client
        base = self.sample_torch("int64", (6, 8), 9)
        for name, t in {"transpose": base.t(), "slice": base[:, ::3],
                        "grad": torch.ones(3, requires_grad=True)}.items():
            c.put_tensor(self.key(name), t)
            self.assertTrue(torch.equal(c.get_tensor(self.key(name), like="torch"),
                                        t.detach()), name)
        with self.assertRaises(ValueError):  # not on the CPU
            c.put_tensor(self.key("meta"), torch.empty(3, device="meta"))
        arr = sample("int16", (4, 4), 1)  # numpy in, torch out
        c.put_tensor(self.key("np"), arr)
        self.assertTrue(torch.equal(c.get_tensor(self.key("np"), like="torch"),
                                    torch.from_numpy(arr.copy())))
        keys = [self.key("b0"), self.key("b1")]
        self.assertEqual(c.batch_put_tensor(keys, [base, arr]), [0, 0])
        got = c.batch_get_tensor(keys + [self.key("none")], like="torch")
        self.assertTrue(torch.equal(got[0], base))
        self.assertIsNone(got[2])

    def test_dtypes_one_side_lacks(self):
        c = self.client
        c.put_tensor(self.key("bf16"), torch.ones(2, dtype=torch.bfloat16))
        with self.assertRaises(TypeError) as cm:
            c.get_tensor(self.key("bf16"))
        self.assertIn("like='torch'", str(cm.exception))
        c.put_tensor(self.key("u16"), np.arange(3, dtype=np.uint16))
        if getattr(torch, "uint16", None) is None:  # torch before 2.3
            with self.assertRaises(TypeError):
                c.get_tensor(self.key("u16"), like="torch")
        else:
            self.assertEqual(c.get_tensor(self.key("u16"), like="torch").tolist(), [0, 1, 2])


if __name__ == "__main__":
    unittest.main()
