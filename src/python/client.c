/*
 * client.c - fluxon.Client: one fx_client and the single-key calls on it.
 *
 * Every call that can block (connect, put, get, delete, ...) runs with the
 * GIL released, so Python threads sharing a Client (libfluxon is
 * thread-safe) overlap their round trips. The detail message of a failure is
 * thread-local in libfluxon; it is read right after the call, on the same
 * thread, before any other fx_ call.
 *
 * Closing: close() (or leaving a `with` block) makes every later call raise
 * fluxon.Error at once, but fx_close() itself waits until no call is running
 * with the GIL released (inflight) and no MemHolder of the client is left
 * (holders): memoryviews and DLPack tensors cannot be revoked, so the bytes
 * behind them stay mapped until the last holder is released or collected.
 * The last of close(), a call's end or a holder's release runs fx_close()
 * (client_use.c keeps those counts).
 */
#include "fxpy.h"

/* "O&" converter for a non-negative integer that fits in uint64_t. */
static int u64_converter(PyObject *obj, void *out)
{
    unsigned long long v = PyLong_AsUnsignedLongLong(obj);
    if (v == (unsigned long long)-1 && PyErr_Occurred())
        return 0;
    *(uint64_t *)out = v;
    return 1;
}

static PyObject *client_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"socket", NULL};
    PyObject *sock = Py_None, *path = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|O:Client", kwlist, &sock))
        return NULL;
    if (sock != Py_None && !PyUnicode_FSConverter(sock, &path))
        return NULL;
    fxpy_client *self = (fxpy_client *)type->tp_alloc(type, 0);
    if (!self) {
        Py_XDECREF(path);
        return NULL;
    }
    const char *p = path ? PyBytes_AS_STRING(path) : NULL; /* NULL: $FLUXON_SOCKET */
    fx_client *fx;
    int err = 0;
    Py_BEGIN_ALLOW_THREADS
    fx = fx_connect(p, &err);
    Py_END_ALLOW_THREADS
    if (!fx) {
        fxpy_raise(err);
        Py_XDECREF(path);
        Py_DECREF(self);
        return NULL;
    }
    Py_XDECREF(path);
    self->fx = fx;
    return (PyObject *)self;
}

static void client_dealloc(fxpy_client *self)
{
    /* Holders and running calls hold references: nothing uses fx now. */
    self->closing = 1;
    fxpy_client_close_if_idle(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *client_put(fxpy_client *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"key", "value", "lease_id", "reject_if_exists",
                             "reject_if_inflight_same_key", NULL};
    fxpy_key k;
    Py_buffer v;
    uint64_t lease_id = 0;
    int reject_exists = 0, reject_inflight = 0;
    /* y*: any C-contiguous object with the buffer protocol, held (not copied)
     * for the call; fx_put copies it once, into the shared segment. */
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O&y*|$O&pp:put", kwlist, fxpy_key_converter,
                                     &k, &v, u64_converter, &lease_id, &reject_exists,
                                     &reject_inflight))
        return NULL;
    PyObject *ret = NULL;
    fx_client *fx = fxpy_client_enter(self);
    if (fx) {
        fx_put_options o = {.lease_id = lease_id,
                            .reject_if_exists = reject_exists,
                            .reject_if_inflight_same_key = reject_inflight};
        int rc;
        Py_BEGIN_ALLOW_THREADS
        rc = fx_put_opts(fx, k.ptr, (size_t)k.len, v.buf, (size_t)v.len, &o);
        Py_END_ALLOW_THREADS
        ret = rc ? fxpy_raise(rc) : Py_NewRef(Py_None);
        fxpy_client_leave(self);
    }
    PyBuffer_Release(&v);
    return ret;
}

static PyObject *client_get(fxpy_client *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"key", NULL};
    fxpy_key k;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O&:get", kwlist, fxpy_key_converter, &k))
        return NULL;
    fx_client *fx = fxpy_client_enter(self);
    if (!fx)
        return NULL;
    fx_holder *h = NULL;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = fx_get(fx, k.ptr, (size_t)k.len, &h);
    Py_END_ALLOW_THREADS
    /* The holder is wrapped (and counted) before leave, so a concurrent
     * close() cannot run fx_close under it. */
    PyObject *ret = rc ? fxpy_raise_for_key(rc, &k) : fxpy_holder_new(self, h);
    fxpy_client_leave(self);
    return ret;
}

