/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * packed_check.c -- the sweep and path check shared by the tests of the
 * CPU packed kernels (packed_check.h).
 */
#include "packed_check.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "oracle.h"
#include "tap_child.h"

int packed_on_kernel(fb_handle h, const packed_paths *p)
{
    return strncmp(fb_handle_last_path(h), p->kernel, strlen(p->kernel)) == 0;
}

void packed_f32_skip_unless_kernel(target *cpu, const packed_paths *p)
{
    float a[4] = {1.0f, 2.0f, 3.0f, 4.0f}, c1[4];
    const fb_status st = gemm_call(
        cpu->handle, FB_DTYPE_F32, FB_ROW_MAJOR, FB_NO_TRANS, FB_NO_TRANS, 2,
        2, 2, 1.0f, a, 2, a, 2, 0.0f, c1, 2, NULL, FB_ACT_NONE);
    if (st != FB_STATUS_SUCCESS)
        tap_bail("a 2x2 sgemm_bias_act failed: %s", fb_status_string(st));
    if (!packed_on_kernel(cpu->handle, p)) {
        tap_diag("path %s", fb_handle_last_path(cpu->handle));
        fb_destroy(cpu->handle);
        tap_skip_all("no AVX-512F on this CPU (OpenBLAS runs fp32: "
                     "test_gemm's)");
    }
}

gemm_case packed_case(fb_dtype dtype, fb_layout layout, fb_transpose ta,
                      fb_transpose tb, int64_t m, int64_t n, int64_t k)
{
    gemm_case c;
    memset(&c, 0, sizeof c);
    c.dtype = dtype;
    c.layout = layout;
    c.transa = ta, c.transb = tb;
    c.m = m, c.n = n, c.k = k;
    c.alpha = 1.0f, c.beta = 0.0f;
    c.act = FB_ACT_NONE;
    gemm_case_set_lds(&c, 0, 0, 0);
    return c;
}

void packed_run(const target *cpu, gemm_data *d, const packed_paths *p,
                int want_kernel)
{
    char label[256];
    gemm_check(d, cpu, 1, NULL);
    gemm_case_label(&d->c, label, sizeof label);
    const char *path = fb_handle_last_path(cpu->handle);
    const int ok = want_kernel ? packed_on_kernel(cpu->handle, p)
                               : strstr(path, p->other) != NULL;
    tap_ok(ok, "path %s for %s (want %s)", path, label,
           want_kernel ? p->kernel : p->other);
}

static const fb_transpose trans[2] = {FB_NO_TRANS, FB_TRANS};

void packed_sweep(const target *cpu, fb_dtype dtype,
                  const int64_t (*shapes)[3], int nshapes,
                  const packed_paths *p, int want_kernel, int64_t ragged_k)
{
    int idx = 0;
    for (int s = 0; s < nshapes; s++)
        for (int lay = 0; lay < 2; lay++)
            for (int t = 0; t < 4; t++, idx++) {
                gemm_case c = packed_case(
                    dtype, lay ? FB_COL_MAJOR : FB_ROW_MAJOR, trans[t >> 1],
                    trans[t & 1], shapes[s][0], shapes[s][1], shapes[s][2]);
                c.act = all_acts[idx % N_ACTS];
                c.has_bias = (idx / 2) % 2;
                c.beta = idx % 3 == 1 ? 0.5f : 0.0f;
                c.alpha = idx % 4 == 3 ? -0.75f : 1.0f;
                const int64_t pad = idx % 2 ? 3 : 0;
                gemm_case_set_lds(&c, pad, 2 * pad, pad + 1);
                c.offset = idx % 3;
                gemm_data d;
                gemm_data_make(&d, &c);
                packed_run(cpu, &d, p, want_kernel);
                gemm_data_free(&d);
            }
    for (int a = 0; a < N_ACTS; a++)
        for (int v = 0; v < 8; v++) {
            gemm_case c = packed_case(dtype,
                                      v & 1 ? FB_COL_MAJOR : FB_ROW_MAJOR,
                                      FB_TRANS, FB_NO_TRANS, 45, 39,
                                      ragged_k);
            c.act = all_acts[a];
            c.has_bias = (v >> 1) & 1;
            c.beta = v & 4 ? -1.25f : 0.0f;
            c.alpha = 0.7f;
            gemm_case_set_lds(&c, 5, 1, 2);
            c.note = "every activation, bias, beta";
            gemm_data d;
            gemm_data_make(&d, &c);
            packed_run(cpu, &d, p, want_kernel);
            gemm_data_free(&d);
        }
}

