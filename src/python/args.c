/*
 * args.c - key arguments of the Python API.
 *
 * A key is str (stored as its UTF-8 bytes, so "k" and b"k" name the same
 * value) or bytes (binary-safe). Both are immutable, so the pointer stays
 * valid while the C call runs with the GIL released, as long as the caller
 * holds a reference to the object. Length limits are libfluxon's: it answers
 * FX_EINVAL with a detail naming the limit. The keys of a batch are a
 * sequence of such keys, handed to libfluxon as C arrays.
 */
#include "fxpy.h"

int fxpy_key_from(PyObject *obj, fxpy_key *k, const char *what)
{
    k->obj = obj;
    if (PyUnicode_Check(obj)) {
        /* The UTF-8 form is cached in the str object and lives as long as it. */
        k->ptr = PyUnicode_AsUTF8AndSize(obj, &k->len);
        return k->ptr ? 0 : -1;
    }
    if (PyBytes_Check(obj)) {
        k->ptr = PyBytes_AS_STRING(obj);
        k->len = PyBytes_GET_SIZE(obj);
        return 0;
    }
    PyErr_Format(PyExc_TypeError, "%s must be str or bytes, not %.100s", what,
                 Py_TYPE(obj)->tp_name);
    return -1;
}

int fxpy_key_converter(PyObject *obj, void *k)
{
    return fxpy_key_from(obj, k, "key") == 0 ? 1 : 0;
}

void fxpy_batch_keys_free(fxpy_batch_keys *b)
{
    Py_XDECREF(b->seq);
    PyMem_Free(b->ptrs);
    PyMem_Free(b->lens);
}

int fxpy_batch_keys_init(fxpy_batch_keys *b, PyObject *keys)
{
    *b = (fxpy_batch_keys){0};
    /* A lone key is a sequence too (of its characters or bytes): refuse it
     * rather than look up every character. */
    if (PyUnicode_Check(keys) || PyBytes_Check(keys) || PyByteArray_Check(keys)) {
        PyErr_SetString(PyExc_TypeError,
                        "keys must be a sequence of str or bytes, not a single key");
        return -1;
    }
    b->seq = PySequence_Fast(keys, "keys must be a sequence of str or bytes");
    if (!b->seq)
        return -1;
    b->n = PySequence_Fast_GET_SIZE(b->seq);
    b->ptrs = PyMem_Calloc((size_t)b->n + 1, sizeof *b->ptrs);
    b->lens = PyMem_Calloc((size_t)b->n + 1, sizeof *b->lens);
    if (!b->ptrs || !b->lens) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < b->n; i++) {
        fxpy_key k;
        if (fxpy_key_from(PySequence_Fast_GET_ITEM(b->seq, i), &k, "each key") < 0)
            return -1;
        b->ptrs[i] = k.ptr;
        b->lens[i] = (size_t)k.len;
    }
    return 0;
}

size_t fxpy_chunk_len(Py_ssize_t n, Py_ssize_t start)
{
    return n - start < FX_BATCH_MAX ? (size_t)(n - start) : FX_BATCH_MAX;
}
