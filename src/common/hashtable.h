/*
 * hashtable.h - uthash with xxHash3 as its hash function.
 *
 * Every module includes uthash through this header so that all tables hash the
 * same way (a table must never be touched from code compiled with another
 * HASH_FUNCTION).
 */
#ifndef FX_COMMON_HASHTABLE_H
#define FX_COMMON_HASHTABLE_H

#include <xxhash.h>

#define HASH_FUNCTION(keyptr, keylen, hashv) \
    (hashv) = (unsigned)XXH3_64bits((const void *)(keyptr), (size_t)(keylen))
#include <uthash.h>
#include <utlist.h>

#endif
