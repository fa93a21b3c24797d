/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_fp8.c -- the e4m3 weight type on the CPU: the conversion helpers on
 * all 256 patterns and against an independent rounding, the row-wise
 * quantiser, gemm_e4m3_bias_act and mlp_geglu_forward_e4m3 against the
 * oracle (fp8_check.h), and their bad arguments, overlaps and empty calls.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fp8_check.h"
#include "tap_child.h"

/* Rows from which the CPU widens e4m3 weights once into the bf16
 * driver's panels on AMX (FB_E4M3_WIDE_MIN_ROWS, lib/cpu/cpu_fp8.h). */
#define FB_E4M3_TEST_WIDE_ROWS 256
/* Rows from which fp32 activations take the fp32 driver with the weights
 * widened, whatever their size (FB_E4M3_WIDE_F32_ROWS). */
#define FB_E4M3_TEST_WIDE_F32_ROWS 128

/* The value of an e4m3 pattern, from the OCP definition. */
static double decode_ref(unsigned b)
{
    const int e = (int)((b >> 3) & 15), m = (int)(b & 7);
    if ((b & 0x7f) == 0x7f)
        return NAN;
    const double v = e == 0 ? ldexp(m, -9) : ldexp(8 + m, e - 10);
    return (b & 0x80) ? -v : v;
}

/* Round to nearest e4m3, ties to the even pattern, saturating at 448,
 * by search over the 127 finite magnitudes. */
static unsigned encode_ref(float x)
{
    if (isnan(x))
        return signbit(x) ? 0xff : 0x7f;
    const unsigned sign = signbit(x) ? 0x80 : 0;
    const double a = fabs((double)x);
    if (a >= 448.0)
        return sign | 0x7e;
    unsigned best = 0;
    for (unsigned b = 1; b <= 0x7e; b++) {
        const double db = fabs(decode_ref(b) - a),
                     dbest = fabs(decode_ref(best) - a);
        if (db < dbest || (db == dbest && (b & 1) == 0))
            best = b;
    }
    return sign | best;
}

static void test_conversions(void)
{
    tcheck c;
    tcheck_init(&c);
    for (unsigned b = 0; b < 256; b++) {
        const float v = fb_e4m3_to_float((fb_e4m3){(uint8_t)b});
        const double r = decode_ref(b);
        if (isnan(r) ? !isnan(v)
                     : ((double)v != r || !signbit(v) != !signbit(r)))
            tcheck_fail(&c, "0x%02x -> %.9g, want %.9g", b, v, r);
    }
    tap_check(&c, "fb_e4m3_to_float: all 256 patterns, sign of zero, NaN");

    tcheck_init(&c);
    for (unsigned b = 0; b < 256; b++) {
        const float v = fb_e4m3_to_float((fb_e4m3){(uint8_t)b});
        const unsigned back = fb_float_to_e4m3(v).bits;
        const unsigned want = isnan(v) ? (b & 0x80) | 0x7f : b;
        if (back != want)
            tcheck_fail(&c, "0x%02x -> %g -> 0x%02x", b, v, back);
    }
    tap_check(&c, "fb_float_to_e4m3(fb_e4m3_to_float(b)) == b");

    /* Midpoints between neighbours (ties), and one fp32 step either side
     * of each; both signs. */
    tcheck_init(&c);
    int ties = 0;
    for (unsigned b = 0; b < 0x7e; b++) {
        const float mid = (float)((decode_ref(b) + decode_ref(b + 1)) / 2);
        const float probes[3] = {mid, nextafterf(mid, 0.0f),
                                 nextafterf(mid, INFINITY)};
        for (int i = 0; i < 3; i++)
            for (int sg = 0; sg < 2; sg++) {
                const float x = sg ? -probes[i] : probes[i];
                const unsigned got = fb_float_to_e4m3(x).bits,
                               want = encode_ref(x);
                if (got != want)
                    tcheck_fail(&c, "%a -> 0x%02x, want 0x%02x", x, got,
                                want);
                ties += i == 0;
            }
        /* the tie goes to the even pattern */
        const unsigned t = fb_float_to_e4m3(mid).bits;
        if ((t & 1) != 0)
            tcheck_fail(&c, "tie %a -> odd 0x%02x", mid, t);
    }
    tap_check(&c, "fb_float_to_e4m3: %d ties to even, their neighbours", ties);

    tcheck_init(&c);
    static const struct {
        float x;
        unsigned want;
    } sp[] = {{0.0f, 0x00},        {-0.0f, 0x80},     {448.0f, 0x7e},
              {449.0f, 0x7e},      {464.0f, 0x7e},    {479.0f, 0x7e},
              {480.0f, 0x7e},      {1e30f, 0x7e},     {FLT_MAX, 0x7e},
              {INFINITY, 0x7e},    {-INFINITY, 0xfe}, {-1e30f, 0xfe},
              {0x1p-10f, 0x00},    {0x1.000002p-10f, 0x01},
              {0x1p-9f, 0x01},     {0x1.8p-9f, 0x02}, {0x1p-6f, 0x08},
              {0x1.ep-7f, 0x08},   {FLT_MIN, 0x00},   {0x1p-149f, 0x00},
              {-0x1p-149f, 0x80},  {1.0f, 0x38},      {-2.5f, 0xc2},
              {NAN, 0x7f},         {-NAN, 0xff}};
    for (size_t i = 0; i < sizeof sp / sizeof sp[0]; i++) {
        const unsigned got = fb_float_to_e4m3(sp[i].x).bits;
        if (got != sp[i].want)
            tcheck_fail(&c, "%a -> 0x%02x, want 0x%02x", sp[i].x, got,
                        sp[i].want);
    }
    tap_check(&c, "fb_float_to_e4m3: saturation at +-448 (Inf too), NaN, "
                  "subnormals, zeros");

    tcheck_init(&c);
    for (int i = 0; i < 200000; i++) {
        float x;
        if (i % 4 == 0) {
            uint32_t u = (uint32_t)rng_next();
            memcpy(&x, &u, sizeof x);
        } else {
            x = (float)ldexp(1.0 + rng_unit(), (int)rng_below(24) - 13);
            if (rng_below(2))
                x = -x;
        }
        const unsigned got = fb_float_to_e4m3(x).bits, want = encode_ref(x);
        if (got != want)
            tcheck_fail(&c, "%a -> 0x%02x, want 0x%02x", x, got, want);
    }
    tap_check(&c, "fb_float_to_e4m3: 200000 random floats against a search");
}

