/*
 * proc.c - starting, recognising and stopping the daemons of a local cluster
 * (see proc.h).
 *
 * proc_spawn uses fork + exec with a close-on-exec pipe: the child writes its
 * errno into the pipe when exec fails, so the parent learns of a missing or
 * non-executable binary at once instead of from a silent early exit. The
 * daemon gets its own session so that a terminal's hangup or Ctrl-C does not
 * reach it, and no descriptor of ours, so a shell's `$(fluxon up)` capture
 * is not held open by the daemons it starts.
 */
#include "cli/proc.h"

#include "cli/fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int64_t proc_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void proc_sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* ---- finding the binaries ------------------------------------------------ */

static int try_dir(const char *dir, size_t dlen, const char *name, char *out, size_t cap)
{
    struct stat st;
    if (dlen == 0) { /* an empty PATH entry means the current directory */
        dir = ".";
        dlen = 1;
    }
    if ((size_t)snprintf(out, cap, "%.*s/%s", (int)dlen, dir, name) >= cap)
        return -ENAMETOOLONG;
    if (stat(out, &st) == 0 && S_ISREG(st.st_mode) && access(out, X_OK) == 0)
        return 0;
    return -ENOENT;
}

int proc_find_binary(const char *name, const char *bin_dir, char *out, size_t cap)
{
    if (bin_dir)
        return try_dir(bin_dir, strlen(bin_dir), name, out, cap);

    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n > 0) {
        self[n] = '\0';
        char *slash = strrchr(self, '/');
        if (slash && try_dir(self, (size_t)(slash - self), name, out, cap) == 0)
            return 0;
    }

    const char *path = getenv("PATH");
    if (!path)
        path = "/usr/local/bin:/usr/bin:/bin";
    for (const char *p = path;;) {
        const char *end = strchr(p, ':');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (try_dir(p, len, name, out, cap) == 0)
            return 0;
        if (!end)
            break;
        p = end + 1;
    }
    return -ENOENT;
}

/* ---- spawning -------------------------------------------------------------- */

/* Moves fd above the standard descriptors (close-on-exec), so that the dup2
 * calls onto 0, 1 and 2 in the child cannot clobber it. */
static int above_stdio(int fd)
{
    if (fd < 0 || fd > STDERR_FILENO)
        return fd;
    int moved = fcntl(fd, F_DUPFD_CLOEXEC, STDERR_FILENO + 1);
    close(fd);
    return moved;
}

/* In the child: closes every descriptor from 3 up except keep. */
static void close_from_3_except(int keep)
{
#ifdef SYS_close_range
    if ((keep == 3 || syscall(SYS_close_range, 3u, (unsigned)keep - 1, 0u) == 0) &&
        syscall(SYS_close_range, (unsigned)keep + 1, ~0u, 0u) == 0)
        return;
#endif
    long max = sysconf(_SC_OPEN_MAX);
    if (max < 0 || max > 65536)
        max = 65536;
    for (int fd = 3; fd < max; fd++)
        if (fd != keep)
            close(fd);
}

/* In the child, between fork and exec: only calls that are safe there. */
static void child_exec(char *const argv[], int nullfd, int logfd, int errfd)
{
    static const int reset[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGCHLD};
    sigset_t none;
    int e;

    if (setsid() < 0)
        goto fail;
    if (dup2(nullfd, STDIN_FILENO) < 0 || dup2(logfd, STDOUT_FILENO) < 0 ||
        dup2(logfd, STDERR_FILENO) < 0)
        goto fail;
    /* A shell starts background jobs with SIGINT and SIGQUIT ignored, and
     * ignored signals survive exec: give the daemon the defaults. */
    for (size_t i = 0; i < sizeof reset / sizeof reset[0]; i++)
        signal(reset[i], SIG_DFL);
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    close_from_3_except(errfd);
    execv(argv[0], argv);
fail:
    e = errno;
    if (write(errfd, &e, sizeof e) < 0) {
        /* nothing more to tell anyone */
    }
    _exit(127);
}

