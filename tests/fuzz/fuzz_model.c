/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz_model.c -- the documented argument rules, read independently of
 * the library. See fuzz_model.h.
 */
#include <stddef.h>
#include "fuzz_model.h"

int64_t fz_extent(const fz_stored *s, int64_t esize)
{
    if (s->inner <= 0 || s->outer <= 0)
        return 0;
    const __int128 elems = (__int128)s->ld * (s->outer - 1) + s->inner;
    if (elems <= 0)
        return 0; /* a negative ld: the ld rule reports it */
    if (elems > (__int128)(PTRDIFF_MAX / esize))
        return -1;
    return (int64_t)elems;
}

static int misaligned(const void *p, int64_t esize)
{
    return p != NULL && (uintptr_t)p % (uintptr_t)esize != 0;
}

static int64_t max1(int64_t x)
{
    return x > 1 ? x : 1;
}

/* A leading dimension is wrong if it is below max(1, inner) or makes the
 * extent overflow. */
static int bad_ld(const fz_stored *s, int64_t esize)
{
    return s->ld < max1(s->inner) || fz_extent(s, esize) < 0;
}

/* The bytes an array spans, [lo, hi), from its pointer and its extent in
 * elements (0: no range); clamped at the top of the address space. */
typedef struct fz_range {
    unsigned __int128 lo, hi;
} fz_range;

static fz_range range_of(const void *p, int64_t elems, int64_t esize)
{
    fz_range r = {0, 0};
    if (p != NULL && elems > 0) {
        r.lo = (uintptr_t)p;
        r.hi = r.lo + (unsigned __int128)elems * (unsigned __int128)esize;
        if (r.hi > (unsigned __int128)UINTPTR_MAX)
            r.hi = (unsigned __int128)UINTPTR_MAX;
    }
    return r;
}

/* sgemm_bias_act(3), "Overlapping arrays": an output whose range meets the
 * range of an input the call reads is wrong (at the output's position). */
static int ranges_meet(fz_range a, fz_range b)
{
    return a.lo < a.hi && b.lo < b.hi && a.lo < b.hi && b.lo < a.hi;
}

static fz_outcomes lowest(uint32_t bad)
{
    if (bad == 0)
        return 1u; /* success */
    return bad & (~bad + 1u);
}

/* ---- gemm_bias_act -------------------------------------------------------- */

static fz_stored stored(fb_layout layout, int64_t rows, int64_t cols,
                        int64_t ld)
{
    fz_stored s;
    s.inner = layout == FB_ROW_MAJOR ? cols : rows;
    s.outer = layout == FB_ROW_MAJOR ? rows : cols;
    s.ld = ld;
    return s;
}

fz_stored fz_gemm_a(const fz_gemm *g)
{
    const int t = g->transa != FB_NO_TRANS;
    return stored(g->layout, t ? g->k : g->m, t ? g->m : g->k, g->lda);
}

fz_stored fz_gemm_b(const fz_gemm *g)
{
    const int t = g->transb != FB_NO_TRANS;
    return stored(g->layout, t ? g->n : g->k, t ? g->k : g->n, g->ldb);
}

fz_stored fz_gemm_c(const fz_gemm *g)
{
    return stored(g->layout, g->m, g->n, g->ldc);
}

static int valid_trans(fb_transpose t)
{
    return t == FB_NO_TRANS || t == FB_TRANS || t == FB_CONJ_TRANS;
}

static int valid_act(fb_activation a)
{
    return a == FB_ACT_NONE || a == FB_ACT_RELU || a == FB_ACT_GELU_TANH ||
           a == FB_ACT_GELU_ERF || a == FB_ACT_SILU;
}

#define BAD(pos) (1u << (pos))

