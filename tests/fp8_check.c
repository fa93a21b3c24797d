/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fp8_check.c -- see fp8_check.h.
 *
 * Exact data: activations, C and biases small integers, weights e4m3
 * values that are multiples of 1/8 with |q| <= 16, scales in 2^-2..2^2
 * and alpha powers of two. In the gemm every product is then a multiple
 * of 2^-5 of at most 2^9, and at k <= 300 every partial sum (and the
 * result, with beta C and the bias) a multiple of 2^-5 below 2^19: any
 * fp32 order of summation is exact, and the output must be the exact
 * value rounded once to the output type, checked bit for bit
 * (activations none and relu; the others through the bound, since their
 * evaluation is approximate). The MLP's H and Y on such data are not
 * exact in fp32 in general: its cases are judged by the bound.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "fp8_check.h"
#include "oracle.h"

/* The value of an e4m3 byte, written independently of the library. */
static double e4m3_ref(uint8_t b)
{
    const int e = (b >> 3) & 15, m = b & 7;
    if ((b & 0x7f) == 0x7f)
        return NAN;
    const double v = e == 0 ? ldexp((double)m, -9) : ldexp(8.0 + m, e - 10);
    return (b & 0x80) ? -v : v;
}

static uint8_t random_q(int exact)
{
    for (;;) {
        const uint8_t b = (uint8_t)rng_below(256);
        const double v = e4m3_ref(b);
        if (isnan(v))
            continue;
        if (exact && (fabs(v) > 16.0 || v * 8.0 != floor(v * 8.0)))
            continue;
        return b;
    }
}

static double random_x(fb_dtype dt, int exact)
{
    return exact ? (double)(rng_below(17) - 8) : rng_value(dt);
}

/* Random data: scales near amax / 448 for weights of magnitude about 1
 * to 5, as a quantiser makes them. */
static float random_scale(int exact)
{
    return exact ? ldexpf(1.0f, (int)rng_below(5) - 2)
                 : (float)ldexp(0.5 + rng_unit(), (int)rng_below(3) - 9);
}

static void *place(const tmem *mem, const void *host, size_t bytes)
{
    if (bytes == 0)
        bytes = 1;
    void *d = mem->alloc(bytes);
    if (d == NULL)
        tap_bail("out of %s memory", mem->name);
    mem->put(d, host, bytes);
    return d;
}

static void *xmalloc(size_t bytes)
{
    void *p = calloc(bytes > 0 ? bytes : 1, 1);
    if (p == NULL)
        tap_bail("out of host memory");
    return p;
}

/* An input read back must be unchanged. */
static void check_same(tcheck *c, const char *name, const tmem *mem,
                       const void *dev, const void *host, size_t bytes)
{
    void *back = xmalloc(bytes);
    mem->get(back, dev, bytes);
    if (bytes > 0 && memcmp(back, host, bytes) != 0)
        tcheck_fail(c, "%s was modified", name);
    free(back);
}

/* Judge one output element: bit-exact rounding of the exact value where
 * the data make it exact, else the bound. */
static void judge_one(tcheck *c, fb_dtype dt, double got, double ref,
                      double bound, int exact_bits, int64_t i, int64_t j)
{
    if (exact_bits) {
        const double want = oracle_round(dt, ref);
        if (!(got == want || (isnan(got) && isnan(want))))
            tcheck_fail(c, "(%lld,%lld): %.9g, want %.9g exactly",
                        (long long)i, (long long)j, got, want);
        return;
    }
    double ratio;
    if (judge(got, ref, 0.0, FB_ACT_NONE, bound, &ratio))
        tcheck_fail(c, "(%lld,%lld): %.9g, oracle %.9g, bound %.3g",
                    (long long)i, (long long)j, got, ref, bound);
    if (ratio > c->worst)
        c->worst = ratio;
}

static const char *lay_name(fb_layout l)
{
    return l == FB_ROW_MAJOR ? "row" : "col";
}

static char tr_name(fb_transpose t)
{
    return t == FB_NO_TRANS ? 'N' : 'T';
}

