/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cpu_fp8_wide.c -- gemm_e4m3_bias_act and mlp_geglu_forward_e4m3 for
 * many rows of bf16 activations on AMX: the weights widened to bf16
 * (exact) as they are packed into the bf16 drivers' panels
 * (cpu_bf16_gemm.c, cpu_bf16_mlp.c), where a plan's weights would be, and
 * multiplied there; the drivers apply each channel's scale to the dot
 * product first, in the e4m3 order: alpha (dot scale) + beta C + bias.
 *
 * The e4m3 AMX path (cpu_fp8_gemm.c) widens every weight once per block
 * of 80 rows; from FB_E4M3_WIDE_MIN_ROWS rows one widening pack costs
 * less (it reads half the bytes the bf16 path's own pack reads), and the
 * bf16 driver's blocking keeps the packed weights in cache across many
 * rows. Where x has values too tiny for the bf16 products to be exact
 * (fb_bf16_products_exact), the call goes back to the e4m3 paths.
 */
#include "config.h"
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "cpu.h"
#include "cpu_bf16_gemm.h"
#include "cpu_bf16_kernel.h"
#include "cpu_bf16_mlp.h"
#include "cpu_f32_kernel.h"
#include "cpu_f32_mlp.h"
#include "cpu_fp8.h"
#include "cpu_impl.h"

static size_t round64(size_t b)
{
    return (b + 63) / 64 * 64;
}

/* The handle's workspace of bytes, or NULL: the widened weights take
 * two (bf16) or four (fp32) times the e4m3 bytes, so where that much
 * cannot be had the call takes the e4m3 paths, which need far less. */
static char *workspace(fb_handle h, size_t bytes)
{
    return fb_handle_workspace(h, bytes);
}

/* st, with path naming this path before the bf16 driver's (ran). */
static fb_status named(fb_status st, const char *ran, char *path,
                       size_t len)
{
    if (st == FB_STATUS_SUCCESS)
        snprintf(path, len, "cpu/e4m3-wide/%s", ran);
    return st;
}

/* The drivers' problem: column-major C^T (channels x tokens) = W X^T,
 * the weights op(A) along k (packed by the caller), x op(B) as it lies. */
static fb_gemm_problem driver_problem(const fb_e4m3_gemm_problem *p,
                                      fb_dtype dtype)
{
    fb_gemm_problem q;
    memset(&q, 0, sizeof q);
    q.dtype = dtype;
    q.transa = 1;
    q.m = p->n, q.n = p->m, q.k = p->k;
    q.alpha = p->alpha, q.beta = p->beta;
    q.lda = p->k;
    q.b = p->x;
    q.transb = p->x_ks != 1;
    q.ldb = p->x_ks == 1 ? p->x_ts : p->x_ks;
    q.c = p->c, q.ldc = p->c_ts;
    q.ep.bias = p->bias, q.ep.act = p->act, q.ep.bias_per_row = 1;
    q.ep.scale = p->scale;
    q.multiply = 1, q.weight_is_a = 1;
    return q;
}

/* The workspace of impl running q on weights it finds packed at its
 * start (*packed bytes, then the rest), on *threads threads, or NULL. */
static char *gemm_workspace(fb_handle h, const fb_cpu_gemm_impl *impl,
                            const fb_gemm_problem *q, int *threads,
                            size_t *packed)
{
    const double flops = 2.0 * (double)q->m * (double)q->n * (double)q->k;
    *threads = fb_cpu_own_threads(h, flops);
    *packed = round64(impl->pack_bytes(q));
    return workspace(h, *packed + impl->workspace(q, *threads, 1));
}

/* Rows from which fp32 activations take the widened weights (of bytes
 * e4m3 bytes). */
static int64_t f32_wide_rows(int64_t bytes)
{
    if (bytes > FB_E4M3_WIDE_F32_MAX_BYTES)
        return INT64_MAX;
    return bytes <= FB_E4M3_WIDE_SMALL_BYTES    ? FB_E4M3_WIDE_F32_SMALL_ROWS
           : bytes <= FB_E4M3_WIDE_F32_MID_BYTES ? FB_E4M3_WIDE_F32_MID_ROWS
                                                 : FB_E4M3_WIDE_F32_ROWS;
}

/* fp32 activations: the weights widened into the fp32 driver's panels
 * (exact), from FB_E4M3_WIDE_F32_*_ROWS rows by the weights' bytes. */
static fb_status gemm_wide_f32(fb_handle h, const fb_e4m3_gemm_problem *p,
                               char *path, size_t len)
{
    const fb_cpu_gemm_impl *impl = &fb_cpu_gemm_f32;
    if (p->k == 0 || p->alpha == 0.0f || p->m < f32_wide_rows(p->n * p->k) ||
        p->w_ks != 1 ||
        p->c_cs != 1 || (p->x_ks != 1 && p->x_ts != 1) ||
        !fb_f32_e4m3_pack_available())
        return FB_STATUS_NOT_SUPPORTED;
    fb_gemm_problem q = driver_problem(p, FB_DTYPE_F32);
    const fb_cpu_call probe = {h, 1, NULL, NULL};
    if (!impl->applies(&probe, &q))
        return FB_STATUS_NOT_SUPPORTED;
    int t;
    size_t packed;
    char *ws = gemm_workspace(h, impl, &q, &t, &packed);
    if (ws == NULL)
        return FB_STATUS_NOT_SUPPORTED;
    const int64_t panels = (p->n + FB_F32_MR - 1) / FB_F32_MR;
#pragma omp parallel num_threads(t) if (t > 1)
    {
        const int tid = omp_get_thread_num(), nt = omp_get_num_threads();
        const int64_t q0 = panels * tid / nt, q1 = panels * (tid + 1) / nt;
        fb_f32_pack_e4m3((const uint8_t *)p->w, p->w_cs, p->n, p->k, q0, q1,
                         (float *)ws + q0 * fb_f32_panel_elems(p->k,
                                                                FB_F32_MR));
    }
    const fb_cpu_call c = {h, t, ws + packed, ws};
    char ran[160];
    return named(impl->run(&c, &q, ran, sizeof ran), ran, path, len);
}

fb_status fb_cpu_e4m3_gemm_wide(fb_handle h, const fb_e4m3_gemm_problem *p,
                                char *path, size_t len)
{
    const fb_cpu_gemm_impl *impl = &fb_cpu_gemm_bf16_amx;
    if (p->dtype == FB_DTYPE_F32)
        return gemm_wide_f32(h, p, path, len);
    if (p->dtype != FB_DTYPE_BF16 || p->k == 0 || p->alpha == 0.0f ||
        p->m < (p->n * p->k <= FB_E4M3_WIDE_SMALL_BYTES
                    ? FB_E4M3_WIDE_SMALL_ROWS
                    : FB_E4M3_WIDE_MIN_ROWS) ||
        p->w_ks != 1 || p->c_cs != 1 ||
        (p->x_ks != 1 && p->x_ts != 1) || !fb_cpu_amx_available())
        return FB_STATUS_NOT_SUPPORTED;
    fb_gemm_problem q = driver_problem(p, FB_DTYPE_BF16);
    int t;
    size_t packed;
    char *ws = gemm_workspace(h, impl, &q, &t, &packed);
    if (ws == NULL)
        return FB_STATUS_NOT_SUPPORTED;
    /* applies() reads x's smallest exponent (the packed weights carry
     * theirs): x too tiny for exact bf16 products sends the call back to
     * the e4m3 paths, the packing lost (rare: |x| below about 2^-100) */
    fb_cpu_bf16_amx_pack_e4m3(&q, p->w, p->w_cs, t, ws);
    const fb_cpu_call c = {h, t, ws + packed, ws};
    if (!impl->applies(&c, &q))
        return FB_STATUS_NOT_SUPPORTED;
    char ran[160];
    return named(impl->run(&c, &q, ran, sizeof ran), ran, path, len);
}

/* The fp32 and bf16 MLP drivers' problem on the e4m3 weights; their
 * bytes are read only by the packing (and by the bf16 driver's fp32 down
 * projection of a chunk whose H is too tiny for AMX). */
static fb_mlp_problem mlp_problem(const fb_e4m3_mlp_problem *p)
{
    fb_mlp_problem q;
    memset(&q, 0, sizeof q);
    q.dtype = p->dtype;
    q.gate_act = p->gate_act;
    q.m = p->m, q.k = p->k, q.h = p->h, q.n = p->n;
    q.x = p->x, q.ldx = p->ldx;
    q.wg = p->wg, q.wu = p->wu, q.wd = p->wd;
    q.bg = p->bg, q.bu = p->bu, q.bd = p->bd;
    q.y = p->y, q.ldy = p->ldy;
    return q;
}

static double mlp_flops(const fb_e4m3_mlp_problem *p)
{
    return 2.0 * (double)p->m *
           (2.0 * (double)p->h * (double)p->k + (double)p->n * (double)p->h);
}

/* A driver's MLP on e4m3 weights widened into its packed layout: the
 * packing's and the rest's bytes, the packing (scales after the panels),
 * whether the driver takes the packed call (NULL: it does), the run. */
typedef struct widened_mlp {
    size_t (*pack_bytes)(const fb_mlp_problem *q);
    size_t (*workspace)(const fb_mlp_problem *q, int threads);
    void (*pack)(const fb_mlp_problem *q, const float *sg, const float *su,
                 const float *sd, int threads, void *dst);
    int (*applies)(const fb_cpu_call *c, const fb_mlp_problem *q);
    fb_status (*run)(const fb_cpu_call *c, const fb_mlp_problem *q,
                     char *path, size_t len);
} widened_mlp;

/* The bf16 driver's applies() reads x's smallest exponent (the packed
 * weights carry theirs): x too tiny for exact bf16 products sends the
 * call back to the e4m3 paths, as for the gemm. */
static int bf16_applies(const fb_cpu_call *c, const fb_mlp_problem *q)
{
    return fb_cpu_mlp_bf16_amx.applies(c, q);
}

static fb_status bf16_run(const fb_cpu_call *c, const fb_mlp_problem *q,
                          char *path, size_t len)
{
    return fb_cpu_mlp_bf16_amx.run(c, q, path, len);
}

static const widened_mlp bf16_mlp = {
    fb_cpu_bf16_amx_mlp_pack_e4m3_bytes, fb_cpu_bf16_amx_mlp_e4m3_workspace,
    fb_cpu_bf16_amx_mlp_pack_e4m3, bf16_applies, bf16_run};
static const widened_mlp f32_mlp = {
    fb_cpu_f32_mlp_pack_e4m3_bytes, fb_cpu_f32_mlp_e4m3_workspace,
    fb_cpu_f32_mlp_pack_e4m3, NULL, fb_cpu_f32_mlp_run_e4m3};

static fb_status run_widened(fb_handle h, const fb_e4m3_mlp_problem *p,
                             const widened_mlp *d, char *path, size_t len)
{
    const fb_mlp_problem q = mlp_problem(p);
    const int t = fb_cpu_own_threads(h, mlp_flops(p));
    const size_t packed = round64(d->pack_bytes(&q));
    char *ws = workspace(h, packed + d->workspace(&q, t));
    if (ws == NULL)
        return FB_STATUS_NOT_SUPPORTED;
    d->pack(&q, p->sg, p->su, p->sd, t, ws);
    const fb_cpu_call c = {h, t, ws + packed, ws};
    if (d->applies != NULL && !d->applies(&c, &q))
        return FB_STATUS_NOT_SUPPORTED;
    char ran[160];
    return named(d->run(&c, &q, ran, sizeof ran), ran, path, len);
}

fb_status fb_cpu_e4m3_mlp_wide(fb_handle h, const fb_e4m3_mlp_problem *p,
                               char *path, size_t len)
{
    const int64_t weights = 2 * p->h * p->k + p->n * p->h;
    if (p->k == 0 || p->h == 0)
        return FB_STATUS_NOT_SUPPORTED;
    if (p->dtype == FB_DTYPE_F32) {
        /* the weights widened into the fp32 MLP driver's panels (exact),
         * by the gemm's rule on all three weights' bytes */
        const fb_mlp_problem q = mlp_problem(p);
        const fb_cpu_call probe = {h, 1, NULL, NULL};
        if (p->m < f32_wide_rows(weights) || !fb_f32_e4m3_pack_available() ||
            !fb_cpu_mlp_f32.applies(&probe, &q))
            return FB_STATUS_NOT_SUPPORTED;
        return run_widened(h, p, &f32_mlp, path, len);
    }
    if (p->dtype != FB_DTYPE_BF16 || weights > FB_E4M3_WIDE_MLP_MAX_BYTES ||
        p->m < (weights <= FB_E4M3_WIDE_SMALL_BYTES
                    ? FB_E4M3_WIDE_SMALL_ROWS
                    : FB_E4M3_WIDE_MLP_MIN_ROWS) ||
        !fb_cpu_amx_available())
        return FB_STATUS_NOT_SUPPORTED;
    return run_widened(h, p, &bf16_mlp, path, len);
}