static void test_quantize(fb_handle h)
{
    enum { R = 5, CO = 37, LD = 40 };
    float W[R * LD], S[R];
    fb_e4m3 Q[R * LD];
    for (int i = 0; i < R * LD; i++)
        W[i] = (float)(rng_unit() * 8.0 - 4.0);
    for (int j = 0; j < CO; j++)
        W[2 * LD + j] = 0.0f; /* a zero row */
    W[3 * LD + 7] = -1000.0f;   /* a row whose amax is negative */
    memset(Q, 0xaa, sizeof Q);
    tcheck c;
    tcheck_init(&c);
    fb_status st = fb_quantize_e4m3_rows(h, R, CO, W, LD, Q, LD, S);
    if (st != FB_STATUS_SUCCESS)
        tcheck_fail(&c, "status %s", fb_status_string(st));
    for (int r = 0; r < R && st == FB_STATUS_SUCCESS; r++) {
        float amax = 0.0f;
        for (int j = 0; j < CO; j++)
            amax = fmaxf(amax, fabsf(W[r * LD + j]));
        const float want = amax > 0.0f ? amax / 448.0f : 1.0f;
        if (S[r] != want)
            tcheck_fail(&c, "scale[%d] = %g, want %g", r, S[r], want);
        for (int j = 0; j < CO; j++) {
            const unsigned q = Q[r * LD + j].bits;
            if (q != encode_ref(W[r * LD + j] / want))
                tcheck_fail(&c, "Q(%d,%d) = 0x%02x", r, j, q);
            if ((q & 0x7f) > 0x7e)
                tcheck_fail(&c, "Q(%d,%d) is NaN", r, j);
        }
        for (int j = CO; j < LD; j++)
            if (Q[r * LD + j].bits != 0xaa)
                tcheck_fail(&c, "Q's padding (%d,%d) written", r, j);
        /* the row's largest magnitude maps to 448 */
        if (r != 2) {
            int has448 = 0;
            for (int j = 0; j < CO; j++)
                has448 |= (Q[r * LD + j].bits & 0x7f) == 0x7e;
            if (!has448)
                tcheck_fail(&c, "row %d: no element at +-448", r);
        }
    }
    tap_check(&c, "fb_quantize_e4m3_rows: scales amax/448, zero row, "
                  "Q = e4m3(W / scale), padding kept");

    /* Bad arguments: position, nothing written. */
    fb_e4m3 Q2[R * LD];
    float S2[R];
    struct {
        int64_t rows, cols;
        const float *w;
        int64_t ldw;
        fb_e4m3 *q;
        int64_t ldq;
        float *s;
        int want;
    } bad[] = {{-1, CO, W, LD, Q2, LD, S2, 2},
               {R, -1, W, LD, Q2, LD, S2, 3},
               {R, CO, NULL, LD, Q2, LD, S2, 4},
               {R, CO, W, CO - 1, Q2, LD, S2, 5},
               {R, CO, W, LD, NULL, LD, S2, 6},
               {R, CO, W, LD, (fb_e4m3 *)W, LD, S2, 6},
               {R, CO, W, LD, Q2, CO - 1, S2, 7},
               {R, CO, W, LD, Q2, LD, NULL, 8},
               {R, CO, W, LD, Q2, LD, (float *)Q2, 8},
               {-1, CO, W, LD, NULL, LD, NULL, 2}};
    tcheck_init(&c);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        memset(Q2, 0x55, sizeof Q2);
        memset(S2, 0x55, sizeof S2);
        float wcopy[R * LD];
        memcpy(wcopy, W, sizeof W);
        st = fb_quantize_e4m3_rows(h, bad[i].rows, bad[i].cols, bad[i].w,
                                   bad[i].ldw, bad[i].q, bad[i].ldq,
                                   bad[i].s);
        if (st != FB_STATUS_INVALID_ARGUMENT ||
            fb_handle_last_arg(h) != bad[i].want)
            tcheck_fail(&c, "case %zu: %s at %d, want %d", i,
                        fb_status_string(st), fb_handle_last_arg(h),
                        bad[i].want);
        for (size_t b = 0; b < sizeof Q2; b++)
            if (((unsigned char *)Q2)[b] != 0x55) {
                tcheck_fail(&c, "case %zu wrote Q", i);
                break;
            }
        if (memcmp(wcopy, W, sizeof W) != 0)
            tcheck_fail(&c, "case %zu changed W", i);
    }
    /* A non-finite weight: refused at W's position before any write. */
    W[4 * LD + 3] = NAN;
    memset(Q2, 0x55, sizeof Q2);
    memset(S2, 0x55, sizeof S2);
    st = fb_quantize_e4m3_rows(h, R, CO, W, LD, Q2, LD, S2);
    if (st != FB_STATUS_INVALID_ARGUMENT || fb_handle_last_arg(h) != 4)
        tcheck_fail(&c, "NaN in W: %s at %d", fb_status_string(st),
                    fb_handle_last_arg(h));
    for (size_t b = 0; b < sizeof S2; b++)
        if (((unsigned char *)S2)[b] != 0x55 ||
            ((unsigned char *)Q2)[b] != 0x55) {
            tcheck_fail(&c, "NaN in W: output written");
            break;
        }
    /* Empty: nothing read, success. */
    st = fb_quantize_e4m3_rows(h, 0, CO, NULL, LD, NULL, LD, NULL);
    if (st != FB_STATUS_SUCCESS)
        tcheck_fail(&c, "rows = 0: %s", fb_status_string(st));
    tap_check(&c, "fb_quantize_e4m3_rows: bad arguments by position, "
                  "non-finite W, rows = 0");
}

/* ---- bad arguments of the routines ----------------------------------------- */

enum { GM = 3, GN = 4, GK = 5 };

typedef struct gargs {
    fb_dtype dt;
    fb_layout lay;
    fb_transpose ta, tb;
    int64_t m, n, k;
    float alpha;
    const void *a;
    int64_t lda;
    const fb_e4m3 *b;
    int64_t ldb;
    const float *s;
    float beta;
    void *c;
    int64_t ldc;
    const void *bias;
    fb_activation act;
} gargs;

