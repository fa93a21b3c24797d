/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * exact_gemm.c -- gemm_bias_act checked bit for bit on operands whose
 * result is known exactly. See exact_gemm.h.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "exact_gemm.h"
#include "oracle.h"

/* The activation error sgemm_bias_act(3) promises, in units of 2^-24 |x|
 * (harness.c's act_eval_units: 8 for the gelus and silu). */
static double promised_act_error(fb_activation act, double z)
{
    return act_eval_units(act) * 0x1p-24 * fabs(z);
}

/* The spacing of dtype's values at |x| (its smallest subnormal below the
 * normal range): one ulp of the output type. */
static double ulp_of(fb_dtype t, double x)
{
    const int p = t == FB_DTYPE_F32 ? 24 : t == FB_DTYPE_F16 ? 11 : 8;
    const int emin = t == FB_DTYPE_F16 ? -13 : -125;
    int e = emin;
    if (isfinite(x) && x != 0.0)
        frexp(x, &e);
    if (e < emin)
        e = emin;
    return ldexp(1.0, e - p);
}

/* The largest R with 2 k R^2 + 1020 <= 2^24 (exact_gemm.h), at most 127,
 * and the smallest s with 2^s >= R. */
static int value_range(int64_t k, int *s)
{
    int64_t r = 127;
    while (r > 1 && 2 * k * r * r + 1020 > ((int64_t)1 << 24))
        r--;
    *s = 0;
    while ((1 << *s) < r)
        (*s)++;
    return (int)r;
}

static int16_t random_int(int r)
{
    return (int16_t)(rng_below(2 * r + 1) - r);
}

/* One case's operands: host images as the library gets them, and the
 * integers they hold, dense, for the reference. */
typedef struct exact_data {
    gemm_case c;
    tshape sa, sb, sc, sbias;
    tbuf A, B, C, bias;
    int r, s;
    int16_t *opa;  /* m x k: op(A) in units of 2^-s */
    int16_t *opbt; /* n x k: op(B) transposed, units of 2^-s */
    int16_t *cint; /* m x n: C in units of 2^-2s (beta != 0) */
    int16_t *bint; /* n: the bias in units of 2^-2s (with a bias) */
} exact_data;

static void *xmalloc(size_t bytes)
{
    void *p = malloc(bytes > 0 ? bytes : 1);
    if (p == NULL)
        tap_bail("out of host memory (%zu bytes)", bytes);
    return p;
}

static void exact_data_make(exact_data *d, const gemm_case *c)
{
    memset(d, 0, sizeof *d);
    d->c = *c;
    d->sa = gemm_shape_a(c);
    d->sb = gemm_shape_b(c);
    d->sc = gemm_shape_c(c);
    const tshape sbias = {FB_ROW_MAJOR, 1, c->n, c->n > 1 ? c->n : 1};
    d->sbias = sbias;
    tbuf_init(&d->A, c->dtype, tshape_nelem(&d->sa), c->offset);
    tbuf_init(&d->B, c->dtype, tshape_nelem(&d->sb), c->offset);
    tbuf_init(&d->C, c->dtype, tshape_nelem(&d->sc), c->offset);
    tbuf_init(&d->bias, c->dtype, tshape_nelem(&d->sbias), c->offset);
    d->r = value_range(c->k, &d->s);
    const double sa = ldexp(1.0, -d->s), sc = ldexp(1.0, -2 * d->s);
    const int64_t m = c->m, n = c->n, k = c->k;

    d->opa = xmalloc((size_t)(m * k) * sizeof *d->opa);
    void *A = tbuf_data(&d->A);
    for (int64_t i = 0; i < m; i++)
        for (int64_t l = 0; l < k; l++) {
            const int16_t v = random_int(d->r);
            d->opa[i * k + l] = v;
            const int64_t at = c->transa == FB_NO_TRANS
                                   ? oracle_at(c->layout, i, l, c->lda)
                                   : oracle_at(c->layout, l, i, c->lda);
            dt_set(c->dtype, A, at, v * sa);
        }
    d->opbt = xmalloc((size_t)(n * k) * sizeof *d->opbt);
    void *B = tbuf_data(&d->B);
    for (int64_t j = 0; j < n; j++)
        for (int64_t l = 0; l < k; l++) {
            const int16_t v = random_int(d->r);
            d->opbt[j * k + l] = v;
            const int64_t at = c->transb == FB_NO_TRANS
                                   ? oracle_at(c->layout, l, j, c->ldb)
                                   : oracle_at(c->layout, j, l, c->ldb);
            dt_set(c->dtype, B, at, v * sa);
        }
    if (c->beta != 0.0f) {
        d->cint = xmalloc((size_t)(m * n) * sizeof *d->cint);
        void *C = tbuf_data(&d->C);
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                const int16_t v = random_int(255);
                d->cint[i * n + j] = v;
                dt_set(c->dtype, C, oracle_at(c->layout, i, j, c->ldc),
                       v * sc);
            }
    } else {
        fill_poison(&d->C, &d->sc);
    }
    if (c->has_bias) {
        d->bint = xmalloc((size_t)n * sizeof *d->bint);
        for (int64_t j = 0; j < n; j++) {
            d->bint[j] = random_int(255);
            dt_set(c->dtype, tbuf_data(&d->bias), j, d->bint[j] * sc);
        }
    }
}

