/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_gpu.c -- the GPU paths against the double oracle and against the
 * CPU backend (docs/DESIGN.md's third witness).
 *
 * Runs the same sweeps as test_gemm, test_mlp and test_badargs, with
 * operands in device memory, on FB_BACKEND_CUDA_LT, FB_BACKEND_CUDA_FUSED
 * (FB_STATUS_NOT_SUPPORTED there is a skip, not a pass) and FB_BACKEND_CUDA
 * (either path), NaN and Inf included, plus: TF32 handles (fp32 only,
 * TF32 bound), host operands given to the GPU paths (staged), shapes
 * larger than one wave of the GPU and not multiples of 8 or 16,
 * decode-sized, prefill-sized and tiny-width MLPs, and device pointers
 * given to the CPU
 * backend. Every point asserts the path
 * that ran.
 *
 * Prints "1..0 # SKIP no CUDA device" where there is none.
 * FB_TEST_QUICK=1 drops the large shapes and the bad-argument tables (for
 * runs under compute-sanitizer); the conformance sweeps still run.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "bad_args.h"
#include "cuda_mem.h"
#include "gemm_check.h"
#include "mlp_check.h"
#include "special_values.h"

static int quick(void)
{
    const char *q = getenv("FB_TEST_QUICK");
    return q != NULL && *q != '\0' && *q != '0';
}

static target gpu_target(const char *name, fb_backend b, const tmem *mem,
                         int tf32)
{
    target t = {name, handle_on(b), b, mem, ARITH_FP32, ARITH_TENSOR,
                b == FB_BACKEND_CUDA_FUSED, 0};
    if (tf32) {
        if (fb_set_math_mode(t.handle, FB_MATH_ALLOW_TF32) !=
            FB_STATUS_SUCCESS)
            tap_bail("fb_set_math_mode(TF32) failed");
        t.arith_f32 = ARITH_TF32;
        t.f32_only = 1;
    }
    return t;
}

static fb_activation random_act(void)
{
    return all_acts[rng_below(N_ACTS)];
}

/* GEMMs larger than one wave of the GPU, sizes not multiples of 8 or 16. */
static void gemm_large(const target *t, int nt, const target *cpu)
{
    static const int64_t shapes[][3] = {
        {2000, 1500, 300}, {1023, 1025, 129}, {4099, 257, 33},
        {257, 4099, 65},   {1, 4096, 1024},  {4096, 3, 777}};
    const float alphas[2] = {1.0f, 0.7f}, betas[3] = {0.0f, 1.0f, 1.3f};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int di = 0; di < 3; di++) {
            gemm_case c = {0};
            c.dtype = all_dtypes[di];
            c.layout = rng_below(2) ? FB_ROW_MAJOR : FB_COL_MAJOR;
            c.transa = rng_below(2) ? FB_NO_TRANS : FB_TRANS;
            c.transb = rng_below(2) ? FB_NO_TRANS : FB_TRANS;
            c.m = shapes[s][0], c.n = shapes[s][1], c.k = shapes[s][2];
            c.alpha = alphas[rng_below(2)];
            c.beta = betas[rng_below(3)];
            c.has_bias = (int)rng_below(2);
            c.act = random_act();
            gemm_case_set_lds(&c, rng_below(2) * 3, rng_below(2) * 5,
                              rng_below(2) * 7);
            c.offset = rng_below(2);
            gemm_data d;
            gemm_data_make(&d, &c);
            gemm_check(&d, t, nt, cpu);
            gemm_data_free(&d);
        }
}

/* c checked on one target against the oracle and the CPU; the path that
 * target ran. */
static const char *gemm_check_one(const gemm_case *c, const target *t,
                                  const target *cpu)
{
    gemm_data d;
    gemm_data_make(&d, c);
    gemm_check(&d, t, 1, cpu);
    gemm_data_free(&d);
    return fb_handle_last_path(t->handle);
}

/* The GEMM engine (compute 9.0) with every layout and transpose: an
 * operand its tensor maps cannot read in place (MN-major, or a leading
 * dimension that is not a multiple of 8) is packed first, and the path
 * says so ("+pack"). Checked on cuda-fused against the oracle and the CPU;
 * elsewhere (no engine) cuda-fused may decline. */
