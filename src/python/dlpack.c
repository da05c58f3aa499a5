/*
 * dlpack.c - MemHolder.__dlpack__ / __dlpack_device__ (DLPack 0.6, CPU).
 *
 * __dlpack__ hands out a PyCapsule named "dltensor" holding a
 * DLManagedTensor: a 1-D uint8 tensor on kDLCPU whose data is the holder's
 * bytes in the shared segment (zero-copy). The tensor holds a reference on
 * the holder and counts as one of its exports, so the bytes stay valid until
 * the consumer calls the tensor's deleter, even after the MemHolder itself is
 * dropped. Capsule protocol: a consumer (numpy.from_dlpack, torch.from_dlpack)
 * renames the capsule "used_dltensor" and owns the tensor from then on; a
 * capsule destroyed still named "dltensor" was never consumed and calls the
 * deleter itself.
 *
 * DLPack 0.6 has no read-only flag: a consumer may hand out a writable
 * array, and writing into it writes into the shared segment. Don't.
 */
#include <dlpack/dlpack.h>

#include "fxpy.h"

/* One allocation per export: the managed tensor and its shape. */
typedef struct dl_export {
    DLManagedTensor t;
    int64_t shape[1];
} dl_export;

/* Called by the consumer, from any thread, with or without the GIL. */
static void dl_deleter(DLManagedTensor *t)
{
    /* After interpreter shutdown the holder is gone with the process. */
    if (!Py_IsInitialized())
        return;
    PyGILState_STATE g = PyGILState_Ensure();
    fxpy_holder *h = t->manager_ctx;
    h->exports--;
    PyMem_RawFree(t);
    Py_DECREF(h);
    PyGILState_Release(g);
}

static void dl_capsule_destructor(PyObject *cap)
{
    /* Renamed "used_dltensor": the consumer owns the tensor now. */
    if (!PyCapsule_IsValid(cap, "dltensor"))
        return;
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    DLManagedTensor *t = PyCapsule_GetPointer(cap, "dltensor");
    if (t && t->deleter)
        t->deleter(t);
    else
        PyErr_WriteUnraisable(cap);
    PyErr_Restore(type, value, tb);
}

PyObject *fxpy_holder_dlpack(fxpy_holder *self, PyObject *args, PyObject *kw)
{
    /* The array API's newer keywords are accepted: max_version is answered
     * with a 0.6 capsule (allowed for producers without DLPack 1.0). */
    static char *kwlist[] = {"stream", "max_version", "dl_device", "copy", NULL};
    PyObject *stream = Py_None, *max_version = Py_None, *dl_device = Py_None, *copy = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|O$OOO:__dlpack__", kwlist, &stream,
                                     &max_version, &dl_device, &copy))
        return NULL;
    (void)max_version;
    if (stream != Py_None) {
        PyErr_SetString(PyExc_BufferError, "a CPU MemHolder takes no stream (stream=None)");
        return NULL;
    }
    if (dl_device != Py_None) {
        int type = 0, id = 0;
        if (!PyArg_ParseTuple(dl_device, "ii:dl_device", &type, &id))
            return NULL;
        if (type != kDLCPU || id != 0) {
            PyErr_SetString(PyExc_BufferError, "a MemHolder lives on the CPU (1, 0) only");
            return NULL;
        }
    }
    if (copy == Py_True) {
        PyErr_SetString(PyExc_BufferError,
                        "a MemHolder exports zero-copy tensors only; access() makes a copy");
        return NULL;
    }
    if (!self->h) {
        PyErr_SetString(PyExc_BufferError, "the MemHolder was released");
        return NULL;
    }
    dl_export *e = PyMem_RawCalloc(1, sizeof *e);
    if (!e)
        return PyErr_NoMemory();
    e->shape[0] = self->len;
    DLTensor *d = &e->t.dl_tensor;
    d->data = (void *)self->data;
    d->device = (DLDevice){.device_type = kDLCPU, .device_id = 0};
    d->ndim = 1;
    d->dtype = (DLDataType){.code = kDLUInt, .bits = 8, .lanes = 1};
    d->shape = e->shape;
    d->strides = NULL; /* compact */
    d->byte_offset = 0;
    e->t.manager_ctx = self;
    e->t.deleter = dl_deleter;
    PyObject *cap = PyCapsule_New(&e->t, "dltensor", dl_capsule_destructor);
    if (!cap) {
        PyMem_RawFree(e);
        return NULL;
    }
    Py_INCREF(self);
    self->exports++;
    return cap;
}

PyObject *fxpy_holder_dlpack_device(fxpy_holder *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    return Py_BuildValue("(ii)", kDLCPU, 0);
}