fz_outcomes fz_gemm_expect(const fz_gemm *g)
{
    const int64_t es = g->dtype == FB_DTYPE_F32 ? 4 : 2;
    uint32_t bad = 0;
    const int layout_ok = g->layout == FB_ROW_MAJOR || g->layout == FB_COL_MAJOR;
    if (g->stale_handle)
        bad |= BAD(1);
    if (!layout_ok)
        bad |= BAD(2);
    if (!valid_trans(g->transa))
        bad |= BAD(3);
    if (!valid_trans(g->transb))
        bad |= BAD(4);
    if (g->m < 0)
        bad |= BAD(5);
    if (g->n < 0)
        bad |= BAD(6);
    if (g->k < 0)
        bad |= BAD(7);
    /* Shapes are defined only for valid enums and sizes; any argument
     * they decide sits at a higher position than those, so it cannot be
     * the lowest wrong one otherwise. */
    if (bad == 0) {
        const int work = g->m > 0 && g->n > 0;
        const fz_stored a = fz_gemm_a(g), b = fz_gemm_b(g), c = fz_gemm_c(g);
        if ((work && g->k > 0 && g->a == NULL) || misaligned(g->a, es))
            bad |= BAD(9);
        if (bad_ld(&a, es))
            bad |= BAD(10);
        if ((work && g->k > 0 && g->b == NULL) || misaligned(g->b, es))
            bad |= BAD(11);
        if (bad_ld(&b, es))
            bad |= BAD(12);
        if ((work && g->c == NULL) || misaligned(g->c, es))
            bad |= BAD(14);
        if (bad_ld(&c, es))
            bad |= BAD(15);
        /* C against what the call reads, where both ranges are defined
         * (valid leading dimensions): A and B when k and alpha are not
         * zero, the bias, in a call with work to do. */
        if (!g->unplaced && work && !bad_ld(&c, es)) {
            const fz_range rc = range_of(g->c, fz_extent(&c, es), es);
            const int read = g->k > 0 && g->alpha != 0.0f;
            fz_range in[3] = {{0, 0}, {0, 0}, {0, 0}};
            if (read && !bad_ld(&a, es))
                in[0] = range_of(g->a, fz_extent(&a, es), es);
            if (read && !bad_ld(&b, es))
                in[1] = range_of(g->b, fz_extent(&b, es), es);
            in[2] = range_of(g->bias, g->n, es);
            for (int i = 0; i < 3; i++)
                if (ranges_meet(rc, in[i]))
                    bad |= BAD(14);
        }
    }
    if (misaligned(g->bias, es))
        bad |= BAD(16);
    if (!valid_act(g->act))
        bad |= BAD(17);
    /* A bias whose n elements overflow the address space: the man page
     * does not list it, the library reports it (16); either is taken. */
    if (g->bias != NULL && g->n > PTRDIFF_MAX / es)
        return lowest(bad) | lowest(bad | BAD(16));
    return lowest(bad);
}

/* ---- mlp_geglu_forward ------------------------------------------------------- */

fz_stored fz_mlp_x(const fz_mlp *p)
{
    return (fz_stored){p->k, p->m, p->ldx};
}

fz_stored fz_mlp_w(const fz_mlp *p)
{
    return (fz_stored){p->k, p->h, p->k};
}

fz_stored fz_mlp_wd(const fz_mlp *p)
{
    return (fz_stored){p->h, p->n, p->h};
}

fz_stored fz_mlp_y(const fz_mlp *p)
{
    return (fz_stored){p->n, p->m, p->ldy};
}

/* Position of the dimension reported for an overflowing d1 x d2 weight:
 * the larger; a tie goes to the first or the second by `reading`. */
static int larger_dim(int64_t d1, int pos1, int64_t d2, int pos2, int reading)
{
    if (d1 != d2)
        return d1 > d2 ? pos1 : pos2;
    return reading ? pos2 : pos1;
}

/* One reading of the open cases: bit 0 breaks ties between equal
 * dimensions, bit 1 says X is needed even when h is 0, bit 2 reports a
 * weight's extent overflow at the weight (Wg 10, Wd 14) rather than at a
 * dimension. */
