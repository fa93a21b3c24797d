/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * special_values.c -- NaN and Inf injected into gemm_bias_act operands.
 * See special_values.h.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "mlp_check.h"
#include "oracle.h"
#include "special_values.h"

typedef enum special { NAN_V, PINF, NINF } special;

static uint32_t special_bits(fb_dtype t, special s)
{
    static const uint32_t bits[3][3] = {
        /* NaN, +Inf, -Inf */
        {0x7fc00000u, 0x7f800000u, 0xff800000u}, /* fp32 */
        {0x7e00u, 0x7c00u, 0xfc00u},             /* fp16 */
        {0x7fc0u, 0x7f80u, 0xff80u}};            /* bf16 */
    return bits[t][s];
}

/* Element (i, l) of op(A), (l, j) of op(B), (i, j) of C, bias j. */
static void set_opa(gemm_data *d, int64_t i, int64_t l, special s)
{
    const gemm_case *c = &d->c;
    const int64_t at = c->transa == FB_NO_TRANS
                           ? oracle_at(c->layout, i, l, c->lda)
                           : oracle_at(c->layout, l, i, c->lda);
    dt_set_bits(c->dtype, tbuf_data(&d->A), at, special_bits(c->dtype, s));
}

static void set_opb(gemm_data *d, int64_t l, int64_t j, special s)
{
    const gemm_case *c = &d->c;
    const int64_t at = c->transb == FB_NO_TRANS
                           ? oracle_at(c->layout, l, j, c->ldb)
                           : oracle_at(c->layout, j, l, c->ldb);
    dt_set_bits(c->dtype, tbuf_data(&d->B), at, special_bits(c->dtype, s));
}

static void set_c(gemm_data *d, int64_t i, int64_t j, special s)
{
    const gemm_case *c = &d->c;
    dt_set_bits(c->dtype, tbuf_data(&d->C), oracle_at(c->layout, i, j, c->ldc),
                special_bits(c->dtype, s));
}

static void set_bias(gemm_data *d, int64_t j, special s)
{
    dt_set_bits(d->c.dtype, tbuf_data(&d->bias), j,
                special_bits(d->c.dtype, s));
}

enum { N_SCENARIOS = 13 };
static const char *scenario_name[N_SCENARIOS] = {
    "NaN in A", "NaN in B", "NaN in C (beta 1.3)", "NaN in bias",
    "+Inf in A", "-Inf in B", "+Inf in C (beta 1.3)", "-Inf in bias",
    "+Inf twice in a row of A (Inf - Inf where B's signs differ)",
    "+Inf in bias and -Inf in C (Inf - Inf)",
    "NaN in A and -Inf in bias",
    "NaN and Inf in C with beta 0 (must not leak)",
    "Inf in A and B meeting in one product"};

static void inject(gemm_data *d, int s)
{
    switch (s) {
    case 0: set_opa(d, 2, 3, NAN_V); break;
    case 1: set_opb(d, 3, 4, NAN_V); break;
    case 2: set_c(d, 1, 1, NAN_V); break;
    case 3: set_bias(d, 5, NAN_V); break;
    case 4: set_opa(d, 0, 0, PINF); break;
    case 5: set_opb(d, 6, 2, NINF); break;
    case 6: set_c(d, 4, 5, PINF); break;
    case 7: set_bias(d, 0, NINF); break;
    case 8: set_opa(d, 3, 0, PINF); set_opa(d, 3, 1, PINF); break;
    case 9: set_bias(d, 3, PINF); set_c(d, 2, 3, NINF); break;
    case 10: set_opa(d, 4, 6, NAN_V); set_bias(d, 1, NINF); break;
    case 11: set_c(d, 0, 0, PINF); set_c(d, 1, 2, NINF); set_c(d, 4, 4, NAN_V);
             break;
    case 12: set_opa(d, 1, 5, PINF); set_opb(d, 5, 3, NINF); break;
    }
}

/* ---- activations at the infinities ------------------------------------
 * The pre-activation made exactly -Inf or +Inf (finite products, an
 * infinite bias; or an infinite element of A meeting B's signs): each
 * activation must give its limit, 0 at -Inf (-Inf for none) and +Inf at
 * +Inf, never the NaN of the formula's -Inf * 0. The oracle gives the
 * limits; the shapes include the ones the fused kernels take (row-major
 * NT, k a multiple of 8, aligned: the tiny kernels for k <= 256, the
 * decode kernels above), so that their fast activations are checked too.
 */
