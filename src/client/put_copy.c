/*
 * put_copy.c - copying put values into their staging ranges, and waking the
 * owner before the commit.
 *
 * An owner whose CPU sat idle through a long copy answers the commit late:
 * waking an idle CPU costs tens of microseconds, on the virtual machines
 * measured here about 60 us (docs/benchmarks.md, "Waking the owner before
 * the commit"), paid by the owner and again by the master behind it. So when
 * the values of one put (or one batch) are larger than PUT_WAKE_TAIL, the
 * owner is woken while the last PUT_WAKE_TAIL bytes are still being copied:
 * a one-way ExternalPing on the put's own connection, which the owner
 * answers with nothing; the commit then finds it awake. Nothing waits for
 * the ping. If its write fails the connection is broken, and the commit on
 * it reports that.
 *
 * The copies themselves are bulk_copy: large values bypass the cache.
 */
#include "client/client.h"
#include "common/bulk_copy.h"

/* About 100 us of copying here: shorter than the idle time after which
 * waking a CPU gets slow, longer than the owner needs to wake. */
#define PUT_WAKE_TAIL ((size_t)2 << 20)

void put_copy_init(put_copy *pc, fx_client *c, xconn *x, size_t total)
{
    pc->c = c;
    pc->x = x;
    pc->before_wake = total > PUT_WAKE_TAIL ? total - PUT_WAKE_TAIL : 0;
    pc->woken = total <= PUT_WAKE_TAIL;
}

void put_copy_value(put_copy *pc, uint8_t *dst, const uint8_t *src, size_t n)
{
    if (!pc->woken && n >= pc->before_wake) {
        size_t head = pc->before_wake;
        bulk_copy(dst, src, head);
        Fx__ExternalPingReq ping = FX__EXTERNAL_PING_REQ__INIT;
        (void)client_notify(pc->c, pc->x, MSG_EXT_PING, &ping.base);
        pc->woken = true;
        dst += head;
        src += head;
        n -= head;
    } else if (!pc->woken) {
        pc->before_wake -= n;
    }
    bulk_copy(dst, src, n);
}
