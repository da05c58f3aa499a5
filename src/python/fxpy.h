/*
 * fxpy.h - what the files of the `fluxon` Python extension share.
 *
 * The module wraps the public C API (include/fluxon/fluxon.h) and nothing
 * else of libfluxon. Two types: Client (client.c, client_use.c, batch.c,
 * batch_exists.c, batch_io.c, buffers.c) owns an fx_client; MemHolder (holder.c,
 * dlpack.c) owns one fx_holder and a
 * reference to its Client. All fields below are read and written only with
 * the GIL held; the C calls that block run with the GIL released, bracketed
 * by fxpy_client_enter / fxpy_client_leave so that close() never frees the
 * fx_client under them.
 */
#ifndef FXPY_H
#define FXPY_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <fluxon/fluxon.h>

/* ---- Client (client.c) -------------------------------------------------------- */

typedef struct fxpy_client {
    PyObject_HEAD
    /* NULL once the client is closed for good (GIL). */
    fx_client *fx;
    /* close() was called: no new call may start (GIL). */
    int closing;
    /* C calls running with the GIL released, and MemHolders not yet released:
     * fx_close waits until both are zero (GIL). */
    Py_ssize_t inflight;
    Py_ssize_t holders;
} fxpy_client;

extern PyTypeObject fxpy_client_type;

/* Starts a C call on self: returns the fx_client to use, or NULL with
 * fluxon.Error set when the client is closed. Every successful enter is
 * paired with one fxpy_client_leave, after the GIL is taken back. */
fx_client *fxpy_client_enter(fxpy_client *self);
void fxpy_client_leave(fxpy_client *self);
/* A MemHolder of self was created / released (GIL held). */
void fxpy_client_holder_added(fxpy_client *self);
void fxpy_client_holder_gone(fxpy_client *self);
/* Runs fx_close once close() was asked for and no call or holder uses the
 * client (client_use.c). */
void fxpy_client_close_if_idle(fxpy_client *self);

/* Client.batch_put / Client.batch_get (batch.c). */
PyObject *fxpy_client_batch_put(fxpy_client *self, PyObject *args, PyObject *kw);
PyObject *fxpy_client_batch_get(fxpy_client *self, PyObject *args, PyObject *kw);
/* Client.batch_exists / Client.prefix_hits (batch_exists.c). */
PyObject *fxpy_client_batch_exists(fxpy_client *self, PyObject *args, PyObject *kw);
PyObject *fxpy_client_prefix_hits(fxpy_client *self, PyObject *args, PyObject *kw);

/* ---- MemHolder (holder.c, dlpack.c) ------------------------------------------- */

typedef struct fxpy_holder {
    PyObject_HEAD
    /* Both NULL once released (GIL). The reference on client keeps the
     * fx_client open while the holder's bytes are reachable. */
    fxpy_client *client;
    fx_holder *h;
    const char *data;
    Py_ssize_t len;
    int source;
    /* Buffer views and DLPack tensors alive: release() refuses while > 0,
     * and each of them holds a reference on the holder (GIL). */
    Py_ssize_t exports;
} fxpy_holder;

extern PyTypeObject fxpy_holder_type;

/* Wraps h (taking it over) for client; on failure releases h and returns NULL
 * with an exception set. */
PyObject *fxpy_holder_new(fxpy_client *client, fx_holder *h);
/* MemHolder.__dlpack__ and __dlpack_device__ (dlpack.c). */
PyObject *fxpy_holder_dlpack(fxpy_holder *self, PyObject *args, PyObject *kw);
PyObject *fxpy_holder_dlpack_device(fxpy_holder *self, PyObject *unused);

/* ---- keys and buffers (args.c) ------------------------------------------------ */

/* A key argument: str (UTF-8) or bytes. The pointer stays valid while the
 * object is referenced (both are immutable), with or without the GIL. */
typedef struct fxpy_key {
    const char *ptr;
    Py_ssize_t len;
    PyObject *obj; /* the caller's str or bytes (borrowed), for messages */
} fxpy_key;

