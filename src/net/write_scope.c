/*
 * write_scope.c - write scopes (conn.h): what the frames of one read make a
 * process write on any of its connections, gathered and written once per
 * connection when that read's frames are handled.
 *
 * A dispatch (conn.c) enters the scope of its connection; a write on a
 * connection of a running scope corks that connection and lists it (with a
 * reference), and the end of the outermost dispatch uncorks every listed
 * connection in the order they joined. A connection that closes meanwhile
 * writes what it gathered as it closes (conn.c) and is only unreferenced
 * here. Everything runs on the loop thread.
 */
#include <stdlib.h>

#include "net/conn_internal.h"

/* A write scope (net_write_scope_new): while the frames of one read on one of
 * its connections are handled, what they make any of its connections write is
 * gathered too, and every gathered connection is written once when that
 * dispatch ends. So the 64 ExternalPuts of a client's batch, read at once,
 * send the master their 64 PutDones in one write, not one each. */
struct net_write_scope {
    int depth;        /* dispatches running (nested ones count) */
    net_conn **conns; /* gathered connections, referenced */
    size_t n, cap;
};

net_write_scope *net_write_scope_new(void)
{
    return calloc(1, sizeof(net_write_scope));
}

void net_write_scope_free(net_write_scope *sc)
{
    if (!sc)
        return;
    free(sc->conns); /* empty: a scope ends with the dispatch that opened it */
    free(sc);
}

void net_conn_set_write_scope(net_conn *c, net_write_scope *sc)
{
    c->scope = sc;
}

net_write_scope *conn_scope_enter(net_conn *c)
{
    if (c->scope)
        c->scope->depth++;
    return c->scope;
}

bool conn_scope_join(net_conn *c)
{
    net_write_scope *sc = c->scope;
    if (!sc || sc->depth == 0 || c->closing)
        return false;
    if (!c->in_scope) {
        if (sc->n == sc->cap) {
            size_t cap = sc->cap ? sc->cap * 2 : 16;
            net_conn **n = realloc(sc->conns, cap * sizeof *n);
            if (!n)
                return false;
            sc->conns = n;
            sc->cap = cap;
        }
        net_conn_ref(c);
        c->in_scope = true;
        sc->conns[sc->n++] = c;
    }
    c->corked = true;
    return true;
}

/* The outermost dispatch ended: every gathered connection is written. A
 * write that fails closes its connection, which writes nothing more. */
static void scope_flush(net_write_scope *sc)
{
    for (size_t i = 0; i < sc->n; i++) {
        net_conn *c = sc->conns[i];
        c->in_scope = false;
        if (c->corked)
            conn_uncork(c);
        net_conn_unref(c);
    }
    sc->n = 0;
}

void conn_scope_leave(net_write_scope *sc)
{
    if (sc && --sc->depth == 0)
        scope_flush(sc);
}
