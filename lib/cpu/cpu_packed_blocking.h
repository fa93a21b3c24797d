/*
 * cpu_packed_blocking.h -- how the packed GEMMs (the bf16 and fp32
 * kernels) cut C into blocks of register-block panels that the threads
 * finish in turn.
 */
#ifndef FB_CPU_PACKED_BLOCKING_H
#define FB_CPU_PACKED_BLOCKING_H

#include <stddef.h>
#include <stdint.h>

/* bytes rounded up to a multiple of 64 (a cache line): every buffer the
 * packed GEMMs carve out of the workspace starts on its own line. */
static inline size_t fb_packed_round64(size_t bytes)
{
    return (bytes + 63) / 64 * 64;
}

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

/* Block (bi, bj) of C: its first A and B panels and how many of each,
 * and its first row and column and how many there are of each (the last
 * block's panels run past m or n: those rows of the panels are zeros). */
typedef struct fb_packed_block {
    int64_t pa0, na, pb0, nb; /* panels */
    int64_t i0, rows, j0, cols;
} fb_packed_block;

static inline fb_packed_block fb_packed_block_at(const fb_packed_blocking *b,
                                                 int64_t bi, int64_t bj,
                                                 int64_t m, int64_t n,
                                                 int mr, int nr)
{
    const int64_t apanels = (m + mr - 1) / mr, bpanels = (n + nr - 1) / nr;
    fb_packed_block k;
    k.pa0 = bi * b->ap, k.pb0 = bj * b->bp;
    k.na = apanels - k.pa0 < b->ap ? apanels - k.pa0 : b->ap;
    k.nb = bpanels - k.pb0 < b->bp ? bpanels - k.pb0 : b->bp;
    k.i0 = k.pa0 * mr, k.j0 = k.pb0 * nr;
    k.rows = m - k.i0 < k.na * mr ? m - k.i0 : k.na * mr;
    k.cols = n - k.j0 < k.nb * nr ? n - k.j0 : k.nb * nr;
    return k;
}

/* The MLPs' row blocks: rows of X in *rp panels per block (at most
 * max_rp, fewer when there are too few panels for every thread), *blocks
 * of them; *t lowered to the number of blocks. */
static inline void fb_packed_row_blocks(int64_t xpanels, int64_t max_rp,
                                        int *t, int64_t *rp, int64_t *blocks)
{
    *rp = (xpanels + *t - 1) / *t;
    if (*rp > max_rp)
        *rp = max_rp;
    *blocks = (xpanels + *rp - 1) / *rp;
    if (*t > *blocks)
        *t = (int)*blocks;
}

#endif /* FB_CPU_PACKED_BLOCKING_H */