static void test_gemm_badargs(fb_handle h)
{
    /* One block holds everything, so overlaps can be made. */
    static float blk[256];
    float *A = blk, *S = blk + 32, *C = blk + 64, *bias = blk + 96;
    fb_e4m3 *B = (fb_e4m3 *)(blk + 128);
    for (int i = 0; i < 256; i++)
        blk[i] = 0.25f;
    const gargs ok = {FB_DTYPE_F32, FB_ROW_MAJOR, FB_NO_TRANS, FB_TRANS,
                      GM, GN, GK, 1.0f, A, GK, B, GK, S, 0.0f, C, GN, bias,
                      FB_ACT_NONE};
    gargs cases[40];
    int want[40], n = 0;
#define CASE(field, value, pos)                                               \
    do {                                                                       \
        cases[n] = ok;                                                         \
        cases[n].field = value;                                                \
        want[n++] = pos;                                                       \
    } while (0)
    CASE(dt, (fb_dtype)9, 2);
    CASE(lay, (fb_layout)7, 3);
    CASE(ta, (fb_transpose)0, 4);
    CASE(tb, (fb_transpose)200, 5);
    CASE(m, -1, 6);
    CASE(n, -2, 7);
    CASE(k, -3, 8);
    CASE(a, NULL, 10);
    CASE(a, (const char *)A + 2, 10);
    CASE(lda, GK - 1, 11);
    CASE(lda, INT64_MAX / 2, 11);
    CASE(b, NULL, 12);
    CASE(ldb, GK - 1, 13);
    CASE(s, NULL, 14);
    CASE(s, (const float *)((const char *)S + 1), 14);
    CASE(c, NULL, 16);
    CASE(c, (char *)C + 2, 16);
    CASE(c, A + 2, 16);                       /* C over A */
    CASE(c, (void *)(B + 4), 16);             /* C over B */
    CASE(c, S, 16);                           /* C over b_scale */
    CASE(c, bias - 4, 16);                    /* C over bias */
    CASE(ldc, GN - 1, 17);
    CASE(bias, (const char *)bias + 1, 18);
    CASE(act, (fb_activation)77, 19);
    /* several bad: the lowest position */
    CASE(act, (fb_activation)77, 19);
    cases[n - 1].m = -1, want[n - 1] = 6;
    CASE(c, NULL, 16);
    cases[n - 1].lda = 0, want[n - 1] = 11;
    CASE(s, NULL, 14);
    cases[n - 1].dt = (fb_dtype)5, want[n - 1] = 2;
#undef CASE
    tcheck c;
    tcheck_init(&c);
    for (int i = 0; i < n; i++) {
        const gargs *g = &cases[i];
        float before[256];
        memcpy(before, blk, sizeof blk);
        fb_status st = gemm_e4m3_bias_act(
            h, g->dt, g->lay, g->ta, g->tb, g->m, g->n, g->k, g->alpha,
            g->a, g->lda, g->b, g->ldb, g->s, g->beta, g->c, g->ldc,
            g->bias, g->act);
        if (st != FB_STATUS_INVALID_ARGUMENT ||
            fb_handle_last_arg(h) != want[i] ||
            fb_handle_last_message(h)[0] == '\0')
            tcheck_fail(&c, "case %d: %s at %d, want %d (%s)", i,
                        fb_status_string(st), fb_handle_last_arg(h), want[i],
                        fb_handle_last_message(h));
        if (memcmp(before, blk, sizeof blk) != 0)
            tcheck_fail(&c, "case %d wrote memory", i);
    }
    tap_check(&c, "gemm_e4m3_bias_act: %d bad calls, positions, overlaps, "
                  "nothing written", n);

    /* Legal edges: m = 0 and n = 0 with NULL operands; k = 0 reads no A,
     * B or b_scale; the valid base call. */
    tcheck_init(&c);
    fb_status st = gemm_e4m3_bias_act(h, FB_DTYPE_BF16, FB_ROW_MAJOR,
                                      FB_NO_TRANS, FB_TRANS, 0, 5, 7, 1.0f,
                                      NULL, 7, NULL, 7, NULL, 0.0f, NULL, 5,
                                      NULL, FB_ACT_NONE);
    if (st != FB_STATUS_SUCCESS)
        tcheck_fail(&c, "m = 0: %s", fb_status_string(st));
    st = gemm_e4m3_bias_act(h, FB_DTYPE_F16, FB_COL_MAJOR, FB_NO_TRANS,
                            FB_NO_TRANS, 5, 0, 7, 1.0f, NULL, 5, NULL, 7,
                            NULL, 0.0f, NULL, 5, NULL, FB_ACT_NONE);
    if (st != FB_STATUS_SUCCESS)
        tcheck_fail(&c, "n = 0: %s", fb_status_string(st));
    for (int i = 0; i < 12; i++)
        C[i] = 1.0f;
    st = gemm_e4m3_bias_act(h, FB_DTYPE_F32, FB_ROW_MAJOR, FB_NO_TRANS,
                            FB_TRANS, GM, GN, 0, NAN, NULL, 1, NULL, 1, NULL,
                            2.0f, C, GN, NULL, FB_ACT_NONE);
    if (st != FB_STATUS_SUCCESS)
        tcheck_fail(&c, "k = 0: %s", fb_status_string(st));
    for (int i = 0; i < 12; i++)
        if (C[i] != 2.0f)
            tcheck_fail(&c, "k = 0: C[%d] = %g, want beta C = 2", i, C[i]);
    st = gemm_e4m3_bias_act(h, ok.dt, ok.lay, ok.ta, ok.tb, ok.m, ok.n, ok.k,
                            ok.alpha, ok.a, ok.lda, ok.b, ok.ldb, ok.s,
                            ok.beta, ok.c, ok.ldc, ok.bias, ok.act);
    if (st != FB_STATUS_SUCCESS)
        tcheck_fail(&c, "the base call: %s", fb_status_string(st));
    tap_check(&c, "gemm_e4m3_bias_act: m = 0, n = 0 (NULL operands), k = 0 "
                  "(NaN alpha unread), the base call");
}

typedef struct margs {
    fb_dtype dt;
    fb_activation act;
    int64_t m, k, h, n;
    const void *x;
    int64_t ldx;
    const fb_e4m3 *wg;
    const float *sg;
    const void *bg;
    const fb_e4m3 *wu;
    const float *su;
    const void *bu;
    const fb_e4m3 *wd;
    const float *sd;
    const void *bd;
    void *y;
    int64_t ldy;
} margs;

