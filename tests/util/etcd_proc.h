/*
 * etcd_proc.h - a real, single-member etcd (Debian's etcd-server,
 * /usr/bin/etcd) for tests: started in a fresh temporary directory on free
 * loopback ports, ready once it answers /health, and always stopped.
 *
 * The member listens for clients and peers on 127.0.0.1 only, on ports that
 * were free a moment before (a start that loses its port to someone else is
 * tried again on new ones), with its data and its log (etcd.log) in the
 * directory and a name unique to it (the directory's). It dies with the
 * thread that started it (PR_SET_PDEATHSIG, as the cluster's processes do),
 * so start it from the main thread; etcd_proc_stop() ends it and removes the
 * directory, and if the program exits first (a REQUIRE failed) the same
 * happens at exit (testlib.h), so the etcd_proc must stay valid until then.
 */
#ifndef FX_TESTS_ETCD_PROC_H
#define FX_TESTS_ETCD_PROC_H

#include <stdbool.h>
#include <sys/types.h>

#define ETCD_PROC_BIN "/usr/bin/etcd"

typedef struct etcd_proc {
    char dir[256];      /* /tmp/fx-test-etcd-XXXXXX */
    char endpoint[64];  /* "http://127.0.0.1:PORT", for etcd_client_new */
    char hostport[32];  /* "127.0.0.1:PORT" */
    pid_t pid;          /* 0 once stopped */
} etcd_proc;

/* True when ETCD_PROC_BIN exists and may be run (else a test skips, 77). */
bool etcd_proc_available(void);

/* Starts etcd and waits (up to 30 s) until it answers. Returns 0, or -1
 * after printing why (and its log) to stderr, with nothing left running and
 * no directory left behind. */
int etcd_proc_start(etcd_proc *ep);

/* Stops etcd: SIGTERM, SIGKILL after 5 s, reaped; then removes its
 * directory. Returns 0 when it exited on SIGTERM, else -1 (after printing
 * why and its log). A stopped etcd_proc may be stopped again (no-op). */
int etcd_proc_stop(etcd_proc *ep);

/* Prints the tail of etcd's log to stderr. */
void etcd_proc_dump_log(const etcd_proc *ep);

#endif