enum { N_LIMIT_SCENARIOS = 3 };
static const char *limit_name[N_LIMIT_SCENARIOS] = {
    "bias -Inf: act(-Inf) is 0 (none: -Inf)",
    "bias +Inf: act(+Inf) is +Inf",
    "+Inf in a row of A: act(+-Inf) by B's signs"};

static void inject_limit(gemm_data *d, int s)
{
    switch (s) {
    case 0: set_bias(d, 2, NINF); break;
    case 1: set_bias(d, 4, PINF); break;
    case 2: set_opa(d, 3, 0, PINF); break;
    }
}

/* The paths the targets took for the case just checked. */
static void diag_paths(const target *t, int nt, fb_dtype dtype)
{
    char line[1024] = "";
    size_t used = 0;
    for (int i = 0; i < nt && used < sizeof line; i++) {
        if (t[i].f32_only && dtype != FB_DTYPE_F32)
            continue;
        const fb_status st = fb_handle_last_status(t[i].handle);
        used += (size_t)snprintf(
            line + used, sizeof line - used, "%s%s: %s", used ? "; " : "",
            t[i].name,
            st == FB_STATUS_SUCCESS ? fb_handle_last_path(t[i].handle)
                                    : fb_status_string(st));
    }
    tap_diag("  paths: %s", line);
}

static void limit_sweep(const target *t, int nt, const target *cross)
{
    /* m, n, k; the first with random layouts and padding. */
    static const int64_t shapes[3][3] = {{5, 6, 7}, {5, 6, 8}, {5, 6, 264}};
    for (int si = 0; si < 3; si++)
        for (int di = 0; di < 3; di++)
            for (int ai = 0; ai < N_ACTS; ai++)
                for (int s = 0; s < N_LIMIT_SCENARIOS; s++) {
                    const int general = si == 0;
                    gemm_case c = {0};
                    c.dtype = all_dtypes[di];
                    c.layout = !general || rng_below(2) ? FB_ROW_MAJOR
                                                        : FB_COL_MAJOR;
                    c.transa = general && rng_below(2) ? FB_TRANS
                                                       : FB_NO_TRANS;
                    c.transb = !general || rng_below(2) ? FB_TRANS
                                                        : FB_NO_TRANS;
                    c.m = shapes[si][0];
                    c.n = shapes[si][1];
                    c.k = shapes[si][2];
                    c.alpha = 0.7f;
                    c.beta = general ? 1.3f : 0.0f;
                    c.has_bias = 1;
                    c.act = all_acts[ai];
                    if (general)
                        gemm_case_set_lds(&c, 1, 2, 1);
                    else
                        gemm_case_set_lds(&c, 0, 0, 0);
                    c.note = limit_name[s];
                    gemm_data d;
                    gemm_data_make(&d, &c);
                    inject_limit(&d, s);
                    gemm_check(&d, t, nt, cross);
                    if (!general)
                        diag_paths(t, nt, c.dtype);
                    gemm_data_free(&d);
                }
}

/* ---- the MLP's gate at the infinities -----------------------------------
 * Every value exact, so that Y is known exactly:
 *   X(i, 0) = +1 in even rows, -1 in odd rows; X(i, 1) = 1; the rest
 *   small random values the weights multiply by 0;
 *   Wg = 0 but Wg(j0, 0) = -Inf, so the gate's pre-activation is -Inf in
 *   even rows and +Inf in odd rows at hidden unit j0, and 0 elsewhere;
 *   Wu = 0 but Wu(j0, 1) = 1: the up value is 1 at j0 (finite and
 *   positive, so the product is defined) and 0 elsewhere;
 *   Wd random, with Wd(c, j0) = +1 or -1 by c; biases 0 or absent but bd.
 * So H(i, j0) is act(-Inf) * 1 = 0 in even rows (none: -Inf) and
 * act(+Inf) * 1 = +Inf in odd rows, every other H is act(0) * 0 = 0, and
 * Y(i, c) is bd(c) in even rows (none: -Inf Wd(c, j0)) and +Inf Wd(c, j0)
 * in odd rows: exactly what the oracle computes, and what the checker
 * then requires exactly (the bound is infinite wherever Inf went in). A
 * NaN from -Inf * 0 in the gate would reach every Y of its row. */
