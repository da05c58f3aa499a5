/*
 * batch.c - Client.batch_put and Client.batch_get over fx_batch_put/_get.
 *
 * Any number of keys: they go to libfluxon FX_BATCH_MAX per call, each call
 * with the GIL released. Values are held as Py_buffers (no copy) for the
 * whole batch.
 *
 * batch_put returns None when every key was stored. Otherwise every key was
 * still attempted (unless the batch as a whole failed) and it raises: the
 * first failing key's exception, or the batch's own error (lost connection,
 * bad arguments). Either way the exception's `results` attribute is a list
 * with, per key, None (stored) or the exception for that key.
 *
 * batch_get returns a list with, per key, a MemHolder or None on a miss. Any
 * other per-key error, or a batch error, raises after releasing the holders
 * already taken, so a failed batch_get leaves nothing held.
 */
#include "fxpy.h"

/* results[i] as a list of None / per-key exceptions; the first failing
 * key's exception goes to *first (a new reference, NULL when all are 0). */
static PyObject *put_results(const fxpy_batch_keys *b, const int *results, PyObject **first)
{
    *first = NULL;
    PyObject *list = PyList_New(b->n);
    if (!list)
        return NULL;
    for (Py_ssize_t i = 0; i < b->n; i++) {
        PyObject *r = Py_None;
        if (results[i]) {
            r = fxpy_error_for_key(results[i], PySequence_Fast_GET_ITEM(b->seq, i));
            if (!r) {
                Py_DECREF(list);
                Py_CLEAR(*first);
                return NULL;
            }
            if (!*first)
                *first = Py_NewRef(r);
        } else {
            Py_INCREF(r);
        }
        PyList_SET_ITEM(list, i, r);
    }
    return list;
}

PyObject *fxpy_client_batch_put(fxpy_client *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"keys", "values", NULL};
    PyObject *keys, *values, *vseq = NULL, *ret = NULL, *batch_exc = NULL;
    fxpy_batch_keys b;
    Py_buffer *bufs = NULL;
    const void **vals = NULL;
    size_t *lens = NULL;
    int *results = NULL;
    Py_ssize_t held = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO:batch_put", kwlist, &keys, &values))
        return NULL;
    if (fxpy_batch_keys_init(&b, keys) < 0)
        goto out;
    vseq = PySequence_Fast(values, "values must be a sequence of buffers");
    if (!vseq)
        goto out;
    if (PySequence_Fast_GET_SIZE(vseq) != b.n) {
        PyErr_Format(PyExc_ValueError, "batch_put: %zd keys but %zd values", b.n,
                     PySequence_Fast_GET_SIZE(vseq));
        goto out;
    }
    if (b.n == 0) {
        ret = Py_NewRef(Py_None);
        goto out;
    }
    bufs = PyMem_Calloc((size_t)b.n, sizeof *bufs);
    vals = PyMem_Calloc((size_t)b.n, sizeof *vals);
    lens = PyMem_Calloc((size_t)b.n, sizeof *lens);
    results = PyMem_Calloc((size_t)b.n, sizeof *results);
    if (!bufs || !vals || !lens || !results) {
        PyErr_NoMemory();
        goto out;
    }
    for (; held < b.n; held++) {
        if (PyObject_GetBuffer(PySequence_Fast_GET_ITEM(vseq, held), &bufs[held],
                               PyBUF_SIMPLE) < 0)
            goto out;
        vals[held] = bufs[held].buf;
        lens[held] = (size_t)bufs[held].len;
    }

    fx_client *fx = fxpy_client_enter(self);
    if (!fx)
        goto out;
    for (Py_ssize_t s = 0; s < b.n; s += FX_BATCH_MAX) {
        size_t m = fxpy_chunk_len(b.n, s);
        int rc;
        Py_BEGIN_ALLOW_THREADS
        rc = fx_batch_put(fx, m, b.ptrs + s, b.lens + s, vals + s, lens + s, results + s);
        Py_END_ALLOW_THREADS
        if (rc) {
            batch_exc = fxpy_error_new(rc, fx_last_error_detail());
            for (Py_ssize_t j = s + (Py_ssize_t)m; j < b.n; j++)
                results[j] = rc; /* never attempted */
            break;
        }
    }
    fxpy_client_leave(self);
    if (PyErr_Occurred()) /* batch_exc could not be made */
        goto out;

    PyObject *first;
    PyObject *list = put_results(&b, results, &first);
    if (!list)
        goto out;
    PyObject *exc = batch_exc ? Py_NewRef(batch_exc) : first;
    if (batch_exc)
        Py_XDECREF(first);
    if (!exc) {
        Py_DECREF(list);
        ret = Py_NewRef(Py_None);
        goto out;
    }
    if (PyObject_SetAttrString(exc, "results", list) == 0)
        fxpy_raise_instance(exc);
    else
        Py_DECREF(exc);
    Py_DECREF(list);
