/*
 * accounting.c - used bytes == replica bytes, once settled (see accounting.h).
 */
#include "accounting.h"

#include <stdbool.h>
#include <unistd.h>

#include "testlib.h"

void accounting_check(fx_client *c, int wait_ms, const char *when)
{
    fx_owner_stat st[8];
    size_t n = 0;
    bool settled = false;
    for (int t = 0; t < wait_ms / 10 && !settled; t++) {
        usleep(10000);
        REQUIRE(fx_stat(c, st, 8, &n) == 0, "stat");
        settled = true;
        for (size_t i = 0; i < n && i < 8; i++)
            if (st[i].memory_used != st[i].replica_bytes)
                settled = false;
    }
    for (size_t i = 0; i < n && i < 8; i++)
        CHECK(st[i].memory_used == st[i].replica_bytes,
              "%s: %s used %llu bytes, replicas hold %llu (holders-only %llu)", when, st[i].name,
              (unsigned long long)st[i].memory_used, (unsigned long long)st[i].replica_bytes,
              (unsigned long long)st[i].holding_bytes);
}