static void gemm_engine_layouts(const target *fused, const target *cpu,
                                int hopper)
{
    /* v: dtype, layout, transa, transb (16), each with aligned operands
     * (k and every leading dimension multiples of 8, no offset) and with
     * ragged ones */
    for (int v = 0; v < 32; v++) {
        const int ragged = v >= 16;
        gemm_case c = {0};
        c.dtype = v % 2 ? FB_DTYPE_F16 : FB_DTYPE_BF16;
        c.layout = v / 2 % 2 ? FB_COL_MAJOR : FB_ROW_MAJOR;
        c.transa = v / 4 % 2 ? FB_TRANS : FB_NO_TRANS;
        c.transb = v / 8 % 2 ? FB_TRANS : FB_NO_TRANS;
        c.m = 300 + v, c.n = 260 + 3 * v, c.k = 200 + 8 * (v % 16);
        c.alpha = 0.8f;
        c.beta = v % 3 ? 0.0f : 0.5f;
        c.has_bias = 1;
        c.act = all_acts[v % N_ACTS];
        if (ragged) {
            c.k += 1 + v % 5;
            gemm_case_set_lds(&c, v % 3, v % 4, v % 2);
            c.offset = v % 2;
        } else {
            gemm_case_set_lds(&c, 0, 0, v % 2);
        }
        const char *path = gemm_check_one(&c, fused, cpu);
        if (!hopper)
            continue;
        /* nn.Linear's layout (row-major NoTrans x Trans, or its
         * column-major mirror) with aligned operands runs in place */
        const int row = c.layout == FB_ROW_MAJOR;
        const int ta = c.transa == FB_TRANS, tb = c.transb == FB_TRANS;
        const int linear = row ? !ta && tb : ta && !tb;
        const int packed = strstr(path, "+pack") != NULL;
        tap_ok(strncmp(path, "cuda-fused/gemm_sm90", 20) == 0 &&
                   packed == !(linear && !ragged),
               "engine layouts: %s %s %c%c %lld x %lld x %lld%s ran %s",
               dt_name(c.dtype), row ? "row-major" : "col-major",
               ta ? 'T' : 'N', tb ? 'T' : 'N', (long long)c.m,
               (long long)c.n, (long long)c.k, ragged ? " ragged" : "",
               path);
    }
}

/* Case s of a list of nn.Linear shapes (tokens, outputs, k): row-major
 * X W^T, bf16 and fp16 in turn. */
static gemm_case linear_case(size_t s, const int64_t shape[3])
{
    gemm_case c = {0};
    c.dtype = s % 2 ? FB_DTYPE_F16 : FB_DTYPE_BF16;
    c.layout = FB_ROW_MAJOR;
    c.transa = FB_NO_TRANS, c.transb = FB_TRANS;
    c.m = shape[0], c.n = shape[1], c.k = shape[2];
    return c;
}

/* The decode gemm's column phases (fused_decode_tma.cuh, tma_phases):
 * nn.Linear's layout with few tokens and outputs that give each CTA 1 to
 * 10 tiles of 16 rows, so that 8, 4, 2 and 1 warps share a tile; k not a
 * multiple of the stage's columns (above 256: the tiny gemm's), and X
 * past one chunk at 16 tokens. Checked on cuda-fused against the oracle and the CPU; on Hopper it must
 * have run the decode gemm on the TMA engine. */
static void gemm_decode_phases(const target *fused, const target *cpu,
                               int hopper)
{
    /* tokens, outputs (n), k */
    static const int64_t shapes[][3] = {
        {3, 1600, 1000}, {16, 4096, 1032}, {5, 6000, 520},
        {32, 9000, 264}, {1, 2000, 4104}, {16, 1040, 5000},
        {9, 20000, 296}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        gemm_case c = linear_case(s, shapes[s]);
        c.alpha = s % 3 ? 1.0f : 0.6f;
        c.beta = s % 2 ? 0.0f : 1.3f;
        c.has_bias = 1;
        c.act = all_acts[s % N_ACTS];
        gemm_case_set_lds(&c, 0, 0, 0);
        const char *path = gemm_check_one(&c, fused, cpu);
        if (!hopper)
            continue;
        tap_ok(strncmp(path, "cuda-fused/gemm_decode_", 23) == 0 &&
                   strstr(path, "+tma") != NULL,
               "decode gemm phases: %s %lld tokens x %lld -> %lld ran %s",
               dt_name(c.dtype), (long long)c.m, (long long)c.k,
               (long long)c.n, path);
    }
}