/* fp8_gemm_case with a_pad more on lda alone (A's rows then need not
 * share B's alignment). */
static int gemm_case_lda(const fp8_target *t, fb_dtype dt, fb_layout lay,
                         fb_transpose ta, fb_transpose tb, int64_t m,
                         int64_t n, int64_t k, float alpha, float beta,
                         int has_bias, fb_activation act, int exact,
                         int64_t pad, int64_t a_pad)
{
    const size_t es = dt_size(dt);
    const int row = lay == FB_ROW_MAJOR;
    /* Stored shapes (rows x cols) and leading dimensions. */
    const int64_t ar = ta == FB_NO_TRANS ? m : k, ac = ta == FB_NO_TRANS ? k : m;
    const int64_t br = tb == FB_NO_TRANS ? k : n, bc = tb == FB_NO_TRANS ? n : k;
#define LD(r, c) ((row ? ((c) > 1 ? (c) : 1) : ((r) > 1 ? (r) : 1)) + pad)
    const int64_t lda = LD(ar, ac) + a_pad, ldb = LD(br, bc),
                  ldc = LD(m, n);
#define NEL(r, c, ld) (row ? (r) * (ld) : (c) * (ld))
    const int64_t na = NEL(ar, ac, lda), nb = NEL(br, bc, ldb),
                  nc = NEL(m, n, ldc);
#define AT(i, j, ld) (row ? (i) * (ld) + (j) : (i) + (j) * (ld))
    void *A = xmalloc((size_t)na * es), *C = xmalloc((size_t)nc * es);
    void *bias = xmalloc((size_t)n * es);
    uint8_t *B = xmalloc((size_t)nb);
    float *s = xmalloc((size_t)n * sizeof(float));
    double *Ad = xmalloc((size_t)na * 8), *Bd = xmalloc((size_t)nb * 8),
           *Cd = xmalloc((size_t)nc * 8), *bd = xmalloc((size_t)n * 8),
           *G = xmalloc((size_t)nc * 8);
    /* Padding holds a guard (NaN in the inputs: never read). */
    for (int64_t i = 0; i < na; i++)
        dt_set_bits(dt, A, i, dt_guard_bits(dt));
    for (int64_t i = 0; i < nb; i++)
        B[i] = 0x7f;
    for (int64_t i = 0; i < nc; i++)
        dt_set_bits(dt, C, i, beta != 0.0f ? dt_guard_bits(dt)
                                           : dt_poison_bits(dt));
    for (int64_t j = 0; j < n; j++) {
        s[j] = random_scale(exact);
        dt_set(dt, bias, j, exact ? (double)(rng_below(9) - 4)
                                  : rng_value(dt));
        bd[j] = dt_get(dt, bias, j);
    }
    for (int64_t i = 0; i < ar; i++)
        for (int64_t j = 0; j < ac; j++) {
            dt_set(dt, A, AT(i, j, lda), random_x(dt, exact));
            Ad[AT(i, j, lda)] = dt_get(dt, A, AT(i, j, lda));
        }
    for (int64_t i = 0; i < br; i++)
        for (int64_t j = 0; j < bc; j++) {
            const int64_t at = AT(i, j, ldb);
            B[at] = random_q(exact);
            /* the channel of stored B(i, j): column j of op(B) = B, or
             * row i of B when op(B) = B^T */
            const int64_t ch = tb == FB_NO_TRANS ? j : i;
            Bd[at] = e4m3_ref(B[at]) * (double)s[ch];
        }
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            const int64_t at = AT(i, j, ldc);
            if (beta != 0.0f)
                dt_set(dt, C, at, exact ? (double)(rng_below(9) - 4)
                                        : rng_value(dt));
            Cd[at] = beta != 0.0f ? dt_get(dt, C, at) : 0.0;
        }

    const tmem *mem = t->mem;
    void *dA = place(mem, A, (size_t)na * es), *dB = place(mem, B, (size_t)nb);
    void *dS = place(mem, s, (size_t)n * 4), *dC = place(mem, C, (size_t)nc * es);
    void *dbias = place(mem, bias, (size_t)n * es);
    fb_status st = gemm_e4m3_bias_act(
        t->handle, dt, lay, ta, tb, m, n, k, alpha, dA, lda,
        (const fb_e4m3 *)dB, ldb, dS, beta, dC, ldc,
        has_bias ? dbias : NULL, act);

    tcheck c;
    tcheck_init(&c);
    if (st != FB_STATUS_SUCCESS) {
        tcheck_fail(&c, "status %s: %s", fb_status_string(st),
                    fb_handle_last_message(t->handle));
    } else {
        oracle_gemm_gauge(lay, ta, tb, m, n, k, alpha, Ad, lda, Bd, ldb, beta,
                          Cd, ldc, has_bias ? bd : NULL, G);
        oracle_gemm_bias_act(lay, ta, tb, m, n, k, alpha, Ad, lda, Bd, ldb,
                             beta, Cd, ldc, has_bias ? bd : NULL, act);
        void *got = xmalloc((size_t)nc * es);
        mem->get(got, dC, (size_t)nc * es);
        const tol tl = tol_make(dt, dt == FB_DTYPE_F32 ? t->arith_f32
                                                        : t->arith_16);
        const int exact_bits = exact && (act == FB_ACT_NONE ||
                                         act == FB_ACT_RELU);
        for (int64_t idx = 0; idx < nc; idx++) {
            const int64_t i = row ? idx / ldc : idx % ldc;
            const int64_t j = row ? idx % ldc : idx / ldc;
            if (i >= m || j >= n) {
                if (dt_bits(dt, got, idx) != dt_bits(dt, C, idx))
                    tcheck_fail(&c, "padding element %lld was written",
                                (long long)idx);
                continue;
            }
            /* The bound of harness.h for k + 1 roundings in the sum: the
             * scale is one more multiplication than a plain gemm's. */
            const double bound = tol_gemm(&tl, k + 1, act, G[idx], Cd[idx]);
            judge_one(&c, dt, dt_get(dt, got, idx), Cd[idx], bound,
                      exact_bits, i, j);
        }
        free(got);
    }
    check_same(&c, "A", mem, dA, A, (size_t)na * es);
    check_same(&c, "B", mem, dB, B, (size_t)nb);
    check_same(&c, "b_scale", mem, dS, s, (size_t)n * 4);
    check_same(&c, "bias", mem, dbias, bias, (size_t)n * es);
    const int ok = tap_check(
        &c, "%s: gemm_e4m3 %s %s %c%c m=%lld n=%lld k=%lld alpha=%g beta=%g "
            "%s %s%s pad=%lld lda=%lld [%s]",
        t->name, dt_name(dt), lay_name(lay), tr_name(ta), tr_name(tb),
        (long long)m, (long long)n, (long long)k, alpha, beta,
        has_bias ? "bias" : "nobias", act_name(act), exact ? " exact" : "",
        (long long)pad, (long long)lda, fb_handle_last_path(t->handle));
    mem->release(dA), mem->release(dB), mem->release(dS), mem->release(dC);
    mem->release(dbias);
    free(A), free(B), free(C), free(bias), free(s);
    free(Ad), free(Bd), free(Cd), free(bd), free(G);