out:
    for (Py_ssize_t i = 0; i < held; i++)
        PyBuffer_Release(&bufs[i]);
    Py_XDECREF(batch_exc);
    PyMem_Free(bufs);
    PyMem_Free(vals);
    PyMem_Free(lens);
    PyMem_Free(results);
    Py_XDECREF(vseq);
    fxpy_batch_keys_free(&b);
    return ret;
}

/* Releases the raw holders out[from..to) (GIL held; releases it meanwhile). */
static void release_raw(fx_holder **out, Py_ssize_t from, Py_ssize_t to)
{
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = from; i < to; i++) {
        fx_holder_release(out[i]);
        out[i] = NULL;
    }
    Py_END_ALLOW_THREADS
}

PyObject *fxpy_client_batch_get(fxpy_client *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"keys", NULL};
    PyObject *keys, *ret = NULL, *exc = NULL;
    fxpy_batch_keys b;
    fx_holder **out = NULL;
    int *results = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O:batch_get", kwlist, &keys))
        return NULL;
    if (fxpy_batch_keys_init(&b, keys) < 0)
        goto out;
    if (b.n == 0) {
        ret = PyList_New(0);
        goto out;
    }
    out = PyMem_Calloc((size_t)b.n, sizeof *out);
    results = PyMem_Calloc((size_t)b.n, sizeof *results);
    if (!out || !results) {
        PyErr_NoMemory();
        goto out;
    }

    fx_client *fx = fxpy_client_enter(self);
    if (!fx)
        goto out;
    Py_ssize_t done = 0; /* keys whose out[] is filled in */
    for (; done < b.n; done += FX_BATCH_MAX) {
        size_t m = fxpy_chunk_len(b.n, done);
        int rc;
        Py_BEGIN_ALLOW_THREADS
        rc = fx_batch_get(fx, m, b.ptrs + done, b.lens + done, out + done, results + done);
        Py_END_ALLOW_THREADS
        if (rc) {
            exc = fxpy_error_new(rc, fx_last_error_detail());
            break; /* this chunk's out[] are all NULL */
        }
    }
    if (done > b.n)
        done = b.n;
    for (Py_ssize_t i = 0; !exc && i < done; i++)
        if (results[i] && results[i] != FX_ENOTFOUND)
            exc = fxpy_error_for_key(results[i], PySequence_Fast_GET_ITEM(b.seq, i));
    /* Wrapped or released before leave: close() must not run under them. */
    if (!exc && !PyErr_Occurred())
        ret = PyList_New(b.n);
    if (!ret) {
        release_raw(out, 0, done);
    } else {
        for (Py_ssize_t i = 0; i < b.n; i++) {
            PyObject *h = out[i] ? fxpy_holder_new(self, out[i]) : Py_NewRef(Py_None);
            out[i] = NULL; /* taken over, even on failure */
            if (!h) {
                release_raw(out, i + 1, b.n);
                Py_CLEAR(ret); /* releases the MemHolders made so far */
                break;
            }
            PyList_SET_ITEM(ret, i, h);
        }
    }
    fxpy_client_leave(self);
    if (exc)
        fxpy_raise_instance(exc);
out:
    PyMem_Free(out);
    PyMem_Free(results);
    fxpy_batch_keys_free(&b);
    return ret;
}
