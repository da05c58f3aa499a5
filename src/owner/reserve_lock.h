/*
 * reserve_lock.h - the machine-wide lock under which owners check the memory
 * available and reserve their segments, one at a time.
 *
 * Owners started side by side (`fluxon up --owners N` starts them together)
 * would each compare their memory_size with the same MemAvailable and could
 * together reserve more than the machine has. Holding this lock from the
 * check to the end of the reservation, each owner sees what the ones before
 * it took. The lock is an flock on RESERVE_LOCK_PATH ($FLUXON_SEGMENT_LOCK
 * overrides it, for tests), a regular file readable by everyone, so owners of
 * every user share it; a holder that dies releases it at once.
 */
#ifndef FX_OWNER_RESERVE_LOCK_H
#define FX_OWNER_RESERVE_LOCK_H

#define RESERVE_LOCK_PATH "/tmp/fluxon-segment-reserve.lock"
/* How long an owner waits before going on without the lock: queued owners
 * may reserve hundreds of GB first. */
#define RESERVE_LOCK_WAIT_MS 600000

/* Takes the lock, waiting up to RESERVE_LOCK_WAIT_MS. Returns its fd, or -1
 * when it could not be opened (something other than a regular file at the
 * path, a FIFO included, is not opened) or not had in time: logged, and the
 * caller goes on without it, as a lone owner would. */
int reserve_lock_take(void);
/* Releases a lock reserve_lock_take() returned (-1: nothing to do). */
void reserve_lock_release(int fd);

#endif