/* The decode gemm with outputs wider than k and 64 MiB of weights or
 * more: the engine follows the device's DRAM peak (the register engine on
 * an H200, the TMA engine on an H100), so only the family is asserted.
 * Checked on cuda-fused against the oracle and the CPU. */
static void gemm_decode_wide(const target *fused, const target *cpu,
                             int hopper)
{
    /* tokens, outputs (n), k */
    static const int64_t shapes[][3] = {{1, 11008, 4096}, {3, 8200, 4104}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        gemm_case c = linear_case(s, shapes[s]);
        c.alpha = s ? 0.6f : 1.0f;
        c.beta = s ? 0.0f : 1.3f;
        c.has_bias = 1;
        c.act = s ? FB_ACT_SILU : FB_ACT_GELU_TANH;
        gemm_case_set_lds(&c, 0, 0, 0);
        const char *path = gemm_check_one(&c, fused, cpu);
        if (!hopper)
            continue;
        tap_ok(strncmp(path, "cuda-fused/gemm_decode_", 23) == 0,
               "decode gemm, large wide weights: %s %lld tokens x %lld -> "
               "%lld ran %s",
               dt_name(c.dtype), (long long)c.m, (long long)c.k,
               (long long)c.n, path);
    }
}

/* Decode weights streamed in stripes of k (the MLP's down projection in
 * phase 2, the decode gemm's k stripes "+ks"): a box that runs past its
 * stripe's end holds the next stripe's weights, which the kernel must
 * skip, not multiply by X's zero padding (an Inf there would make NaN of
 * a result that is +-Inf). Row r of the weights holds +-Inf at column
 * 64 r + 40 (mod k): one in every 64-column block of k, so near every
 * possible stripe end. Checked against the oracle and the CPU. */
static void put_infinities(fb_dtype dt, void *w, int64_t rows, int64_t k)
{
    const uint32_t pinf = dt == FB_DTYPE_BF16 ? 0x7f80u : 0x7c00u;
    const uint32_t ninf = dt == FB_DTYPE_BF16 ? 0xff80u : 0xfc00u;
    for (int64_t r = 0; r < rows && r < k / 64; r++)
        dt_set_bits(dt, w, r * k + (64 * r + 40) % k, r % 2 ? ninf : pinf);
}

static void decode_stripe_infinities(const target *fused, const target *cpu,
                                     int hopper)
{
    for (int m = 1; m <= 16; m += 15) {
        mlp_case c = {0};
        c.dtype = m == 1 ? FB_DTYPE_F16 : FB_DTYPE_BF16;
        c.act = FB_ACT_GELU_TANH;
        c.m = m, c.k = 4096, c.h = 11008, c.n = 4096;
        c.ldx = c.k, c.ldy = c.n;
        c.biases = MLP_ALL_BIASES;
        mlp_data d;
        mlp_data_make(&d, &c);
        put_infinities(c.dtype, tbuf_data(&d.Wd), c.n, c.h);
        mlp_check(&d, fused, 1, cpu);
        mlp_data_free(&d);
    }
    /* nn.Linear (row-major X W^T), W: n x k; outputs that leave SMs
     * idle at one CTA a range of 16 rows, so that the rule takes k
     * stripes (2, 2, 4 on 132 SMs) */
    static const int64_t shapes[][3] = {
        {16, 1600, 4096}, {12, 2000, 6144}, {3, 512, 8192}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        gemm_case c = linear_case(s, shapes[s]);
        c.alpha = 1.0f;
        c.has_bias = 1;
        c.act = FB_ACT_RELU;
        gemm_case_set_lds(&c, 0, 0, 0);
        gemm_data d;
        gemm_data_make(&d, &c);
        put_infinities(c.dtype, tbuf_data(&d.B), c.n, c.k);
        gemm_check(&d, fused, 1, cpu);
        gemm_data_free(&d);
        const char *path = fb_handle_last_path(fused->handle);
        if (hopper)
            tap_ok(strstr(path, "gemm_decode") != NULL &&
                       strstr(path, "+ks") != NULL,
                   "stripe infinities: %s %lld tokens x %lld -> %lld ran "
                   "the decode gemm in k stripes (%s)",
                   dt_name(c.dtype), (long long)c.m, (long long)c.k,
                   (long long)c.n, path);
    }
}