static void test_mlp_badargs(fb_handle h)
{
    enum { M = 2, K = 4, H = 3, N = 5 };
    static float blk[512];
    float *X = blk, *Y = blk + 32, *sg = blk + 64, *su = blk + 80,
          *sd = blk + 96, *bg = blk + 112, *bu = blk + 128, *bd = blk + 144;
    fb_e4m3 *W = (fb_e4m3 *)(blk + 256);
    for (int i = 0; i < 512; i++)
        blk[i] = 0.5f;
    const margs ok = {FB_DTYPE_F32, FB_ACT_SILU, M, K, H, N, X, K,
                      W, sg, bg, W + 32, su, bu, W + 64, sd, bd, Y, N};
    margs cases[40];
    int want[40], n = 0;
#define CASE(field, value, pos)                                               \
    do {                                                                       \
        cases[n] = ok;                                                         \
        cases[n].field = value;                                                \
        want[n++] = pos;                                                       \
    } while (0)
    CASE(dt, (fb_dtype)3, 2);
    CASE(act, (fb_activation)-1, 3);
    CASE(m, -1, 4);
    CASE(k, -1, 5);
    CASE(h, -1, 6);
    CASE(n, -1, 7);
    CASE(x, NULL, 8);
    CASE(ldx, K - 1, 9);
    CASE(wg, NULL, 10);
    CASE(sg, NULL, 11);
    CASE(sg, (const float *)((const char *)sg + 2), 11);
    CASE(bg, (const char *)bg + 1, 12);
    CASE(wu, NULL, 13);
    CASE(su, NULL, 14);
    CASE(bu, (const char *)bu + 3, 15);
    CASE(wd, NULL, 16);
    CASE(sd, NULL, 17);
    CASE(bd, (const char *)bd + 2, 18);
    CASE(y, NULL, 19);
    CASE(y, X + 1, 19);                /* Y over X */
    CASE(y, sd - 3, 19);               /* Y over sd */
    CASE(y, (void *)(W + 60), 19);     /* Y over Wd */
    CASE(ldy, N - 1, 20);
    CASE(ldy, N - 1, 20);
    cases[n - 1].sg = NULL, want[n - 1] = 11;
#undef CASE
    tcheck c;
    tcheck_init(&c);
    for (int i = 0; i < n; i++) {
        const margs *a = &cases[i];
        float before[512];
        memcpy(before, blk, sizeof blk);
        fb_status st = mlp_geglu_forward_e4m3(
            h, a->dt, a->act, a->m, a->k, a->h, a->n, a->x, a->ldx, a->wg,
            a->sg, a->bg, a->wu, a->su, a->bu, a->wd, a->sd, a->bd, a->y,
            a->ldy);
        if (st != FB_STATUS_INVALID_ARGUMENT ||
            fb_handle_last_arg(h) != want[i])
            tcheck_fail(&c, "case %d: %s at %d, want %d (%s)", i,
                        fb_status_string(st), fb_handle_last_arg(h), want[i],
                        fb_handle_last_message(h));
        if (memcmp(before, blk, sizeof blk) != 0)
            tcheck_fail(&c, "case %d wrote memory", i);
    }
    tap_check(&c, "mlp_geglu_forward_e4m3: %d bad calls, positions, "
                  "overlaps, nothing written", n);

    tcheck_init(&c);
    fb_status st = mlp_geglu_forward_e4m3(
        h, FB_DTYPE_BF16, FB_ACT_GELU_TANH, 0, K, H, N, NULL, K, NULL, NULL,
        NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, N);
    if (st != FB_STATUS_SUCCESS)
        tcheck_fail(&c, "m = 0: %s", fb_status_string(st));
    /* h = 0: Y = bd; no weight or scale read. */
    st = mlp_geglu_forward_e4m3(h, FB_DTYPE_F32, FB_ACT_GELU_TANH, M, K, 0,
                                N, X, K, NULL, NULL, NULL, NULL, NULL, NULL,
                                NULL, NULL, bd, Y, N);
    if (st != FB_STATUS_SUCCESS)
        tcheck_fail(&c, "h = 0: %s", fb_status_string(st));
    for (int i = 0; i < M * N; i++)
        if (Y[i] != bd[i % N])
            tcheck_fail(&c, "h = 0: Y[%d] = %g", i, Y[i]);
    tap_check(&c, "mlp_geglu_forward_e4m3: m = 0 with NULLs, h = 0");
}

/* The NaN pattern in a weight row gives NaN in that channel only, for
 * every token and on every kernel path (a row long enough for the vector
 * widening, and its scalar tail); an e4m3 +-448 times a large scale
 * overflows to Inf as fp32 arithmetic does. */
static void test_special_weights(fb_handle h, int M)
{
    enum { MMAX = 40, N = 9, K = 37 };
    float X[MMAX * K], S[N], C[MMAX * N];
    fb_e4m3 W[N * K];
    for (int i = 0; i < M * K; i++)
        X[i] = 1.0f;
    for (int j = 0; j < N; j++)
        S[j] = 1.0f;
    for (int i = 0; i < N * K; i++)
        W[i].bits = 0x38; /* 1.0 */
    W[2 * K + 5].bits = 0x7f;  /* NaN, in the vector part */
    W[6 * K + 36].bits = 0xff; /* -NaN, in the tail */
    for (int p = 0; p < K; p++)
        W[4 * K + p].bits = 0x7e; /* 448 */
    S[4] = 3e36f;
    tcheck c;
    tcheck_init(&c);
    fb_status st = gemm_e4m3_bias_act(h, FB_DTYPE_F32, FB_ROW_MAJOR,
                                      FB_NO_TRANS, FB_TRANS, M, N, K, 1.0f, X,
                                      K, W, K, S, 0.0f, C, N, NULL,
                                      FB_ACT_NONE);
    if (st != FB_STATUS_SUCCESS)
        tcheck_fail(&c, "status %s", fb_status_string(st));
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            const float v = C[i * N + j];
            const int bad = j == 2 || j == 6 ? !isnan(v)
                            : j == 4         ? !(isinf(v) && v > 0)
                                             : v != (float)K;
            if (bad)
                tcheck_fail(&c, "C(%d,%d) = %g", i, j, v);
        }
    tap_check(&c, "gemm_e4m3_bias_act, %d rows: NaN weights give NaN in "
                  "their channel only; 448 x 3e36 overflows to Inf [%s]",
              M, fb_handle_last_path(h));
}

/* C = X (W S)^T in the nn.Linear form, bf16 X and C, no bias or
 * activation. */
static fb_status bf16_linear(fb_handle h, int m, int n, int k,
                             const fb_bfloat16 *x, const fb_e4m3 *w,
                             const float *s, fb_bfloat16 *c)
{
    return gemm_e4m3_bias_act(h, FB_DTYPE_BF16, FB_ROW_MAJOR, FB_NO_TRANS,
                              FB_TRANS, m, n, k, 1.0f, x, k, w, k, s, 0.0f,
                              c, n, NULL, FB_ACT_NONE);
}

/* Channel j's weight row holds pattern j once (at a column that moves
 * with j, inside a 32-column tile and in the ragged last one), scale 1:
 * with x all ones, C(i, j) is the pattern's value exactly. */
