/*
 * strerror.c - the names of the FX_E* codes (fx_strerror), shared by the
 * client library, the servers and the CLI.
 */
#include "fluxon/fluxon.h"

const char *fx_strerror(int err)
{
    switch (err) {
    case FX_OK: return "OK";
    case FX_ENOTFOUND: return "KeyNotFound";
    case FX_ENOSPC: return "NoSpace";
    case FX_EINVAL: return "InvalidArgument";
    case FX_ECONN: return "ConnectionError";
    case FX_ETIMEDOUT: return "Timeout";
    case FX_ENOMEM: return "OutOfMemory";
    case FX_EPROTO: return "ProtocolError";
    case FX_EEXIST: return "AlreadyExists";
    case FX_EBUSY: return "Busy";
    case FX_ENOTSUP: return "NotImplemented";
    case FX_ESTALE: return "Stale";
    case FX_EINTERNAL: return "InternalError";
    case FX_EAUTH: return "AuthenticationFailed";
    case FX_EMASTER: return "MasterUnavailable";
    default: return "Unknown";
    }
}