/* Each (m, k, h, n) of a list in every dtype, a random gate activation
 * and bias pattern (and mlp_run_case's random padding). */
static void mlp_shape_list(const int64_t (*shapes)[4], size_t count,
                           const target *t, int nt, const target *cpu)
{
    for (size_t s = 0; s < count; s++)
        for (int di = 0; di < 3; di++) {
            mlp_case c = {0};
            c.dtype = all_dtypes[di];
            c.act = random_act();
            c.m = shapes[s][0], c.k = shapes[s][1], c.h = shapes[s][2];
            c.n = shapes[s][3];
            c.biases = (unsigned)rng_below(8);
            mlp_run_case(&c, t, nt, cpu);
        }
}

/* Decode (m = 1..32 tokens at transformer widths) and tiny MLPs (narrow
 * widths, many rows). */
static void mlp_shapes(const target *t, int nt, const target *cpu)
{
    static const int64_t decode[][3] = {
        {768, 3072, 768}, {1000, 2731, 1000}, {2048, 5632, 2048}};
    static const int64_t ms[] = {1, 2, 3, 8, 16, 31, 32};
    int idx = 0;
    for (int s = 0; s < 3; s++)
        for (size_t mi = 0; mi < sizeof ms / sizeof ms[0]; mi++, idx++) {
            if (s == 2 && ms[mi] != 1 && ms[mi] != 8 && ms[mi] != 32)
                continue; /* the widest: a few m, for time */
            mlp_case c = {0};
            c.dtype = all_dtypes[idx % 3];
            c.act = idx % 2 ? FB_ACT_SILU : FB_ACT_GELU_TANH;
            c.m = ms[mi];
            c.k = decode[s][0], c.h = decode[s][1], c.n = decode[s][2];
            c.biases = (unsigned)(idx % 8);
            mlp_run_case(&c, t, nt, cpu);
        }
    static const int64_t prefill[][4] = {
        /* m, k, h, n: more than 32 rows at decode-like widths (the
         * prefill kernels for 16-bit on Hopper), ragged tiles */
        {33, 768, 3072, 768}, {1000, 512, 1376, 256}, {2049, 136, 1000, 264},
        {300, 1032, 520, 1000}};
    mlp_shape_list(prefill, sizeof prefill / sizeof prefill[0], t, nt, cpu);
    /* The same shapes with the layouts the prefill kernels take (rows of X
     * and the weights on 16-byte boundaries; Y any), the gate activations
     * in turn (each one at least once): mlp_run_case's random padding and
     * offset make most 16-bit cases above fall back or decline. The
     * diagnostic names the path cuda-fused ran. (Every activation for
     * every case took the GPU machine's make check past its 4 minutes:
     * the oracle runs in double on one core.) */
    idx = 0;
    for (size_t s = 0; s < sizeof prefill / sizeof prefill[0]; s++)
        for (int di = 1; di < 3; di++, idx++) {
            mlp_case c = {0};
            c.dtype = all_dtypes[di];
            c.act = all_acts[idx % N_ACTS];
            c.m = prefill[s][0], c.k = prefill[s][1];
            c.h = prefill[s][2], c.n = prefill[s][3];
            c.biases = (unsigned)(idx % 8);
            c.ldx = c.k + 8 * (idx / 2 % 2);
            c.ldy = c.n + idx % 3;
            mlp_data d;
            mlp_data_make(&d, &c);
            mlp_check(&d, t, nt, cpu);
            tap_diag("cuda-fused ran %s", fb_handle_last_path(t[1].handle));
            mlp_data_free(&d);
        }
    static const int64_t tiny[][4] = {
        /* m, k, h, n */
        {100003, 16, 48, 16}, {65536, 64, 256, 64}, {20001, 100, 200, 50},
        {4097, 256, 256, 256}, {1000, 17, 129, 33}};
    mlp_shape_list(tiny, sizeof tiny / sizeof tiny[0], t, nt, cpu);
}

