/*
 * client_use.c - what keeps a fluxon.Client's fx_client alive: the calls
 * running on it with the GIL released (inflight) and its MemHolders
 * (holders), counted with the GIL held, and the fx_close() that the last of
 * close(), a call's end or a holder's release runs (client.c explains why
 * closing waits). The batch calls (batch*.c) and holders (holder.c) use it
 * without depending on client.c's methods.
 */
#include "fxpy.h"

/* Runs fx_close once closing is requested and nothing uses the client. */
void fxpy_client_close_if_idle(fxpy_client *self)
{
    if (!self->closing || self->inflight > 0 || self->holders > 0 || !self->fx)
        return;
    fx_client *fx = self->fx;
    self->fx = NULL; /* before the GIL goes: nobody else may start on it */
    Py_BEGIN_ALLOW_THREADS
    fx_close(fx);
    Py_END_ALLOW_THREADS
}

fx_client *fxpy_client_enter(fxpy_client *self)
{
    if (self->closing || !self->fx) {
        fxpy_raise_instance(fxpy_error_new(FX_ECONN, "the client is closed"));
        return NULL;
    }
    self->inflight++;
    return self->fx;
}

void fxpy_client_leave(fxpy_client *self)
{
    self->inflight--;
    fxpy_client_close_if_idle(self);
}

void fxpy_client_holder_added(fxpy_client *self)
{
    self->holders++;
}

void fxpy_client_holder_gone(fxpy_client *self)
{
    self->holders--;
    fxpy_client_close_if_idle(self);
}