static PyObject *client_get_into(fxpy_client *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"key", "buffer", NULL};
    fxpy_key k;
    Py_buffer b;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O&w*:get_into", kwlist, fxpy_key_converter,
                                     &k, &b))
        return NULL;
    PyObject *ret = NULL;
    fx_client *fx = fxpy_client_enter(self);
    if (fx) {
        size_t n = 0;
        int rc;
        Py_BEGIN_ALLOW_THREADS
        rc = fx_get_into(fx, k.ptr, (size_t)k.len, b.buf, (size_t)b.len, &n);
        Py_END_ALLOW_THREADS
        ret = rc ? fxpy_raise_for_key(rc, &k) : PyLong_FromSize_t(n);
        fxpy_client_leave(self);
    }
    PyBuffer_Release(&b);
    return ret;
}

static PyObject *client_delete(fxpy_client *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"key", NULL};
    fxpy_key k;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O&:delete", kwlist, fxpy_key_converter, &k))
        return NULL;
    fx_client *fx = fxpy_client_enter(self);
    if (!fx)
        return NULL;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = fx_delete(fx, k.ptr, (size_t)k.len);
    Py_END_ALLOW_THREADS
    PyObject *ret = rc ? fxpy_raise_for_key(rc, &k) : Py_NewRef(Py_None);
    fxpy_client_leave(self);
    return ret;
}

static PyObject *client_exists(fxpy_client *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"key", NULL};
    fxpy_key k;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O&:exists", kwlist, fxpy_key_converter, &k))
        return NULL;
    fx_client *fx = fxpy_client_enter(self);
    if (!fx)
        return NULL;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = fx_exists(fx, k.ptr, (size_t)k.len);
    Py_END_ALLOW_THREADS
    PyObject *ret = rc < 0 ? fxpy_raise(rc) : PyBool_FromLong(rc);
    fxpy_client_leave(self);
    return ret;
}

static PyObject *client_set_near_cache(fxpy_client *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"max_bytes", NULL};
    Py_ssize_t max_bytes;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "n:set_near_cache", kwlist, &max_bytes))
        return NULL;
    if (max_bytes < 0) {
        PyErr_Format(PyExc_ValueError, "max_bytes must be >= 0 (got %zd)", max_bytes);
        return NULL;
    }
    fx_client *fx = fxpy_client_enter(self);
    if (!fx)
        return NULL;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = fx_set_near_cache(fx, (size_t)max_bytes);
    Py_END_ALLOW_THREADS
    fxpy_client_leave(self);
    if (rc < 0)
        return fxpy_raise(rc);
    Py_RETURN_NONE;
}

static PyObject *client_get_size(fxpy_client *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"key", NULL};
    fxpy_key k;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O&:get_size", kwlist, fxpy_key_converter, &k))
        return NULL;
    fx_client *fx = fxpy_client_enter(self);
    if (!fx)
        return NULL;
    uint64_t size = 0;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = fx_get_size(fx, k.ptr, (size_t)k.len, &size);
    Py_END_ALLOW_THREADS
    PyObject *ret = rc ? fxpy_raise_for_key(rc, &k) : PyLong_FromUnsignedLongLong(size);
    fxpy_client_leave(self);
    return ret;
}

static PyObject *client_count_prefix(fxpy_client *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"prefix", NULL};
    PyObject *obj = NULL;
    fxpy_key p = {"", 0, NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|O:count_prefix", kwlist, &obj))
        return NULL;
    if (obj && fxpy_key_from(obj, &p, "prefix") < 0)
        return NULL;
    fx_client *fx = fxpy_client_enter(self);
    if (!fx)
        return NULL;
    uint64_t count = 0;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = fx_count_prefix(fx, p.ptr, (size_t)p.len, &count);
    Py_END_ALLOW_THREADS
    PyObject *ret = rc ? fxpy_raise(rc) : PyLong_FromUnsignedLongLong(count);
    fxpy_client_leave(self);
    return ret;
}