static void exact_data_free(exact_data *d)
{
    tbuf_free(&d->A);
    tbuf_free(&d->B);
    tbuf_free(&d->C);
    tbuf_free(&d->bias);
    free(d->opa);
    free(d->opbt);
    free(d->cint);
    free(d->bint);
}

/* |sum| <= k R^2 < 2^23: no overflow in 32 bits. */
static int32_t dot16(const int16_t *a, const int16_t *b, int64_t k)
{
    int32_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    int64_t l = 0;
    for (; l + 4 <= k; l += 4) {
        s0 += (int32_t)a[l] * b[l];
        s1 += (int32_t)a[l + 1] * b[l + 1];
        s2 += (int32_t)a[l + 2] * b[l + 2];
        s3 += (int32_t)a[l + 3] * b[l + 3];
    }
    for (; l < k; l++)
        s0 += (int32_t)a[l] * b[l];
    return s0 + s1 + s2 + s3;
}

/* The exact pre-activation of every element, m x n dense (row-major). */
static double *exact_z(const exact_data *d)
{
    const gemm_case *c = &d->c;
    const int64_t m = c->m, n = c->n, k = c->k;
    double *z = xmalloc((size_t)(m * n) * sizeof *z);
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            /* In units of 2^-2s: alpha dot is exact in double. */
            double u = (double)c->alpha *
                       (double)dot16(&d->opa[i * k], &d->opbt[j * k], k);
            if (d->cint != NULL)
                u += d->cint[i * n + j];
            if (d->bint != NULL)
                u += d->bint[j];
            z[i * n + j] = ldexp(u, -2 * d->s);
        }
    return z;
}

static int exact_act(fb_activation act)
{
    return act == FB_ACT_NONE || act == FB_ACT_RELU;
}

/* The one rounding of z (none, relu) or the activation's value and the
 * distance allowed from it. */
static void expected(fb_dtype dt, fb_activation act, double z, double *want,
                     double *bound)
{
    if (exact_act(act)) {
        *want = oracle_round(dt, act == FB_ACT_RELU && z < 0.0 ? 0.0 : z);
        *bound = 0.0;
        return;
    }
    *want = oracle_act(act, z);
    const double e = promised_act_error(act, z);
    *bound = e + (dt == FB_DTYPE_F32 ? 0.0
                                     : 0.5 * ulp_of(dt, fabs(*want) + e));
}

/* ---- one case on one target ---------------------------------------------- */

