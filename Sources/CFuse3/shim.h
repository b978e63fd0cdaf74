#ifndef DARKDISK_CFUSE3_SHIM_H
#define DARKDISK_CFUSE3_SHIM_H

// The low-level libfuse 3 API at the 3.12 level (Debian 12 ships 3.14).
// Do not define _FILE_OFFSET_BITS here: Swift's Glibc already uses 64-bit off_t.
#define FUSE_USE_VERSION 312
#include <fuse_lowlevel.h>
#include <errno.h>
#include <stdlib.h>
// getxattr/setxattr/removexattr for the command line's acts on mounted paths (Glibc's module lacks them).
#include <sys/xattr.h>

/// `fuse_session_loop_mt` is a macro; Swift needs a real function.
static inline int darkdisk_fuse_session_loop_mt(struct fuse_session *se, unsigned max_threads, unsigned max_idle) {
    struct fuse_loop_config *config = fuse_loop_cfg_create();
    if (config == NULL) return -ENOMEM;
    fuse_loop_cfg_set_clone_fd(config, 0);
    fuse_loop_cfg_set_max_threads(config, max_threads);
    fuse_loop_cfg_set_idle_threads(config, max_idle);
    int rc = fuse_session_loop_mt(se, config);
    fuse_loop_cfg_destroy(config);
    return rc;
}

/// Builds a `fuse_args` from argv (FUSE_ARGS_INIT is a macro).
static inline struct fuse_args darkdisk_fuse_args(int argc, char **argv) {
    struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
    return args;
}

#endif
