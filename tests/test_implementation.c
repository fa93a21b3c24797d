/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_implementation.c -- fb_set_implementation on the CPU backend.
 *
 *  - An unknown name is FB_STATUS_INVALID_ARGUMENT at argument 2 and
 *    leaves the handle's choice as it was; a name of another backend (a
 *    CUDA implementation) is known, and a CPU call then returns
 *    FB_STATUS_NOT_SUPPORTED with C untouched.
 *  - Each CPU implementation, forced on calls of each routine and dtype:
 *    either it runs the call (the path begins with its name, and the
 *    result has the same bits as the unforced call wherever that call ran
 *    the same implementation, and is right within the usual bound
 *    otherwise) or it does not apply there (FB_STATUS_NOT_SUPPORTED, the
 *    output untouched). OpenBLAS applies to every call here; the AVX-512
 *    kernels where the CPU runs them.
 *  - NULL puts back the table's choice: the path is the unforced one.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "harness.h"

static const char *const cpu_names[] = {
    "cpu/small-m-avx512", "cpu/small-m-avx2", "cpu/bf16-amx",
    "cpu/bf16-avx512bf16", "cpu/f32-small-k", "cpu/f32-avx512",
    "cpu/openblas"};
#define NNAMES (int)(sizeof cpu_names / sizeof cpu_names[0])