static int ran_expected(const target *t, fb_backend ran)
{
    if (t->expect == FB_BACKEND_AUTO)
        return ran != FB_BACKEND_AUTO;
    return target_ran_expected(t, ran);
}

typedef struct exact_run {
    fb_status status;
    int skipped;
    char path[96];
    double worst_ulps;
} exact_run;

/* Place, call, read back; check everything outside C's window, the status
 * and the backend; then every element of the window. */
static void run_target(const exact_data *d, const double *z, const target *t,
                       tcheck *chk, exact_run *r)
{
    const gemm_case *c = &d->c;
    void *pa, *pb, *pc, *pbias;
    void *aa = tbuf_place(&d->A, t->mem, &pa);
    void *ab = tbuf_place(&d->B, t->mem, &pb);
    void *ac = tbuf_place(&d->C, t->mem, &pc);
    void *abias = tbuf_place(&d->bias, t->mem, &pbias);
    r->status = gemm_call(t->handle, c->dtype, c->layout, c->transa,
                          c->transb, c->m, c->n, c->k, c->alpha, pa, c->lda,
                          pb, c->ldb, c->beta, pc, c->ldc,
                          c->has_bias ? pbias : NULL, c->act);
    const fb_backend ran = fb_handle_last_backend(t->handle);
    snprintf(r->path, sizeof r->path, "%s",
             r->status == FB_STATUS_SUCCESS ? fb_handle_last_path(t->handle)
                                            : fb_status_string(r->status));
    r->worst_ulps = 0.0;

    tbuf after, out;
    tbuf_fetch(&d->A, t->mem, aa, &after);
    check_untouched(chk, "A", &d->A, &after, NULL);
    tbuf_free(&after);
    tbuf_fetch(&d->B, t->mem, ab, &after);
    check_untouched(chk, "B", &d->B, &after, NULL);
    tbuf_free(&after);
    tbuf_fetch(&d->bias, t->mem, abias, &after);
    check_untouched(chk, "bias", &d->bias, &after, NULL);
    tbuf_free(&after);
    tbuf_fetch(&d->C, t->mem, ac, &out);
    t->mem->release(aa);
    t->mem->release(ab);
    t->mem->release(ac);
    t->mem->release(abias);

    r->skipped = r->status == FB_STATUS_NOT_SUPPORTED &&
                 t->not_supported_skips;
    if (r->skipped) {
        check_untouched(chk, "C (not supported)", &d->C, &out, NULL);
        tbuf_free(&out);
        return;
    }
    if (r->status != FB_STATUS_SUCCESS) {
        tcheck_fail(chk, "status %s, argument %d: %s",
                    fb_status_string(r->status),
                    fb_handle_last_arg(t->handle),
                    fb_handle_last_message(t->handle));
        tbuf_free(&out);
        return;
    }
    if (!ran_expected(t, ran))
        tcheck_fail(chk, "ran on %s (path \"%s\"), expected %s",
                    fb_backend_name(ran), r->path, fb_backend_name(t->expect));
    check_untouched(chk, "C", &d->C, &out, &d->sc);

    const void *got = tbuf_data(&out);
    int64_t nbad = 0;
    double worst_bad = 0.0;
    for (int64_t i = 0; i < c->m; i++)
        for (int64_t j = 0; j < c->n; j++) {
            const int64_t at = oracle_at(c->layout, i, j, c->ldc);
            const double y = dt_get(c->dtype, got, at);
            const double zz = z[i * c->n + j];
            double want, bound;
            expected(c->dtype, c->act, zz, &want, &bound);
            const double err = fabs(y - want);
            const int ok = err <= bound; /* NaN fails */
            const double ulps =
                isnan(err) ? INFINITY : err / ulp_of(c->dtype, want);
            if (ok && exact_act(c->act) && ulps > r->worst_ulps)
                r->worst_ulps = ulps;
            if (ok)
                continue;
            if (ulps > worst_bad)
                worst_bad = ulps;
            if (nbad++ < 3) {
                if (exact_act(c->act))
                    tcheck_fail(chk, "C(%lld,%lld) = %.9g (0x%x), exact %.9g, "
                                "rounded once %.9g: %.3g ulps off",
                                (long long)i, (long long)j, y,
                                (unsigned)dt_bits(c->dtype, got, at), zz, want,
                                ulps);
                else
                    tcheck_fail(chk, "C(%lld,%lld) = %.9g (0x%x), %s(%.9g) = "
                                "%.9g: %.3g ulps off, %.3g allowed",
                                (long long)i, (long long)j, y,
                                (unsigned)dt_bits(c->dtype, got, at),
                                act_name(c->act), zz, want, ulps,
                                bound / ulp_of(c->dtype, want));
            } else {
                chk->failed = 1;
            }
        }
    if (nbad > 0) {
        tap_diag("  %lld of %lld elements wrong, worst %.3g ulps "
                 "(path %s)", (long long)nbad, (long long)(c->m * c->n),
                 worst_bad, r->path);
        if (worst_bad > r->worst_ulps)
            r->worst_ulps = worst_bad;
    }
    tbuf_free(&out);
}

