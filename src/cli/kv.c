/*
 * kv.c - `fluxon put`, `get`, `del` and `stat`: one libfluxon call each
 * (stat two: the master's line, then one line per owner),
 * against the owner whose client socket is --socket, else $FLUXON_SOCKET,
 * else /tmp/fluxon-$UID/owner0.sock (where `fluxon up` puts it by default).
 *
 * A miss is an answer, not a failure of the tool: it prints exactly
 * "KeyNotFound" on stderr and exits 1, so scripts can tell it apart from the
 * "fluxon CMD: Error: detail" lines of every other failure.
 */
#include "cli/args.h"
#include "cli/cli.h"
#include "cli/progress.h"
#include "cli/stat_format.h"
#include "cli/fileio.h"
#include "fluxon/fluxon.h"

#include <errno.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define STAT_INITIAL_CAP 64

static const char *const key_names[] = {"KEY", "FILE"};

/* Resolves the owner socket: the flag, then the environment, then the
 * default directory of `fluxon up`. */
static const char *socket_path(const char *flag, char *buf, size_t cap)
{
    if (flag)
        return flag;
    const char *env = getenv("FLUXON_SOCKET");
    if (env && *env)
        return env;
    cli_default_dir(buf, cap);
    size_t n = strlen(buf);
    snprintf(buf + n, cap - n, "/owner0.sock");
    return buf;
}

/* Reports a libfluxon error as "fluxon CMD: Name: detail". */
static int fx_fail(const char *cmd, int err)
{
    const char *detail = fx_last_error_detail();
    const char *name = fx_strerror(err);
    size_t n = strlen(name);
    /* Details from the owner often start with the name already. */
    if (detail && strncmp(detail, name, n) == 0 && (detail[n] == ':' || detail[n] == 0))
        fprintf(stderr, "fluxon %s: %s\n", cmd, detail);
    else if (detail && *detail)
        fprintf(stderr, "fluxon %s: %s: %s\n", cmd, name, detail);
    else
        fprintf(stderr, "fluxon %s: %s\n", cmd, fx_strerror(err));
    return CLI_FAIL;
}

static int key_not_found(void)
{
    fputs("KeyNotFound\n", stderr);
    return CLI_FAIL;
}

static fx_client *connect_owner(const char *cmd, const char *flag)
{
    char buf[PATH_MAX];
    int err = FX_ECONN;
    fx_client *c = fx_connect(socket_path(flag, buf, sizeof buf), &err);
    if (!c)
        fx_fail(cmd, err);
    return c;
}

/* The most bytes one value may have: the largest live owner's segment (no
 * value can be placed beyond it), or SIZE_MAX when the cluster does not say. */
static size_t largest_segment(fx_client *c)
{
    size_t n = 0, got = 0;
    if (fx_stat(c, NULL, 0, &n) != 0 || n == 0)
        return SIZE_MAX;
    fx_owner_stat *st = calloc(n, sizeof *st);
    if (!st || fx_stat(c, st, n, &got) != 0) {
        free(st);
        return SIZE_MAX;
    }
    uint64_t most = 0;
    for (size_t i = 0; i < got && i < n; i++)
        if (st[i].live && st[i].memory_capacity > most)
            most = st[i].memory_capacity;
    free(st);
    /* An owner that joined between the two calls may be larger: no limit. */
    if (got > n || most == 0 || most >= SIZE_MAX)
        return SIZE_MAX;
    return (size_t)most;
}

static void on_read_progress(void *ud, size_t done)
{
    progress_update(ud, done);
}

static void put_failed(const char *src, int rc, size_t limit)
{
    if (rc == -EFBIG)
        fprintf(stderr,
                "fluxon put: NoSpace: %s holds more than %zu bytes, the largest owner's memory\n",
                src, limit);
    else
        fprintf(stderr, "fluxon put: %s: %s\n", src, strerror(-rc));
}

/* A regular file of a known size: read straight into the put's staging range
 * in shared memory (fx_put_begin), then published. */