/* Fills k from obj; 0, or -1 with TypeError set. */
int fxpy_key_from(PyObject *obj, fxpy_key *k, const char *what);
/* A PyArg_Parse "O&" converter for fxpy_key. */
int fxpy_key_converter(PyObject *obj, void *k);

/* The keys of a batch as C arrays; the sequence keeps the key objects alive. */
typedef struct fxpy_batch_keys {
    PyObject *seq; /* PySequence_Fast of the keys */
    Py_ssize_t n;
    const char **ptrs;
    size_t *lens;
} fxpy_batch_keys;

/* Fills b from keys (a sequence of str or bytes, not a lone key); 0, or -1
 * with an exception set. fxpy_batch_keys_free is due either way. */
int fxpy_batch_keys_init(fxpy_batch_keys *b, PyObject *keys);
void fxpy_batch_keys_free(fxpy_batch_keys *b);
/* How many keys, from start, the next C call of a batch of n takes. */
size_t fxpy_chunk_len(Py_ssize_t n, Py_ssize_t start);

/* ---- buffers of the copying batches (buffers.c) -------------------------------- */

/* One value's memory: a Py_buffer held, or a CPU torch tensor's storage
 * (no buffer protocol; the caller's sequence keeps the tensor alive). */
typedef struct fxpy_buffer {
    Py_buffer view;
    int held; /* view must be released */
    void *ptr;
    size_t len;
} fxpy_buffer;

/* Takes obj's memory: the buffer protocol (C-contiguous; writable when
 * writable is set), else an object with data_ptr(), nbytes (or
 * element_size() and numel()), is_contiguous() and device.type == 'cpu' (a
 * torch tensor). 0, or -1 with TypeError /
 * ValueError / BufferError set naming what (e.g. "buffers[3]"). */
int fxpy_buffer_acquire(PyObject *obj, int writable, const char *what, Py_ssize_t index,
                        fxpy_buffer *out);
void fxpy_buffer_release(fxpy_buffer *b);

/* Client.batch_get_into, batch_put_from, batch_delete and the _ptrs forms
 * (batch_io.c). */
PyObject *fxpy_client_batch_get_into(fxpy_client *self, PyObject *args, PyObject *kw);
PyObject *fxpy_client_batch_put_from(fxpy_client *self, PyObject *args, PyObject *kw);
PyObject *fxpy_client_batch_delete(fxpy_client *self, PyObject *args, PyObject *kw);
PyObject *fxpy_client_batch_get_into_ptrs(fxpy_client *self, PyObject *args, PyObject *kw);
PyObject *fxpy_client_batch_put_from_ptrs(fxpy_client *self, PyObject *args, PyObject *kw);

/* ---- exceptions (errors.c) ---------------------------------------------------- */

extern PyObject *fxpy_Error, *fxpy_KeyNotFound, *fxpy_NoSpace, *fxpy_AlreadyExists,
    *fxpy_Busy, *fxpy_MasterUnavailable;

/* Creates the exception classes and adds them to module m; 0 or -1. */
int fxpy_errors_init(PyObject *m);
/* An exception instance for FX_E* code err, with message "<Name>: <detail>"
 * (detail may be NULL or empty) and attribute code = err. NULL with an
 * exception set when even that fails. */
PyObject *fxpy_error_new(int err, const char *detail);
/* The same, for one key of a batch: "<Name>: key <repr(key)>". */
PyObject *fxpy_error_for_key(int err, PyObject *key);
/* Raises err for a call on key k: KeyNotFound names the key as the caller
 * gave it (like a batch's), every other error is fxpy_raise(err). Returns
 * NULL. */
PyObject *fxpy_raise_for_key(int err, const fxpy_key *k);
/* Raises the exception for err with the calling thread's
 * fx_last_error_detail(); call it right after the failed C call, on the same
 * thread, before any other fx_ call. Always returns NULL. */
PyObject *fxpy_raise(int err);
/* Raises exc (an instance from fxpy_error_new) and drops the reference. */
PyObject *fxpy_raise_instance(PyObject *exc);

#endif
