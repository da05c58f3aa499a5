/*
 * stop_flag.h - how a loop thread asks a worker thread (one that makes
 * blocking calls: etcd) to stop, and how the worker sleeps between calls
 * without missing that request. The mutex also guards whatever else the two
 * threads share (the users' own fields), so it is public.
 */
#ifndef FX_COMMON_STOP_FLAG_H
#define FX_COMMON_STOP_FLAG_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct stop_flag {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool stop; /* under mu */
} stop_flag;

void stop_flag_init(stop_flag *f);
void stop_flag_destroy(stop_flag *f);
/* Sleeps up to ms, less when asked to stop; returns true when asked. */
bool stop_flag_sleep(stop_flag *f, uint64_t ms);
/* Asks the worker to stop (wakes it from stop_flag_sleep). */
void stop_flag_raise(stop_flag *f);

#endif