static void mlp_gate_case(const mlp_case *mc, const target *t, int nt)
{
    mlp_data d;
    mlp_data_make(&d, mc);
    const fb_dtype dt = mc->dtype;
    const int64_t j0 = mc->h / 2;
    void *X = tbuf_data(&d.X), *Wg = tbuf_data(&d.Wg), *Wu = tbuf_data(&d.Wu);
    void *Wd = tbuf_data(&d.Wd);
    for (int64_t i = 0; i < mc->m; i++)
        for (int64_t l = 0; l < mc->k; l++)
            dt_set(dt, X, i * mc->ldx + l,
                   l == 0   ? (i % 2 ? -1.0 : 1.0)
                   : l == 1 ? 1.0
                            : (double)(rng_below(17) - 8) / 8.0);
    for (int64_t j = 0; j < mc->h; j++)
        for (int64_t l = 0; l < mc->k; l++) {
            dt_set(dt, Wg, j * mc->k + l, 0.0);
            dt_set(dt, Wu, j * mc->k + l, j == j0 && l == 1 ? 1.0 : 0.0);
        }
    dt_set_bits(dt, Wg, j0 * mc->k, special_bits(dt, NINF));
    for (int64_t c = 0; c < mc->n; c++)
        for (int64_t j = 0; j < mc->h; j++)
            dt_set(dt, Wd, c * mc->h + j,
                   j == j0 ? (c % 2 ? -1.0 : 1.0)
                           : (double)(rng_below(16) + 1) / 16.0);
    for (int64_t j = 0; j < mc->h; j++) {
        dt_set(dt, tbuf_data(&d.bg), j, 0.0);
        dt_set(dt, tbuf_data(&d.bu), j, 0.0);
    }
    for (int64_t c = 0; c < mc->n; c++)
        dt_set(dt, tbuf_data(&d.bd), c, (double)(rng_below(17) - 8) / 4.0);
    /* No CPU witness: Y holds infinities, which the witness comparison
     * (a difference within the bounds) cannot take; the oracle is exact
     * here. */
    mlp_check(&d, t, nt, NULL);
    diag_paths(t, nt, dt);
    mlp_data_free(&d);
}

static void mlp_gate_sweep(const target *t, int nt)
{
    /* m, k, h, n: the fused families' shapes (tiny; decode, m <= 32;
     * prefill, m > 32, Hopper), all taken by cuda-lt and the cpu. */
    static const int64_t shapes[3][4] = {
        {6, 16, 24, 8}, {4, 264, 24, 136}, {40, 264, 24, 136}};
    for (int si = 0; si < 3; si++)
        for (int di = 0; di < 3; di++)
            for (int ai = 0; ai < N_ACTS; ai++) {
                mlp_case c = {0};
                c.dtype = all_dtypes[di];
                c.act = all_acts[ai];
                c.m = shapes[si][0];
                c.k = shapes[si][1];
                c.h = shapes[si][2];
                c.n = shapes[si][3];
                c.ldx = c.k;
                c.ldy = c.n;
                c.biases = MLP_ALL_BIASES;
                c.offset = 0;
                mlp_gate_case(&c, t, nt);
            }
}

void special_sweep(const target *t, int nt, const target *cross)
{
    for (int di = 0; di < 3; di++)
        for (int ai = 0; ai < N_ACTS; ai++)
            for (int s = 0; s < N_SCENARIOS; s++) {
                gemm_case c = {0};
                c.dtype = all_dtypes[di];
                c.layout = rng_below(2) ? FB_ROW_MAJOR : FB_COL_MAJOR;
                c.transa = rng_below(2) ? FB_NO_TRANS : FB_TRANS;
                c.transb = rng_below(2) ? FB_NO_TRANS : FB_TRANS;
                c.m = 5, c.n = 6, c.k = 7;
                c.alpha = 0.7f;
                c.beta = (s == 11) ? 0.0f : 1.3f;
                c.has_bias = 1;
                c.act = all_acts[ai];
                gemm_case_set_lds(&c, 1, 2, 1);
                c.note = scenario_name[s];
                gemm_data d;
                gemm_data_make(&d, &c);
                inject(&d, s);
                gemm_check(&d, t, nt, cross);
                gemm_data_free(&d);
            }
    limit_sweep(t, nt, cross);
    mlp_gate_sweep(t, nt);
}
