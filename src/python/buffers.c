/*
 * buffers.c - the memory of one value in a copying batch (batch_io.c):
 * anything with the buffer protocol (bytes, bytearray, memoryview,
 * array.array, numpy arrays), held as a Py_buffer for the call, or a CPU
 * torch tensor, which has no buffer protocol: its data_ptr() and nbytes (or
 * element_size() * numel()) are used as they are, the tensor kept alive by
 * the caller's sequence.
 *
 * A get writes into the memory, so it asks for a writable, C-contiguous
 * buffer; a put only reads, and takes any C-contiguous one. A tensor must be
 * contiguous and on the CPU (a GPU pointer would be copied as host memory).
 */
#include "fxpy.h"

/* obj.name() / obj.name as a new reference, or NULL (no exception left). */
static PyObject *attr(PyObject *obj, const char *name, int call)
{
    PyObject *a = PyObject_GetAttrString(obj, name);
    if (a && call) {
        PyObject *r = PyObject_CallNoArgs(a);
        Py_DECREF(a);
        a = r;
    }
    if (!a)
        PyErr_Clear();
    return a;
}

/* obj.nbytes, or obj.element_size() * obj.numel() for a torch without
 * Tensor.nbytes (Debian's 1.13); NULL (no exception left) when neither. */
static PyObject *tensor_nbytes(PyObject *obj)
{
    PyObject *n = attr(obj, "nbytes", 0);
    if (n)
        return n;
    PyObject *size = attr(obj, "element_size", 1), *count = attr(obj, "numel", 1);
    if (size && count && !(n = PyNumber_Multiply(size, count)))
        PyErr_Clear();
    Py_XDECREF(size);
    Py_XDECREF(count);
    return n;
}

/* A torch-like tensor: 0 with ptr/len set, 1 when obj is not one (no
 * exception), -1 with ValueError for one that cannot be used. */
static int tensor_memory(PyObject *obj, const char *what, Py_ssize_t index, fxpy_buffer *out)
{
    PyObject *ptr = attr(obj, "data_ptr", 1), *nbytes = tensor_nbytes(obj);
    PyObject *contig = attr(obj, "is_contiguous", 1), *device = attr(obj, "device", 0);
    PyObject *type = device ? attr(device, "type", 0) : NULL;
    int rc = 1;
    if (!ptr || !nbytes || !contig || !type)
        goto out;
    rc = -1;
    if (!PyUnicode_Check(type) || PyUnicode_CompareWithASCIIString(type, "cpu") != 0) {
        PyErr_Format(PyExc_ValueError, "%s[%zd] is a tensor on %R, not on the CPU", what, index,
                     type);
        goto out;
    }
    if (!PyObject_IsTrue(contig)) {
        PyErr_Format(PyExc_ValueError, "%s[%zd] is not a contiguous tensor", what, index);
        goto out;
    }
    out->ptr = PyLong_AsVoidPtr(ptr);
    Py_ssize_t len = PyLong_AsSsize_t(nbytes);
    if (PyErr_Occurred())
        goto out;
    if (len < 0 || (!out->ptr && len)) {
        PyErr_Format(PyExc_ValueError, "%s[%zd] has no memory", what, index);
        goto out;
    }
    out->len = (size_t)len;
    rc = 0;
out:
    Py_XDECREF(ptr);
    Py_XDECREF(nbytes);
    Py_XDECREF(contig);
    Py_XDECREF(device);
    Py_XDECREF(type);
    return rc;
}

int fxpy_buffer_acquire(PyObject *obj, int writable, const char *what, Py_ssize_t index,
                        fxpy_buffer *out)
{
    *out = (fxpy_buffer){0};
    if (PyObject_CheckBuffer(obj)) {
        /* PyBUF_SIMPLE asks for one contiguous block (numpy refuses a
         * non-contiguous array with BufferError naming why). */
        if (PyObject_GetBuffer(obj, &out->view, writable ? PyBUF_WRITABLE : PyBUF_SIMPLE) < 0)
            return -1;
        out->held = 1;
        out->ptr = out->view.buf;
        out->len = (size_t)out->view.len;
        return 0;
    }
    int rc = tensor_memory(obj, what, index, out);
    if (rc == 1)
        PyErr_Format(PyExc_TypeError,
                     "%s[%zd] must support the buffer protocol or be a CPU tensor, not %.100s",
                     what, index, Py_TYPE(obj)->tp_name);
    return rc ? -1 : 0;
}

void fxpy_buffer_release(fxpy_buffer *b)
{
    if (b->held)
        PyBuffer_Release(&b->view);
    b->held = 0;
}