/* ---- tallies ------------------------------------------------------------- */

enum { TALLY_TARGETS = 8 };
typedef struct tally {
    int cases, failed, skipped;
    double worst;
} tally;
/* [target][dtype][layout][transa][transb] */
static tally tallies[TALLY_TARGETS][3][2][2][2];

static tally *tally_of(int ti, const gemm_case *c)
{
    return &tallies[ti][c->dtype][c->layout == FB_COL_MAJOR]
                   [c->transa != FB_NO_TRANS][c->transb != FB_NO_TRANS];
}

int exact_check(const gemm_case *c, const target *t, int nt)
{
    char label[256];
    gemm_case_label(c, label, sizeof label);
    exact_data d;
    exact_data_make(&d, c);
    double *z = exact_z(&d);
    const char *need = exact_act(c->act)
                           ? "rounded once (0 ulps)"
                           : "0.5 ulp + 8 x 2^-24 |z|";
    int failed = 0;
    for (int ti = 0; ti < nt; ti++) {
        if (t[ti].f32_only && c->dtype != FB_DTYPE_F32)
            continue;
        tcheck chk;
        tcheck_init(&chk);
        exact_run r;
        run_target(&d, z, &t[ti], &chk, &r);
        tally *ty = ti < TALLY_TARGETS ? tally_of(ti, c) : NULL;
        if (r.skipped && !chk.failed) {
            tap_skip("%s %s: not supported (%s)", t[ti].name, label,
                     fb_handle_last_message(t[ti].handle));
            if (ty)
                ty->skipped++;
            continue;
        }
        const int ok = tap_check(&chk, "%s %s, R=%d: %s [%s]", t[ti].name,
                                 label, d.r, need, r.path);
        failed += !ok;
        if (ty) {
            ty->cases++;
            ty->failed += !ok;
            if (r.worst_ulps > ty->worst)
                ty->worst = r.worst_ulps;
        }
    }
    free(z);
    exact_data_free(&d);
    return failed;
}

/* ---- the family ---------------------------------------------------------- */

static const fb_transpose transes[2] = {FB_NO_TRANS, FB_TRANS};
static const fb_layout layouts[2] = {FB_ROW_MAJOR, FB_COL_MAJOR};

/* lds at their minimum plus the given paddings; operands off by off. */
static void set_lds(gemm_case *c, int64_t pa, int64_t pb, int64_t pc,
                    int64_t off)
{
    gemm_case_set_lds(c, pa, pb, pc);
    c->offset = off;
}

/* lds at their minimum rounded up to 8 elements (16 bytes and more), and
 * sometimes 8 more; operands where their allocation starts. */
