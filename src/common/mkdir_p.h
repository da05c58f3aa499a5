/*
 * mkdir_p.h - `mkdir -p`: a directory and its missing parents. Used where a
 * configured path may name directories that do not exist yet (the CLI's
 * cluster directory, the SSD cache roots, the directory of an owner's client
 * socket).
 */
#ifndef FX_COMMON_MKDIR_P_H
#define FX_COMMON_MKDIR_P_H

#include <sys/types.h>

/* Creates path and its missing parents (the parents with parent_mode, the
 * last one with leaf_mode, both less the umask). An existing directory is
 * fine; an existing non-directory is -ENOTDIR. Returns 0 or a negative errno. */
int mkdir_p(const char *path, mode_t parent_mode, mode_t leaf_mode);

/* mkdir_p for the directory part of file_path ("a/b/c.sock" -> "a/b"), every
 * component with mode; 0 when there is none ("c.sock", "/c.sock"). */
int mkdir_p_parent(const char *file_path, mode_t mode);

#endif
