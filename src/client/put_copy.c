/*
 * put_copy.c - copying put values into their staging ranges, waking the
 * owner before the last PUT_WAKE_TAIL bytes (see put_copy.h).
 */
#include "client/put_copy.h"

#include "common/bulk_copy.h"

void put_copy_init(put_copy *pc, size_t total, put_copy_wake_fn wake, void *ctx)
{
    pc->wake = wake;
    pc->ctx = ctx;
    pc->before_wake = total > PUT_WAKE_TAIL ? total - PUT_WAKE_TAIL : 0;
    pc->woken = total <= PUT_WAKE_TAIL;
}

void put_copy_value(put_copy *pc, uint8_t *dst, const uint8_t *src, size_t n)
{
    if (!pc->woken && n >= pc->before_wake) {
        size_t head = pc->before_wake;
        bulk_copy(dst, src, head);
        pc->woken = true;
        pc->wake(pc->ctx);
        dst += head;
        src += head;
        n -= head;
    } else if (!pc->woken) {
        pc->before_wake -= n;
    }
    bulk_copy(dst, src, n);
}
