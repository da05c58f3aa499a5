/*
 * errors.c - FX_E* codes as Python exceptions.
 *
 * fluxon.Error is the base of every error the module raises for a failed C
 * call; its message is fx_strerror()'s name plus fx_last_error_detail(), and
 * its `code` attribute is the negative FX_E* code. The codes a caller acts
 * on get subclasses: KeyNotFound (FX_ENOTFOUND), NoSpace (FX_ENOSPC),
 * AlreadyExists (FX_EEXIST, put with reject_if_exists), Busy (FX_EBUSY,
 * put with reject_if_inflight_same_key) and MasterUnavailable (FX_EMASTER:
 * the owner has had no master for its master_wait; retry later).
 */
#include <string.h>

#include "fxpy.h"

PyObject *fxpy_Error, *fxpy_KeyNotFound, *fxpy_NoSpace, *fxpy_AlreadyExists, *fxpy_Busy,
    *fxpy_MasterUnavailable;

static int add_class(PyObject *m, PyObject **slot, const char *name, PyObject *base,
                     const char *doc)
{
    char full[64];
    PyOS_snprintf(full, sizeof full, "fluxon.%s", name);
    /* Every instance the module raises sets its own code; None is only the
     * class default, for instances made by hand. */
    PyObject *dict = NULL;
    if (base == PyExc_Exception && !(dict = Py_BuildValue("{sO}", "code", Py_None)))
        return -1;
    *slot = PyErr_NewExceptionWithDoc(full, doc, base, dict);
    Py_XDECREF(dict);
    if (!*slot)
        return -1;
    /* The module keeps its own reference; the static slot keeps another. */
    Py_INCREF(*slot);
    if (PyModule_AddObject(m, name, *slot) < 0) {
        Py_DECREF(*slot);
        return -1;
    }
    return 0;
}

int fxpy_errors_init(PyObject *m)
{
    if (add_class(m, &fxpy_Error, "Error", PyExc_Exception,
                  "A Fluxon KV call failed; `code` is the FX_E* code (negative int).") < 0)
        return -1;
    if (add_class(m, &fxpy_KeyNotFound, "KeyNotFound", fxpy_Error,
                  "The key has no readable value (FX_ENOTFOUND).") < 0)
        return -1;
    if (add_class(m, &fxpy_NoSpace, "NoSpace", fxpy_Error,
                  "No room for the value in the cluster's memory (FX_ENOSPC).") < 0)
        return -1;
    if (add_class(m, &fxpy_AlreadyExists, "AlreadyExists", fxpy_Error,
                  "put(reject_if_exists=True) found a value (FX_EEXIST).") < 0)
        return -1;
    if (add_class(m, &fxpy_Busy, "Busy", fxpy_Error,
                  "put(reject_if_inflight_same_key=True) met another put (FX_EBUSY).") < 0)
        return -1;
    if (add_class(m, &fxpy_MasterUnavailable, "MasterUnavailable", fxpy_Error,
                  "The owner has had no master for its master_wait (FX_EMASTER); values "
                  "already held stay readable.") < 0)
        return -1;
    return 0;
}

static PyObject *class_of(int err)
{
    switch (err) {
    case FX_ENOTFOUND:
        return fxpy_KeyNotFound;
    case FX_ENOSPC:
        return fxpy_NoSpace;
    case FX_EEXIST:
        return fxpy_AlreadyExists;
    case FX_EBUSY:
        return fxpy_Busy;
    case FX_EMASTER:
        return fxpy_MasterUnavailable;
    default:
        return fxpy_Error;
    }
}

/* The exception for err with message msg (a new reference, consumed). */
static PyObject *error_with_message(int err, PyObject *msg)
{
    if (!msg)
        return NULL;
    PyObject *exc = PyObject_CallOneArg(class_of(err), msg);
    Py_DECREF(msg);
    if (!exc)
        return NULL;
    PyObject *code = PyLong_FromLong(err);
    if (!code || PyObject_SetAttrString(exc, "code", code) < 0) {
        Py_XDECREF(code);
        Py_DECREF(exc);
        return NULL;
    }
    Py_DECREF(code);
    return exc;
}

PyObject *fxpy_error_new(int err, const char *detail)
{
    const char *name = fx_strerror(err);
    size_t n = strlen(name);
    if (!detail || !*detail)
        detail = name;
    /* Details from the owner often start with the name already. */
    if (strncmp(detail, name, n) == 0 && (detail[n] == 0 || detail[n] == ':'))
        return error_with_message(err, PyUnicode_FromString(detail));
    return error_with_message(err, PyUnicode_FromFormat("%s: %s", name, detail));
}

PyObject *fxpy_error_for_key(int err, PyObject *key)
{
    /* Keys may be 4 KiB long: the message shows the first 64 bytes or chars. */
    enum { SHOWN = 64 };
    if (PyObject_Length(key) <= SHOWN)
        return error_with_message(err, PyUnicode_FromFormat("%s: key %R", fx_strerror(err), key));
    PyObject *head = PySequence_GetSlice(key, 0, SHOWN);
    if (!head)
        return NULL;
    PyObject *exc =
        error_with_message(err, PyUnicode_FromFormat("%s: key %R...", fx_strerror(err), head));
    Py_DECREF(head);
    return exc;
}

PyObject *fxpy_raise_instance(PyObject *exc)
{
    if (exc) {
        PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
        Py_DECREF(exc);
    }
    return NULL;
}

PyObject *fxpy_raise(int err)
{
    return fxpy_raise_instance(fxpy_error_new(err, fx_last_error_detail()));
}

PyObject *fxpy_raise_for_key(int err, const fxpy_key *k)
{
    if (err != FX_ENOTFOUND || !k->obj)
        return fxpy_raise(err);
    return fxpy_raise_instance(fxpy_error_for_key(err, k->obj));
}
