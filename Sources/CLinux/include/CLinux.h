#ifndef DARKDISK_CLINUX_H
#define DARKDISK_CLINUX_H

#include <sys/prctl.h>

/// prctl(PR_SET_DUMPABLE, dumpable): prctl is variadic, which Swift cannot call.
static inline int darkdisk_set_dumpable(int dumpable) {
    return prctl(PR_SET_DUMPABLE, (unsigned long)dumpable, 0UL, 0UL, 0UL);
}

/// prctl(PR_GET_DUMPABLE).
static inline int darkdisk_get_dumpable(void) {
    return prctl(PR_GET_DUMPABLE, 0UL, 0UL, 0UL, 0UL);
}

#endif