static PyObject *client_lease_allocate(fxpy_client *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"ttl_ms", NULL};
    uint64_t ttl_ms;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O&:lease_allocate", kwlist, u64_converter,
                                     &ttl_ms))
        return NULL;
    fx_client *fx = fxpy_client_enter(self);
    if (!fx)
        return NULL;
    uint64_t id = 0;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = fx_lease_allocate(fx, ttl_ms, &id);
    Py_END_ALLOW_THREADS
    PyObject *ret = rc ? fxpy_raise(rc) : PyLong_FromUnsignedLongLong(id);
    fxpy_client_leave(self);
    return ret;
}

static PyObject *client_lease_keepalive(fxpy_client *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"lease_id", NULL};
    uint64_t id;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O&:lease_keepalive", kwlist, u64_converter,
                                     &id))
        return NULL;
    fx_client *fx = fxpy_client_enter(self);
    if (!fx)
        return NULL;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = fx_lease_keepalive(fx, id);
    Py_END_ALLOW_THREADS
    PyObject *ret = rc ? fxpy_raise(rc) : Py_NewRef(Py_None);
    fxpy_client_leave(self);
    return ret;
}

static PyObject *client_close(fxpy_client *self, PyObject *unused)
{
    (void)unused;
    self->closing = 1;
    fxpy_client_close_if_idle(self);
    Py_RETURN_NONE;
}

static PyObject *client_enter_ctx(fxpy_client *self, PyObject *unused)
{
    (void)unused;
    if (self->closing) {
        return fxpy_raise_instance(fxpy_error_new(FX_ECONN, "the client is closed"));
    }
    return Py_NewRef(self);
}

static PyObject *client_exit_ctx(fxpy_client *self, PyObject *args)
{
    (void)args;
    return client_close(self, NULL);
}

static PyObject *client_get_closed(fxpy_client *self, void *unused)
{
    (void)unused;
    return PyBool_FromLong(self->closing);
}

#define KW_METHOD(name, fn, doc) \
    {name, (PyCFunction)(void (*)(void))(fn), METH_VARARGS | METH_KEYWORDS, PyDoc_STR(doc)}

