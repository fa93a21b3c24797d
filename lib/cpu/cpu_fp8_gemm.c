/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cpu_fp8_gemm.c -- gemm_e4m3_bias_act on the CPU.
 *
 * Tokens (rows of op(A)) are taken in blocks; each block of x is widened
 * once into an fp32 panel shared by the threads, and the threads split the
 * channels (columns of C), so each streams only its share of the e4m3
 * weights (fb_cpu_e4m3_dots). A thread then finishes its channels of the
 * block while the dot products are in cache:
 *   v = alpha * (dot * scale[j]) + beta * C(i, j) + bias[j],  act(v),
 * rounded once into C. Nothing goes through OpenBLAS, so no first-use
 * allocation of its can block a call.
 *
 * On AMX, with two blocks a thread or more, the threads take whole
 * blocks instead (each its own x panel, all the channels): every block
 * widens every weight either way, so the work is the same, and the
 * blocks need no barriers between the threads and finish whole rows at
 * once. Each output's sum is the same whatever thread computes it.
 */
#include "config.h"
#include <omp.h>
#include <stdio.h>
#include <string.h>
#include "cpu.h"
#include "cpu_convert.h"
#include "cpu_epilogue.h"
#include "cpu_bf16_kernel.h"
#include "cpu_fp8.h"
#include "cpu_fp8_kernel.h"
#include "cpu_fp8_rows.h"
#include "cpu_small_m.h"

/* Tokens per block: their x panel (64 x 1 KiB per chunk of k) stays in L2
 * while a group of weight rows is multiplied against it. On AMX, as many
 * as the token tiles hold: each block widens every weight once. */
#define TOKENS 64
#define AMX_TOKENS (FB_AMX_TOKEN_TILES * 16)

