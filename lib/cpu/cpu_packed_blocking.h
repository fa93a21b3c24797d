/* SPDX-License-Identifier: BSD-3-Clause */
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

/* The MLPs' row blocks, handed out in turn from a queue of X's panels:
 * a thread takes its next block when it has finished the last, so a
 * thread that runs slower (a vCPU the hypervisor shares) takes fewer.
 * Blocks are at most fb_row_queue.most panels, and shrink towards the end
 * (what is left over twice the threads, down to a quarter of the most) so
 * that the threads finish together; fixed blocks dealt out ahead leave
 * one thread a block more (docs/cpu-kernels.md).
 *
 * The blocks themselves are the same on every run: the n-th take has
 * the same first panel and size whichever thread makes it, so a result
 * that depends on the block (the bf16 MLP's fp32 fallback, chosen per
 * block) is still the same from run to run. */
typedef struct fb_row_queue {
    int64_t next;         /* the first panel not taken (atomic) */
    int64_t xpanels;      /* all of them */
    int64_t most, least;  /* panels a block has at most, at least */
    int threads;
} fb_row_queue;

/* A queue over xpanels panels for *t threads, *t lowered to xpanels;
 * blocks of at most max_rp panels, fewer when there are too few panels
 * for every thread to have max_rp. queue.most sizes per-thread buffers. */
static inline fb_row_queue fb_row_queue_make(int64_t xpanels, int64_t max_rp,
                                             int *t)
{
    if (*t > xpanels)
        *t = (int)xpanels;
    if (*t < 1)
        *t = 1;
    fb_row_queue q;
    q.next = 0, q.xpanels = xpanels, q.threads = *t;
    q.most = (xpanels + *t - 1) / *t;
    q.most = q.most < max_rp ? q.most : max_rp;
    /* One thread has no one to finish with. */
    q.least = *t > 1 ? (q.most + 3) / 4 : q.most;
    return q;
}

/* How many panels the take at panel `next` gets. */
static inline int64_t fb_row_queue_size(const fb_row_queue *q, int64_t next)
{
    const int64_t left = q->xpanels - next;
    int64_t take = (left + 2 * q->threads - 1) / (2 * q->threads);
    take = take > q->most ? q->most : take < q->least ? q->least : take;
    return take < left ? take : left;
}

/* The next block, in rows of X (panels of nr rows, m rows in all): its
 * first row in *r0 and how many rows it has; 0 when none are left. The
 * threads share q; a compare-and-swap takes the block (an OpenMP named
 * critical section would export a symbol of its own from the library). */
static inline int64_t fb_row_queue_take(fb_row_queue *q, int nr, int64_t m,
                                        int64_t *r0)
{
    int64_t q0 = __atomic_load_n(&q->next, __ATOMIC_RELAXED), take;
    do
        take = fb_row_queue_size(q, q0);
    while (take > 0 &&
           !__atomic_compare_exchange_n(&q->next, &q0, q0 + take, 1,
                                        __ATOMIC_RELAXED, __ATOMIC_RELAXED));
    if (take == 0)
        return 0;
    *r0 = q0 * nr;
    const int64_t r1 = (q0 + take) * nr;
    return (r1 < m ? r1 : m) - *r0;
}

#endif /* FB_CPU_PACKED_BLOCKING_H */
