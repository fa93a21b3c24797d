/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cpu_fp8_mlp.c -- mlp_geglu_forward_e4m3 on the CPU.
 *
 * Rows of X are taken in blocks. For one block: X widened once into an
 * fp32 panel; the threads split the hidden width, each computing its
 * columns of G = X Wg^T and U = X Wu^T from the e4m3 rows
 * (fb_cpu_e4m3_dots), then H = act_g(G sg + bg) .* (U su + bu) on them
 * while in cache, rounded to the input type for fp16/bf16 (as a framework
 * that stores H does, and as cpu_mlp.c does); then the threads split the
 * output width for Y = H (Wd sd)^T + bd, rounded once into Y. Each weight
 * byte is read once per block: a decode call streams the e4m3 weights
 * once. On AMX, with two blocks a thread or more, each thread takes whole
 * blocks instead (the gemm's reason, cpu_fp8_gemm.c): its own panels,
 * every hidden row and output, no barriers.
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

/* Rows per block: G and U (2 x 32 x h floats) stay in L2/L3. */
#define ROWS 32

/* The share [*j0, *j1) of n columns, in whole groups of gran, of thread
 * tid of nt. */
static void share(int64_t n, int64_t gran, int tid, int nt, int64_t *j0,
                  int64_t *j1)
{
    const int64_t groups = (n + gran - 1) / gran;
    *j0 = groups * tid / nt * gran;
    *j1 = groups * (tid + 1) / nt * gran;
    if (*j1 > n)
        *j1 = n;
    if (*j0 > n)
        *j0 = n;
}

fb_status fb_cpu_mlp_e4m3(fb_handle h, const fb_e4m3_mlp_problem *p,
                          char *path, size_t len)
{
    if (p->m == 0 || p->n == 0) {
        snprintf(path, len, "cpu/quick-return");
        return FB_STATUS_SUCCESS;
    }
    const fb_status wide = fb_cpu_e4m3_mlp_wide(h, p, path, len);
    if (wide != FB_STATUS_NOT_SUPPORTED)
        return wide;
    const int64_t k = p->k, hd = p->h, n = p->n;
    /* AMX where X is bf16 (its fp32 panel, and H rounded to bf16, pack
     * exactly): fb_cpu_e4m3_amx_nt, shares of whole 16-row tiles, blocks
     * of as many rows as its token tiles hold (each block widens every
     * weight once). */
    const int amx = p->dtype == FB_DTYPE_BF16 &&
                    p->m >= FB_E4M3_AMX_MIN_ROWS && fb_cpu_amx_available();
    const int64_t cap = amx ? FB_AMX_TOKEN_TILES * 16 : ROWS;
    const int64_t ldx = fb_cpu_e4m3_panel_ld(k);
    const int64_t ldg = fb_cpu_e4m3_panel_ld(hd);
    const int64_t ldy = n + 16;
    const double flops = 2.0 * (double)p->m *
                         (2.0 * (double)hd * (double)(k > 0 ? k : 1) +
                          (double)n * (double)(hd > 0 ? hd : 1));
    int t = fb_cpu_own_threads(h, flops);
    const int64_t gran = amx ? 16 : 4;
    const int64_t widest = (hd > n ? hd : n);
    int64_t rb;
    const int by_blocks = fb_e4m3_blocks_per_thread(p->m, cap, t, &rb) &&
                          amx && hd > 0 && k > 0;
    const int64_t blocks = (p->m + rb - 1) / rb;
    const int64_t parts = by_blocks ? blocks : (widest + gran - 1) / gran;
    if (t > parts)
        t = (int)parts;
    /* Per panel set (one, or one a thread by blocks): X's panel, G, U, the
     * dots of Y, AMX's packed X then packed H; each on a 64-byte boundary.
     * Then the biases in fp32 and a row buffer a thread. */
    const size_t px = amx ? fb_cpu_small_m_amx_pack_bytes(rb, k) : 0;
    const size_t ph = amx ? fb_cpu_small_m_amx_pack_bytes(rb, hd) : 0;
    const size_t xfl = ((size_t)(rb * ldx) + 15) / 16 * 16;
    const size_t gfl = ((size_t)(rb * ldg) + 15) / 16 * 16;
    const size_t yfl = ((size_t)(rb * ldy) + 15) / 16 * 16;
    const size_t per_set = xfl + 2 * gfl + yfl +
                           ((px > ph ? px : ph) + 63) / 64 * 16;
    const size_t sets = (size_t)(by_blocks ? t : 1);
    const size_t floats = sets * per_set + (size_t)(2 * hd + n + 48) +
                          (size_t)t * FB_E4M3_ROW_BUF;
    float *ws = fb_handle_workspace(h, floats * sizeof(float));
    if (ws == NULL) {
        snprintf(path, len, "cannot allocate %zu bytes of workspace",
                 floats * sizeof(float));
        return FB_STATUS_ALLOC_FAILED;
    }
    float *xp = ws, *g = xp + xfl, *u = g + gfl, *yd = u + gfl;
    uint16_t *packed = (uint16_t *)(yd + yfl);
    float *bg = ws + sets * per_set, *bu = bg + hd + 16, *bd = bu + hd + 16;
    float *rowbuf = bd + n + 16;
    int field = 0, ran_amx = 0, fell_back = 0;
    if (p->bg != NULL)
        fb_cpu_to_f32(p->dtype, p->bg, bg, hd);
    if (p->bu != NULL)
        fb_cpu_to_f32(p->dtype, p->bu, bu, hd);
    if (p->bd != NULL)
        fb_cpu_to_f32(p->dtype, p->bd, bd, n);
    /* H's panel padding (columns h..ldg of G) must read as zeros. */
    for (size_t q = 0; q < sets; q++)
        for (int64_t i = 0; i < rb; i++)
            memset(g + q * per_set + i * ldg + hd, 0,
                   (size_t)(ldg - hd) * sizeof(float));
    const fb_e4m3_epilogue down = {1.0f, 0.0f, hd == 0, p->sd,
                                   p->bd != NULL ? bd : NULL, FB_ACT_NONE,
                                   p->dtype};

    if (by_blocks) {
#pragma omp parallel num_threads(t) if (t > 1)
        {
            const int tid = omp_get_thread_num(), nt = omp_get_num_threads();
            float *mx = xp + (size_t)tid * per_set, *mg = mx + xfl;
            float *mu = mg + gfl, *my = mu + gfl;
            uint16_t *mk = (uint16_t *)(my + yfl);
            float *old = rowbuf + (size_t)tid * FB_E4M3_ROW_BUF;
            for (int64_t q = tid; q < blocks; q += nt) {
                const int64_t i0 = q * rb;
                const int64_t rows = p->m - i0 < rb ? p->m - i0 : rb;
                for (int64_t i = 0; i < rows; i++)
                    fb_e4m3_widen_row(p->dtype, p->x, (i0 + i) * p->ldx, 1,
                                      k, mx + i * ldx, ldx);
                const int tiles = rows >= FB_E4M3_AMX_MIN_ROWS;
                int xf = 0;
                if (tiles) {
                    xf = fb_cpu_small_m_amx_pack_f32(rows, k, mx, ldx, mk);
#pragma omp atomic write
                    ran_amx = 1;
                }
                if (!(tiles &&
                      fb_cpu_e4m3_amx_nt(rows, hd, k, mk, xf, p->wg, k, mg,
                                         ldg) &&
                      fb_cpu_e4m3_amx_nt(rows, hd, k, mk, xf, p->wu, k, mu,
                                         ldg))) {
                    if (tiles) {
#pragma omp atomic write
                        fell_back = 1;
                    }
                    fb_cpu_e4m3_dots(rows, hd, k, mx, ldx, p->wg, k, 1, mg,
                                     ldg);
                    fb_cpu_e4m3_dots(rows, hd, k, mx, ldx, p->wu, k, 1, mu,
                                     ldg);
                }
                for (int64_t i = 0; i < rows; i++) {
                    float *gi = mg + i * ldg, *ui = mu + i * ldg;
                    for (int64_t j = 0; j < hd; j++) {
                        gi[j] *= p->sg[j];
                        ui[j] *= p->su[j];
                    }
                    fb_cpu_gate(gi, ui, p->bg != NULL ? bg : NULL,
                                p->bu != NULL ? bu : NULL, hd, p->gate_act);
                    fb_cpu_round_to(p->dtype, gi, hd);
                }
                if (tiles)
                    xf = fb_cpu_small_m_amx_pack_f32(rows, hd, mg, ldg, mk);
                if (!(tiles && fb_cpu_e4m3_amx_nt(rows, n, hd, mk, xf,
                                                   p->wd, hd, my, ldy))) {
                    if (tiles) {
#pragma omp atomic write
                        fell_back = 1;
                    }
                    fb_cpu_e4m3_dots(rows, n, hd, mg, ldg, p->wd, hd, 1, my,
                                     ldy);
                }
                for (int64_t i = 0; i < rows; i++)
                    fb_e4m3_finish_row(&down, my + i * ldy, 0, n, p->y,
                                       (i0 + i) * p->ldy, 1, old);
            }
        }
    } else {
#pragma omp parallel num_threads(t) if (t > 1)
        {
            const int tid = omp_get_thread_num(), nt = omp_get_num_threads();
            int64_t h0, h1, n0, n1;
            share(hd, gran, tid, nt, &h0, &h1);
            share(n, gran, tid, nt, &n0, &n1);
            float *old = rowbuf + (size_t)tid * FB_E4M3_ROW_BUF;
            for (int64_t i0 = 0; i0 < p->m; i0 += rb) {
                const int64_t rows = p->m - i0 < rb ? p->m - i0 : rb;
#pragma omp for schedule(static)
                for (int64_t i = 0; i < rows; i++)
                    fb_e4m3_widen_row(p->dtype, p->x, (i0 + i) * p->ldx, 1, k,
                                      xp + i * ldx, ldx);
                const int tiles = amx && rows >= FB_E4M3_AMX_MIN_ROWS;
                if (tiles && k > 0) {
#pragma omp single
                    {
                        field = fb_cpu_small_m_amx_pack_f32(rows, k, xp, ldx,
                                                            packed);
                        ran_amx = 1;
                    }
                }
                if (h1 > h0) {
                    if (k > 0) {
                        const uint8_t *wg = p->wg + h0 * k;
                        const uint8_t *wu = p->wu + h0 * k;
                        if (tiles &&
                            fb_cpu_e4m3_amx_nt(rows, h1 - h0, k, packed, field,
                                               wg, k, g + h0, ldg))
                            fb_cpu_e4m3_amx_nt(rows, h1 - h0, k, packed, field,
                                               wu, k, u + h0, ldg);
                        else {
                            if (tiles) {
#pragma omp atomic write
                                fell_back = 1;
                            }
                            fb_cpu_e4m3_dots(rows, h1 - h0, k, xp, ldx, wg,
                                             k, 1, g + h0, ldg);
                            fb_cpu_e4m3_dots(rows, h1 - h0, k, xp, ldx, wu,
                                             k, 1, u + h0, ldg);
                        }
                    }
                    for (int64_t i = 0; i < rows; i++) {
                        float *gi = g + i * ldg + h0, *ui = u + i * ldg + h0;
                        const int64_t c = h1 - h0;
                        if (k > 0)
                            for (int64_t j = 0; j < c; j++) {
                                gi[j] *= p->sg[h0 + j];
                                ui[j] *= p->su[h0 + j];
                            }
                        else
                            for (int64_t j = 0; j < c; j++)
                                gi[j] = ui[j] = 0.0f;
                        fb_cpu_gate(gi, ui, p->bg != NULL ? bg + h0 : NULL,
                                    p->bu != NULL ? bu + h0 : NULL, c,
                                    p->gate_act);
                        fb_cpu_round_to(p->dtype, gi, c);
                    }
                }
#pragma omp barrier
                if (tiles && hd > 0) {
#pragma omp single
                    field = fb_cpu_small_m_amx_pack_f32(rows, hd, g, ldg,
                                                        packed);
                }
                if (n1 > n0) {
                    const uint8_t *wd = p->wd + n0 * hd;
                    if (hd > 0 &&
                        !(tiles &&
                          fb_cpu_e4m3_amx_nt(rows, n1 - n0, hd, packed, field,
                                             wd, hd, yd + n0, ldy))) {
                        if (tiles) {
#pragma omp atomic write
                            fell_back = 1;
                        }
                        fb_cpu_e4m3_dots(rows, n1 - n0, hd, g, ldg, wd, hd, 1,
                                         yd + n0, ldy);
                    }
                    for (int64_t i = 0; i < rows; i++)
                        fb_e4m3_finish_row(&down, yd + i * ldy + n0, n0,
                                           n1 - n0, p->y,
                                           (i0 + i) * p->ldy + n0, 1, old);
                }
                /* G and the x panel are rewritten for the next block only
                 * after every thread is done with them. */
#pragma omp barrier
            }
        }
    }
    snprintf(path, len, "cpu/e4m3-%s%s%s%s/mlp%s/threads=%d",
             ran_amx ? "amx" : fb_cpu_e4m3_isa(), fell_back ? "+" : "",
             fell_back ? fb_cpu_e4m3_isa() : "",
             fell_back ? "-where-tiny" : "",
             by_blocks ? "/blocks-per-thread" : "", t);
    return FB_STATUS_SUCCESS;
}