static void pattern_weights(fb_e4m3 *W, float *S, int n, int k)
{
    memset(W, 0, (size_t)n * (size_t)k * sizeof *W);
    for (int j = 0; j < n; j++) {
        W[j * k + (j * 7) % k].bits = (uint8_t)j;
        S[j] = 1.0f;
    }
}

static void check_pattern(tcheck *c, int i, int j, double got)
{
    const double want = decode_ref((unsigned)j);
    if (isnan(want) ? !isnan(got) : got != want)
        tcheck_fail(c, "C(%d,%d) = %g, want %g (pattern 0x%02x)", i, j, got,
                    want, j);
}

/* bf16 decode rows (4 and more tokens): where the CPU has AMX, the
 * weights are widened to bf16 tiles for TDPBF16PS (path "e4m3-amx").
 * Every one of the 256 patterns must widen exactly: channel j's row holds
 * pattern j once (at a column that moves with j, inside a 32-column tile
 * and in the ragged last one), X is all ones, so C(i, j) is the pattern's
 * value exactly (bf16 holds every e4m3 value), NaN for the NaN pattern of
 * either sign. */
static void test_bf16_patterns(fb_handle h)
{
    enum { M = 6, N = 256, K = 37 };
    static fb_bfloat16 X[M * K], C[M * N];
    static fb_e4m3 W[N * K];
    static float S[N];
    for (int i = 0; i < M * K; i++)
        X[i] = fb_float_to_bfloat16(1.0f);
    pattern_weights(W, S, N, K);
    tcheck c;
    tcheck_init(&c);
    const fb_status st = bf16_linear(h, M, N, K, X, W, S, C);
    if (st != FB_STATUS_SUCCESS)
        tcheck_fail(&c, "status %s", fb_status_string(st));
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++)
            check_pattern(&c, i, j, fb_bfloat16_to_float(C[i * N + j]));
    tap_check(&c, "gemm_e4m3_bias_act bf16, %d rows: all 256 patterns "
                  "exactly, NaN of either sign [%s]",
              M, fb_handle_last_path(h));
}

/* fp32 activations from FB_E4M3_TEST_WIDE_F32_ROWS rows: on AVX-512 the
 * weights are widened once into the fp32 driver's panels
 * (cpu/e4m3-wide/cpu/f32-avx512). Every pattern must widen exactly there
 * too (X all ones, pattern j once in channel j's row, as above); the NaN
 * pattern gives NaN in its channel only. */
static void test_f32_wide_patterns(fb_handle h)
{
    enum { M = FB_E4M3_TEST_WIDE_F32_ROWS, N = 256, K = 37 };
    static float X[M * K], C[M * N], S[N];
    static fb_e4m3 W[N * K];
    for (int i = 0; i < M * K; i++)
        X[i] = 1.0f;
    pattern_weights(W, S, N, K);
    tcheck c;
    tcheck_init(&c);
    const fb_status st = gemm_e4m3_bias_act(
        h, FB_DTYPE_F32, FB_ROW_MAJOR, FB_NO_TRANS, FB_TRANS, M, N, K, 1.0f,
        X, K, W, K, S, 0.0f, C, N, NULL, FB_ACT_NONE);
    if (st != FB_STATUS_SUCCESS)
        tcheck_fail(&c, "status %s", fb_status_string(st));
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++)
            check_pattern(&c, i, j, C[i * N + j]);
    tap_check(&c, "gemm_e4m3_bias_act f32, %d rows: all 256 patterns "
                  "exactly, NaN in its channel only [%s]",
              M, fb_handle_last_path(h));
}

/* Where the fp32 GEMM runs the AVX-512 kernels, e4m3 weights with fp32
 * activations of many rows run it too, widened (the rule of
 * lib/cpu/cpu_fp8.h: any weights from 128 rows), for the gemm and the
 * MLP; elsewhere (no AVX-512, or OpenBLAS chosen) the e4m3 rows path. */
static void test_f32_wide_path(fb_handle h)
{
    enum { M = FB_E4M3_TEST_WIDE_F32_ROWS, N = 40, K = 64, H = 48 };
    static float X[M * K], C[M * N], W32[N * K], S[H];
    static fb_e4m3 W[H * K], Wd[N * H];
    for (int i = 0; i < M * K; i++)
        X[i] = (float)(rng_unit() - 0.5);
    for (int i = 0; i < N * K; i++)
        W32[i] = (float)(rng_unit() - 0.5);
    memset(W, 0x30, sizeof W);
    memset(Wd, 0x28, sizeof Wd);
    for (int j = 0; j < H; j++)
        S[j] = 0.5f;
    char f32_path[256];
    int ok = sgemm_bias_act(h, FB_ROW_MAJOR, FB_NO_TRANS, FB_TRANS, M, N, K,
                            1.0f, X, K, W32, K, 0.0f, C, N, NULL,
                            FB_ACT_NONE) == FB_STATUS_SUCCESS;
    snprintf(f32_path, sizeof f32_path, "%s", fb_handle_last_path(h));
    /* the fp32 kernels' family (this k takes its small-k entry) */
    const int driver = strstr(f32_path, "cpu/f32-") != NULL;
    ok &= gemm_e4m3_bias_act(h, FB_DTYPE_F32, FB_ROW_MAJOR, FB_NO_TRANS,
                             FB_TRANS, M, N, K, 1.0f, X, K, W, K, S, 0.0f, C,
                             N, NULL, FB_ACT_NONE) == FB_STATUS_SUCCESS;
    char gemm_path[256];
    snprintf(gemm_path, sizeof gemm_path, "%s", fb_handle_last_path(h));
    ok &= mlp_geglu_forward_e4m3(h, FB_DTYPE_F32, FB_ACT_SILU, M, K, H, N, X,
                                 K, W, S, NULL, W, S, NULL, Wd, S, NULL, C,
                                 N) == FB_STATUS_SUCCESS;
    const char *mlp_path = fb_handle_last_path(h);
    const char *want = "cpu/e4m3-wide/cpu/f32-avx512";
    if (driver)
        ok &= strncmp(gemm_path, want, strlen(want)) == 0 &&
              strncmp(mlp_path, want, strlen(want)) == 0;
    else
        ok &= strstr(gemm_path, "e4m3-wide") == NULL &&
              strstr(mlp_path, "e4m3-wide") == NULL;
    tap_ok(ok, "e4m3 weights, f32 x of %d rows: fp32 GEMM %s; gemm %s; "
               "MLP %s",
           M, f32_path, gemm_path, mlp_path);
}

