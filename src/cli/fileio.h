/*
 * fileio.h - the file chores of the `fluxon` command: read a whole stream,
 * write all of a buffer, replace a small file atomically, and show
 * the end of a log file. All return 0 or -errno; errno itself is not relied on.
 */
#ifndef FX_CLI_FILEIO_H
#define FX_CLI_FILEIO_H

#include <stdio.h>
#include <sys/types.h>

/* Reads fd to its end into a malloc'd buffer (at least one byte is
 * allocated, so *buf is never NULL on success). The caller frees *buf.
 * -EFBIG when the stream holds more than limit bytes: a regular file is
 * refused by its size, a pipe once limit + 1 bytes arrived, so memory stays
 * bounded whatever the input (an endless `yes |`). On failure nothing is
 * allocated and *buf, *len are unchanged. */
int fio_read_all(int fd, size_t limit, void **buf, size_t *len);
/* The same, calling on_read(ud, bytes so far) after each read of at most
 * FIO_READ_STEP bytes (for a progress bar); on_read may be NULL. */
#define FIO_READ_STEP (4u << 20)
int fio_read_all_cb(int fd, size_t limit, void **buf, size_t *len,
                    void (*on_read)(void *ud, size_t done), void *ud);
/* Reads exactly len bytes of fd into buf in steps as fio_read_all_cb does;
 * -EIO when the stream ends first. */
int fio_read_exact_cb(int fd, void *buf, size_t len, void (*on_read)(void *ud, size_t done),
                      void *ud);

/* Writes all len bytes, retrying short writes and EINTR. */
int fio_write_all(int fd, const void *buf, size_t len);

/* Replaces path with the bytes given: writes "path.tmp", then renames it over
 * path, so a reader sees the old file or the whole new one. */
int fio_write_atomic(const char *path, const void *buf, size_t len, mode_t mode);

/* Reads at most cap-1 bytes of path into buf and NUL-terminates it. */
int fio_read_small(const char *path, char *buf, size_t cap, size_t *len);

/* Prints the last `lines` lines of path to out, under a header naming it;
 * says so when the file cannot be read or is empty. */
void fio_print_tail(FILE *out, const char *path, int lines);

#endif
