/*
 * accounting.h - the check that an owner's memory accounting adds up: once
 * the cluster is quiet, every owner's used bytes equal the bytes its replicas
 * hold (nothing leaked to holders, pending puts or lost frees).
 */
#ifndef FX_TESTS_ACCOUNTING_H
#define FX_TESTS_ACCOUNTING_H

#include "fluxon/fluxon.h"

/* Polls fx_stat through c every 10 ms, for up to wait_ms, until each owner's
 * memory_used equals its replica_bytes, then CHECKs that for each owner (the
 * message starts with when). REQUIREs that fx_stat succeeds. */
void accounting_check(fx_client *c, int wait_ms, const char *when);

#endif