/* Whether the path says AMX's products ran on all of x (the e4m3 AMX
 * path without its exact fallback, or the widened path). */
static int amx_could_flush(const char *path)
{
    return (strstr(path, "e4m3-amx") != NULL &&
            strstr(path, "where-tiny") == NULL) ||
           strstr(path, "e4m3-wide") != NULL;
}

/* AMX flushes products below 2^-126; x so small that one could must take
 * the exact path ("where-tiny") and keep the product's subnormal bits:
 * x = (1 + 2^-7) 2^-120 times q = 2^-9 is 2^-129 + 2^-136, which rounds to
 * bf16 as 2^-129 (0 if flushed). The C output in fp32 terms: gemm with
 * bf16 C rounds once, so the reference is that rounding. */
static void test_bf16_tiny_x_rows(fb_handle h, int M)
{
    enum { MMAX = FB_E4M3_TEST_WIDE_ROWS, N = 20, K = 40 };
    static fb_bfloat16 X[MMAX * K], C[MMAX * N];
    static fb_e4m3 W[N * K];
    static float S[N];
    memset(X, 0, sizeof X);
    for (int i = 0; i < M; i++)
        X[i * K + 3 * (i % 13)] =
            fb_float_to_bfloat16(ldexpf(1.0f + 0x1p-7f, -120));
    for (int i = 0; i < N * K; i++)
        W[i].bits = 0x01; /* 2^-9 */
    for (int j = 0; j < N; j++)
        S[j] = 1.0f;
    tcheck c;
    tcheck_init(&c);
    const fb_status st = bf16_linear(h, M, N, K, X, W, S, C);
    const char *path = fb_handle_last_path(h);
    if (st != FB_STATUS_SUCCESS)
        tcheck_fail(&c, "status %s", fb_status_string(st));
    if (amx_could_flush(path))
        tcheck_fail(&c, "path %s: AMX ran on x it could flush", path);
    const float want = fb_bfloat16_to_float(
        fb_float_to_bfloat16(0x1p-129f + 0x1p-136f));
    for (int i = 0; i < M * N; i++)
        if (fb_bfloat16_to_float(C[i]) != want)
            tcheck_fail(&c, "C[%d] = %a, want %a", i,
                        (double)fb_bfloat16_to_float(C[i]), (double)want);
    tap_check(&c, "gemm_e4m3_bias_act bf16, %d rows: products below 2^-126 "
                  "keep their bits [%s]",
              M, path);
}

/* The MLP's gate on the same x: G = 2^-129 + 2^-136 (Wg all 2^-9),
 * U = bu = 1 (Wu zero), act none, so H = bf16(G) = 2^-129, and Y row j =
 * H (Wd row j: one 1.0) 2^20 = 2^-109 exactly; 0 if a product flushed. */
static void test_bf16_tiny_x_mlp(fb_handle h, int M)
{
    enum { MMAX = FB_E4M3_TEST_WIDE_ROWS, K = 40, H = 20, N = 8 };
    static fb_bfloat16 X[MMAX * K], Y[MMAX * N], bu[H];
    static fb_e4m3 Wg[H * K], Wu[H * K], Wd[N * H];
    static float sg[H], su[H], sd[N];
    memset(X, 0, sizeof X);
    for (int i = 0; i < M; i++)
        X[i * K + 3 * (i % 13)] =
            fb_float_to_bfloat16(ldexpf(1.0f + 0x1p-7f, -120));
    memset(Wu, 0, sizeof Wu);
    memset(Wd, 0, sizeof Wd);
    for (int i = 0; i < H * K; i++)
        Wg[i].bits = 0x01;
    for (int j = 0; j < H; j++)
        sg[j] = su[j] = 1.0f, bu[j] = fb_float_to_bfloat16(1.0f);
    for (int j = 0; j < N; j++)
        Wd[j * H + (5 * j) % H].bits = 0x38, sd[j] = 0x1p20f; /* 1.0 */
    tcheck c;
    tcheck_init(&c);
    const fb_status st = mlp_geglu_forward_e4m3(
        h, FB_DTYPE_BF16, FB_ACT_NONE, M, K, H, N, X, K, Wg, sg, NULL, Wu,
        su, bu, Wd, sd, NULL, Y, N);
    const char *path = fb_handle_last_path(h);
    if (st != FB_STATUS_SUCCESS)
        tcheck_fail(&c, "status %s", fb_status_string(st));
    if (amx_could_flush(path))
        tcheck_fail(&c, "path %s: AMX ran on x it could flush", path);
    for (int i = 0; i < M * N; i++)
        if (fb_bfloat16_to_float(Y[i]) != 0x1p-109f)
            tcheck_fail(&c, "Y[%d] = %a, want 0x1p-109", i,
                        (double)fb_bfloat16_to_float(Y[i]));
    tap_check(&c, "mlp_geglu_forward_e4m3 bf16, %d rows: gate products "
                  "below 2^-126 keep their bits [%s]",
              M, path);
}

/* At a few rows (the AMX tiles), and at as many as the weights widened
 * once into the bf16 drivers' panels take (cpu_fp8_wide.c). */
static void test_bf16_tiny_x(fb_handle h)
{
    test_bf16_tiny_x_rows(h, 5);
    test_bf16_tiny_x_rows(h, FB_E4M3_TEST_WIDE_ROWS);
    test_bf16_tiny_x_mlp(h, 5);
    test_bf16_tiny_x_mlp(h, FB_E4M3_TEST_WIDE_ROWS);
}

/* The same call on 1, 2 and 3 threads gives the same bits: each output's
 * sum is taken in one order whatever the split (threads own whole groups
 * of four channels, or, for the gemm of many rows on AMX, whole blocks of
 * rows). */
