"""fluxon.tensor - numpy arrays and CPU torch tensors as Fluxon values.

``put_tensor(client, key, array)`` stores an array with its dtype and shape in
a small header at the front of the value; ``get_tensor(client, key)`` gives it
back as a read-only numpy array that is a zero-copy view of the value's
``MemHolder`` (the array keeps the holder alive, and an overwrite of the key
leaves it unchanged, as for any holder); ``like="torch"`` returns a torch
tensor over the same bytes through DLPack, again without a copy.
``fluxon.Client`` carries the same calls as methods (``client.put_tensor``),
the batch forms run on ``batch_put_from`` / ``batch_get``, and
``from_holder(holder)`` reads a MemHolder already in hand.

The value (version 1; integers little-endian)::

    0   4  magic b"FXTN"
    4   1  version (1)
    5   1  ndim (0..64)
    6   1  length of the dtype name
    7   1  reserved (0)
    8   4  data offset: where the elements start, a multiple of 64
    12     ndim x u64 shape, then the dtype name (ASCII), then zeros
    off    the elements, C order, native byte order (little-endian)

The dtype name is numpy's (``float32``, ``int8``, ``bool``, ``complex64``...)
or, for ``bfloat16`` that numpy lacks, torch's. Such a value comes back with
``like="torch"`` only; for numpy ``get_tensor`` raises TypeError rather than
handing out raw bits under another dtype. Unsigned 16/32/64-bit values need a
torch that has those dtypes for ``like="torch"``.

A put copies the elements once, into the assembled value, and the client
copies that into shared memory (a gather put is not exposed to Python). A
non-contiguous array is made contiguous first (one more copy), a non-native
byte order converted. A torch tensor returned by ``like="torch"`` is
writable, as DLPack 0.6 has no read-only flag: writing into it writes the
shared segment. Don't.

Values that are not tensors, too short or inconsistent raise
``TensorFormatError`` (a ``fluxon.Error`` and a ``ValueError``) naming the key.
"""
import struct
import sys

from . import _native

__all__ = ["Client", "TensorFormatError", "put_tensor", "get_tensor", "batch_put_tensor",
           "batch_get_tensor", "encode_tensor", "from_holder", "HEADER_ALIGN"]