fb_status fb_cpu_gemm_e4m3(fb_handle h, const fb_e4m3_gemm_problem *p,
                           char *path, size_t len)
{
    if (p->m == 0 || p->n == 0) {
        snprintf(path, len, "cpu/quick-return");
        return FB_STATUS_SUCCESS;
    }
    const fb_status wide = fb_cpu_e4m3_gemm_wide(h, p, path, len);
    if (wide != FB_STATUS_NOT_SUPPORTED)
        return wide;
    const int64_t k = p->k, n = p->n;
    const int nothing = k == 0 || p->alpha == 0.0f;
    /* AMX where x is bf16 (so its fp32 panel packs exactly) and the
     * weight rows contiguous: fb_cpu_e4m3_amx_nt. */
    const int amx = !nothing && p->dtype == FB_DTYPE_BF16 && p->w_ks == 1 &&
                    p->m >= FB_E4M3_AMX_MIN_ROWS && fb_cpu_amx_available();
    const int64_t cap = amx ? AMX_TOKENS : TOKENS;
    const int64_t gran = amx ? 16 : 4; /* channels a thread's share rounds to */
    const int64_t ldx = fb_cpu_e4m3_panel_ld(nothing ? 0 : k);
    const int64_t ldo = n + 16;
    const double flops = 2.0 * (double)p->m * (double)n *
                         (double)(k > 0 ? k : 1);
    int t = fb_cpu_own_threads(h, flops);
    int64_t tb;
    const int by_blocks =
        fb_e4m3_blocks_per_thread(p->m, cap, t, &tb) && amx;
    const int64_t blocks = (p->m + tb - 1) / tb;
    const int64_t parts = by_blocks ? blocks : (n + gran - 1) / gran;
    if (t > parts)
        t = (int)parts;
    /* x panel, the block's dots, the bias in fp32, per thread a column
     * buffer for C's old values, then AMX's packed x; by blocks, a panel,
     * dots and packed x per thread. */
    const size_t packed =
        amx ? fb_cpu_small_m_amx_pack_bytes(tb, k) / sizeof(float) : 0;
    const size_t panels = (size_t)(by_blocks ? t : 1);
    /* each piece on a 64-byte boundary (AMX loads the packed x) */
    const size_t xfl = ((size_t)(tb * ldx) + 15) / 16 * 16;
    const size_t dfl = ((size_t)(tb * ldo) + 15) / 16 * 16;
    const size_t per_panel = xfl + dfl + packed;
    const size_t floats = panels * per_panel + (size_t)(n + 16) +
                          (size_t)t * FB_E4M3_ROW_BUF;
    float *ws = fb_handle_workspace(h, floats * sizeof(float));
    if (ws == NULL) {
        snprintf(path, len, "cannot allocate %zu bytes of workspace",
                 floats * sizeof(float));
        return FB_STATUS_ALLOC_FAILED;
    }
    float *panel0 = ws;
    float *xp = panel0, *dots = xp + xfl;
    uint16_t *xpk = (uint16_t *)(dots + dfl);
    float *bias32 = panel0 + panels * per_panel, *rowbuf = bias32 + n + 16;
    int x_field = 0, ran_amx = 0, fell_back = 0;
    if (p->bias != NULL)
        fb_cpu_to_f32(p->dtype, p->bias, bias32, n);
    const fb_e4m3_epilogue ep = {p->alpha, p->beta, nothing, p->scale,
                                 p->bias != NULL ? bias32 : NULL, p->act,
                                 p->dtype};

    if (by_blocks) {
#pragma omp parallel num_threads(t) if (t > 1)
        {
            const int tid = omp_get_thread_num(), nt = omp_get_num_threads();
            float *mx = panel0 + (size_t)tid * per_panel;
            float *md = mx + xfl;
            uint16_t *mk = (uint16_t *)(md + dfl);
            float *old = rowbuf + (size_t)tid * FB_E4M3_ROW_BUF;
            for (int64_t q = tid; q < blocks; q += nt) {
                const int64_t i0 = q * tb;
                const int64_t rows = p->m - i0 < tb ? p->m - i0 : tb;
                for (int64_t i = 0; i < rows; i++)
                    fb_e4m3_widen_row(p->dtype, p->x, (i0 + i) * p->x_ts,
                                      p->x_ks, k, mx + i * ldx, ldx);
                const int tiles = rows >= FB_E4M3_AMX_MIN_ROWS;
                int field = 0;
                if (tiles) {
                    field = fb_cpu_small_m_amx_pack_f32(rows, k, mx, ldx, mk);
#pragma omp atomic write
                    ran_amx = 1;
                }
                if (!(tiles && fb_cpu_e4m3_amx_nt(rows, n, k, mk, field, p->w,
                                                  p->w_cs, md, ldo))) {
                    if (tiles) {
#pragma omp atomic write
                        fell_back = 1;
                    }
                    fb_cpu_e4m3_dots(rows, n, k, mx, ldx, p->w, p->w_cs,
                                     p->w_ks, md, ldo);
                }
                for (int64_t i = 0; i < rows; i++)
                    fb_e4m3_finish_row(&ep, md + i * ldo, 0, n, p->c,
                                       (i0 + i) * p->c_ts, p->c_cs, old);
            }
        }
    } else {
#pragma omp parallel num_threads(t) if (t > 1)
        {
            const int tid = omp_get_thread_num(), nt = omp_get_num_threads();
            /* Whole groups of gran channels per thread. */
            const int64_t groups = (n + gran - 1) / gran;
            const int64_t j0 = groups * tid / nt * gran;
            const int64_t j1 = groups * (tid + 1) / nt * gran < n
                                   ? groups * (tid + 1) / nt * gran
                                   : n;
            float *old = rowbuf + (size_t)tid * FB_E4M3_ROW_BUF;
            for (int64_t i0 = 0; i0 < p->m; i0 += tb) {
                const int64_t rows = p->m - i0 < tb ? p->m - i0 : tb;
                if (!nothing) {
#pragma omp for schedule(static)
                    for (int64_t i = 0; i < rows; i++)
                        fb_e4m3_widen_row(p->dtype, p->x, (i0 + i) * p->x_ts,
                                          p->x_ks, k, xp + i * ldx, ldx);
                    const int tiles = amx && rows >= FB_E4M3_AMX_MIN_ROWS;
                    if (tiles) {
#pragma omp single
                        {
                            x_field = fb_cpu_small_m_amx_pack_f32(rows, k, xp,
                                                                  ldx, xpk);
                            ran_amx = 1;
                        }
                    }
                    if (j1 > j0 &&
                        !(tiles &&
                          fb_cpu_e4m3_amx_nt(rows, j1 - j0, k, xpk, x_field,
                                             p->w + j0 * p->w_cs, p->w_cs,
                                             dots + j0, ldo))) {
                        if (tiles) {
#pragma omp atomic write
                            fell_back = 1;
                        }
                        fb_cpu_e4m3_dots(rows, j1 - j0, k, xp, ldx,
                                         p->w + j0 * p->w_cs, p->w_cs, p->w_ks,
                                         dots + j0, ldo);
                    }
                }
                for (int64_t i = 0; i < rows && j1 > j0; i++)
                    fb_e4m3_finish_row(&ep, dots + i * ldo + j0, j0, j1 - j0,
                                       p->c, (i0 + i) * p->c_ts + j0 * p->c_cs,
                                       p->c_cs, old);
                /* The panel is rewritten for the next block only after every
                 * thread is done with it. */
#pragma omp barrier
            }
        }
    }
    snprintf(path, len, "cpu/e4m3-%s%s%s%s/%s%s/threads=%d",
             ran_amx ? "amx" : fb_cpu_e4m3_isa(), fell_back ? "+" : "",
             fell_back ? fb_cpu_e4m3_isa() : "",
             fell_back ? "-where-tiny" : "",
             p->w_ks == 1 ? "rows" : "strided",
             by_blocks ? "/blocks-per-thread" : "", t);
    return FB_STATUS_SUCCESS;
}
