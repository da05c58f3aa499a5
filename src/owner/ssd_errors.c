/*
 * ssd_errors.c - the SSD tier's failures in the owner's words: a short name
 * for each of the engine's result codes (for replies and logs), the one
 * place where those codes (negative errno values) become FX_E* codes, and the
 * engine's failure counters turned into one WARN line per heartbeat and the
 * heartbeat's ssd_errors (see ssd_tier.h).
 *
 * The engine only counts failed writes, failed reads and values that failed
 * their checksum; the owner reads the counters with each heartbeat, so a
 * failing disk costs one line per heartbeat, not one per value.
 */
#include "owner/ssd_tier.h"

#include <string.h>

#include "common/log.h"
#include "fluxon/fluxon.h"

const char *ssd_tier_strerror(int rc)
{
    switch (rc) {
    case SSD_OK: return "ok";
    case SSD_ENOTFOUND: return "not found on the SSD tier";
    case SSD_EIO: return "SSD I/O error";
    case SSD_E2BIG: return "value larger than an SSD shard";
    case SSD_EINVAL: return "invalid SSD request";
    case SSD_ENOMEM: return "out of memory";
    case SSD_ECLOSED: return "the SSD tier is closing";
    default: return "unknown SSD error";
    }
}

int ssd_tier_fx_code(int rc)
{
    switch (rc) {
    case SSD_OK: return FX_OK;
    case SSD_ENOTFOUND: return FX_ENOTFOUND; /* the copy is gone or damaged */
    default: return FX_EINTERNAL;            /* this owner's failure, not the key's */
    }
}

uint64_t ssd_tier_report_errors(owner *o)
{
    ssd_tier *t = o->ssd;
    if (!t)
        return 0;
    ssd_stats st;
    ssd_get_stats(t->store, &st);
    uint64_t w = st.write_errors - t->seen_write_errors, r = st.read_errors - t->seen_read_errors,
             c = st.checksum_failures - t->seen_checksum_failures;
    t->seen_write_errors = st.write_errors;
    t->seen_read_errors = st.read_errors;
    t->seen_checksum_failures = st.checksum_failures;
    if (w || r || c)
        FX_LOG(WARN,
               "SSD tier: %llu failed write(s), %llu failed read(s) and %llu value(s) with a bad "
               "checksum since the last report%s%s; those values are not served from SSD",
               (unsigned long long)w, (unsigned long long)r, (unsigned long long)c,
               (w || r) && st.last_io_errno ? "; the latest IO error: " : "",
               (w || r) && st.last_io_errno ? strerror(st.last_io_errno) : "");
    return st.write_errors + st.read_errors + st.checksum_failures;
}