MAGIC = b"FXTN"
VERSION = 1
HEADER_ALIGN = 64
MAX_NDIM = 64
_FIXED = struct.Struct("<4sBBBBI")
# The dtype names a value may carry; numpy has all but the torch-only ones.
_TORCH_ONLY = ("bfloat16",)
_DTYPES = frozenset(("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                     "uint64", "float16", "float32", "float64", "complex64", "complex128")
                    + _TORCH_ONLY)


class TensorFormatError(_native.Error, ValueError):
    """A value is not a tensor of this format (or is cut short); names the key."""

    def __init__(self, key, why):
        super().__init__("TensorFormatError: key %r: %s" % (key, why))
        self.code = -3  # FX_EINVAL
        self.key = key


def _torch_module():
    """torch when the caller has it loaded (never imports it)."""
    return sys.modules.get("torch")


def _elements(arr):
    """(dtype name, shape, a C-contiguous uint8 numpy view of the elements) for
    a numpy array or a CPU torch tensor (the view keeps the memory alive)."""
    import numpy as np

    torch = _torch_module()
    if torch is not None and isinstance(arr, torch.Tensor):
        name = str(arr.dtype).replace("torch.", "")
        if arr.device.type != "cpu":
            raise ValueError("put_tensor takes CPU tensors only; call .cpu() first (%s)"
                             % arr.device)
        t = arr.detach()
        if not t.is_contiguous():
            t = t.contiguous()  # documented copy
        # (an empty tensor may have stride 0, which view(uint8) refuses)
        data = t.reshape(-1).view(torch.uint8).numpy() if t.numel() else np.empty(0, np.uint8)
        shape = tuple(t.shape)
    else:
        a = np.asarray(arr)
        shape = a.shape  # (ascontiguousarray makes a 0-d array 1-d)
        if not a.dtype.isnative:
            a = a.astype(a.dtype.newbyteorder("="))
        if not a.flags.c_contiguous:
            a = np.ascontiguousarray(a)  # documented copy
        name = a.dtype.name
        data = a.reshape(-1).view(np.uint8) if name in _DTYPES else None
    if name not in _DTYPES:
        raise TypeError("put_tensor stores bool, int, uint, float, complex and bfloat16 "
                        "elements, not %s" % name)
    return name, shape, data


def encode_tensor(arr):
    """The whole value for arr (bytearray): header, padding, elements."""
    import numpy as np

    name, shape, data = _elements(arr)
    if len(shape) > MAX_NDIM:
        raise ValueError("put_tensor: %d dimensions, at most %d" % (len(shape), MAX_NDIM))
    dname = name.encode("ascii")
    head = _FIXED.size + 8 * len(shape) + len(dname)
    off = -(-head // HEADER_ALIGN) * HEADER_ALIGN
    buf = bytearray(off + data.nbytes)
    _FIXED.pack_into(buf, 0, MAGIC, VERSION, len(shape), len(dname), 0, off)
    struct.pack_into("<%dQ" % len(shape), buf, _FIXED.size, *shape)
    buf[_FIXED.size + 8 * len(shape):head] = dname
    np.frombuffer(buf, np.uint8, count=data.nbytes, offset=off)[:] = data
    return buf


def _parse(key, h):
    """(dtype name, shape, data offset, element bytes) from holder h's header."""
    n = len(h)
    if n < _FIXED.size:
        raise TensorFormatError(key, "%d bytes, shorter than a tensor header" % n)
    magic, version, ndim, dlen, _res, off = _FIXED.unpack_from(h, 0)
    if magic != MAGIC:
        raise TensorFormatError(key, "not a tensor value (no %r header)" % MAGIC)
    if version != VERSION:
        raise TensorFormatError(key, "tensor format version %d, this reads %d"
                                % (version, VERSION))
    head = _FIXED.size + 8 * ndim + dlen
    if ndim > MAX_NDIM or off % HEADER_ALIGN or off < head or off > n:
        raise TensorFormatError(key, "corrupt header (ndim %d, data offset %d, %d bytes)"
                                % (ndim, off, n))
    shape = struct.unpack_from("<%dQ" % ndim, h, _FIXED.size)
    name = bytes(memoryview(h)[_FIXED.size + 8 * ndim:head]).decode("ascii", "replace")
    if name not in _DTYPES:
        raise TensorFormatError(key, "unknown dtype %r" % name)
    return name, shape, off, n - off


def _count(shape):
    c = 1
    for d in shape:
        c *= d
    return c


def _check_size(key, name, shape, itemsize, have):
    want = _count(shape) * itemsize
    if want != have:
        raise TensorFormatError(key, "%s%s needs %d bytes of elements, the value has %d"
                                % (name, list(shape), want, have))


def _as_numpy(key, h, name, shape, off, have):
    import numpy as np

    if name in _TORCH_ONLY:
        raise TypeError("key %r holds a %s tensor, which numpy has no dtype for: "
                        "use get_tensor(key, like='torch')" % (key, name))
    dt = np.dtype(name)
    _check_size(key, name, shape, dt.itemsize, have)
    # A read-only view of the holder: its base holds the holder's buffer export.
    return np.frombuffer(h, dtype=dt, count=_count(shape), offset=off).reshape(shape)


def _as_torch(key, h, name, shape, off, have):
    import torch

    dt = getattr(torch, name, None)
    if not isinstance(dt, torch.dtype):
        raise TypeError("key %r holds a %s tensor, which this torch %s has no dtype for"
                        % (key, name, torch.__version__))
    itemsize = torch.empty((), dtype=dt).element_size()
    _check_size(key, name, shape, itemsize, have)
    raw = torch.from_dlpack(h)  # 1-D uint8 over the whole value, no copy
    return raw[off:off + have].view(dt).reshape(shape)


_DECODERS = {None: _as_numpy, "numpy": _as_numpy, "torch": _as_torch}


def from_holder(holder, like=None, key=None):
    """The tensor in a MemHolder (from Client.get or batch_get), as get_tensor
    returns it: a zero-copy view that keeps the holder alive. key only names
    the value in errors."""
    try:
        decode = _DECODERS[like]
    except (KeyError, TypeError):
        raise ValueError("like must be None, 'numpy' or 'torch', not %r" % (like,)) from None
    return decode(key, holder, *_parse(key, holder))


def put_tensor(client, key, arr, **put_options):
    """Stores arr (numpy array or CPU torch tensor) under key, in one put.
    put_options are Client.put's (lease_id, reject_if_exists, ...). Raises what
    put raises; TypeError / ValueError for what cannot be stored."""
    client.put(key, encode_tensor(arr), **put_options)


def get_tensor(client, key, like=None):
    """The tensor stored under key: a read-only numpy array (like None or
    "numpy") or a torch tensor (like="torch"), both zero-copy over the value's
    holder, which they keep alive. KeyNotFound when absent, TensorFormatError
    for a value that is not a tensor."""
    return from_holder(client.get(key), like, key)


def batch_put_tensor(client, keys, arrays, *, reject_if_exists=False):
    """Stores arrays[i] under keys[i] through batch_put_from: a list of ints, 0
    or the key's negative FX_E* code (-8 AlreadyExists with reject_if_exists)."""
    arrays = list(arrays)
    if len(arrays) != len(keys):
        raise ValueError("batch_put_tensor: %d keys, %d arrays" % (len(keys), len(arrays)))
    return client.batch_put_from(keys, [encode_tensor(a) for a in arrays],
                                 reject_if_exists=reject_if_exists)


def batch_get_tensor(client, keys, like=None):
    """One array (as get_tensor) or None for a missing key, per key, through
    batch_get. A value that is not a tensor raises TensorFormatError."""
    return [None if h is None else from_holder(h, like, k)
            for k, h in zip(keys, client.batch_get(keys))]


class Client(_native.Client):
    __doc__ = _native.Client.__doc__ + (
        "\n\nput_tensor / get_tensor and their batch forms store numpy arrays and\n"
        "CPU torch tensors with their dtype and shape (fluxon.tensor).")
    __slots__ = ()
    __module__ = "fluxon"

    put_tensor = put_tensor
    get_tensor = get_tensor
    batch_put_tensor = batch_put_tensor
    batch_get_tensor = batch_get_tensor