static void test_threads_bitwise(void)
{
    /* big enough for the thread heuristic to use several (a million
     * flops a thread) */
    enum { M = 5, K = 1030, H = 258, N = 203, MB = 450 };
    static fb_bfloat16 X[MB * K], Xt[MB * K], Y[3][M * N], Yg[3][M * H],
        Yb[3][MB * H], Ym[3][MB * N], Yt[3][MB * N];
    static fb_e4m3 Wg[H * K], Wu[H * K], Wd[N * H];
    static float sg[H], su[H], sd[N];
    for (int i = 0; i < MB * K; i++)
        X[i] = fb_float_to_bfloat16((float)(rng_unit() * 2 - 1));
    /* Xt: X with its first 100 rows scaled by 2^-58, so that their H is
     * too small to meet Wd on AMX (products below 2^-126): the chunks of
     * a block holding them take the fp32 down projection, whatever rows
     * the block has on this number of threads. */
    for (int i = 0; i < MB * K; i++)
        Xt[i] = i < 100 * K ? fb_float_to_bfloat16(ldexpf(
                                  fb_bfloat16_to_float(X[i]), -58))
                            : X[i];
    for (int i = 0; i < H * K; i++) {
        Wg[i].bits = (uint8_t)rng_below(0x7f);
        Wu[i].bits = (uint8_t)(rng_below(0x7f) | 0x80 * rng_below(2));
    }
    for (int i = 0; i < N * H; i++)
        Wd[i].bits = (uint8_t)rng_below(0x7f);
    for (int i = 0; i < H; i++)
        sg[i] = su[i] = (float)(rng_unit() / 64);
    for (int i = 0; i < N; i++)
        sd[i] = (float)(rng_unit() / 64);
    int ok = 1;
    for (int t = 0; t < 3; t++) {
        fb_handle h = handle_on(FB_BACKEND_CPU);
        if (fb_set_threads(h, t + 1) != FB_STATUS_SUCCESS ||
            mlp_geglu_forward_e4m3(h, FB_DTYPE_BF16, FB_ACT_GELU_TANH, M, K,
                                   H, N, X, K, Wg, sg, NULL, Wu, su, NULL,
                                   Wd, sd, NULL, Y[t], N) !=
                FB_STATUS_SUCCESS ||
            gemm_e4m3_bias_act(h, FB_DTYPE_BF16, FB_ROW_MAJOR, FB_NO_TRANS,
                               FB_TRANS, M, H, K, 1.0f, X, K, Wg, K, sg,
                               0.0f, Yg[t], H, NULL, FB_ACT_SILU) !=
                FB_STATUS_SUCCESS)
            ok = 0;
        tap_diag("%d thread(s) asked: %s", t + 1, fb_handle_last_path(h));
        if (gemm_e4m3_bias_act(h, FB_DTYPE_BF16, FB_ROW_MAJOR, FB_NO_TRANS,
                               FB_TRANS, MB, H, K, 1.0f, X, K, Wu, K, su,
                               0.0f, Yb[t], H, NULL, FB_ACT_GELU_TANH) !=
            FB_STATUS_SUCCESS)
            ok = 0;
        tap_diag("%d thread(s) asked, %d rows: %s", t + 1, MB,
                 fb_handle_last_path(h));
        if (mlp_geglu_forward_e4m3(h, FB_DTYPE_BF16, FB_ACT_SILU, MB, K, H, N,
                                   X, K, Wg, sg, NULL, Wu, su, NULL, Wd, sd,
                                   NULL, Ym[t], N) != FB_STATUS_SUCCESS)
            ok = 0;
        tap_diag("%d thread(s) asked, MLP of %d rows: %s", t + 1, MB,
                 fb_handle_last_path(h));
        if (mlp_geglu_forward_e4m3(h, FB_DTYPE_BF16, FB_ACT_SILU, MB, K, H, N,
                                   Xt, K, Wg, sg, NULL, Wu, su, NULL, Wd, sd,
                                   NULL, Yt[t], N) != FB_STATUS_SUCCESS)
            ok = 0;
        tap_diag("%d thread(s) asked, MLP of %d rows, 100 tiny: %s", t + 1,
                 MB, fb_handle_last_path(h));
        fb_destroy(h);
    }
    /* fp32 activations: 150 rows (weights widened into the fp32 driver)
     * and 40 (the e4m3 buffered form, the channels split between the
     * threads). */
    enum { MF = 150, MS = 40 };
    static float Sf[3][MS * H];
    static float Xf[MF * K], Gf[3][MF * H], Mf[3][MF * N];
    for (int i = 0; i < MF * K; i++)
        Xf[i] = fb_bfloat16_to_float(X[i]);
    for (int t = 0; t < 3; t++) {
        fb_handle h = handle_on(FB_BACKEND_CPU);
        if (fb_set_threads(h, t + 1) != FB_STATUS_SUCCESS ||
            gemm_e4m3_bias_act(h, FB_DTYPE_F32, FB_ROW_MAJOR, FB_NO_TRANS,
                               FB_TRANS, MF, H, K, 1.0f, Xf, K, Wg, K, sg,
                               0.0f, Gf[t], H, NULL, FB_ACT_GELU_TANH) !=
                FB_STATUS_SUCCESS)
            ok = 0;
        tap_diag("%d thread(s) asked, f32 gemm of %d rows: %s", t + 1, MF,
                 fb_handle_last_path(h));
        if (gemm_e4m3_bias_act(h, FB_DTYPE_F32, FB_ROW_MAJOR, FB_NO_TRANS,
                               FB_TRANS, MS, H, K, 1.0f, Xf, K, Wu, K, su,
                               0.0f, Sf[t], H, NULL, FB_ACT_SILU) !=
            FB_STATUS_SUCCESS)
            ok = 0;
        tap_diag("%d thread(s) asked, f32 gemm of %d rows: %s", t + 1, MS,
                 fb_handle_last_path(h));
        if (mlp_geglu_forward_e4m3(h, FB_DTYPE_F32, FB_ACT_GELU_TANH, MF, K,
                                   H, N, Xf, K, Wg, sg, NULL, Wu, su, NULL,
                                   Wd, sd, NULL, Mf[t], N) !=
            FB_STATUS_SUCCESS)
            ok = 0;
        tap_diag("%d thread(s) asked, f32 MLP of %d rows: %s", t + 1, MF,
                 fb_handle_last_path(h));
        fb_destroy(h);
    }
    for (int t = 1; t < 3; t++)
        ok &= memcmp(Gf[0], Gf[t], sizeof Gf[0]) == 0 &&
              memcmp(Sf[0], Sf[t], sizeof Sf[0]) == 0 &&
              memcmp(Mf[0], Mf[t], sizeof Mf[0]) == 0;
    for (int t = 1; t < 3; t++)
        ok &= memcmp(Y[0], Y[t], sizeof Y[0]) == 0 &&
              memcmp(Yg[0], Yg[t], sizeof Yg[0]) == 0 &&
              memcmp(Yb[0], Yb[t], sizeof Yb[0]) == 0 &&
              memcmp(Ym[0], Ym[t], sizeof Ym[0]) == 0 &&
              memcmp(Yt[0], Yt[t], sizeof Yt[0]) == 0;
    tap_ok(ok, "e4m3 gemm and MLP: the same bits on 1, 2 and 3 threads");
}