#undef LD
#undef NEL
#undef AT
    return ok;
}

int fp8_gemm_case(const fp8_target *t, fb_dtype dt, fb_layout lay,
                  fb_transpose ta, fb_transpose tb, int64_t m, int64_t n,
                  int64_t k, float alpha, float beta, int has_bias,
                  fb_activation act, int exact, int64_t pad)
{
    return gemm_case_lda(t, dt, lay, ta, tb, m, n, k, alpha, beta, has_bias,
                         act, exact, pad, 0);
}

int fp8_mlp_case(const fp8_target *t, fb_dtype dt, fb_activation act,
                 int64_t m, int64_t k, int64_t h, int64_t n, int biases,
                 int exact, int64_t pad)
{
    const size_t es = dt_size(dt);
    const int64_t ldx = (k > 1 ? k : 1) + pad, ldy = (n > 1 ? n : 1) + pad;
    void *X = xmalloc((size_t)(m * ldx) * es), *Y = xmalloc((size_t)(m * ldy) * es);
    uint8_t *W[3] = {xmalloc((size_t)(h * k)), xmalloc((size_t)(h * k)),
                     xmalloc((size_t)(n * h))};
    const int64_t wrows[3] = {h, h, n}, wcols[3] = {k, k, h};
    float *S[3];
    void *Bv[3];
    double *Wd[3], *bdv[3];
    double *Xd = xmalloc((size_t)(m * ldx) * 8), *Yd = xmalloc((size_t)(m * ldy) * 8);
    double *Bnd = xmalloc((size_t)(m * ldy) * 8);
    for (int64_t i = 0; i < m * ldx; i++)
        dt_set_bits(dt, X, i, dt_guard_bits(dt));
    for (int64_t i = 0; i < m; i++)
        for (int64_t p = 0; p < k; p++) {
            dt_set(dt, X, i * ldx + p,
                   exact ? (double)(rng_below(5) - 2) : rng_value(dt));
            Xd[i * ldx + p] = dt_get(dt, X, i * ldx + p);
        }
    for (int64_t i = 0; i < m * ldy; i++)
        dt_set_bits(dt, Y, i, dt_poison_bits(dt));
    for (int w = 0; w < 3; w++) {
        S[w] = xmalloc((size_t)wrows[w] * 4);
        Bv[w] = xmalloc((size_t)wrows[w] * es);
        Wd[w] = xmalloc((size_t)(wrows[w] * wcols[w]) * 8);
        bdv[w] = xmalloc((size_t)wrows[w] * 8);
        for (int64_t r = 0; r < wrows[w]; r++) {
            /* exact data: powers of two small enough that H stays in
             * fp16's range */
            S[w][r] = exact ? ldexpf(1.0f, -4 - (int)rng_below(3))
                            : random_scale(0);
            dt_set(dt, Bv[w], r, exact ? (double)(rng_below(5) - 2)
                                       : rng_value(dt));
            bdv[w][r] = dt_get(dt, Bv[w], r);
            for (int64_t c = 0; c < wcols[w]; c++) {
                const int64_t at = r * wcols[w] + c;
                W[w][at] = random_q(exact);
                Wd[w][at] = e4m3_ref(W[w][at]) * (double)S[w][r];
            }
        }
    }
    const tmem *mem = t->mem;
    void *dX = place(mem, X, (size_t)(m * ldx) * es);
    void *dY = place(mem, Y, (size_t)(m * ldy) * es);
    void *dW[3], *dS[3], *dBv[3];
    for (int w = 0; w < 3; w++) {
        dW[w] = place(mem, W[w], (size_t)(wrows[w] * wcols[w]));
        dS[w] = place(mem, S[w], (size_t)wrows[w] * 4);
        dBv[w] = place(mem, Bv[w], (size_t)wrows[w] * es);
    }
    fb_status st = mlp_geglu_forward_e4m3(
        t->handle, dt, act, m, k, h, n, dX, ldx, dW[0], dS[0],
        biases ? dBv[0] : NULL, dW[1], dS[1], biases ? dBv[1] : NULL, dW[2],
        dS[2], biases ? dBv[2] : NULL, dY, ldy);
    tcheck c;
    tcheck_init(&c);
    if (st != FB_STATUS_SUCCESS) {
        tcheck_fail(&c, "status %s: %s", fb_status_string(st),
                    fb_handle_last_message(t->handle));
    } else {
        double *H = xmalloc((size_t)(m * h) * 8);
        oracle_mlp_geglu(dt, act, m, k, h, n, Xd, ldx, Wd[0],
                         biases ? bdv[0] : NULL, Wd[1],
                         biases ? bdv[1] : NULL, Wd[2],
                         biases ? bdv[2] : NULL, Yd, ldy, H);
        /* One rounding more in each sum than tol_mlp counts (the scale):
         * u_acc grown so that its gamma over k + 1 and h + 1 steps covers
         * k + 2 and h + 2. */
        tol tl = tol_make(dt, dt == FB_DTYPE_F32 ? t->arith_f32 : t->arith_16);
        const double kk = (double)(k < h ? k : h);
        tl.u_acc *= (kk + 2.0) / (kk + 1.0);
        tol_mlp(&tl, act, m, k, h, n, Xd, ldx, Wd[0], biases ? bdv[0] : NULL,
                Wd[1], biases ? bdv[1] : NULL, Wd[2], biases ? bdv[2] : NULL,
                H, Yd, ldy, Bnd);
        void *got = xmalloc((size_t)(m * ldy) * es);
        mem->get(got, dY, (size_t)(m * ldy) * es);
        const int exact_bits = 0; /* see the head of the file */
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < ldy; j++) {
                const int64_t idx = i * ldy + j;
                if (j >= n) {
                    if (dt_bits(dt, got, idx) != dt_bits(dt, Y, idx))
                        tcheck_fail(&c, "padding of Y written at %lld",
                                    (long long)idx);
                    continue;
                }
                judge_one(&c, dt, dt_get(dt, got, idx), Yd[idx], Bnd[idx],
                          exact_bits, i, j);
            }
        free(got);
        free(H);
    }
    check_same(&c, "X", mem, dX, X, (size_t)(m * ldx) * es);
    for (int w = 0; w < 3; w++) {
        check_same(&c, "a weight", mem, dW[w], W[w],
                   (size_t)(wrows[w] * wcols[w]));
        check_same(&c, "a scale", mem, dS[w], S[w], (size_t)wrows[w] * 4);
    }
    const int ok = tap_check(
        &c, "%s: mlp_e4m3 %s %s m=%lld k=%lld h=%lld n=%lld %s%s pad=%lld "
            "[%s]",
        t->name, dt_name(dt), act_name(act), (long long)m, (long long)k,
        (long long)h, (long long)n, biases ? "biases" : "nobias",
        exact ? " exact" : "", (long long)pad,
        fb_handle_last_path(t->handle));
    mem->release(dX), mem->release(dY);
    for (int w = 0; w < 3; w++) {
        mem->release(dW[w]), mem->release(dS[w]), mem->release(dBv[w]);
        free(W[w]), free(S[w]), free(Bv[w]), free(Wd[w]), free(bdv[w]);
    }
    free(X), free(Y), free(Xd), free(Yd), free(Bnd);
    return ok;
}

