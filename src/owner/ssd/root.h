/*
 * root.h - the cache roots of the SSD tier (spec 000 §2.2, DESIGN §6).
 *
 * Each configured large_file_paths[i] yields one root,
 * <path>/<cluster_name>_cluster_kv_ssd_storage/<instance>/, created with its
 * parents when missing. Roots on one device (st_dev) are de-duplicated, the
 * first one wins: two directories on one disk are one IO path, not two. Each
 * kept root is locked with flock(LOCK_EX | LOCK_NB) on a "lock" file inside
 * it, so a second store on the same root (another owner, or this process
 * again) fails to open instead of truncating live shard files.
 *
 * Used by store.c only; no IO besides mkdir, stat and the lock file.
 */
#ifndef FX_SSD_ROOT_H
#define FX_SSD_ROOT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct ssd_root {
    char *path;        /* the derived root directory, malloc'd, no trailing '/' */
    dev_t dev;         /* st_dev of the root */
    uint64_t limit;    /* large_limit_size of the path that won this device */
    size_t cfg_index;  /* which large_file_paths[i] it came from */
    int lock_fd;       /* holds the flock; -1 when not locked */
} ssd_root;

/* Derives, creates, stats, de-duplicates and locks the roots of paths[0..n)
 * (limits[i] belongs to paths[i]; cluster and instance are validated by the
 * caller). Returns 0 with *out (malloc'd array, free with root_set_close) and
 * *n_out set, or a negative errno with a message naming the root in err:
 * -EWOULDBLOCK when a root is locked by another store, -EINVAL for a path that
 * is too long, another -errno for a failed mkdir, stat or open. Nothing stays
 * created-and-locked on failure (directories made so far are left). */
int root_set_open(const char *cluster, const char *instance, const char *const *paths,
                  const uint64_t *limits, size_t n, ssd_root **out, size_t *n_out, char *err,
                  size_t errlen);

/* Unlocks and frees the roots (NULL-safe). The directories stay. */
void root_set_close(ssd_root *roots, size_t n);

#endif
