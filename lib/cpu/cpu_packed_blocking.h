/*
 * cpu_packed_blocking.h -- how the packed GEMMs (the bf16 and fp32
 * kernels) cut C into blocks of register-block panels that the threads
 * finish in turn.
 */
#ifndef FB_CPU_PACKED_BLOCKING_H
#define FB_CPU_PACKED_BLOCKING_H

#include <stdint.h>

typedef struct fb_packed_blocking {
    int64_t ap, bp;           /* panels per block */
    int64_t mblocks, nblocks;
} fb_packed_blocking;

/* Blocks of at most max_ap A panels by max_bp B panels, in a number that
 * the t threads share evenly where the panels allow: more column blocks
 * first (each thread then reads mostly its own columns of B), then more
 * row blocks. */
static inline fb_packed_blocking fb_packed_blocks(int64_t apanels,
                                                  int64_t bpanels, int t,
                                                  int64_t max_ap,
                                                  int64_t max_bp)
{
    fb_packed_blocking b;
    b.mblocks = (apanels + max_ap - 1) / max_ap;
    b.nblocks = (bpanels + max_bp - 1) / max_bp;
    while ((b.mblocks * b.nblocks) % t != 0 && b.nblocks < bpanels)
        b.nblocks++;
    while ((b.mblocks * b.nblocks) % t != 0 && b.mblocks < apanels)
        b.mblocks++;
    b.ap = (apanels + b.mblocks - 1) / b.mblocks;
    b.bp = (bpanels + b.nblocks - 1) / b.nblocks;
    b.mblocks = (apanels + b.ap - 1) / b.ap;
    b.nblocks = (bpanels + b.bp - 1) / b.bp;
    return b;
}

#endif /* FB_CPU_PACKED_BLOCKING_H */