static int put_file(fx_client *c, const char *key, int fd, const char *file, size_t size,
                    progress *pg)
{
    fx_put_handle *h = NULL;
    int rc = fx_put_begin(c, key, strlen(key), size, NULL, &h);
    if (rc != 0) {
        fx_fail("put", rc);
        return CLI_FAIL;
    }
    if ((rc = fio_read_exact_cb(fd, fx_put_handle_data(h), size, on_read_progress, pg)) != 0) {
        fx_put_abort(h);
        fprintf(stderr, "fluxon put: %s: %s\n", file,
                rc == -EIO ? "the file shrank while it was read" : strerror(-rc));
        return CLI_FAIL;
    }
    if ((rc = fx_put_commit(h)) != 0) {
        fx_fail("put", rc);
        return CLI_FAIL;
    }
    return CLI_OK;
}

int cli_put(int argc, char **argv)
{
    const char *sock = NULL, *pos[2];
    size_t npos;
    const struct args_opt opts[] = {{"--socket", NULL, &sock, NULL}};
    const struct args_spec spec = {"put", opts, 1, key_names, 1, 2};
    int rc = args_parse(&spec, argc, argv, pos, &npos);
    if (rc != ARGS_OK)
        return cli_args_exit(rc);

    const char *key = pos[0];
    const char *file = npos > 1 ? pos[1] : "-";
    int fd = STDIN_FILENO;
    /* Open before connecting: a wrong file name is reported without a cluster. */
    if (strcmp(file, "-") != 0 && (fd = open(file, O_RDONLY | O_CLOEXEC)) < 0) {
        fprintf(stderr, "fluxon put: %s: %s\n", file, strerror(errno));
        return CLI_FAIL;
    }
    const char *src = fd == STDIN_FILENO ? "stdin" : file;

    int ret = CLI_FAIL;
    void *val = NULL;
    size_t len = 0;
    progress pg;
    fx_client *c = connect_owner("put", sock);
    if (!c)
        goto out;
    size_t limit = largest_segment(c);
    struct stat st;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
        if ((uint64_t)st.st_size > limit) {
            put_failed(src, -EFBIG, limit);
            goto out;
        }
        progress_start(&pg, key, (uint64_t)st.st_size);
        ret = put_file(c, key, fd, src, (size_t)st.st_size, &pg);
        progress_finish(&pg, ret == CLI_OK);
        goto out;
    }
    progress_start(&pg, key, 0); /* a pipe: its size shows at its end */
    rc = fio_read_all_cb(fd, limit, &val, &len, on_read_progress, &pg);
    progress_finish(&pg, rc == 0);
    if (rc != 0) {
        put_failed(src, rc, limit);
        goto out;
    }
    if ((rc = fx_put(c, key, strlen(key), val, len)) != 0) {
        fx_fail("put", rc);
        goto out;
    }
    ret = CLI_OK;
out:
    free(val);
    fx_close(c);
    if (fd != STDIN_FILENO)
        close(fd);
    return ret;
}

/* Writes the value to stdout, or to path ("-" is stdout too). */
static int write_value(const char *path, const void *data, size_t len)
{
    bool to_stdout = !path || strcmp(path, "-") == 0;
    int fd = to_stdout ? STDOUT_FILENO
                       : open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd < 0) {
        fprintf(stderr, "fluxon get: %s: %s\n", path, strerror(errno));
        return CLI_FAIL;
    }
    int rc = fio_write_all(fd, data, len);
    if (!to_stdout && close(fd) != 0 && rc == 0)
        rc = -errno;
    if (rc != 0) {
        fprintf(stderr, "fluxon get: %s: %s\n", to_stdout ? "stdout" : path, strerror(-rc));
        return CLI_FAIL;
    }
    return CLI_OK;
}

