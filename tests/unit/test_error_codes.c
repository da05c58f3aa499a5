/*
 * test_error_codes.c - the one error scheme (docs/decisions.md, "One error
 * scheme"): the SSD engine's results are negative errno values with the
 * meaning their names give, the owner turns them into FX_E* codes in one
 * function (ssd_tier_fx_code), and the FX_E* codes stay the public ones:
 * distinct, named by fx_strerror, and the values the ABI and the wire fixed.
 */
#include <errno.h>
#include <string.h>

#include "fluxon/fluxon.h"
#include "owner/ssd/ssd.h"
#include "owner/ssd_tier.h"
#include "testlib.h"

static void engine_codes_are_errno(void)
{
    const struct {
        int code, errnum;
        const char *name;
    } want[] = {
        {SSD_ENOTFOUND, ENOENT, "SSD_ENOTFOUND"}, {SSD_EIO, EIO, "SSD_EIO"},
        {SSD_E2BIG, EFBIG, "SSD_E2BIG"},          {SSD_EINVAL, EINVAL, "SSD_EINVAL"},
        {SSD_ENOMEM, ENOMEM, "SSD_ENOMEM"},       {SSD_ECLOSED, ESHUTDOWN, "SSD_ECLOSED"},
    };
    CHECK(SSD_OK == 0, "SSD_OK is %d", SSD_OK);
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        CHECK(want[i].code == -want[i].errnum, "%s is %d, expected -%s (%d)", want[i].name,
              want[i].code, strerrorname_np(want[i].errnum), -want[i].errnum);
}

static void engine_codes_map_once(void)
{
    CHECK(ssd_tier_fx_code(SSD_OK) == FX_OK, "SSD_OK -> %d", ssd_tier_fx_code(SSD_OK));
    CHECK(ssd_tier_fx_code(SSD_ENOTFOUND) == FX_ENOTFOUND, "SSD_ENOTFOUND -> %s",
          fx_strerror(ssd_tier_fx_code(SSD_ENOTFOUND)));
    /* Every other failure is the owner's, not the key's: never "not found",
     * and never an errno passed on raw as if it were an FX_E* code. */
    const int others[] = {SSD_EIO, SSD_E2BIG, SSD_EINVAL, SSD_ENOMEM, SSD_ECLOSED, -EPERM};
    for (size_t i = 0; i < sizeof others / sizeof others[0]; i++)
        CHECK(ssd_tier_fx_code(others[i]) == FX_EINTERNAL, "%d -> %s", others[i],
              fx_strerror(ssd_tier_fx_code(others[i])));
}

static void public_codes_are_fixed_and_named(void)
{
    const struct {
        int code, value;
        const char *name;
    } want[] = {
        {FX_ENOTFOUND, -1, "KeyNotFound"},   {FX_ENOSPC, -2, "NoSpace"},
        {FX_EINVAL, -3, "InvalidArgument"},  {FX_ECONN, -4, "ConnectionError"},
        {FX_ETIMEDOUT, -5, "Timeout"},       {FX_ENOMEM, -6, "OutOfMemory"},
        {FX_EPROTO, -7, "ProtocolError"},    {FX_EEXIST, -8, "AlreadyExists"},
        {FX_EBUSY, -9, "Busy"},              {FX_ENOTSUP, -10, "NotImplemented"},
        {FX_ESTALE, -11, "Stale"},           {FX_EINTERNAL, -12, "InternalError"},
        {FX_EAUTH, -13, "AuthenticationFailed"}, {FX_EMASTER, -14, "MasterUnavailable"},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        CHECK(want[i].code == want[i].value, "%s is %d, the ABI and the wire say %d",
              want[i].name, want[i].code, want[i].value);
        CHECK(strcmp(fx_strerror(want[i].code), want[i].name) == 0, "fx_strerror(%d) = %s",
              want[i].code, fx_strerror(want[i].code));
    }
    CHECK(strcmp(fx_strerror(-ENOENT - 1000), "Unknown") == 0, "an unknown code has a name");
}

int main(void)
{
    engine_codes_are_errno();
    engine_codes_map_once();
    public_codes_are_fixed_and_named();
    return test_finish();
}
