/*
 * cluster_dir.c - the directory of a local cluster (see cluster_dir.h): its
 * paths, listing and removing its runtime files, SSD tiers and etcd data,
 * telling whether a pid file names this directory's running daemon, and the
 * directory lock that keeps one `fluxon up` or `fluxon down` at a time.
 *
 * Used by up.c and down.c; it signals nothing itself (proc.c stops daemons).
 */
#include "cli/cluster_dir.h"

#include "cli/proc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

int cluster_path(char *out, size_t cap, const char *dir, const char *name)
{
    if ((size_t)snprintf(out, cap, "%s/%s", dir, name) >= cap)
        return -ENAMETOOLONG;
    return 0;
}

int cluster_owner_path(char *out, size_t cap, const char *dir, size_t i, const char *ext)
{
    int n = snprintf(out, cap, "%s/owner%zu.%s", dir, i, ext);
    return n < 0 || (size_t)n >= cap ? -ENAMETOOLONG : 0;
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool has_suffix(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

void cluster_names_free(char **names, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(names[i]);
}

int cluster_list(const char *dir, const char *prefix, const char *suffix, char **names,
                 size_t max)
{
    DIR *d = opendir(dir);
    if (!d)
        return -errno;
    size_t n = 0;
    struct dirent *e;
    while (n < max && (e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, prefix, strlen(prefix)) != 0 || !has_suffix(e->d_name, suffix))
            continue;
        if (!(names[n] = strdup(e->d_name))) {
            closedir(d);
            cluster_names_free(names, n);
            return -ENOMEM;
        }
        n++;
    }
    closedir(d);
    qsort(names, n, sizeof names[0], cmp_names);
    return (int)n;
}

void cluster_remove_matching(const char *dir, const char *prefix, const char *suffix)
{
    char *names[CLUSTER_MAX_OWNERS];
    char path[PATH_MAX];
    int n = cluster_list(dir, prefix, suffix, names, CLUSTER_MAX_OWNERS);
    for (int i = 0; i < n; i++)
        if (cluster_path(path, sizeof path, dir, names[i]) == 0)
            unlink(path);
    if (n > 0)
        cluster_names_free(names, (size_t)n);
}

void cluster_remove_ssd_dirs(const char *dir)
{
    char *ssds[CLUSTER_MAX_OWNERS], *inst[CLUSTER_MAX_OWNERS], *files[CLUSTER_MAX_OWNERS];
    char base[PATH_MAX], root[PATH_MAX], idir[PATH_MAX], path[PATH_MAX];
    int n = cluster_list(dir, "ssd", "", ssds, CLUSTER_MAX_OWNERS);
    for (int i = 0; i < n; i++) {
        if (strspn(ssds[i] + 3, "0123456789") != strlen(ssds[i] + 3) || !ssds[i][3] ||
            cluster_path(base, sizeof base, dir, ssds[i]) != 0 ||
            cluster_path(root, sizeof root, base, CLUSTER_NAME "_cluster_kv_ssd_storage") != 0)
            continue;
        int m = cluster_list(root, "", "", inst, CLUSTER_MAX_OWNERS);
        for (int j = 0; j < m; j++) {
            if (inst[j][0] == '.' || cluster_path(idir, sizeof idir, root, inst[j]) != 0)
                continue;
            int k = cluster_list(idir, "shard-", "", files, CLUSTER_MAX_OWNERS);
            for (int f = 0; f < k; f++)
                if (cluster_path(path, sizeof path, idir, files[f]) == 0)
                    unlink(path);
            if (k > 0)
                cluster_names_free(files, (size_t)k);
            if (cluster_path(path, sizeof path, idir, "lock") == 0)
                unlink(path);
            rmdir(idir);
        }
        if (m > 0)
            cluster_names_free(inst, (size_t)m);
        rmdir(root);
        rmdir(base);
    }
    if (n > 0)
        cluster_names_free(ssds, (size_t)n);
}

/* nftw's callback: one entry of the tree, its contents already gone. */
static int remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    if (type == FTW_DP)
        rmdir(path);
    else
        unlink(path);
    return 0;
}

void cluster_remove_tree(const char *dir, const char *name)
{
    char path[PATH_MAX];
    if (cluster_path(path, sizeof path, dir, name) == 0)
        nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

bool cluster_started_for_dir(pid_t pid, const char *dir, const char *pidname)
{
    char mark[PATH_MAX], name[NAME_MAX + 1];
    size_t n = strlen(pidname);
    if (n < 4 || n - 4 > NAME_MAX - 5 || strcmp(pidname + n - 4, ".pid") != 0)
        return false;
    if (strcmp(pidname, CLUSTER_ETCD_PID) == 0)
        snprintf(name, sizeof name, CLUSTER_ETCD_DATA);
    else if (strncmp(pidname, "master", 6) == 0) /* master.pid, master<j>.pid */
        snprintf(name, sizeof name, "%.*s.addr", (int)(n - 4), pidname);
    else
        snprintf(name, sizeof name, "%.*s.yaml", (int)(n - 4), pidname);
    return cluster_path(mark, sizeof mark, dir, name) == 0 && proc_has_arg(pid, mark);
}

pid_t cluster_pidfile_daemon(const char *dir, const char *name)
{
    char path[PATH_MAX];
    pid_t pid;
    if (cluster_path(path, sizeof path, dir, name) != 0 || proc_pidfile_read(path, &pid) != 0)
        return 0;
    bool kind = strcmp(name, CLUSTER_ETCD_PID) == 0 ? proc_is_etcd(pid) : proc_is_fluxon(pid);
    return proc_alive(pid) && kind ? pid : 0;
}

pid_t cluster_live_daemon(const char *dir, const char *name)
{
    pid_t pid = cluster_pidfile_daemon(dir, name);
    return pid && cluster_started_for_dir(pid, dir, name) ? pid : 0;
}

/* DIR/cluster.lock while this process holds it (-1: not held); a forked
 * child that does not exec (the ping probe) closes its copy first thing
 * (cluster_unlock), so a probe that outlives a killed `up` cannot keep the
 * directory locked. */
static int held_lock = -1;

int cluster_lock(const char *cmd, const char *dir, bool create)
{
    char path[PATH_MAX];
    if (cluster_path(path, sizeof path, dir, "cluster.lock") != 0) {
        fprintf(stderr, "fluxon %s: %s: path too long\n", cmd, dir);
        return -1;
    }
    int fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW | (create ? O_CREAT : 0), 0644);
    if (fd < 0 && !create && errno == ENOENT)
        return 0;
    if (fd < 0) {
        fprintf(stderr, "fluxon %s: %s: %s\n", cmd, path, strerror(errno));
        return -1;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        fprintf(stderr, "fluxon %s: waiting for another fluxon up or down in %s\n", cmd, dir);
        while (flock(fd, LOCK_EX) != 0) {
            if (errno == EINTR)
                continue;
            fprintf(stderr, "fluxon %s: cannot lock %s: %s\n", cmd, path, strerror(errno));
            close(fd);
            return -1;
        }
    }
    held_lock = fd;
    return 0;
}

void cluster_unlock(void)
{
    if (held_lock >= 0)
        close(held_lock);
    held_lock = -1;
}
