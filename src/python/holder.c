/*
 * holder.c - fluxon.MemHolder: one fx_holder, read-only and zero-copy.
 *
 * A MemHolder exposes the value's bytes in the owner's shared segment through
 * the buffer protocol (memoryview(h), numpy.frombuffer(h), ... read the
 * segment itself) and through DLPack (dlpack.c). Every exported view holds a
 * reference on the holder and counts in `exports`; release() refuses with
 * BufferError while any is alive, so the bytes are never given back under a
 * view. Without an explicit release(), the holder is released when it is
 * collected. The holder holds a reference on its Client, whose fx_client
 * stays open until every holder is released (client.c).
 *
 * After release(), len() and .source still answer; access(), views and
 * DLPack raise. MemHolders are made only by Client.get / batch_get.
 */
#include <string.h>

#include "fxpy.h"

PyObject *fxpy_holder_new(fxpy_client *client, fx_holder *h)
{
    fxpy_holder *self = PyObject_New(fxpy_holder, &fxpy_holder_type);
    if (!self) {
        fx_holder_release(h);
        return NULL;
    }
    self->client = (fxpy_client *)Py_NewRef(client);
    self->h = h;
    self->data = fx_holder_data(h);
    self->len = (Py_ssize_t)fx_holder_len(h);
    self->source = fx_holder_source(h);
    self->exports = 0;
    fxpy_client_holder_added(client);
    return (PyObject *)self;
}

/* Gives the fx_holder back (GIL held, no export alive); idempotent. */
static void holder_release_now(fxpy_holder *self)
{
    fx_holder *h = self->h;
    fxpy_client *c = self->client;
    if (!h)
        return;
    /* Cleared before the GIL goes, so that no other thread releases twice. */
    self->h = NULL;
    self->client = NULL;
    self->data = NULL;
    Py_BEGIN_ALLOW_THREADS
    fx_holder_release(h); /* may notify the owner over its socket */
    Py_END_ALLOW_THREADS
    fxpy_client_holder_gone(c);
    Py_DECREF(c);
}

static void holder_dealloc(fxpy_holder *self)
{
    /* Every view holds a reference, so none is left here. */
    holder_release_now(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int holder_getbuffer(fxpy_holder *self, Py_buffer *view, int flags)
{
    if (!self->h) {
        PyErr_SetString(PyExc_BufferError, "the MemHolder was released");
        view->obj = NULL;
        return -1;
    }
    /* readonly=1: a request for a writable buffer fails with BufferError. */
    if (PyBuffer_FillInfo(view, (PyObject *)self, (void *)self->data, self->len, 1, flags) < 0)
        return -1;
    self->exports++;
    return 0;
}

static void holder_releasebuffer(fxpy_holder *self, Py_buffer *view)
{
    (void)view;
    self->exports--;
}

static PyObject *holder_release(fxpy_holder *self, PyObject *unused)
{
    (void)unused;
    if (self->exports > 0) {
        PyErr_Format(PyExc_BufferError,
                     "cannot release a MemHolder while %zd view(s) of it (memoryview, "
                     "buffer or DLPack tensor) are alive",
                     self->exports);
        return NULL;
    }
    holder_release_now(self);
    Py_RETURN_NONE;
}

static PyObject *holder_access(fxpy_holder *self, PyObject *unused)
{
    (void)unused;
    if (!self->h) {
        PyErr_SetString(PyExc_ValueError, "the MemHolder was released");
        return NULL;
    }
    PyObject *b = PyBytes_FromStringAndSize(NULL, self->len);
    if (!b)
        return NULL;
    /* Large values are copied without the GIL; the export count keeps
     * another thread's release() off the bytes meanwhile. */
    char *dst = PyBytes_AS_STRING(b);
    self->exports++;
    Py_BEGIN_ALLOW_THREADS
    memcpy(dst, self->data, (size_t)self->len);
    Py_END_ALLOW_THREADS
    self->exports--;
    return b;
}

static PyObject *holder_enter_ctx(fxpy_holder *self, PyObject *unused)
{
    (void)unused;
    return Py_NewRef(self);
}

static PyObject *holder_exit_ctx(fxpy_holder *self, PyObject *args)
{
    (void)args;
    return holder_release(self, NULL);
}

static Py_ssize_t holder_length(fxpy_holder *self)
{
    return self->len;
}

static PyObject *holder_get_source(fxpy_holder *self, void *unused)
{
    (void)unused;
    return PyUnicode_FromString(self->source == FX_SRC_SSD ? "ssd" : "memory");
}

static PyObject *holder_get_released(fxpy_holder *self, void *unused)
{
    (void)unused;
    return PyBool_FromLong(self->h == NULL);
}

static PyObject *holder_repr(fxpy_holder *self)
{
    return PyUnicode_FromFormat("<fluxon.MemHolder len=%zd source=%s%s>", self->len,
                                self->source == FX_SRC_SSD ? "ssd" : "memory",
                                self->h ? "" : " released");
}

static PyMethodDef holder_methods[] = {
    {"release", (PyCFunction)holder_release, METH_NOARGS,
     PyDoc_STR("release() -> None\n\nGives the bytes back (idempotent). BufferError while "
               "a memoryview\nor DLPack tensor of the holder is alive.")},
    {"access", (PyCFunction)holder_access, METH_NOARGS,
     PyDoc_STR("access() -> bytes\n\nA copy of the value.")},
    {"__dlpack__", (PyCFunction)(void (*)(void))fxpy_holder_dlpack,
     METH_VARARGS | METH_KEYWORDS,
     PyDoc_STR("__dlpack__(stream=None) -> PyCapsule\n\nA 1-D uint8 CPU DLPack tensor over "
               "the value (zero-copy).")},
    {"__dlpack_device__", (PyCFunction)fxpy_holder_dlpack_device, METH_NOARGS,
     PyDoc_STR("__dlpack_device__() -> (1, 0): kDLCPU, device 0.")},
    {"__enter__", (PyCFunction)holder_enter_ctx, METH_NOARGS, NULL},
    {"__exit__", (PyCFunction)holder_exit_ctx, METH_VARARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef holder_getset[] = {
    {"source", (getter)holder_get_source, NULL,
     PyDoc_STR("'memory' or 'ssd': where the cluster found the value."), NULL},
    {"released", (getter)holder_get_released, NULL, PyDoc_STR("True after release()."), NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PySequenceMethods holder_as_sequence = {
    .sq_length = (lenfunc)holder_length,
};

static PyBufferProcs holder_as_buffer = {
    .bf_getbuffer = (getbufferproc)holder_getbuffer,
    .bf_releasebuffer = (releasebufferproc)holder_releasebuffer,
};

PyTypeObject fxpy_holder_type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "fluxon.MemHolder",
    .tp_basicsize = sizeof(fxpy_holder),
    .tp_dealloc = (destructor)holder_dealloc,
    .tp_repr = (reprfunc)holder_repr,
    .tp_as_sequence = &holder_as_sequence,
    .tp_as_buffer = &holder_as_buffer,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = PyDoc_STR("A read-only, zero-copy view of a value in shared memory "
                        "(from Client.get).\nBuffer protocol, len(), access(), .source, "
                        "DLPack, release()."),
    .tp_methods = holder_methods,
    .tp_getset = holder_getset,
};
