/*
 * proc.h - the processes of a local cluster: find the daemon binaries, start
 * them detached, tell whether a pid still names one of them, stop them, and
 * keep their pids in pid files.
 *
 * A pid file outlives the process it names, and the kernel reuses pids, so
 * nothing here signals a pid before proc_is_fluxon() (or, for the etcd of a
 * cluster with standby masters, proc_is_etcd()) has confirmed what it runs. Functions return 0 or -errno.
 */
#ifndef FX_CLI_PROC_H
#define FX_CLI_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Finds the executable `name`: only in bin_dir when bin_dir is given; else
 * beside the running program (/proc/self/exe); else in $PATH. Writes its path
 * into out. -ENOENT when there is none. */
int proc_find_binary(const char *name, const char *bin_dir, char *out, size_t cap);

/* Starts argv (argv[0] a path) as a daemon: its own session (setsid), stdin
 * from /dev/null, stdout and stderr to log_path (truncated), default signal
 * dispositions, no other inherited descriptors. Returns 0 with *pid once the
 * exec has succeeded, or -errno of what failed (the open of the log, fork,
 * exec) with nothing left running. The process is a child of the caller. */
int proc_spawn(char *const argv[], const char *log_path, pid_t *pid);

/* For a child of the caller: 1 (and its wait status in *status) when it has
 * exited and is now reaped, 0 while it runs, -errno on error. */
int proc_reap(pid_t pid, int *status);

/* Describes a wait status ("exited with status 2", "was killed by signal 9"). */
void proc_describe_status(int status, char *buf, size_t cap);

/* True when pid names a running process (a zombie counts as gone). */
bool proc_alive(pid_t pid);

/* True when pid runs a Fluxon daemon: its command name, or the base name of
 * one of its arguments, is fluxon-master or fluxon-owner (or another
 * "fluxon-" program, by command name). */
bool proc_is_fluxon(pid_t pid);

/* True when pid runs etcd (the member of a cluster with standby masters):
 * its command name, or the base name of one of its arguments, is etcd. */
bool proc_is_etcd(pid_t pid);

/* True when one of pid's arguments is exactly arg (false when its command
 * line cannot be read: then it is not known to be ours). */
bool proc_has_arg(pid_t pid, const char *arg);

/* Sends SIGTERM to each pid, waits up to term_ms for all to go, then sends
 * SIGKILL to those left and waits up to kill_ms more. Reaps those that are
 * children of the caller. Returns 0 when all are gone, -ETIMEDOUT when one
 * survived, -EPERM when one could not be signalled. */
int proc_stop(const pid_t *pids, size_t n, int term_ms, int kill_ms);

/* Writes "PID\n" to path atomically (tmp + rename). */
int proc_pidfile_write(const char *path, pid_t pid);
/* Reads a pid file: -ENOENT when absent, -EINVAL when it holds no valid pid. */
int proc_pidfile_read(const char *path, pid_t *pid);

/* Monotonic milliseconds, and a sleep that returns early on a signal. */
int64_t proc_now_ms(void);
void proc_sleep_ms(int ms);

#endif
