/*
 * io_slot.c - one IO request whose caller waits for it (store_internal.h). The
 * write path submits each piece of a value to the device's engine through a
 * slot and waits on the slot's io_wait: the engine thread's completion marks
 * the slot done and signals the condition variable. Several slots may share
 * one io_wait; its lock guards their done flags.
 */
#include "owner/ssd/store_internal.h"

void ssd_io_wait_init(io_wait *w)
{
    pthread_mutex_init(&w->lock, NULL);
    pthread_cond_init(&w->cv, NULL);
}

void ssd_io_wait_destroy(io_wait *w)
{
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->lock);
}

/* Engine thread: marks the slot done and wakes its waiter. Touches nothing
 * after the unlock: the waiter may free the slot and the io_wait right then. */
static void io_done(uring_req *req)
{
    io_slot *sl = req->ud;
    io_wait *w = sl->w;
    pthread_mutex_lock(&w->lock);
    sl->done = true;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->lock);
}

void ssd_slot_submit(uring_engine *eng, io_slot *sl, io_wait *w, int op, int fd, void *buf,
                 uint64_t len, uint64_t off)
{
    sl->req = (uring_req){.op = op, .fd = fd, .buf = buf, .len = (uint32_t)len, .off = off,
                          .done = io_done, .ud = sl};
    sl->w = w;
    sl->done = false; /* no IO of this slot is in flight: no lock needed */
    uring_submit(eng, &sl->req);
}

void ssd_slot_wait(io_wait *w, io_slot *sl)
{
    pthread_mutex_lock(&w->lock);
    while (!sl->done)
        pthread_cond_wait(&w->cv, &w->lock);
    pthread_mutex_unlock(&w->lock);
}