int proc_spawn(char *const argv[], const char *log_path, pid_t *pid_out)
{
    int rc = 0;
    int logfd = -1, nullfd = -1, pipefd[2] = {-1, -1};

    logfd = above_stdio(open(log_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    if (logfd < 0) {
        rc = -errno;
        goto out;
    }
    nullfd = above_stdio(open("/dev/null", O_RDONLY | O_CLOEXEC));
    if (nullfd < 0) {
        rc = -errno;
        goto out;
    }
    if (pipe2(pipefd, O_CLOEXEC) != 0) {
        rc = -errno;
        goto out;
    }
    pipefd[0] = above_stdio(pipefd[0]);
    pipefd[1] = above_stdio(pipefd[1]);
    if (pipefd[0] < 0 || pipefd[1] < 0) {
        rc = -errno;
        goto out;
    }

    pid_t pid = fork();
    if (pid < 0) {
        rc = -errno;
        goto out;
    }
    if (pid == 0)
        child_exec(argv, nullfd, logfd, pipefd[1]);

    close(pipefd[1]);
    pipefd[1] = -1;
    int child_errno = 0;
    ssize_t n;
    do
        n = read(pipefd[0], &child_errno, sizeof child_errno);
    while (n < 0 && errno == EINTR);
    if (n == (ssize_t)sizeof child_errno) {
        /* exec failed: the child has exited or is about to; reap it. */
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
            ;
        rc = child_errno ? -child_errno : -ECHILD;
        goto out;
    }
    *pid_out = pid;

out:
    if (logfd >= 0)
        close(logfd);
    if (nullfd >= 0)
        close(nullfd);
    if (pipefd[0] >= 0)
        close(pipefd[0]);
    if (pipefd[1] >= 0)
        close(pipefd[1]);
    return rc;
}

int proc_reap(pid_t pid, int *status)
{
    int st;
    pid_t r;
    do
        r = waitpid(pid, &st, WNOHANG);
    while (r < 0 && errno == EINTR);
    if (r < 0)
        return -errno;
    if (r == 0)
        return 0;
    if (status)
        *status = st;
    return 1;
}

void proc_describe_status(int status, char *buf, size_t cap)
{
    if (WIFEXITED(status))
        snprintf(buf, cap, "exited with status %d", WEXITSTATUS(status));
    else if (WIFSIGNALED(status))
        snprintf(buf, cap, "was killed by signal %d (%s)", WTERMSIG(status),
                 strsignal(WTERMSIG(status)));
    else
        snprintf(buf, cap, "stopped (wait status 0x%x)", (unsigned)status);
}

/* ---- recognising ---------------------------------------------------------- */

bool proc_alive(pid_t pid)
{
    char path[64], stat[512];
    if (pid <= 0)
        return false;
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    int rc = fio_read_small(path, stat, sizeof stat, NULL);
    if (rc == -ENOENT || rc == -ESRCH)
        return false;
    if (rc != 0) /* no /proc: fall back on the signal probe */
        return kill(pid, 0) == 0 || errno == EPERM;
    /* "PID (comm) S ...": comm may hold spaces and ')', so take the last ')'. */
    const char *paren = strrchr(stat, ')');
    if (!paren || paren[1] != ' ')
        return true;
    char state = paren[2];
    return state != 'Z' && state != 'X' && state != 'x';
}

static bool is_daemon_name(const char *word, const void *unused)
{
    (void)unused;
    const char *base = strrchr(word, '/');
    base = base ? base + 1 : word;
    return strcmp(base, "fluxon-master") == 0 || strcmp(base, "fluxon-owner") == 0;
}

static bool is_same_arg(const char *word, const void *arg)
{
    return strcmp(word, arg) == 0;
}

/* True when one of pid's arguments satisfies match (false when its command
 * line cannot be read). */
static bool any_arg(pid_t pid, bool (*match)(const char *word, const void *ctx), const void *ctx)
{
    char path[64], buf[8192];
    size_t len;
    snprintf(path, sizeof path, "/proc/%d/cmdline", (int)pid);
    if (fio_read_small(path, buf, sizeof buf, &len) != 0)
        return false;
    for (size_t i = 0; i < len; i += strlen(buf + i) + 1)
        if (match(buf + i, ctx))
            return true;
    return false;
}

bool proc_is_fluxon(pid_t pid)
{
    char path[64], buf[64];
    size_t len;
    if (pid <= 0)
        return false;

    /* The command name is set by exec from the file name (a script's too). */
    snprintf(path, sizeof path, "/proc/%d/comm", (int)pid);
    if (fio_read_small(path, buf, sizeof buf, &len) == 0 && strncmp(buf, "fluxon-", 7) == 0)
        return true;

    /* Wrapped daemons (valgrind, timeout, an interpreter): look at each
     * argument's base name. A path that merely contains "fluxon-", such as
     * the default directory /tmp/fluxon-$UID, does not count. */
    return any_arg(pid, is_daemon_name, NULL);
}

static bool is_etcd_name(const char *word, const void *unused)
{
    (void)unused;
    const char *base = strrchr(word, '/');
    return strcmp(base ? base + 1 : word, "etcd") == 0;
}

bool proc_is_etcd(pid_t pid)
{
    char path[64], buf[64];
    size_t len;
    if (pid <= 0)
        return false;
    snprintf(path, sizeof path, "/proc/%d/comm", (int)pid);
    if (fio_read_small(path, buf, sizeof buf, &len) == 0 && strcmp(buf, "etcd\n") == 0)
        return true;
    return any_arg(pid, is_etcd_name, NULL); /* wrapped, as proc_is_fluxon allows */
}

bool proc_has_arg(pid_t pid, const char *arg)
{
    return pid > 0 && any_arg(pid, is_same_arg, arg);
}

/* ---- stopping --------------------------------------------------------------- */

/* Waits until none of pids[i] with left[i] set is alive, or deadline passes.
 * Returns the number still alive. */
static size_t wait_gone(const pid_t *pids, bool *left, size_t n, int64_t deadline)
{
    for (;;) {
        size_t alive = 0;
        for (size_t i = 0; i < n; i++) {
            if (!left[i])
                continue;
            proc_reap(pids[i], NULL); /* our own child would stay a zombie */
            if (proc_alive(pids[i]))
                alive++;
            else
                left[i] = false;
        }
        if (alive == 0 || proc_now_ms() >= deadline)
            return alive;
        proc_sleep_ms(10);
    }
}

static int signal_all(const pid_t *pids, const bool *left, size_t n, int sig)
{
    int rc = 0;
    for (size_t i = 0; i < n; i++)
        if (left[i] && kill(pids[i], sig) != 0 && errno != ESRCH)
            rc = -errno;
    return rc;
}

int proc_stop(const pid_t *pids, size_t n, int term_ms, int kill_ms)
{
    enum { MAX_STOP = 256 };
    bool left[MAX_STOP];
    if (n > MAX_STOP)
        return -E2BIG;
    for (size_t i = 0; i < n; i++)
        left[i] = pids[i] > 0;

    int rc = signal_all(pids, left, n, SIGTERM);
    if (wait_gone(pids, left, n, proc_now_ms() + term_ms) == 0)
        return 0;
    int krc = signal_all(pids, left, n, SIGKILL);
    if (wait_gone(pids, left, n, proc_now_ms() + kill_ms) == 0)
        return 0;
    if (rc == 0)
        rc = krc;
    return rc ? rc : -ETIMEDOUT;
}

/* ---- pid files ---------------------------------------------------------------- */

int proc_pidfile_write(const char *path, pid_t pid)
{
    char buf[32];
    int n = snprintf(buf, sizeof buf, "%d\n", (int)pid);
    return fio_write_atomic(path, buf, (size_t)n, 0644);
}

int proc_pidfile_read(const char *path, pid_t *pid)
{
    char buf[64], *end;
    int rc = fio_read_small(path, buf, sizeof buf, NULL);
    if (rc != 0)
        return rc;
    errno = 0;
    long v = strtol(buf, &end, 10);
    while (*end == '\n' || *end == ' ' || *end == '\r' || *end == '\t')
        end++;
    if (errno != 0 || end == buf || *end != '\0' || v <= 0 || v > INT_MAX)
        return -EINVAL;
    *pid = (pid_t)v;
    return 0;
}
