/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * harness.c -- shared test machinery. See harness.h.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "harness.h"

const fb_activation all_acts[N_ACTS] = {FB_ACT_NONE, FB_ACT_RELU,
                                        FB_ACT_GELU_TANH, FB_ACT_GELU_ERF,
                                        FB_ACT_SILU};
const fb_dtype all_dtypes[3] = {FB_DTYPE_F32, FB_DTYPE_F16, FB_DTYPE_BF16};

/* ---- TAP ---------------------------------------------------------------- */

static int tap_n, tap_failed, tap_skipped;
static double tap_worst;
static char tap_worst_label[256];
static uint64_t tap_seed;

static void rng_seed(uint64_t seed);

void tap_begin(const char *program)
{
    const char *env = getenv("FB_TEST_SEED");
    if (env != NULL && *env != '\0')
        tap_seed = strtoull(env, NULL, 0);
    else
        tap_seed = (uint64_t)time(NULL) * 1000003u ^ (uint64_t)getpid();
    rng_seed(tap_seed);
    printf("# %s: seed %llu (set FB_TEST_SEED=%llu to repeat)\n", program,
           (unsigned long long)tap_seed, (unsigned long long)tap_seed);
    fflush(stdout);
}

uint64_t test_seed(void)
{
    return tap_seed;
}

static void vpoint(int pass, const char *fmt, va_list ap)
{
    tap_n++;
    if (!pass)
        tap_failed++;
    printf("%s %d - ", pass ? "ok" : "not ok", tap_n);
    vprintf(fmt, ap);
    putchar('\n');
}

int tap_ok(int pass, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vpoint(pass, fmt, ap);
    va_end(ap);
    fflush(stdout);
    return pass;
}

void tap_skip(const char *fmt, ...)
{
    va_list ap;
    tap_n++;
    tap_skipped++;
    printf("ok %d # SKIP ", tap_n);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    putchar('\n');
    fflush(stdout);
}

void tap_diag(const char *fmt, ...)
{
    va_list ap;
    fputs("# ", stdout);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    putchar('\n');
    fflush(stdout);
}

void tap_skip_all(const char *reason)
{
    printf("1..0 # SKIP %s\n", reason);
    fflush(stdout);
    exit(0);
}

void tap_bail(const char *fmt, ...)
{
    va_list ap;
    fputs("Bail out! ", stdout);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    putchar('\n');
    fflush(stdout);
    exit(99);
}

int tap_end(void)
{
    if (tap_worst > 0)
        printf("# largest error / bound: %.3g (%s)\n", tap_worst,
               tap_worst_label);
    printf("# %d test points, %d failed, %d skipped\n", tap_n, tap_failed,
           tap_skipped);
    printf("1..%d\n", tap_n);
    fflush(stdout);
    return tap_failed ? 1 : 0;
}

void tcheck_init(tcheck *c)
{
    memset(c, 0, sizeof *c);
}

void tcheck_fail(tcheck *c, const char *fmt, ...)
{
    c->failed = 1;
    if (c->nproblems < TCHECK_MAXDIAG) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(c->diag[c->nproblems], sizeof c->diag[0], fmt, ap);
        va_end(ap);
    }
    c->nproblems++;
}

