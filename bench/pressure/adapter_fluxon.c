/*
 * adapter_fluxon.c - Fluxon KV under the pressure benchmark: one fx_client
 * per worker thread on the owner's socket. A get returns a MemHolder
 * (PR_MODE_HOLDER counts there); PR_MODE_BYTES copies the value out of the
 * shared segment and reads its first and last bytes. The holder says whether
 * the value came from memory or from the SSD tier, per operation.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adapter.h"
#include "fluxon/fluxon.h"

struct pr_conn {
    fx_client *c;
};

static pr_conn *fx_connect_addr(const char *addr, char *err, size_t errlen)
{
    pr_conn *pc = calloc(1, sizeof *pc);
    int e = FX_ENOMEM;
    if (!pc || !(pc->c = fx_connect(addr, &e))) {
        snprintf(err, errlen, "fx_connect %s: %s (%s)", addr, fx_strerror(e),
                 fx_last_error_detail());
        free(pc);
        return NULL;
    }
    return pc;
}

static void fx_close_conn(pr_conn *c)
{
    fx_close(c->c);
    free(c);
}

static int fx_put_one(pr_conn *c, const char *key, size_t klen, const void *val, size_t len,
                      char *err, size_t errlen)
{
    int r = fx_put(c->c, key, klen, val, len);
    if (r)
        snprintf(err, errlen, "fx_put: %s (%s)", fx_strerror(r), fx_last_error_detail());
    return r ? -1 : 0;
}

static int fx_get_one(pr_conn *c, const char *key, size_t klen, int mode, uint8_t *out,
                      size_t cap, size_t *len, int *source, char *err, size_t errlen)
{
    fx_holder *h = NULL;
    int r = fx_get(c->c, key, klen, &h);
    if (r == FX_ENOTFOUND)
        return 0;
    if (r) {
        snprintf(err, errlen, "fx_get: %s (%s)", fx_strerror(r), fx_last_error_detail());
        return -1;
    }
    size_t n = fx_holder_len(h);
    *len = n;
    *source = fx_holder_source(h) == FX_SRC_SSD ? PR_SRC_SSD : PR_SRC_MEMORY;
    if (mode == PR_MODE_BYTES) {
        if (n > cap) {
            fx_holder_release(h);
            snprintf(err, errlen, "value of %zu bytes does not fit the %zu-byte buffer", n, cap);
            return -1;
        }
        memcpy(out, fx_holder_data(h), n);
        volatile uint8_t sink = n ? (uint8_t)(out[0] ^ out[n - 1]) : 0;
        (void)sink;
    }
    fx_holder_release(h);
    return 1;
}

static int fx_resident(pr_conn *c, const char *key, size_t klen, char *err, size_t errlen)
{
    int r = fx_exists(c->c, key, klen);
    if (r < 0)
        snprintf(err, errlen, "fx_exists: %s (%s)", fx_strerror(r), fx_last_error_detail());
    return r < 0 ? -1 : r > 0;
}

const pr_adapter pr_adapter_fluxon = {
    .name = "fluxon",
    .connect = fx_connect_addr,
    .close = fx_close_conn,
    .put = fx_put_one,
    .get = fx_get_one,
    .resident = fx_resident,
    .window_ssd_hits = NULL,
};
