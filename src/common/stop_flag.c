/*
 * stop_flag.c - a stop request a sleeping worker thread sees at once (see
 * stop_flag.h).
 */
#include "common/stop_flag.h"

#include <errno.h>
#include <time.h>

void stop_flag_init(stop_flag *f)
{
    pthread_mutex_init(&f->mu, NULL);
    pthread_cond_init(&f->cv, NULL);
    f->stop = false;
}

void stop_flag_destroy(stop_flag *f)
{
    pthread_mutex_destroy(&f->mu);
    pthread_cond_destroy(&f->cv);
}

bool stop_flag_sleep(stop_flag *f, uint64_t ms)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += (time_t)(ms / 1000);
    until.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&f->mu);
    while (!f->stop && pthread_cond_timedwait(&f->cv, &f->mu, &until) != ETIMEDOUT)
        ;
    bool stop = f->stop;
    pthread_mutex_unlock(&f->mu);
    return stop;
}

void stop_flag_raise(stop_flag *f)
{
    pthread_mutex_lock(&f->mu);
    f->stop = true;
    pthread_cond_signal(&f->cv);
    pthread_mutex_unlock(&f->mu);
}
