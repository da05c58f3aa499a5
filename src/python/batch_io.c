/*
 * batch_io.c - Client.batch_get_into, batch_put_from, batch_delete, and the
 * _ptrs forms that take raw addresses (what tensor.data_ptr() gives), over
 * fx_batch_get_into, fx_batch_put_from and fx_batch_delete.
 *
 * Any number of keys: they go to libfluxon FX_BATCH_MAX per call, each call
 * with the GIL released. Every buffer is acquired (buffers.c) before the
 * first call and released after the last, so none can be resized or freed
 * while the copies run; with the _ptrs forms the caller promises that.
 *
 * Each returns a list of ints, one per key, in key order: for batch_get_into
 * the bytes read (0 for an empty value) or a negative FX_E* code (-1
 * KeyNotFound on a miss, -3 InvalidArgument for a buffer too small, which is
 * left untouched); for the others 0 or the key's code (e.g. -8 AlreadyExists
 * with reject_if_exists, -1 KeyNotFound for a delete of an absent key). Only
 * a failure of the batch as a whole (a lost owner) raises.
 */
#include "fxpy.h"

enum io_kind { IO_GET, IO_PUT, IO_DELETE };

/* One batch call's arrays, for every key. */
typedef struct io_batch {
    fxpy_batch_keys keys;
    void **ptrs;
    size_t *sizes;
    size_t *lens;
    int *results;
} io_batch;

static int io_alloc(io_batch *io)
{
    size_t n = (size_t)io->keys.n + 1;
    io->ptrs = PyMem_Calloc(n, sizeof *io->ptrs);
    io->sizes = PyMem_Calloc(n, sizeof *io->sizes);
    io->lens = PyMem_Calloc(n, sizeof *io->lens);
    io->results = PyMem_Calloc(n, sizeof *io->results);
    if (io->ptrs && io->sizes && io->lens && io->results)
        return 0;
    PyErr_NoMemory();
    return -1;
}

static void io_free(io_batch *io)
{
    PyMem_Free(io->ptrs);
    PyMem_Free(io->sizes);
    PyMem_Free(io->lens);
    PyMem_Free(io->results);
    fxpy_batch_keys_free(&io->keys);
}

/* Runs every chunk with the GIL released; the per-key list, or NULL with the
 * batch's exception raised. */
static PyObject *io_run(fxpy_client *self, io_batch *io, enum io_kind kind,
                        const fx_put_options *opts)
{
    fx_client *fx = fxpy_client_enter(self);
    if (!fx)
        return NULL;
    PyObject *exc = NULL;
    Py_ssize_t n = io->keys.n;
    for (Py_ssize_t s = 0; s < n; s += FX_BATCH_MAX) {
        size_t m = fxpy_chunk_len(n, s);
        const char *const *k = io->keys.ptrs + s;
        const size_t *kl = io->keys.lens + s;
        int rc;
        Py_BEGIN_ALLOW_THREADS
        if (kind == IO_GET)
            rc = fx_batch_get_into(fx, m, k, kl, io->ptrs + s, io->sizes + s, io->lens + s,
                                   io->results + s);
        else if (kind == IO_PUT)
            rc = fx_batch_put_from(fx, m, k, kl, (const void *const *)(io->ptrs + s),
                                   io->sizes + s, opts, io->results + s);
        else
            rc = fx_batch_delete(fx, m, k, kl, io->results + s);
        Py_END_ALLOW_THREADS
        if (rc) {
            exc = fxpy_error_new(rc, fx_last_error_detail());
            break;
        }
    }
    fxpy_client_leave(self);
    if (exc)
        return fxpy_raise_instance(exc);
    if (PyErr_Occurred()) /* the exception could not be made */
        return NULL;
    PyObject *list = PyList_New(n);
    for (Py_ssize_t i = 0; list && i < n; i++) {
        long v = kind == IO_GET && io->results[i] == 0 ? (long)io->lens[i] : io->results[i];
        PyObject *item = PyLong_FromLong(v);
        if (!item)
            Py_CLEAR(list);
        else
            PyList_SET_ITEM(list, i, item);
    }
    return list;
}

/* The keys and the sequence of buffers (acquired into bufs, *held of them);
 * 0, or -1 with an exception set. */
static int io_buffers(io_batch *io, PyObject *keys, PyObject *buffers, int writable,
                      const char *name, PyObject **bseq, fxpy_buffer **bufs, Py_ssize_t *held)
{
    if (fxpy_batch_keys_init(&io->keys, keys) < 0)
        return -1;
    *bseq = PySequence_Fast(buffers, "buffers must be a sequence");
    if (!*bseq)
        return -1;
    if (PySequence_Fast_GET_SIZE(*bseq) != io->keys.n) {
        PyErr_Format(PyExc_ValueError, "%s: %zd keys but %zd buffers", name, io->keys.n,
                     PySequence_Fast_GET_SIZE(*bseq));
        return -1;
    }
    if (io_alloc(io) < 0)
        return -1;
    *bufs = PyMem_Calloc((size_t)io->keys.n + 1, sizeof **bufs);
    if (!*bufs) {
        PyErr_NoMemory();
        return -1;
    }
    for (; *held < io->keys.n; (*held)++) {
        fxpy_buffer *b = &(*bufs)[*held];
        if (fxpy_buffer_acquire(PySequence_Fast_GET_ITEM(*bseq, *held), writable, "buffers",
                                *held, b) < 0)
            return -1;
        io->ptrs[*held] = b->ptr;
        io->sizes[*held] = b->len;
    }
    return 0;
}