int main(int argc, char **argv)
{
    const char *phase = tap_child_init(argc, argv);
    if (phase != NULL && !tap_in_phase("no-amx"))
        tap_bail("unknown phase %s", phase);
    tap_begin("test_fp8");
    test_conversions();
    fb_handle h = handle_on(FB_BACKEND_CPU);
    test_quantize(h);
    test_gemm_badargs(h);
    test_mlp_badargs(h);
    /* 3 rows: the register forms; 9: the zmm form's second token group;
     * 40: the buffered form */
    test_special_weights(h, 3);
    test_special_weights(h, 9);
    test_special_weights(h, 40);
    test_bf16_patterns(h);
    /* With AMX, the whole program runs again without it
     * (FUSEDBLAS_CPU_NO_AMX=1, read once per process): the zmm forms then
     * take the bf16 rows AMX takes here. */
    const int amx = strstr(fb_handle_last_path(h), "e4m3-amx") != NULL;
    test_bf16_tiny_x(h);
    test_f32_wide_patterns(h);
    test_f32_wide_path(h);
    test_threads_bitwise();
    const fp8_target t = {"cpu", h, &tmem_host, ARITH_FP32, ARITH_FP32, 1};
    fp8_sweep_gemm(&t);
    fp8_sweep_mlp(&t);
    /* Many rows of bf16: on AMX with two threads or more, whole blocks of
     * rows a thread; against the oracle, every activation in turn. */
    for (int a = 0; a < 2; a++)
        fp8_gemm_case(&t, FB_DTYPE_BF16, FB_ROW_MAJOR, FB_NO_TRANS, FB_TRANS,
                      a ? 600 : 450, 259, 131, 1.0f, a ? 0.5f : 0.0f, 1,
                      a ? FB_ACT_SILU : FB_ACT_GELU_TANH, 0, a ? 3 : 0);
    /* Also X transposed (its tokens contiguous), alpha and beta, and
     * integer data (bit for bit): from FB_E4M3_TEST_WIDE_ROWS rows on AMX,
     * the weights widened once into the bf16 driver's panels. */
    fp8_gemm_case(&t, FB_DTYPE_BF16, FB_ROW_MAJOR, FB_TRANS, FB_TRANS, 300,
                  200, 96, 0.5f, -1.0f, 1, FB_ACT_GELU_ERF, 0, 5);
    fp8_gemm_case(&t, FB_DTYPE_BF16, FB_ROW_MAJOR, FB_NO_TRANS, FB_TRANS,
                  FB_E4M3_TEST_WIDE_ROWS, 130, 64, 1.0f, 0.0f, 0, FB_ACT_NONE,
                  1, 0);
    fp8_mlp_case(&t, FB_DTYPE_BF16, FB_ACT_GELU_TANH, 450, 64, 200, 70, 1, 0,
                 0);
    fp8_mlp_case(&t, FB_DTYPE_BF16, FB_ACT_SILU, 640, 96, 130, 48, 0, 0, 3);
    /* The MLP from FB_E4M3_TEST_WIDE_ROWS rows (or 32, small weights) on
     * AMX: widened once into the bf16 MLP driver's panels, its scales on
     * G, U and Y's sums; integer data bit for bit, and the hidden-split
     * form (256 rows or fewer, two threads). */
    fp8_mlp_case(&t, FB_DTYPE_BF16, FB_ACT_GELU_TANH, FB_E4M3_TEST_WIDE_ROWS,
                 256, 512, 128, 1, 1, 0);
    fp8_mlp_case(&t, FB_DTYPE_BF16, FB_ACT_RELU, 40, 72, 100, 36, 1, 1, 2);
    fp8_mlp_case(&t, FB_DTYPE_BF16, FB_ACT_SILU, 300, 256, 512, 128, 1, 0,
                 0);
    /* fp32 activations from 48, 96 or 128 rows by the weights' size:
     * the weights widened into the fp32 drivers' panels on AVX-512, their
     * scales on the dot products (alpha (dot s) + beta C + bias; the MLP's
     * G, U and Y); both layouts, X transposed, integer data bit for bit,
     * the MLP's hidden-split form (256 rows or fewer, two threads) and
     * its row blocks. */
    fp8_gemm_case(&t, FB_DTYPE_F32, FB_ROW_MAJOR, FB_NO_TRANS, FB_TRANS, 130,
                  70, 200, 0.5f, -1.0f, 1, FB_ACT_GELU_TANH, 0, 3);
    fp8_gemm_case(&t, FB_DTYPE_F32, FB_COL_MAJOR, FB_NO_TRANS, FB_TRANS, 64,
                  33, 45, 1.0f, 0.0f, 1, FB_ACT_RELU, 0, 0);
    fp8_gemm_case(&t, FB_DTYPE_F32, FB_ROW_MAJOR, FB_TRANS, FB_TRANS, 150,
                  90, 77, 1.0f, 0.5f, 0, FB_ACT_SILU, 0, 1);
    fp8_gemm_case(&t, FB_DTYPE_F32, FB_ROW_MAJOR, FB_NO_TRANS, FB_TRANS, 200,
                  64, 130, 1.0f, 0.0f, 0, FB_ACT_NONE, 1, 0);
    fp8_mlp_case(&t, FB_DTYPE_F32, FB_ACT_GELU_TANH, 130, 72, 100, 36, 1, 0,
                 0);
    fp8_mlp_case(&t, FB_DTYPE_F32, FB_ACT_SILU, 300, 96, 130, 48, 1, 1, 2);
    fp8_mlp_case(&t, FB_DTYPE_F32, FB_ACT_GELU_ERF, 60, 40, 300, 50, 0, 0,
                 0);
    /* The same on auto with host memory (the CPU, with one thread and
     * with the default count). */
    fb_handle a = handle_on(FB_BACKEND_AUTO);
    if (fb_set_threads(a, 1) != FB_STATUS_SUCCESS)
        tap_bail("fb_set_threads");
    const fp8_target t1 = {"auto/1-thread", a, &tmem_host, ARITH_FP32, ARITH_FP32,
                           1};
    fp8_gemm_case(&t1, FB_DTYPE_BF16, FB_ROW_MAJOR, FB_NO_TRANS, FB_TRANS,
                  16, 67, 300, 1.0f, 0.0f, 1, FB_ACT_GELU_TANH, 0, 0);
    fp8_mlp_case(&t1, FB_DTYPE_F16, FB_ACT_SILU, 5, 40, 70, 33, 1, 0, 0);
    fb_destroy(a);
    fb_destroy(h);
    if (amx && !tap_in_phase("no-amx")) {
        const char *no_amx[] = {"FUSEDBLAS_CPU_NO_AMX=1", NULL};
        tap_rerun("no-amx", no_amx, 600);
    }
    return tap_end();
}