/* Device memory given to the CPU backend: invalid argument naming the
 * first operand in device memory; nothing written. */
static void device_pointers_to_cpu(const target *cpu)
{
    for (int di = 0; di < 3; di++) {
        const fb_dtype dt = all_dtypes[di];
        tcheck chk;
        tcheck_init(&chk);
        gemm_case c = {0};
        c.dtype = dt;
        c.layout = FB_ROW_MAJOR;
        c.transa = FB_NO_TRANS, c.transb = FB_TRANS;
        c.m = 5, c.n = 6, c.k = 7;
        c.alpha = 1.0f, c.beta = 1.3f;
        c.has_bias = 1;
        c.act = FB_ACT_RELU;
        gemm_case_set_lds(&c, 1, 1, 1);
        gemm_data d;
        gemm_data_make(&d, &c);
        const tbuf *bufs[4] = {&d.A, &d.B, &d.C, &d.bias};
        static const int pos[4] = {9, 11, 14, 16};
        for (int on_dev = 0; on_dev < 4; on_dev++) {
            void *alloc[4], *p[4];
            for (int i = 0; i < 4; i++)
                alloc[i] = tbuf_place(bufs[i], i == on_dev ? &tmem_cuda
                                                           : &tmem_host,
                                      &p[i]);
            const fb_status st = gemm_call(
                cpu->handle, dt, c.layout, c.transa, c.transb, c.m, c.n, c.k,
                c.alpha, p[0], c.lda, p[1], c.ldb, c.beta, p[2], c.ldc, p[3],
                c.act);
            if (st != FB_STATUS_INVALID_ARGUMENT ||
                fb_handle_last_arg(cpu->handle) != pos[on_dev])
                tcheck_fail(&chk, "%s on the device: status %s, argument %d",
                            on_dev == 0 ? "A" : on_dev == 1 ? "B"
                            : on_dev == 2 ? "C" : "bias",
                            fb_status_string(st),
                            fb_handle_last_arg(cpu->handle));
            tbuf after;
            tbuf_fetch(&d.C, on_dev == 2 ? &tmem_cuda : &tmem_host, alloc[2],
                       &after);
            check_untouched(&chk, "C", &d.C, &after, NULL);
            tbuf_free(&after);
            for (int i = 0; i < 4; i++)
                (i == on_dev ? &tmem_cuda : &tmem_host)->release(alloc[i]);
        }
        gemm_data_free(&d);
        tap_check(&chk, "cpu backend: %cgemm_bias_act with one operand in "
                  "device memory -> invalid argument at that operand",
                  dt_prefix(dt));

        /* mlp: X on the device -> 8, Y on the device -> 16. */
        tcheck_init(&chk);
        mlp_case mc = {0};
        mc.dtype = dt;
        mc.act = FB_ACT_GELU_TANH;
        mc.m = 3, mc.k = 5, mc.h = 7, mc.n = 4;
        mc.ldx = 5, mc.ldy = 4;
        mc.biases = MLP_ALL_BIASES;
        mlp_data md;
        mlp_data_make(&md, &mc);
        for (int y_on_dev = 0; y_on_dev < 2; y_on_dev++) {
            void *px, *pwg, *pwu, *pwd, *py;
            void *ax = tbuf_place(&md.X, y_on_dev ? &tmem_host : &tmem_cuda, &px);
            void *awg = tbuf_place(&md.Wg, &tmem_host, &pwg);
            void *awu = tbuf_place(&md.Wu, &tmem_host, &pwu);
            void *awd = tbuf_place(&md.Wd, &tmem_host, &pwd);
            const tmem *ymem = y_on_dev ? &tmem_cuda : &tmem_host;
            void *ay = tbuf_place(&md.Y, ymem, &py);
            const fb_status st = mlp_geglu_forward(
                cpu->handle, dt, mc.act, mc.m, mc.k, mc.h, mc.n, px, mc.ldx,
                pwg, NULL, pwu, NULL, pwd, NULL, py, mc.ldy);
            const int want = y_on_dev ? 16 : 8;
            if (st != FB_STATUS_INVALID_ARGUMENT ||
                fb_handle_last_arg(cpu->handle) != want)
                tcheck_fail(&chk, "%s on the device: status %s, argument %d",
                            y_on_dev ? "Y" : "X", fb_status_string(st),
                            fb_handle_last_arg(cpu->handle));
            tbuf after;
            tbuf_fetch(&md.Y, ymem, ay, &after);
            check_untouched(&chk, "Y", &md.Y, &after, NULL);
            tbuf_free(&after);
            (y_on_dev ? &tmem_host : &tmem_cuda)->release(ax);
            tmem_host.release(awg);
            tmem_host.release(awu);
            tmem_host.release(awd);
            ymem->release(ay);
        }
        mlp_data_free(&md);
        tap_check(&chk, "cpu backend: mlp_geglu_forward %s with X or Y in "
                  "device memory -> invalid argument at that operand",
                  dt_name(dt));
    }
}

