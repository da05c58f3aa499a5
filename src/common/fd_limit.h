/*
 * fd_limit.h - the daemons' open-file limit.
 *
 * Every connection is a file descriptor. The soft RLIMIT_NOFILE a process
 * starts with (often 1024) is far below the connection caps of the
 * listeners (max_connections and friends, 4096 each by default), so the
 * daemons raise it to the hard limit at startup: the caps, not EMFILE,
 * decide when connections are refused.
 */
#ifndef FX_COMMON_FD_LIMIT_H
#define FX_COMMON_FD_LIMIT_H

/* Raises the soft RLIMIT_NOFILE to the hard limit and logs a warning when
 * what is in force stays below wanted descriptors (the caps cannot all be
 * reached then). Returns the soft limit now in force (RLIM_INFINITY is
 * reported as LONG_MAX), or a negative errno when it cannot be read or
 * raised (logged; the limit is then unchanged). */
long fd_limit_raise(unsigned long wanted);

#endif
