/*
 * special_values.c -- NaN and Inf injected into gemm_bias_act operands.
 * See special_values.h.
 */
#include <math.h>
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
}