static void set_lds_aligned(gemm_case *c)
{
    gemm_case_set_lds(c, 0, 0, 0);
    c->lda = (c->lda + 7) / 8 * 8 + 8 * rng_below(2);
    c->ldb = (c->ldb + 7) / 8 * 8 + 8 * rng_below(2);
    c->ldc = (c->ldc + 7) / 8 * 8 + 8 * rng_below(2);
    c->offset = 0;
}

/* The reported failures and their neighbours. */
static void reported(const target *t, int nt)
{
    const fb_dtype dts[3] = {FB_DTYPE_BF16, FB_DTYPE_F16, FB_DTYPE_F32};
    for (int di = 0; di < 3; di++) {
        /* bgemm col NN 16 x 4096 x 768, lda = 53 (and its fp16 and fp32
         * twins), then ldc = 17. */
        for (int which = 0; which < (di == 0 ? 4 : 1); which++) {
            gemm_case c = {0};
            c.dtype = dts[di];
            c.layout = FB_COL_MAJOR;
            c.transa = c.transb = FB_NO_TRANS;
            c.m = which >= 2 ? 64 : 16;
            c.n = 4096;
            c.k = 768;
            c.alpha = 1.0f;
            c.beta = 0.0f;
            c.act = FB_ACT_NONE;
            set_lds(&c, which % 2 == 0 ? 37 : 0, 0, which % 2 == 1 ? 1 : 0,
                    0);
            c.note = which % 2 == 0 ? "reported: odd lda" : "reported: odd ldc";
            exact_check(&c, t, nt);
        }
    }
    /* Small m n, long k, default alignment: row-major (torch.mm's
     * layout), and column-major with lds padded to 16 bytes. */
    for (int di = 0; di < 2; di++)
        for (int64_t k = 4096; k <= 8192; k *= 2)
            for (int li = 0; li < 2; li++) {
                gemm_case c = {0};
                c.dtype = dts[di];
                c.layout = layouts[li];
                c.transa = c.transb = FB_NO_TRANS;
                c.m = 2;
                c.n = 32;
                c.k = k;
                c.alpha = 1.0f;
                c.beta = 0.0f;
                c.act = FB_ACT_NONE;
                if (li == 0)
                    set_lds(&c, 0, 0, 0, 0);
                else
                    set_lds(&c, 6, 0, 6, 0); /* lda = ldc = 8 */
                c.note = "reported: long k, aligned";
                exact_check(&c, t, nt);
            }
    /* bf16 rows of C that end inside a 16-byte unit, in longer leading
     * dimensions: the GEMM engine's staged epilogue wrote them wrong on an
     * H100 (its TMA copy); and a row of whole units in a longer leading
     * dimension, which that epilogue does take. */
    static const struct {
        fb_layout layout;
        fb_transpose ta, tb;
        int64_t m, n, k, pa, pb, pc;
        float alpha;
        int bias;
        fb_activation act;
    } engine_rows[4] = {
        {FB_ROW_MAJOR, FB_NO_TRANS, FB_TRANS, 33, 274, 163, 13, 13, 14, 0.5f,
         0, FB_ACT_RELU},
        {FB_COL_MAJOR, FB_TRANS, FB_NO_TRANS, 2, 4096, 1557, 3, 3, 14, 1.0f,
         1, FB_ACT_GELU_TANH},
        {FB_COL_MAJOR, FB_TRANS, FB_NO_TRANS, 49, 6, 8191, 9, 9, 7, 1.0f, 0,
         FB_ACT_NONE},
        {FB_ROW_MAJOR, FB_NO_TRANS, FB_TRANS, 64, 272, 163, 13, 13, 16, 1.0f,
         1, FB_ACT_NONE}};
    for (int i = 0; i < 4; i++) {
        gemm_case c = {0};
        c.dtype = FB_DTYPE_BF16;
        c.layout = engine_rows[i].layout;
        c.transa = engine_rows[i].ta;
        c.transb = engine_rows[i].tb;
        c.m = engine_rows[i].m;
        c.n = engine_rows[i].n;
        c.k = engine_rows[i].k;
        c.alpha = engine_rows[i].alpha;
        c.beta = 0.0f;
        c.has_bias = engine_rows[i].bias;
        c.act = engine_rows[i].act;
        set_lds(&c, engine_rows[i].pa, engine_rows[i].pb, engine_rows[i].pc,
                0);
        c.note = i < 3 ? "reported: C's rows end inside 16 bytes"
                       : "C's rows whole 16-byte units, padded";
        exact_check(&c, t, nt);
    }
}