static PyObject *buffers_call(fxpy_client *self, PyObject *keys, PyObject *buffers,
                              enum io_kind kind, const fx_put_options *opts, const char *name)
{
    io_batch io = {0};
    PyObject *bseq = NULL, *ret = NULL;
    fxpy_buffer *bufs = NULL;
    Py_ssize_t held = 0;
    if (io_buffers(&io, keys, buffers, kind == IO_GET, name, &bseq, &bufs, &held) == 0)
        ret = io_run(self, &io, kind, opts);
    for (Py_ssize_t i = 0; i < held; i++)
        fxpy_buffer_release(&bufs[i]);
    PyMem_Free(bufs);
    Py_XDECREF(bseq);
    io_free(&io);
    return ret;
}

/* keys, and ptrs and sizes (sequences of ints) of the same length; 0, or -1
 * with an exception set. */
static int io_ptrs(io_batch *io, PyObject *keys, PyObject *ptrs, PyObject *sizes,
                   const char *name)
{
    if (fxpy_batch_keys_init(&io->keys, keys) < 0)
        return -1;
    PyObject *ps = PySequence_Fast(ptrs, "ptrs must be a sequence of ints");
    PyObject *ss = ps ? PySequence_Fast(sizes, "sizes must be a sequence of ints") : NULL;
    int rc = -1;
    if (!ss)
        goto out;
    if (PySequence_Fast_GET_SIZE(ps) != io->keys.n || PySequence_Fast_GET_SIZE(ss) != io->keys.n) {
        PyErr_Format(PyExc_ValueError, "%s: %zd keys but %zd ptrs and %zd sizes", name,
                     io->keys.n, PySequence_Fast_GET_SIZE(ps), PySequence_Fast_GET_SIZE(ss));
        goto out;
    }
    if (io_alloc(io) < 0)
        goto out;
    for (Py_ssize_t i = 0; i < io->keys.n; i++) {
        io->ptrs[i] = PyLong_AsVoidPtr(PySequence_Fast_GET_ITEM(ps, i));
        io->sizes[i] = PyLong_AsSize_t(PySequence_Fast_GET_ITEM(ss, i));
        if (PyErr_Occurred())
            goto out;
        if (!io->ptrs[i] && io->sizes[i]) {
            PyErr_Format(PyExc_ValueError, "%s: ptrs[%zd] is 0 with a size of %zu", name, i,
                         io->sizes[i]);
            goto out;
        }
    }
    rc = 0;
out:
    Py_XDECREF(ps);
    Py_XDECREF(ss);
    return rc;
}

static PyObject *ptrs_call(fxpy_client *self, PyObject *keys, PyObject *ptrs, PyObject *sizes,
                           enum io_kind kind, const fx_put_options *opts, const char *name)
{
    io_batch io = {0};
    PyObject *ret = NULL;
    if (io_ptrs(&io, keys, ptrs, sizes, name) == 0)
        ret = io_run(self, &io, kind, opts);
    io_free(&io);
    return ret;
}

PyObject *fxpy_client_batch_get_into(fxpy_client *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"keys", "buffers", NULL};
    PyObject *keys, *buffers;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO:batch_get_into", kwlist, &keys, &buffers))
        return NULL;
    return buffers_call(self, keys, buffers, IO_GET, NULL, "batch_get_into");
}

PyObject *fxpy_client_batch_put_from(fxpy_client *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"keys", "buffers", "reject_if_exists", NULL};
    PyObject *keys, *buffers;
    int reject = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|$p:batch_put_from", kwlist, &keys, &buffers,
                                     &reject))
        return NULL;
    fx_put_options opts = {.reject_if_exists = reject};
    return buffers_call(self, keys, buffers, IO_PUT, &opts, "batch_put_from");
}

PyObject *fxpy_client_batch_delete(fxpy_client *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"keys", NULL};
    PyObject *keys;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O:batch_delete", kwlist, &keys))
        return NULL;
    io_batch io = {0};
    PyObject *ret = NULL;
    if (fxpy_batch_keys_init(&io.keys, keys) == 0 && io_alloc(&io) == 0)
        ret = io_run(self, &io, IO_DELETE, NULL);
    io_free(&io);
    return ret;
}

PyObject *fxpy_client_batch_get_into_ptrs(fxpy_client *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"keys", "ptrs", "sizes", NULL};
    PyObject *keys, *ptrs, *sizes;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OOO:batch_get_into_ptrs", kwlist, &keys, &ptrs,
                                     &sizes))
        return NULL;
    return ptrs_call(self, keys, ptrs, sizes, IO_GET, NULL, "batch_get_into_ptrs");
}

PyObject *fxpy_client_batch_put_from_ptrs(fxpy_client *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"keys", "ptrs", "sizes", "reject_if_exists", NULL};
    PyObject *keys, *ptrs, *sizes;
    int reject = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OOO|$p:batch_put_from_ptrs", kwlist, &keys, &ptrs,
                                     &sizes, &reject))
        return NULL;
    fx_put_options opts = {.reject_if_exists = reject};
    return ptrs_call(self, keys, ptrs, sizes, IO_PUT, &opts, "batch_put_from_ptrs");
}