int cli_get(int argc, char **argv)
{
    const char *sock = NULL, *out_path = NULL, *pos[1];
    int verbose = 0;
    size_t npos;
    const struct args_opt opts[] = {
        {"--socket", NULL, &sock, NULL},
        {"-o", "--output", &out_path, NULL},
        {"-v", "--verbose", NULL, &verbose},
    };
    const struct args_spec spec = {"get", opts, 3, key_names, 1, 1};
    int rc = args_parse(&spec, argc, argv, pos, &npos);
    if (rc != ARGS_OK)
        return cli_args_exit(rc);

    const char *key = pos[0];
    fx_holder *h = NULL;
    int ret = CLI_FAIL;
    fx_client *c = connect_owner("get", sock);
    if (!c)
        return CLI_FAIL;
    rc = fx_get(c, key, strlen(key), &h);
    if (rc == FX_ENOTFOUND) {
        ret = key_not_found();
        goto out;
    }
    if (rc != 0) {
        fx_fail("get", rc);
        goto out;
    }
    /* The holder is a view into the owner's shared segment: write it straight out. */
    ret = write_value(out_path, fx_holder_data(h), fx_holder_len(h));
    if (ret == CLI_OK && verbose) {
        int src = fx_holder_source(h);
        if (src == FX_SRC_MEMORY)
            fputs("source=memory\n", stderr);
        else if (src == FX_SRC_SSD)
            fputs("source=ssd\n", stderr);
        else
            fprintf(stderr, "source=unknown(%d)\n", src);
    }
out:
    fx_holder_release(h);
    fx_close(c);
    return ret;
}

int cli_del(int argc, char **argv)
{
    const char *sock = NULL, *pos[1];
    size_t npos;
    const struct args_opt opts[] = {{"--socket", NULL, &sock, NULL}};
    const struct args_spec spec = {"del", opts, 1, key_names, 1, 1};
    int rc = args_parse(&spec, argc, argv, pos, &npos);
    if (rc != ARGS_OK)
        return cli_args_exit(rc);

    fx_client *c = connect_owner("del", sock);
    if (!c)
        return CLI_FAIL;
    rc = fx_delete(c, pos[0], strlen(pos[0]));
    int ret = rc == 0 ? CLI_OK : rc == FX_ENOTFOUND ? key_not_found() : fx_fail("del", rc);
    fx_close(c);
    return ret;
}

/* "master leader=HOST:PORT term=T pid=PID": the pid only when the master
 * runs on this host (a pid elsewhere names nothing here), else "pid=-". */
int cli_stat(int argc, char **argv)
{
    const char *sock = NULL, *pos[1];
    size_t npos;
    int human = 0, json = 0;
    const struct args_opt opts[] = {{"--socket", NULL, &sock, NULL},
                                    {"--human", "-H", NULL, &human},
                                    {"--json", NULL, NULL, &json}};
    const struct args_spec spec = {"stat", opts, 3, NULL, 0, 0};
    int rc = args_parse(&spec, argc, argv, pos, &npos);
    if (rc != ARGS_OK)
        return cli_args_exit(rc);
    if (human && json) {
        fprintf(stderr, "fluxon stat: --human and --json exclude each other\n");
        return CLI_USAGE;
    }

    fx_client *c = connect_owner("stat", sock);
    if (!c)
        return CLI_FAIL;
    int ret = CLI_FAIL;
    size_t cap = STAT_INITIAL_CAP, n = 0;
    fx_owner_stat *st = NULL;
    fx_master_stat ms;
    if ((rc = fx_stat_master(c, &ms)) != 0) {
        fx_fail("stat", rc);
        goto out;
    }
    /* Owners may join between two calls: grow until the answer fits. */
    for (int tries = 0; tries < 4; tries++) {
        fx_owner_stat *bigger = realloc(st, cap * sizeof *st);
        if (!bigger) {
            fprintf(stderr, "fluxon stat: %s\n", strerror(ENOMEM));
            goto out;
        }
        st = bigger;
        if ((rc = fx_stat(c, st, cap, &n)) != 0) {
            fx_fail("stat", rc);
            goto out;
        }
        if (n <= cap)
            break;
        cap = n;
    }
    if (n > cap)
        n = cap;
    char here[256] = "";
    gethostname(here, sizeof here - 1);
    int pid_known = ms.pid > 0 && ms.host[0] && strcmp(ms.host, here) == 0;
    if (stat_print(stdout, human ? STAT_HUMAN : json ? STAT_JSON : STAT_KV, &ms, pid_known, st,
                   n) < 0) {
        fprintf(stderr, "fluxon stat: %s\n", strerror(ENOMEM));
        goto out;
    }
    if (fflush(stdout) != 0) {
        fprintf(stderr, "fluxon stat: stdout: %s\n", strerror(errno));
        goto out;
    }
    ret = CLI_OK;
out:
    free(st);
    fx_close(c);
    return ret;
}