/* Log-uniform in [1, hi]. */
static int64_t log_uniform(int64_t hi)
{
    const int64_t v = (int64_t)exp(rng_unit() * log((double)hi + 1.0));
    return v < 1 ? 1 : v > hi ? hi : v;
}

static void sampled(const target *t, int nt, int per_combo, int64_t max_work)
{
    static const int64_t m_list[6] = {1, 2, 7, 16, 33, 64};
    static const int64_t n_list[6] = {1, 17, 32, 100, 1024, 4096};
    static const int64_t k_list[8] = {1, 3, 768, 777, 4095, 4096, 8191, 8192};
    static const int64_t pads[4] = {0, 1, 3, 37};
    static const float alphas[3] = {1.0f, 0.5f, -2.0f};
    int combo = 0;
    for (int di = 0; di < 3; di++)
        for (int li = 0; li < 2; li++)
            for (int ta = 0; ta < 2; ta++)
                for (int tb = 0; tb < 2; tb++, combo++)
                    for (int i = 0; i < per_combo; i++) {
                        gemm_case c = {0};
                        c.dtype = all_dtypes[di];
                        c.layout = layouts[li];
                        c.transa = transes[ta];
                        c.transb = transes[tb];
                        c.m = i < 6 ? m_list[(combo + i) % 6]
                                    : 1 + rng_below(64);
                        c.k = i % 2 == 0 ? k_list[(combo + i / 2) % 8]
                                         : log_uniform(8192);
                        c.n = i % 3 == 0 ? n_list[(combo + i / 3) % 6]
                                         : log_uniform(4096);
                        if (i == 7) {
                            /* A plain product where cuBLASLt may split k:
                             * aligned, small m n, long k. */
                            c.k = k_list[5 + combo % 3];
                            c.n = log_uniform(256);
                        }
                        if (c.m * c.n * c.k > max_work)
                            c.n = max_work / (c.m * c.k) > 1
                                      ? max_work / (c.m * c.k)
                                      : 1;
                        c.alpha = alphas[rng_below(3)];
                        if (i % 3 == 1) { /* the plain product */
                            c.beta = 0.0f;
                            c.has_bias = 0;
                            c.act = FB_ACT_NONE;
                        } else {
                            c.beta = (float)rng_below(2);
                            c.has_bias = (int)rng_below(2);
                            c.act = all_acts[rng_below(N_ACTS)];
                        }
                        /* The first three: odd lds, operands off; then
                         * aligned and random in turn. */
                        const int odd = i < 3;
                        if (!odd && i % 2 == 1)
                            set_lds_aligned(&c);
                        else
                            set_lds(&c, pads[odd + rng_below(4 - odd)],
                                    pads[odd + rng_below(4 - odd)],
                                    pads[odd + rng_below(4 - odd)],
                                    odd || rng_below(2) ? 1 + rng_below(7)
                                                        : 0);
                        c.note = odd ? "odd lds, offset"
                                 : i % 2 == 1 ? "aligned"
                                              : NULL;
                        exact_check(&c, t, nt);
                    }
}

