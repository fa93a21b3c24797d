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

/* The MLPs' row blocks. The xpanels panels of X's rows are shared out
 * between t threads as evenly as whole panels allow, and each thread cuts
 * its share into blocks of at most max_rp panels, of sizes as equal as
 * they can be. (Whole blocks dealt out in turn left one thread with a
 * block more: 1024 rows in 96-row blocks are 11 blocks, 480 rows against
 * 544, and the fp32 prefill MLP waited 13 % longer on the second thread.)
 *
 * Share tid of t: panels [q0, q1) in `blocks` blocks; block b starts at
 * fb_row_share_at(&share, b) and ends where block b + 1 starts. */
typedef struct fb_row_share {
    int64_t q0, q1;
    int64_t blocks;
} fb_row_share;

static inline fb_row_share fb_packed_row_share(int64_t xpanels,
                                               int64_t max_rp, int tid, int t)
{
    fb_row_share s;
    s.q0 = xpanels * tid / t;
    s.q1 = xpanels * (tid + 1) / t;
    s.blocks = (s.q1 - s.q0 + max_rp - 1) / max_rp;
    return s;
}

static inline int64_t fb_row_share_at(const fb_row_share *s, int64_t b)
{
    return s->q0 + (s->q1 - s->q0) * b / s->blocks;
}

/* Block b of the share in rows of X (panels of nr rows, m rows in all):
 * its first row in *r0, and how many rows it has. */
static inline int64_t fb_row_share_rows(const fb_row_share *s, int64_t b,
                                        int nr, int64_t m, int64_t *r0)
{
    const int64_t r1 = fb_row_share_at(s, b + 1) * nr;
    *r0 = fb_row_share_at(s, b) * nr;
    return (r1 < m ? r1 : m) - *r0;
}

/* *t lowered to xpanels (every share at least one panel); returns the
 * most panels any block of any share has, for the per-thread buffers. A
 * share is xpanels / t panels or one more; the larger share need not have
 * the larger blocks (8 panels: one block of 8; 9: two of 4 and 5), so
 * both are counted. Threads must then walk the t shares (share tid, tid +
 * nt, ... when OpenMP gives nt < t threads), never reshare among nt. */
static inline int64_t fb_packed_row_plan(int64_t xpanels, int64_t max_rp,
                                         int *t)
{
    if (*t > xpanels)
        *t = (int)xpanels;
    if (*t < 1)
        *t = 1;
    int64_t most = 0;
    for (int64_t n = xpanels / *t; n <= (xpanels + *t - 1) / *t; n++) {
        if (n == 0)
            continue;
        const int64_t blocks = (n + max_rp - 1) / max_rp;
        const int64_t big = (n + blocks - 1) / blocks;
        most = big > most ? big : most;
    }
    return most;
}

#endif /* FB_CPU_PACKED_BLOCKING_H */