int tap_check(const tcheck *c, const char *fmt, ...)
{
    char label[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(label, sizeof label, fmt, ap);
    va_end(ap);
    tap_ok(!c->failed, "%s", label);
    for (int i = 0; i < c->nproblems && i < TCHECK_MAXDIAG; i++)
        tap_diag("  %s", c->diag[i]);
    if (c->nproblems > TCHECK_MAXDIAG)
        tap_diag("  ... %d problems in all", c->nproblems);
    if (c->worst > tap_worst) {
        tap_worst = c->worst;
        snprintf(tap_worst_label, sizeof tap_worst_label, "%s", label);
    }
    return !c->failed;
}

/* ---- random numbers ------------------------------------------------------ */

static uint64_t rng_s[4];

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static void rng_seed(uint64_t seed)
{
    for (int i = 0; i < 4; i++)
        rng_s[i] = splitmix64(&seed);
}

static uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

uint64_t rng_next(void)
{
    const uint64_t result = rotl(rng_s[1] * 5, 7) * 9;
    const uint64_t t = rng_s[1] << 17;
    rng_s[2] ^= rng_s[0];
    rng_s[3] ^= rng_s[1];
    rng_s[1] ^= rng_s[2];
    rng_s[0] ^= rng_s[3];
    rng_s[2] ^= t;
    rng_s[3] = rotl(rng_s[3], 45);
    return result;
}

double rng_unit(void)
{
    return (double)(rng_next() >> 11) * 0x1.0p-53;
}

int64_t rng_below(int64_t n)
{
    return n <= 0 ? 0 : (int64_t)(rng_next() % (uint64_t)n);
}

double rng_value(fb_dtype dtype)
{
    for (;;) {
        unsigned char cell[4];
        dt_set(dtype, cell, 0, (double)(float)(2.0 * rng_unit() - 1.0));
        const double v = dt_get(dtype, cell, 0);
        if (v != 0.0)
            return v;
    }
}

/* ---- storage types -------------------------------------------------------- */

size_t dt_size(fb_dtype t)
{
    return t == FB_DTYPE_F32 ? 4 : 2;
}

const char *dt_name(fb_dtype t)
{
    return t == FB_DTYPE_F32 ? "f32" : t == FB_DTYPE_F16 ? "f16" : "bf16";
}

char dt_prefix(fb_dtype t)
{
    return t == FB_DTYPE_F32 ? 's' : t == FB_DTYPE_F16 ? 'h' : 'b';
}

uint32_t dt_bits(fb_dtype t, const void *base, int64_t idx)
{
    if (t == FB_DTYPE_F32) {
        uint32_t u;
        memcpy(&u, (const unsigned char *)base + idx * 4, 4);
        return u;
    }
    uint16_t u;
    memcpy(&u, (const unsigned char *)base + idx * 2, 2);
    return u;
}

void dt_set_bits(fb_dtype t, void *base, int64_t idx, uint32_t bits)
{
    if (t == FB_DTYPE_F32) {
        memcpy((unsigned char *)base + idx * 4, &bits, 4);
    } else {
        const uint16_t u = (uint16_t)bits;
        memcpy((unsigned char *)base + idx * 2, &u, 2);
    }
}

/* IEEE binary16: 1 sign, 5 exponent (bias 15), 10 fraction bits. */
static double half_bits_to_double(uint32_t b)
{
    const double sign = (b & 0x8000u) ? -1.0 : 1.0;
    const int e = (int)((b >> 10) & 0x1fu);
    const int f = (int)(b & 0x3ffu);
    if (e == 31)
        return f ? NAN : sign * INFINITY;
    if (e == 0)
        return sign * ldexp((double)f, -24);
    return sign * ldexp((double)(1024 + f), e - 25);
}

double dt_get(fb_dtype t, const void *base, int64_t idx)
{
    const uint32_t b = dt_bits(t, base, idx);
    if (t == FB_DTYPE_F16)
        return half_bits_to_double(b);
    float f;
    const uint32_t w = t == FB_DTYPE_F32 ? b : b << 16; /* bf16: top half */
    memcpy(&f, &w, 4);
    return (double)f;
}

void dt_set(fb_dtype t, void *base, int64_t idx, double v)
{
    switch (t) {
    case FB_DTYPE_F32: {
        const float f = (float)v;
        memcpy((unsigned char *)base + idx * 4, &f, 4);
        break;
    }
    case FB_DTYPE_F16: {
        const fb_half x = fb_float_to_half((float)v);
        memcpy((unsigned char *)base + idx * 2, &x, 2);
        break;
    }
    case FB_DTYPE_BF16: {
        const fb_bfloat16 x = fb_float_to_bfloat16((float)v);
        memcpy((unsigned char *)base + idx * 2, &x, 2);
        break;
    }
    }
}

uint32_t dt_guard_bits(fb_dtype t)
{
    /* Quiet NaNs with a recognisable payload. */
    return t == FB_DTYPE_F32 ? 0x7fca5e1fu : t == FB_DTYPE_F16 ? 0x7e5au : 0x7fa5u;
}

uint32_t dt_poison_bits(fb_dtype t)
{
    return t == FB_DTYPE_F32 ? 0xffc0deadu : t == FB_DTYPE_F16 ? 0xfe0du : 0xffd0u;
}

double dt_unit_roundoff(fb_dtype t)
{
    return t == FB_DTYPE_F32 ? 0x1p-24 : t == FB_DTYPE_F16 ? 0x1p-11 : 0x1p-8;
}

double dt_tiny(fb_dtype t)
{
    /* Smallest subnormals: fp32 2^-149, fp16 2^-24, bf16 2^-133. */
    return t == FB_DTYPE_F32 ? 0x1p-150 : t == FB_DTYPE_F16 ? 0x1p-25 : 0x1p-134;
}

/* ---- memory providers ------------------------------------------------------ */

static void *host_alloc(size_t bytes)
{
    return malloc(bytes > 0 ? bytes : 1);
}

static void host_copy(void *dst, const void *src, size_t bytes)
{
    memcpy(dst, src, bytes);
}

const tmem tmem_host = {"host", host_alloc, free, host_copy, host_copy};

/* ---- matrices and guarded buffers --------------------------------------------- */

int64_t tshape_nelem(const tshape *s)
{
    const int64_t outer = s->layout == FB_ROW_MAJOR ? s->rows : s->cols;
    return outer * s->ld;
}

int tshape_window(const tshape *s, int64_t idx, int64_t *i, int64_t *j)
{
    const int64_t outer = idx / s->ld, inner = idx % s->ld;
    if (s->layout == FB_ROW_MAJOR) {
        *i = outer, *j = inner;
        return outer < s->rows && inner < s->cols;
    }
    *i = inner, *j = outer;
    return inner < s->rows && outer < s->cols;
}

void tbuf_init(tbuf *b, fb_dtype t, int64_t nelem, int64_t front)
{
    b->dtype = t;
    b->front = front;
    b->nelem = nelem;
    const int64_t total = front + nelem + TBUF_BACK;
    b->bytes = (size_t)total * dt_size(t);
    b->img = malloc(b->bytes);
    if (b->img == NULL)
        tap_bail("out of host memory for a %zu-byte buffer", b->bytes);
    const uint32_t g = dt_guard_bits(t);
    for (int64_t e = 0; e < total; e++)
        dt_set_bits(t, b->img, e, g);
}

void tbuf_free(tbuf *b)
{
    free(b->img);
    b->img = NULL;
}

void *tbuf_data(const tbuf *b)
{
    return b->img + (size_t)b->front * dt_size(b->dtype);
}

double *tbuf_to_double(const tbuf *b)
{
    double *d = malloc((size_t)(b->nelem > 0 ? b->nelem : 1) * sizeof *d);
    if (d == NULL)
        tap_bail("out of host memory");
    const void *data = tbuf_data(b);
    for (int64_t e = 0; e < b->nelem; e++)
        d[e] = dt_get(b->dtype, data, e);
    return d;
}

void *tbuf_place(const tbuf *b, const tmem *mem, void **data)
{
    void *alloc = mem->alloc(b->bytes);
    if (alloc == NULL)
        tap_bail("%s memory provider could not allocate %zu bytes",
                 mem->name, b->bytes);
    mem->put(alloc, b->img, b->bytes);
    *data = (unsigned char *)alloc + (size_t)b->front * dt_size(b->dtype);
    return alloc;
}

void tbuf_fetch(const tbuf *b, const tmem *mem, const void *alloc, tbuf *out)
{
    *out = *b;
    out->img = malloc(b->bytes);
    if (out->img == NULL)
        tap_bail("out of host memory");
    mem->get(out->img, alloc, b->bytes);
}

void fill_random(tbuf *b, const tshape *s)
{
    void *data = tbuf_data(b);
    int64_t i, j;
    for (int64_t e = 0; e < b->nelem; e++)
        if (tshape_window(s, e, &i, &j))
            dt_set(b->dtype, data, e, rng_value(b->dtype));
}

void fill_poison(tbuf *b, const tshape *s)
{
    void *data = tbuf_data(b);
    int64_t i, j;
    for (int64_t e = 0; e < b->nelem; e++)
        if (tshape_window(s, e, &i, &j))
            dt_set_bits(b->dtype, data, e, dt_poison_bits(b->dtype));
}

void check_untouched(tcheck *c, const char *name, const tbuf *before,
                     const tbuf *after, const tshape *s)
{
    const int64_t total = before->front + before->nelem + TBUF_BACK;
    int64_t changed = 0, first = -1;
    for (int64_t e = 0; e < total; e++) {
        const int64_t d = e - before->front;
        int64_t i, j;
        if (s != NULL && d >= 0 && d < before->nelem &&
            tshape_window(s, d, &i, &j))
            continue;
        if (dt_bits(before->dtype, before->img, e) !=
            dt_bits(after->dtype, after->img, e)) {
            if (first < 0)
                first = e;
            changed++;
        }
    }
    if (changed == 0)
        return;
    const int64_t d = first - before->front;
    const char *where = d < 0 ? "the guard before it"
                        : d >= before->nelem ? "the guard after it"
                        : s != NULL ? "its leading-dimension padding"
                                    : "a read-only element";
    tcheck_fail(c, "%s: %lld element(s) outside the result changed, first "
                "at offset %lld (%s): 0x%x -> 0x%x",
                name, (long long)changed, (long long)d, where,
                (unsigned)dt_bits(before->dtype, before->img, first),
                (unsigned)dt_bits(after->dtype, after->img, first));
}

/* ---- error bounds -------------------------------------------------------------
 *
 * Derivation. Model (Higham, "Accuracy and Stability of Numerical
 * Algorithms", 2nd ed., sections 2.2 and 3.1): each floating-point
 * operation of the library returns (x op y)(1 + d), |d| <= u_acc.
 *  - fp32 arithmetic rounding to nearest (CPU, CUDA cores): u_acc = 2^-24.
 *  - Tensor cores (fp16/bf16 inputs, TF32): products are exact, but the
 *    adders align a block of products to the largest exponent and may
 *    truncate (Fasi, Higham, Mikaitis, Pranesh, "Numerical behavior of
 *    NVIDIA tensor cores", PeerJ CS 2021): at most one ulp, 2 * 2^-24, per
 *    aligned term, i.e. 5 ulps per block of 4 products = 2.5 * 2^-24 per
 *    product. u_acc = 4 * 2^-24 = 2^-22 covers that.
 * Inputs: fp16 and bf16 widen to fp32 exactly. TF32 keeps 11 significant
 * bits of each fp32 input, truncating on some paths: |e| <= u_in = 2^-10
 * (2^-11 if rounded). With gamma_n = n u / (1 - n u) (Higham, Lemma 3.1):
 *
 * gemm_bias_act, one element: z = alpha sum_l a_l b_l + beta c + bias.
 * Each product a_l b_l meets its own multiplication, at most k - 1
 * additions (in any summation order), the scaling by alpha, the addition
 * of beta c and of the bias: at most k + 3 roundings; beta c meets 3, the
 * bias 1. So, with the gauge G = |alpha| sum|a_l b_l| + |beta c| + |bias|,
 *     |z^ - z| <= e_z G,        e_z = (1 + u_in)^2 (1 + gamma_{k+3}) - 1.
 * The activation moves that error by at most its slope (mean value
 * theorem): s = sup|act'| = 1 for none and relu, 1.1290 for both gelus (at
 * x = 1.41), 1.0998 for silu (at x = 2.40); we use 1.13 and 1.10. Its own
 * fp32 evaluation errs by at most c_act 2^-24 |z^| <= c_act 2^-24 (1+e_z) G:
 * c_act is the accuracy the library promises for its activations, 0 for
 * none and relu (exact), 8 for gelu and silu (4 fp32 ulps relative to
 * |x|: room for polynomial or exp-based tanh, erf and sigmoid, not for
 * 11-bit hardware approximations). Before the store:
 *     E = s e_z G + c_act 2^-24 (1 + e_z) G.
 * The store rounds to the output type: u_out |y^| + tiny_out, with
 * |y^| <= |y| + E (tiny_out: half the smallest subnormal of the type).
 * Underflow in fp32, even flushed to zero, loses at most 2^-126 per
 * operation; (k + 4) 2^-124 covers it with room for alpha and the slope.
 *     bound = E + u_out (|y| + E) + tiny_out + (k + 4) 2^-124.
 * For 16-bit outputs that is "the fp32 bound plus half an ulp of the
 * output": the contract applies bias and activation to the fp32
 * accumulator before the one store, so no other 16-bit rounding is allowed.
 *
 * mlp_geglu_forward, one element Y(i, c), writing Gg_j and Gu_j for the
 * gauges of the gate and up pre-activations g_j and u_j of row i (k
 * products and a bias: e_k = (1+u_in)^2 (1+gamma_{k+1}) - 1):
 *  - intermediates may be stored in the input type (the cuBLASLt path
 *    stores the gate and up GEMM outputs; PyTorch stores all of them), one
 *    rounding u_mid each, plus tiny_mid absolutely. With
 *    rho = (1 + e_k)(1 + u_mid) - 1:
 *      |g~ - g| <= rho Gg + tiny_mid,    |u~ - u| <= du = rho Gu + tiny_mid;
 *      a = act(g):  |a~ - a| <= da = (1+u_mid)((s rho + c_act 2^-24 (1+rho)) Gg
 *                                   + (s + c_act 2^-24) tiny_mid)
 *                                   + u_mid Gg + tiny_mid
 *    (|a| <= |g| <= Gg for every activation here).
 *  - H^ = a~ u~ (1 + d): |H^ - H| <= da (Gu + du) + Gg du
 *                                    + u_acc (Gg + da)(Gu + du) =: dP.
 *  - H is stored (u_mid), and the oracle rounds the exact H too (H_o): both
 *    within u_mid |H| + tiny_mid of H, so
 *      |H~ - H_o| <= dH = (1 + u_mid) dP + 2 u_mid (1 + 2 u_mid) |H_o|
 *                        + 3 tiny_mid.
 *  - Y^ = sum_j H~_j Wd_cj + bd_c with h products and a bias
 *    (e_h = (1+u_in)^2 (1+gamma_{h+1}) - 1) and |H~| <= |H_o| + dH:
 *      |Y^ - Y_o| <= E = (1 + e_h) sum_j dH_j |Wd_cj|
 *                        + e_h (sum_j |H_o,j| |Wd_cj| + |bd_c|).
 *  - the store: bound = E + u_out (|Y_o| + E) + tiny_out
 *                       + (k + h + 8) 2^-124 (1 + sum_j |Wd_cj|).
 */

static double gamma_n(double n, double u)
{
    return n * u / (1.0 - n * u);
}

tol tol_make(fb_dtype dtype, tarith arith)
{
    tol t;
    t.u_acc = arith == ARITH_FP32 ? 0x1p-24 : 0x1p-22;
    t.u_in = (arith == ARITH_TF32 && dtype == FB_DTYPE_F32) ? 0x1p-10 : 0.0;
    t.u_out = dt_unit_roundoff(dtype);
    t.tiny_out = dt_tiny(dtype);
    t.u_mid = dt_unit_roundoff(dtype);
    t.tiny_mid = dt_tiny(dtype);
    return t;
}

double act_slope(fb_activation act)
{
    switch (act) {
    case FB_ACT_GELU_TANH:
    case FB_ACT_GELU_ERF:
        return 1.13;
    case FB_ACT_SILU:
        return 1.10;
    default:
        return 1.0;
    }
}

double act_eval_units(fb_activation act)
{
    return act == FB_ACT_NONE || act == FB_ACT_RELU ? 0.0 : 8.0;
}

const char *act_name(fb_activation act)
{
    switch (act) {
    case FB_ACT_NONE: return "none";
    case FB_ACT_RELU: return "relu";
    case FB_ACT_GELU_TANH: return "gelu_tanh";
    case FB_ACT_GELU_ERF: return "gelu_erf";
    case FB_ACT_SILU: return "silu";
    }
    return "act?";
}

double tol_gemm(const tol *t, int64_t k, fb_activation act, double gauge,
                double ref)
{
    const double e_z = (1.0 + t->u_in) * (1.0 + t->u_in) *
                       (1.0 + gamma_n((double)k + 3.0, t->u_acc)) - 1.0;
    const double c = act_eval_units(act) * 0x1p-24;
    const double E = act_slope(act) * e_z * gauge + c * (1.0 + e_z) * gauge;
    return E + t->u_out * (fabs(ref) + E) + t->tiny_out +
           ((double)k + 4.0) * 0x1p-124;
}

void tol_mlp(const tol *t, fb_activation act, int64_t m, int64_t k,
             int64_t h, int64_t n, const double *X, int64_t ldx,
             const double *Wg, const double *bg, const double *Wu,
             const double *bu, const double *Wd, const double *bd,
             const double *H, const double *Yref, int64_t ldy, double *B)
{
    const double in2 = (1.0 + t->u_in) * (1.0 + t->u_in);
    const double e_k = in2 * (1.0 + gamma_n((double)k + 1.0, t->u_acc)) - 1.0;
    const double e_h = in2 * (1.0 + gamma_n((double)h + 1.0, t->u_acc)) - 1.0;
    const double rho = (1.0 + e_k) * (1.0 + t->u_mid) - 1.0;
    const double s = act_slope(act), c = act_eval_units(act) * 0x1p-24;
    const double um = t->u_mid, tm = t->tiny_mid;
    double *dH = malloc((size_t)(h > 0 ? h : 1) * sizeof *dH);
    if (dH == NULL)
        tap_bail("out of host memory");
    for (int64_t i = 0; i < m; i++) {
        const double *x = &X[i * ldx];
        for (int64_t j = 0; j < h; j++) {
            double gg = bg ? fabs(bg[j]) : 0.0, gu = bu ? fabs(bu[j]) : 0.0;
            for (int64_t l = 0; l < k; l++) {
                gg += fabs(x[l]) * fabs(Wg[j * k + l]);
                gu += fabs(x[l]) * fabs(Wu[j * k + l]);
            }
            const double du = rho * gu + tm;
            const double da = (1.0 + um) * ((s * rho + c * (1.0 + rho)) * gg +
                                            (s + c) * tm) +
                              um * gg + tm;
            const double dP = da * (gu + du) + gg * du +
                              t->u_acc * (gg + da) * (gu + du);
            dH[j] = (1.0 + um) * dP +
                    2.0 * um * (1.0 + 2.0 * um) * fabs(H[i * h + j]) + 3.0 * tm;
        }
        for (int64_t cc = 0; cc < n; cc++) {
            double prop = 0.0, gh = bd ? fabs(bd[cc]) : 0.0, wsum = 0.0;
            for (int64_t j = 0; j < h; j++) {
                const double w = fabs(Wd[cc * h + j]);
                prop += dH[j] * w;
                gh += fabs(H[i * h + j]) * w;
                wsum += w;
            }
            const double E = (1.0 + e_h) * prop + e_h * gh;
            B[i * ldy + cc] = E + t->u_out * (fabs(Yref[i * ldy + cc]) + E) +
                              t->tiny_out +
                              ((double)(k + h) + 8.0) * 0x1p-124 * (1.0 + wsum);
        }
    }
    free(dH);
}

int judge(double got, double ref, double z, fb_activation act, double bound,
          double *ratio)
{
    *ratio = 0.0;
    if (isnan(ref))
        return !isnan(got);
    if (isinf(ref))
        return got != ref;
    if (!isfinite(got))
        return 1;
    if (!isfinite(bound))
        return got != ref;
    const double err = fabs(got - ref);
    *ratio = bound > 0.0 ? err / bound : (err > 0.0 ? INFINITY : 0.0);
    return !(err <= bound);
}

fb_handle handle_on(fb_backend b)
{
    fb_handle h = NULL;
    fb_status st = fb_create(&h);
    if (st != FB_STATUS_SUCCESS)
        tap_bail("fb_create: %s", fb_status_string(st));
    st = fb_set_backend(h, b);
    if (st != FB_STATUS_SUCCESS)
        tap_bail("fb_set_backend(%s): %s", fb_backend_name(b),
                 fb_status_string(st));
    return h;
}

int target_ran_expected(const target *t, fb_backend ran)
{
    if (t->expect == FB_BACKEND_CUDA)
        return ran == FB_BACKEND_CUDA_LT || ran == FB_BACKEND_CUDA_FUSED;
    return ran == t->expect;
}

tol target_tol(const target *t, fb_dtype dtype)
{
    return tol_make(dtype, dtype == FB_DTYPE_F32 ? t->arith_f32 : t->arith_16);
}

target target_cpu(void)
{
    target t = {"cpu", handle_on(FB_BACKEND_CPU), FB_BACKEND_CPU, &tmem_host,
                ARITH_FP32, ARITH_FP32, 0, 0};
    return t;
}