static void print_tallies(const target *t, int nt)
{
    for (int ti = 0; ti < nt && ti < TALLY_TARGETS; ti++)
        for (int di = 0; di < 3; di++) {
            char line[512] = "";
            size_t used = 0;
            int cases = 0;
            double worst = 0.0;
            for (int li = 0; li < 2; li++)
                for (int ta = 0; ta < 2; ta++)
                    for (int tb = 0; tb < 2; tb++) {
                        const tally *ty =
                            &tallies[ti][all_dtypes[di]][li][ta][tb];
                        cases += ty->cases;
                        worst = fmax(worst, ty->worst);
                        if (used < sizeof line)
                            used += (size_t)snprintf(
                                line + used, sizeof line - used,
                                " %s %c%c %d/%d%s", li ? "col" : "row",
                                ta ? 'T' : 'N', tb ? 'T' : 'N', ty->failed,
                                ty->cases, ty->skipped ? "+skip" : "");
                    }
            if (cases > 0)
                tap_diag("%s %s failed/cases:%s; worst %.3g ulps",
                         t[ti].name, dt_name(all_dtypes[di]), line, worst);
        }
    tap_diag("(worst: over the failed elements, and the passed ones of "
             "act none and relu, which must be 0)");
}

/* ---- the checker's own test ---------------------------------------------- */

void exact_checker_can_fail(void)
{
    /* The reported shapes' data, summed as a split-K reduced in the
     * output type would sum them: four parts, each rounded to the 16-bit
     * type, added up in it. The checker must see it. */
    static const int64_t shapes[2][3] = {{2, 32, 4096}, {16, 256, 768}};
    const fb_dtype dts[2] = {FB_DTYPE_BF16, FB_DTYPE_F16};
    for (int di = 0; di < 2; di++)
        for (int si = 0; si < 2; si++) {
            gemm_case c = {0};
            c.dtype = dts[di];
            c.layout = FB_ROW_MAJOR;
            c.transa = c.transb = FB_NO_TRANS;
            c.m = shapes[si][0], c.n = shapes[si][1], c.k = shapes[si][2];
            c.alpha = 1.0f;
            c.act = FB_ACT_NONE;
            set_lds(&c, 0, 0, 0, 0);
            exact_data d;
            exact_data_make(&d, &c);
            double *z = exact_z(&d);
            int64_t caught = 0, conv_bad = 0;
            const int64_t part = c.k / 4;
            for (int64_t i = 0; i < c.m; i++)
                for (int64_t j = 0; j < c.n; j++) {
                    double acc = 0.0;
                    for (int p = 0; p < 4; p++) {
                        const int64_t l0 = p * part;
                        const double s = ldexp(
                            dot16(&d.opa[i * c.k + l0], &d.opbt[j * c.k + l0],
                                  p == 3 ? c.k - l0 : part),
                            -2 * d.s);
                        acc = oracle_round(c.dtype,
                                           acc + oracle_round(c.dtype, s));
                    }
                    double want, bound;
                    expected(c.dtype, c.act, z[i * c.n + j], &want, &bound);
                    caught += acc != want;
                    /* The reference's rounding is the library's too. */
                    unsigned char cell[4];
                    dt_set(c.dtype, cell, 0, (double)(float)z[i * c.n + j]);
                    conv_bad += dt_get(c.dtype, cell, 0) != want;
                }
            tap_ok(caught > 0 && conv_bad == 0,
                   "checker: %s %lld x %lld x %lld, R=%d: a split-K of 4 "
                   "parts added up in %s differs from one rounding in "
                   "%lld of %lld elements; the reference's rounding and "
                   "fb_float_to_%s disagree in %lld",
                   dt_name(c.dtype), (long long)c.m, (long long)c.n,
                   (long long)c.k, d.r, dt_name(c.dtype), (long long)caught,
                   (long long)(c.m * c.n),
                   c.dtype == FB_DTYPE_BF16 ? "bfloat16" : "half",
                   (long long)conv_bad);
            free(z);
            exact_data_free(&d);
        }
}

void exact_sweep(const target *t, int nt, int per_combo, int64_t max_work)
{
    memset(tallies, 0, sizeof tallies);
    reported(t, nt);
    sampled(t, nt, per_combo, max_work);
    print_tallies(t, nt);
}
