/*
 * args.c - key arguments of the Python API.
 *
 * A key is str (stored as its UTF-8 bytes, so "k" and b"k" name the same
 * value) or bytes (binary-safe). Both are immutable, so the pointer stays
 * valid while the C call runs with the GIL released, as long as the caller
 * holds a reference to the object. Length limits are libfluxon's: it answers
 * FX_EINVAL with a detail naming the limit.
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