static const fb_dtype dts[3] = {FB_DTYPE_F32, FB_DTYPE_F16, FB_DTYPE_BF16};

void fp8_sweep_gemm(const fp8_target *t)
{
    static const int64_t shapes[][3] = {
        {1, 1, 1}, {2, 3, 5}, {7, 9, 17}, {16, 33, 64}, {3, 70, 300}};
    static const fb_transpose trs[2] = {FB_NO_TRANS, FB_TRANS};
    const int nshapes = (int)(sizeof shapes / sizeof shapes[0]);
    for (int d = t->f32 ? 0 : 1; d < 3; d++)
        for (int l = 0; l < 2; l++)
            for (int a = 0; a < 2; a++)
                for (int b = 0; b < 2; b++)
                    for (int s = 0; s < nshapes; s++) {
                        const fb_layout lay = l ? FB_COL_MAJOR : FB_ROW_MAJOR;
                        const int q = (int)rng_below(N_ACTS);
                        /* every pair of layout and transposes on exact
                         * data, with and without beta and bias */
                        fp8_gemm_case(t, dts[d], lay, trs[a], trs[b],
                                      shapes[s][0], shapes[s][1],
                                      shapes[s][2], s % 2 ? 2.0f : 1.0f,
                                      s % 3 ? 0.0f : 0.5f, s % 2,
                                      s % 2 ? FB_ACT_RELU : FB_ACT_NONE, 1,
                                      s % 2 ? 3 : 0);
                        /* random data, a random activation */
                        fp8_gemm_case(t, dts[d], lay, trs[a], trs[b],
                                      shapes[s][0], shapes[s][1],
                                      shapes[s][2], 0.75f,
                                      s % 2 ? 0.0f : -1.25f, 1, all_acts[q],
                                      0, s % 3 ? 0 : 5);
                    }
    /* Decode shapes in the nn.Linear form (row-major, weight [n, k]):
     * 1..70 rows (the CPU takes 64 per block), k and n not multiples of
     * the kernels' 16 and 4, every activation; and 128 and 200 rows (the
     * GPU's prefill paths: k = 200 the engine's, k = 531 cuBLASLt's). */
    static const int64_t rows[] = {1,  2,  3,  5,   8,   16,
                                   17, 31, 64, 65, 70, 128, 200};
    for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++)
        for (int d = t->f32 ? 0 : 1; d < 3; d++) {
            const fb_activation act = all_acts[(r + (size_t)d) % N_ACTS];
            fp8_gemm_case(t, dts[d], FB_ROW_MAJOR, FB_NO_TRANS, FB_TRANS,
                          rows[r], 259, 531, 1.0f, 0.0f, 1, act, 0, 0);
            fp8_gemm_case(t, dts[d], FB_ROW_MAJOR, FB_NO_TRANS, FB_TRANS,
                          rows[r], 130, 200, 1.0f, 0.0f, r % 2, FB_ACT_NONE,
                          1, r % 2 ? 0 : 8);
        }
    /* The GPU decode kernel's shapes: up to 16 rows, weight rows 16-byte
     * aligned (k a multiple of 16, or ldb padded to one: k = 37 with
     * ldb = 48 reads a ragged tail), k across several 64-wide chunks per
     * warp, n not a multiple of its 16 channels per block; k = 1004 and
     * 4100 end in a partial 64-wide chunk. The last two hold X past
     * 256 KB (16 x 8208, 9 x 14600), where 9..16 rows take the weights
     * through a ring of shared memory, and end in a partial chunk. Then
     * n = 4500 (282 blocks of 16 channels, more than some GPUs hold at
     * once) with k = 100 (a whole chunk and a partial one) at 3, 12 and
     * 20 rows (ring, registers, registers with 4 token tiles). */
    static const int64_t dec[][3] = {{1, 24, 64},   {2, 40, 320},
                                     {7, 8, 1024},  {8, 1000, 4096},
                                     {9, 33, 576},  {15, 17, 2048},
                                     {16, 264, 4096}, {16, 5, 37},
                                     {5, 300, 1004},  {12, 96, 4100},
                                     {16, 40, 8208},  {9, 24, 14600},
                                     {3, 4500, 100},  {12, 4500, 100},
                                     {20, 4500, 100}};
    for (size_t r = 0; r < sizeof dec / sizeof dec[0]; r++)
        for (int d = 1; d < 3; d++) {
            const int64_t pad = dec[r][2] % 16 ? 16 - dec[r][2] % 16 : 0;
            fp8_gemm_case(t, dts[d], FB_ROW_MAJOR, FB_NO_TRANS, FB_TRANS,
                          dec[r][0], dec[r][1], dec[r][2], 1.0f, 0.0f, 1,
                          all_acts[r % N_ACTS], 0, pad);
            fp8_gemm_case(t, dts[d], FB_ROW_MAJOR, FB_NO_TRANS, FB_TRANS,
                          dec[r][0], dec[r][1], dec[r][2], 2.0f, 0.5f,
                          (int)(r % 2), FB_ACT_RELU, 1, pad);
        }
    /* X's rows 8-byte but not 16-byte aligned (lda = 4 mod 8, ldb a
     * multiple of 16), so the decode kernel loads X 8 bytes at a time:
     * up to 8 rows with its weights through the shared-memory ring, k long
     * enough that each warp's ring wraps (6160: six chunks a warp), and
     * from 9 rows through registers, or a ring where X passes 256 KB
     * (13 x 10112). */
    static const int64_t odd_x[][3] = {{1, 40, 6160}, {7, 33, 6160},
                                       {12, 24, 2064}, {13, 24, 10112}};
    for (size_t r = 0; r < sizeof odd_x / sizeof odd_x[0]; r++)
        for (int d = 1; d < 3; d++)
            gemm_case_lda(t, dts[d], FB_ROW_MAJOR, FB_NO_TRANS, FB_TRANS,
                          odd_x[r][0], odd_x[r][1], odd_x[r][2], 1.0f, 0.0f,
                          1, all_acts[(r + (size_t)d) % N_ACTS], 0, 0, 4);
    /* k and alpha edge cases: k = 0 (A, B, b_scale unread), alpha = 0. */
    for (int d = t->f32 ? 0 : 1; d < 3; d++) {
        fp8_gemm_case(t, dts[d], FB_ROW_MAJOR, FB_NO_TRANS, FB_TRANS, 4, 6,
                      0, 1.0f, 0.5f, 1, FB_ACT_SILU, 0, 0);
        fp8_gemm_case(t, dts[d], FB_COL_MAJOR, FB_NO_TRANS, FB_NO_TRANS, 5,
                      3, 8, 0.0f, 2.0f, 1, FB_ACT_NONE, 1, 1);
    }
}