static fz_outcomes mlp_reading(const fz_mlp *p, int reading)
{
    const int dtype_ok = p->dtype == FB_DTYPE_F32 || p->dtype == FB_DTYPE_F16 ||
                         p->dtype == FB_DTYPE_BF16;
    const int64_t es = p->dtype == FB_DTYPE_F32 ? 4 : 2;
    uint32_t bad = 0;
    if (p->stale_handle)
        bad |= BAD(1);
    if (!dtype_ok)
        bad |= BAD(2);
    if (!valid_act(p->act))
        bad |= BAD(3);
    if (p->m < 0)
        bad |= BAD(4);
    if (p->k < 0)
        bad |= BAD(5);
    if (p->h < 0)
        bad |= BAD(6);
    if (p->n < 0)
        bad |= BAD(7);
    if (bad != 0)
        return lowest(bad);

    const fz_stored x = fz_mlp_x(p), w = fz_mlp_w(p), wd = fz_mlp_wd(p),
                    y = fz_mlp_y(p);
    if (fz_extent(&w, es) < 0)
        bad |= BAD((reading & 4) ? 10 : larger_dim(p->k, 5, p->h, 6, reading & 1));
    if (fz_extent(&wd, es) < 0)
        bad |= BAD((reading & 4) ? 14 : larger_dim(p->h, 6, p->n, 7, reading & 1));

    const int work = p->m > 0 && p->n > 0;
    const int x_needed = work && p->k > 0 && (p->h > 0 || (reading & 2));
    if ((x_needed && p->x == NULL) || misaligned(p->x, es))
        bad |= BAD(8);
    if (bad_ld(&x, es))
        bad |= BAD(9);
    const int w_needed = work && p->h > 0 && p->k > 0;
    if ((w_needed && p->wg == NULL) || misaligned(p->wg, es))
        bad |= BAD(10);
    if (misaligned(p->bg, es))
        bad |= BAD(11);
    if ((w_needed && p->wu == NULL) || misaligned(p->wu, es))
        bad |= BAD(12);
    if (misaligned(p->bu, es))
        bad |= BAD(13);
    if ((work && p->h > 0 && p->wd == NULL) || misaligned(p->wd, es))
        bad |= BAD(14);
    if (misaligned(p->bd, es))
        bad |= BAD(15);
    if ((work && p->y == NULL) || misaligned(p->y, es))
        bad |= BAD(16);
    if (bad_ld(&y, es))
        bad |= BAD(17);
    /* Y against every input the call reads (mlp_geglu_forward(3)), where
     * both ranges are defined. */
    if (!p->unplaced && work && !bad_ld(&y, es)) {
        const fz_range ry = range_of(p->y, fz_extent(&y, es), es);
        const int hk = p->h > 0 && p->k > 0;
        fz_range in[7] = {{0, 0}, {0, 0}, {0, 0}, {0, 0},
                          {0, 0}, {0, 0}, {0, 0}};
        if (p->k > 0 && !bad_ld(&x, es))
            in[0] = range_of(p->x, fz_extent(&x, es), es);
        if (hk && fz_extent(&w, es) >= 0) {
            in[1] = range_of(p->wg, fz_extent(&w, es), es);
            in[2] = range_of(p->wu, fz_extent(&w, es), es);
        }
        if (p->h > 0 && fz_extent(&wd, es) >= 0)
            in[3] = range_of(p->wd, fz_extent(&wd, es), es);
        if (p->h > 0) {
            in[4] = range_of(p->bg, p->h, es);
            in[5] = range_of(p->bu, p->h, es);
        }
        in[6] = range_of(p->bd, p->n, es);
        for (int i = 0; i < 7; i++)
            if (ranges_meet(ry, in[i]))
                bad |= BAD(16);
    }
    return lowest(bad);
}

fz_outcomes fz_mlp_expect(const fz_mlp *p)
{
    fz_outcomes any = 0;
    for (int reading = 0; reading < 8; reading++)
        any |= mlp_reading(p, reading);
    return any;
}