int main(void)
{
    tap_begin("test_gpu");
    const fb_status avail = fb_backend_available(FB_BACKEND_CUDA_LT);
    if (avail != FB_STATUS_SUCCESS || cuda_device_count() == 0)
        tap_skip_all("no CUDA device");
    char name[256];
    int sms;
    cuda_device_describe(name, sizeof name, &sms);
    tap_diag("device: %s, %d SMs%s", name, sms,
             quick() ? " (FB_TEST_QUICK: reduced sweep)" : "");

    target cpu = target_cpu();
    target t[7];
    int nt = 0;
    t[nt++] = gpu_target("cuda-lt", FB_BACKEND_CUDA_LT, &tmem_cuda, 0);
    t[nt++] = gpu_target("cuda-fused", FB_BACKEND_CUDA_FUSED, &tmem_cuda, 0);
    t[nt++] = gpu_target("cuda", FB_BACKEND_CUDA, &tmem_cuda, 0);
    t[nt++] = gpu_target("cuda-lt/tf32", FB_BACKEND_CUDA_LT, &tmem_cuda, 1);
    t[nt++] = gpu_target("cuda-fused/tf32", FB_BACKEND_CUDA_FUSED, &tmem_cuda, 1);
    t[nt++] = gpu_target("cuda-lt/host-memory", FB_BACKEND_CUDA_LT,
                         &tmem_host, 0);
    t[nt++] = gpu_target("cuda-fused/host-memory", FB_BACKEND_CUDA_FUSED,
                         &tmem_host, 0);

    gemm_engine_layouts(&t[1], &cpu, cuda_device_cc() == 90);
    gemm_decode_phases(&t[1], &cpu, cuda_device_cc() == 90);
    gemm_decode_wide(&t[1], &cpu, cuda_device_cc() == 90);
    decode_stripe_infinities(&t[1], &cpu, cuda_device_cc() == 90);
    gemm_sweep_conformance(t, nt, &cpu);
    gemm_sweep_activations(t, nt, &cpu);
    special_sweep(t, nt, &cpu);
    mlp_sweep_conformance(t, nt, &cpu);
    if (!quick()) {
        /* The large shapes on the device-memory paths only. */
        gemm_large(t, 5, &cpu);
        mlp_shapes(t, 5, &cpu);
    }

    long tried = 0;
    for (int i = 0; i < 3; i++) {
        if (!quick()) {
            tried += badargs_gemm(&t[i]);
            tried += badargs_mlp(&t[i]);
        }
        tried += edge_cases(&t[i]);
    }
    device_pointers_to_cpu(&cpu);
    tap_diag("tried %ld bad-argument and edge cases on the GPU paths", tried);

    for (int i = 0; i < nt; i++)
        fb_destroy(t[i].handle);
    fb_destroy(cpu.handle);
    return tap_end();
}