void fp8_sweep_mlp(const fp8_target *t)
{
    static const int64_t shapes[][4] = {{1, 1, 1, 1},  {1, 16, 24, 8},
                                        {3, 17, 33, 9}, {16, 64, 100, 40},
                                        {33, 40, 70, 21}, {70, 35, 19, 45}};
    const int nshapes = (int)(sizeof shapes / sizeof shapes[0]);
    for (int d = t->f32 ? 0 : 1; d < 3; d++)
        for (int s = 0; s < nshapes; s++) {
            const fb_activation act = all_acts[(s + d) % N_ACTS];
            fp8_mlp_case(t, dts[d], act, shapes[s][0], shapes[s][1],
                         shapes[s][2], shapes[s][3], s % 2, 0, s % 2 ? 3 : 0);
            fp8_mlp_case(t, dts[d], s % 2 ? FB_ACT_RELU : FB_ACT_NONE,
                         shapes[s][0], shapes[s][1], shapes[s][2],
                         shapes[s][3], 1, 1, s % 3 ? 0 : 2);
        }
    /* The GPU's decode shapes: up to 16 rows, k a multiple of 16, h and
     * n ragged; then X (12 x 11008) or H (10 x 13120) past the 256 KB
     * from which 9..16 rows take the weights through a ring; then h =
     * 4300 (538 blocks of 8 channels) with k = 80 (a partial chunk) at 5
     * and 14 rows. */
    static const int64_t dec[][4] = {{1, 64, 40, 24},   {4, 256, 136, 64},
                                     {16, 512, 264, 120}, {9, 1024, 70, 33},
                                     {12, 11008, 24, 8}, {10, 64, 13120, 8},
                                     {5, 80, 4300, 16},  {14, 80, 4300, 16}};
    for (int d = 1; d < 3; d++)
        for (size_t s = 0; s < sizeof dec / sizeof dec[0]; s++)
            fp8_mlp_case(t, dts[d], all_acts[(s + (size_t)d) % N_ACTS],
                         dec[s][0], dec[s][1], dec[s][2], dec[s][3],
                         (int)(s % 2), 0, 0);
    /* k == 0 and h == 0: H = act(bg) .* bu, Y = bd. */
    for (int d = t->f32 ? 0 : 1; d < 3; d++) {
        fp8_mlp_case(t, dts[d], FB_ACT_GELU_TANH, 3, 0, 5, 4, 1, 0, 0);
        fp8_mlp_case(t, dts[d], FB_ACT_SILU, 3, 6, 0, 4, 1, 0, 0);
    }
}