void packed_special_inputs(const target *cpu, fb_dtype dtype,
                           const packed_paths *p)
{
    for (int t = 0; t < 8; t++) {
        gemm_case c = packed_case(dtype, t & 4 ? FB_COL_MAJOR : FB_ROW_MAJOR,
                                  trans[(t >> 1) & 1], trans[t & 1], 70, 50,
                                  41);
        c.has_bias = 1;
        c.act = FB_ACT_RELU;
        gemm_case_set_lds(&c, 2, 1, 0);
        c.note = "NaN in op(A) row 37, Inf in op(B) column 29";
        gemm_data d;
        gemm_data_make(&d, &c);
        dt_set(dtype, tbuf_data(&d.A), packed_op_at(&c, 1, 37, 40), NAN);
        dt_set(dtype, tbuf_data(&d.B), packed_op_at(&c, 0, 3, 29), INFINITY);
        packed_run(cpu, &d, p, 1);
        gemm_data_free(&d);
    }
}

mlp_case packed_mlp_case(fb_dtype dtype, int64_t m, int64_t k, int64_t h,
                         int64_t n, fb_activation act, unsigned biases,
                         int pad)
{
    mlp_case c;
    memset(&c, 0, sizeof c);
    c.dtype = dtype;
    c.act = act;
    c.m = m, c.k = k, c.h = h, c.n = n;
    c.ldx = k + pad, c.ldy = n + 2 * pad;
    c.biases = biases;
    c.offset = pad & 1;
    return c;
}

void packed_mlp_run(const target *cpu, mlp_data *d, const char *prefix,
                    int want_kernel)
{
    char label[256];
    mlp_check(d, cpu, 1, NULL);
    mlp_case_label(&d->c, label, sizeof label);
    const char *path = fb_handle_last_path(cpu->handle);
    const int kernel = strncmp(path, prefix, strlen(prefix)) == 0;
    tap_ok(kernel == want_kernel, "path %s for %s (want %s%s)", path, label,
           want_kernel ? "" : "not ", prefix);
}

void packed_mlp_sweep(const target *cpu, fb_dtype dtype,
                      const int64_t (*shapes)[4], int nshapes,
                      const char *prefix, int want_kernel)
{
    int idx = 0;
    for (int s = 0; s < nshapes; s++)
        for (int a = 0; a < N_ACTS; a++, idx++) {
            mlp_case c = packed_mlp_case(dtype, shapes[s][0], shapes[s][1],
                                         shapes[s][2], shapes[s][3],
                                         all_acts[a], (unsigned)(idx % 8),
                                         idx % 3);
            mlp_data d;
            mlp_data_make(&d, &c);
            packed_mlp_run(cpu, &d, prefix, want_kernel);
            mlp_data_free(&d);
        }
}

int64_t packed_op_at(const gemm_case *c, int is_a, int64_t r, int64_t col)
{
    const int t = is_a ? c->transa != FB_NO_TRANS : c->transb != FB_NO_TRANS;
    const int64_t ld = is_a ? c->lda : c->ldb;
    return t ? oracle_at(c->layout, col, r, ld)
             : oracle_at(c->layout, r, col, ld);
}

void packed_env_switch(const target *cpu, fb_dtype dtype, const char *var,
                       const char *off, const char *on,
                       const packed_paths *p)
{
    char note_off[96], note_on[96];
    gemm_case c = packed_case(dtype, FB_ROW_MAJOR, FB_NO_TRANS, FB_TRANS, 64,
                              48, 96);
    c.has_bias = 1;
    c.act = FB_ACT_SILU;
    snprintf(note_off, sizeof note_off, "%s=%s", var, off);
    c.note = note_off;
    gemm_data d;
    gemm_data_make(&d, &c);
    if (tap_in_phase("env-switch")) {
        /* The child, started with var=off. */
        packed_run(cpu, &d, p, 0);
        gemm_data_free(&d);
        return;
    }
    /* The library reads its environment once per process: var=off is
     * tried by a new one. */
    char set[128];
    snprintf(set, sizeof set, "%s=%s", var, off);
    const char *env[] = {set, NULL};
    tap_rerun("env-switch", env, 300);
    if (on != NULL)
        snprintf(note_on, sizeof note_on, "%s=%s again", var, on);
    else
        snprintf(note_on, sizeof note_on, "%s unset again", var);
    d.c.note = note_on;
    packed_run(cpu, &d, p, 1);
    gemm_data_free(&d);
}