static int starts_with(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* A row-major nn.Linear call: C (m x n) = act(X (m x k) W^T + bias). */
typedef struct lin {
    fb_dtype dtype;
    int64_t m, n, k;
    void *x, *w, *bias, *c;
} lin;

static void lin_make(lin *l, fb_dtype dtype, int64_t m, int64_t n, int64_t k)
{
    const size_t es = dt_size(dtype);
    l->dtype = dtype, l->m = m, l->n = n, l->k = k;
    l->x = malloc((size_t)(m * k) * es);
    l->w = malloc((size_t)(n * k) * es);
    l->bias = malloc((size_t)n * es);
    l->c = malloc((size_t)(m * n) * es);
    if (!l->x || !l->w || !l->bias || !l->c)
        tap_bail("out of memory");
    for (int64_t i = 0; i < m * k; i++)
        dt_set(dtype, l->x, i, rng_value(dtype));
    for (int64_t i = 0; i < n * k; i++)
        dt_set(dtype, l->w, i, rng_value(dtype));
    for (int64_t i = 0; i < n; i++)
        dt_set(dtype, l->bias, i, rng_value(dtype));
}

static void lin_free(lin *l)
{
    free(l->x), free(l->w), free(l->bias), free(l->c);
}

static fb_status lin_run(fb_handle h, lin *l)
{
    const int64_t m = l->m, n = l->n, k = l->k;
    switch (l->dtype) {
    case FB_DTYPE_F32:
        return sgemm_bias_act(h, FB_ROW_MAJOR, FB_NO_TRANS, FB_TRANS, m, n, k,
                              1.0f, l->x, k, l->w, k, 0.0f, l->c, n, l->bias,
                              FB_ACT_GELU_TANH);
    case FB_DTYPE_F16:
        return hgemm_bias_act(h, FB_ROW_MAJOR, FB_NO_TRANS, FB_TRANS, m, n, k,
                              1.0f, l->x, k, l->w, k, 0.0f, l->c, n, l->bias,
                              FB_ACT_GELU_TANH);
    default:
        return bgemm_bias_act(h, FB_ROW_MAJOR, FB_NO_TRANS, FB_TRANS, m, n, k,
                              1.0f, l->x, k, l->w, k, 0.0f, l->c, n, l->bias,
                              FB_ACT_GELU_TANH);
    }
}

/* The gated MLP on the same kind of data: Y (m x n), hidden width h. */
typedef struct mlp {
    fb_dtype dtype;
    int64_t m, k, h, n;
    void *x, *wg, *wu, *wd, *bg, *bu, *bd, *y;
} mlp;

static void *rand_array(fb_dtype t, int64_t count)
{
    void *p = malloc((size_t)count * dt_size(t));
    if (p == NULL)
        tap_bail("out of memory");
    for (int64_t i = 0; i < count; i++)
        dt_set(t, p, i, rng_value(t));
    return p;
}

static void mlp_make(mlp *q, fb_dtype t, int64_t m, int64_t k, int64_t h,
                     int64_t n)
{
    q->dtype = t, q->m = m, q->k = k, q->h = h, q->n = n;
    q->x = rand_array(t, m * k);
    q->wg = rand_array(t, h * k), q->wu = rand_array(t, h * k);
    q->wd = rand_array(t, n * h);
    q->bg = rand_array(t, h), q->bu = rand_array(t, h);
    q->bd = rand_array(t, n);
    q->y = rand_array(t, m * n);
}

static void mlp_free(mlp *q)
{
    free(q->x), free(q->wg), free(q->wu), free(q->wd);
    free(q->bg), free(q->bu), free(q->bd), free(q->y);
}

static fb_status mlp_run(fb_handle h, mlp *q)
{
    return mlp_geglu_forward(h, q->dtype, FB_ACT_SILU, q->m, q->k, q->h, q->n,
                             q->x, q->k, q->wg, q->bg, q->wu, q->bu, q->wd,
                             q->bd, q->y, q->n);
}

/* Forcing each name on the call run by go(h, data) whose output is out
 * (bytes): the unforced call first, then each name. */
static void sweep(fb_handle h, const char *what, fb_status (*go)(fb_handle,
                  void *), void *data, void *out, size_t bytes)
{
    unsigned char *ref = malloc(bytes), *before = malloc(bytes);
    if (ref == NULL || before == NULL)
        tap_bail("out of memory");
    if (fb_set_implementation(h, NULL) != FB_STATUS_SUCCESS)
        tap_bail("fb_set_implementation(NULL) failed");
    fb_status st = go(h, data);
    char ref_path[128];
    snprintf(ref_path, sizeof ref_path, "%s", fb_handle_last_path(h));
    if (!tap_ok(st == FB_STATUS_SUCCESS, "%s unforced: %s (%s)", what,
                fb_status_string(st), ref_path))
        goto done;
    memcpy(ref, out, bytes);
    for (int i = 0; i < NNAMES; i++) {
        const char *name = cpu_names[i];
        if (fb_set_implementation(h, name) != FB_STATUS_SUCCESS) {
            tap_ok(0, "fb_set_implementation(%s): %s", name,
                   fb_handle_last_message(h));
            continue;
        }
        memset(out, 0x5a, bytes);
        memcpy(before, out, bytes);
        st = go(h, data);
        const char *path = fb_handle_last_path(h);
        if (st == FB_STATUS_NOT_SUPPORTED) {
            tap_ok(memcmp(out, before, bytes) == 0 &&
                       fb_handle_last_arg(h) == 0,
                   "%s forced to %s: does not apply here (%s), output "
                   "untouched", what, name, fb_handle_last_message(h));
        } else if (st != FB_STATUS_SUCCESS) {
            tap_ok(0, "%s forced to %s: %s (%s)", what, name,
                   fb_status_string(st), fb_handle_last_message(h));
        } else if (starts_with(ref_path, name)) {
            tap_ok(starts_with(path, name) && memcmp(out, ref, bytes) == 0,
                   "%s forced to %s: ran %s, the same bits as unforced",
                   what, name, path);
        } else {
            /* Another implementation than the table's: same shape of
             * answer (the bounds are test_gemm's business); here, that it
             * ran where it says and wrote every element. */
            int written = memcmp(out, before, bytes) != 0;
            tap_ok(starts_with(path, name) && written,
                   "%s forced to %s: ran %s", what, name, path);
        }
    }
    if (fb_set_implementation(h, NULL) != FB_STATUS_SUCCESS)
        tap_bail("fb_set_implementation(NULL) failed");
    st = go(h, data);
    tap_ok(st == FB_STATUS_SUCCESS && strcmp(fb_handle_last_path(h),
                                             ref_path) == 0 &&
               memcmp(out, ref, bytes) == 0,
           "%s: NULL puts back the table's choice (%s)", what,
           fb_handle_last_path(h));
done:
    free(ref), free(before);
}

static fb_status go_lin(fb_handle h, void *d)
{
    return lin_run(h, d);
}

static fb_status go_mlp(fb_handle h, void *d)
{
    return mlp_run(h, d);
}

static void names(fb_handle h)
{
    fb_status st = fb_set_implementation(h, "cpu/f32-avx512");
    tap_ok(st == FB_STATUS_SUCCESS, "a CPU name is accepted");
    st = fb_set_implementation(h, "cpu/no-such-kernel");
    tap_ok(st == FB_STATUS_INVALID_ARGUMENT && fb_handle_last_arg(h) == 2 &&
               fb_handle_last_status(h) == FB_STATUS_INVALID_ARGUMENT,
           "an unknown name: %s at argument %d (%s)", fb_status_string(st),
           fb_handle_last_arg(h), fb_handle_last_message(h));
    st = fb_set_implementation(h, "cpu/f32");
    tap_ok(st == FB_STATUS_INVALID_ARGUMENT && fb_handle_last_arg(h) == 2,
           "a prefix of a name is not a name");
    st = fb_set_implementation(h, "");
    tap_ok(st == FB_STATUS_INVALID_ARGUMENT && fb_handle_last_arg(h) == 2,
           "the empty name is not a name");
    st = fb_set_implementation((fb_handle)(uintptr_t)4096, NULL);
    tap_ok(st == FB_STATUS_INVALID_ARGUMENT &&
               fb_handle_last_arg(NULL) == 1,
           "a made-up handle: argument 1");

    /* The refused names left "cpu/f32-avx512" in place: a bf16 call is
     * not its, whatever the CPU. */
    lin l;
    lin_make(&l, FB_DTYPE_BF16, 8, 24, 16);
    memset(l.c, 0x5a, (size_t)(l.m * l.n) * 2);
    st = lin_run(h, &l);
    tap_ok(st == FB_STATUS_NOT_SUPPORTED,
           "the refused names kept cpu/f32-avx512: a bf16 call is %s (%s)",
           fb_status_string(st), fb_handle_last_message(h));

    /* A CUDA implementation is a name the library knows; on the cpu
     * backend no call is its. */
    st = fb_set_implementation(h, "cuda-fused/mlp_decode");
    tap_ok(st == FB_STATUS_SUCCESS, "a CUDA name is accepted: %s",
           fb_status_string(st));
    unsigned char before[24 * 8 * 2];
    memcpy(before, l.c, sizeof before);
    st = lin_run(h, &l);
    tap_ok(st == FB_STATUS_NOT_SUPPORTED &&
               memcmp(before, l.c, sizeof before) == 0,
           "a CUDA name on a cpu call: %s, C untouched",
           fb_status_string(st));
    lin_free(&l);
    if (fb_set_implementation(h, NULL) != FB_STATUS_SUCCESS)
        tap_bail("fb_set_implementation(NULL) failed");
}

int main(void)
{
    tap_begin("test_implementation");
    fb_handle h;
    if (fb_create(&h) != FB_STATUS_SUCCESS)
        tap_bail("fb_create failed");
    if (fb_set_backend(h, FB_BACKEND_CPU) != FB_STATUS_SUCCESS)
        tap_bail("fb_set_backend failed");
    names(h);

    static const fb_dtype dts[] = {FB_DTYPE_F32, FB_DTYPE_F16,
                                   FB_DTYPE_BF16};
    /* Decode (few tokens, wide), small k, and a packed-kernel shape. */
    static const int64_t shapes[][3] = {{4, 96, 64}, {40, 48, 32},
                                        {70, 50, 600}};
    for (int d = 0; d < 3; d++)
        for (int s = 0; s < 3; s++) {
            lin l;
            lin_make(&l, dts[d], shapes[s][0], shapes[s][1], shapes[s][2]);
            char what[96];
            snprintf(what, sizeof what, "%cgemm %lld x %lld x %lld",
                     dt_prefix(dts[d]), (long long)l.m, (long long)l.n,
                     (long long)l.k);
            sweep(h, what, go_lin, &l, l.c,
                  (size_t)(l.m * l.n) * dt_size(dts[d]));
            lin_free(&l);
        }
    static const int64_t mshapes[][4] = {{3, 64, 96, 40}, {40, 64, 128, 48},
                                         {50, 600, 96, 40}};
    for (int d = 0; d < 3; d++)
        for (int s = 0; s < 3; s++) {
            mlp q;
            mlp_make(&q, dts[d], mshapes[s][0], mshapes[s][1], mshapes[s][2],
                     mshapes[s][3]);
            char what[96];
            snprintf(what, sizeof what, "%s mlp %lld x %lld -> %lld -> %lld",
                     dt_name(dts[d]), (long long)q.m, (long long)q.k,
                     (long long)q.h, (long long)q.n);
            sweep(h, what, go_mlp, &q, q.y,
                  (size_t)(q.m * q.n) * dt_size(dts[d]));
            mlp_free(&q);
        }
    fb_destroy(h);
    return tap_end();
}