static PyMethodDef client_methods[] = {
    KW_METHOD("put", client_put,
              "put(key, value, *, lease_id=0, reject_if_exists=False,\n"
              "    reject_if_inflight_same_key=False) -> None\n\n"
              "Stores value (any C-contiguous buffer: bytes, bytearray, memoryview,\n"
              "array.array, numpy array) under key (str as UTF-8, or bytes). Raises\n"
              "NoSpace, AlreadyExists (reject_if_exists), Busy\n"
              "(reject_if_inflight_same_key) or Error."),
    KW_METHOD("get", client_get,
              "get(key) -> MemHolder\n\nA zero-copy, read-only view of the value; "
              "KeyNotFound on a miss."),
    KW_METHOD("get_blocking", client_get, "get_blocking(key) -> MemHolder\n\nThe same as get()."),
    KW_METHOD("get_into", client_get_into,
              "get_into(key, buffer) -> int\n\nCopies the value into the writable buffer and\n"
              "returns its length. A buffer smaller than the value raises Error and is\n"
              "left untouched."),
    KW_METHOD("delete", client_delete,
              "delete(key) -> None\n\nKeyNotFound if absent; holders already taken stay valid."),
    KW_METHOD("exists", client_exists, "exists(key) -> bool"),
    KW_METHOD("set_near_cache", client_set_near_cache,
              "set_near_cache(max_bytes) -> None\n\nBounds the bytes of released values of up "
              "to 256 KiB that this\nclient keeps for the next get of their key (answered "
              "without a call;\ndropped by the master's invalidation); 0 turns it off. The "
              "default is\n1/64 of the owner's segment, at most 8 MiB."),
    KW_METHOD("get_size", client_get_size,
              "get_size(key) -> int\n\nThe value's length; KeyNotFound on a miss."),
    KW_METHOD("count_prefix", client_count_prefix,
              "count_prefix(prefix=b'') -> int\n\nHow many keys start with prefix "
              "(eventually consistent)."),
    KW_METHOD("batch_put", fxpy_client_batch_put,
              "batch_put(keys, values) -> None\n\nPuts every key (any number; FX_BATCH_MAX "
              "per round trip).\nWhen some key fails, every key was still attempted and the "
              "first\nfailing key's exception is raised; its `results` attribute lists,\n"
              "per key, None (stored) or that key's exception."),
    KW_METHOD("batch_get", fxpy_client_batch_get,
              "batch_get(keys) -> list\n\nPer key a MemHolder, or None on a miss; any other "
              "per-key error\nraises (and the holders already taken are released)."),
    KW_METHOD("batch_exists", fxpy_client_batch_exists,
              "batch_exists(keys) -> list[bool]\n\nPer key (str or bytes, any number; "
              "FX_BATCH_MAX per round trip)\nwhether it has a readable value, as exists(). "
              "An invalid key (empty,\nover 4096 bytes) raises Error naming it."),
    KW_METHOD("prefix_hits", fxpy_client_prefix_hits,
              "prefix_hits(keys) -> int\n\nHow many keys, from the first on, have a readable "
              "value before the\nfirst that has not (the cached prefix of a token sequence). "
              "An invalid\nkey raises Error."),
    KW_METHOD("batch_get_into", fxpy_client_batch_get_into,
              "batch_get_into(keys, buffers) -> list[int]\n\n"
              "Copies each key's value into buffers[i] (writable, C-contiguous: bytearray,\n"
              "memoryview, numpy array, or a contiguous CPU torch tensor); any number of\n"
              "keys. Per key: the bytes read, or a negative code: -1 (KeyNotFound) on a\n"
              "miss, -3 (InvalidArgument) when the buffer is smaller than the value (it is\n"
              "left untouched). Raises ValueError when len(keys) != len(buffers), and\n"
              "fluxon.Error only when the batch as a whole failed."),
    KW_METHOD("batch_put_from", fxpy_client_batch_put_from,
              "batch_put_from(keys, buffers, *, reject_if_exists=False) -> list[int]\n\n"
              "Stores buffers[i] (any C-contiguous buffer, or a contiguous CPU tensor)\n"
              "under keys[i]. Per key 0, or the key's negative code (-8 AlreadyExists\n"
              "with reject_if_exists, -2 NoSpace, ...). ValueError on mismatched lengths."),
    KW_METHOD("batch_delete", fxpy_client_batch_delete,
              "batch_delete(keys) -> list[int]\n\n"
              "Deletes each key. Per key 0, or -1 (KeyNotFound) when it was absent."),
    KW_METHOD("batch_get_into_ptrs", fxpy_client_batch_get_into_ptrs,
              "batch_get_into_ptrs(keys, ptrs, sizes) -> list[int]\n\n"
              "batch_get_into with raw host addresses (ints, e.g. tensor.data_ptr()) and\n"
              "their sizes in bytes; the caller keeps that memory alive and writable."),
    KW_METHOD("batch_put_from_ptrs", fxpy_client_batch_put_from_ptrs,
              "batch_put_from_ptrs(keys, ptrs, sizes, *, reject_if_exists=False) -> list[int]\n\n"
              "batch_put_from with raw host addresses and sizes in bytes."),
    KW_METHOD("lease_allocate", client_lease_allocate,
              "lease_allocate(ttl_ms) -> int\n\nA lease id for put(lease_id=...)."),
    KW_METHOD("lease_keepalive", client_lease_keepalive,
              "lease_keepalive(lease_id) -> None\n\nError (Stale) when the lease expired."),
    {"close", (PyCFunction)client_close, METH_NOARGS,
     PyDoc_STR("close() -> None\n\nLater calls raise Error. The connection itself closes "
               "when the\nlast MemHolder of this client is released (idempotent).")},
    {"__enter__", (PyCFunction)client_enter_ctx, METH_NOARGS, NULL},
    {"__exit__", (PyCFunction)client_exit_ctx, METH_VARARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef client_getset[] = {
    {"closed", (getter)client_get_closed, NULL, PyDoc_STR("True once close() was called."),
     NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyTypeObject fxpy_client_type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "fluxon.Client",
    .tp_basicsize = sizeof(fxpy_client),
    .tp_dealloc = (destructor)client_dealloc,
    /* BASETYPE: fluxon.Client is the Python subclass in fluxon/tensor.py that
     * adds put_tensor / get_tensor; it adds no fields (__slots__ = ()). */
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = PyDoc_STR("Client(socket=None)\n\nA connection to the local owner at socket "
                        "(str or path; None:\n$FLUXON_SOCKET). Usable from many threads; "
                        "a context manager\nthat closes on exit."),
    .tp_methods = client_methods,
    .tp_getset = client_getset,
    .tp_new = client_new,
};
