/*
 * batch_exists.c - Client.batch_exists and Client.prefix_hits over
 * fx_batch_exists / fx_prefix_hits.
 *
 * Any number of keys: they go to libfluxon FX_BATCH_MAX per call, each call
 * with the GIL released. batch_exists returns one bool per key; an invalid
 * key (empty, over 4096 bytes) raises fluxon.Error (code FX_EINVAL) naming
 * it, as a batch error does. prefix_hits counts the keys from the first on
 * that exist, up to the first that does not; a chunk that ends on a miss is
 * the last one asked.
 */
#include "fxpy.h"

PyObject *fxpy_client_batch_exists(fxpy_client *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"keys", NULL};
    PyObject *keys, *ret = NULL, *exc = NULL;
    fxpy_batch_keys b;
    int *results = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O:batch_exists", kwlist, &keys))
        return NULL;
    if (fxpy_batch_keys_init(&b, keys) < 0)
        goto out;
    results = PyMem_Calloc((size_t)b.n + 1, sizeof *results);
    if (!results) {
        PyErr_NoMemory();
        goto out;
    }
    fx_client *fx = fxpy_client_enter(self);
    if (!fx)
        goto out;
    for (Py_ssize_t s = 0; s < b.n && !exc; s += FX_BATCH_MAX) {
        size_t m = fxpy_chunk_len(b.n, s);
        int rc;
        Py_BEGIN_ALLOW_THREADS
        rc = fx_batch_exists(fx, m, b.ptrs + s, b.lens + s, results + s);
        Py_END_ALLOW_THREADS
        if (rc) {
            exc = fxpy_error_new(rc, fx_last_error_detail());
            if (!exc)
                break;
        }
    }
    fxpy_client_leave(self);
    for (Py_ssize_t i = 0; !exc && !PyErr_Occurred() && i < b.n; i++)
        if (results[i] < 0 && !(exc = fxpy_error_for_key(results[i],
                                                          PySequence_Fast_GET_ITEM(b.seq, i))))
            goto out;
    if (exc) {
        fxpy_raise_instance(exc);
        goto out;
    }
    if (PyErr_Occurred() || !(ret = PyList_New(b.n)))
        goto out;
    for (Py_ssize_t i = 0; i < b.n; i++)
        PyList_SET_ITEM(ret, i, PyBool_FromLong(results[i]));
out:
    PyMem_Free(results);
    fxpy_batch_keys_free(&b);
    return ret;
}

PyObject *fxpy_client_prefix_hits(fxpy_client *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"keys", NULL};
    PyObject *keys, *ret = NULL;
    fxpy_batch_keys b;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O:prefix_hits", kwlist, &keys))
        return NULL;
    if (fxpy_batch_keys_init(&b, keys) < 0)
        goto out;
    fx_client *fx = fxpy_client_enter(self);
    if (!fx)
        goto out;
    size_t total = 0;
    int rc = 0;
    for (Py_ssize_t s = 0; s < b.n; s += FX_BATCH_MAX) {
        size_t m = fxpy_chunk_len(b.n, s), hits = 0;
        Py_BEGIN_ALLOW_THREADS
        rc = fx_prefix_hits(fx, m, b.ptrs + s, b.lens + s, &hits);
        Py_END_ALLOW_THREADS
        if (rc)
            break;
        total += hits;
        if (hits < m)
            break; /* the prefix ends in this chunk */
    }
    ret = rc ? fxpy_raise(rc) : PyLong_FromSize_t(total);
    fxpy_client_leave(self);
out:
    fxpy_batch_keys_free(&b);
    return ret;
}
