/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_gpu_fp8.c -- gemm_e4m3_bias_act and mlp_geglu_forward_e4m3 on the
 * GPU: the sweeps of fp8_check.h with device memory on cuda-fused, cuda
 * and auto, against the oracle of the dequantised weights (bit for bit on
 * the exact data, else the tensor-core bound for 16-bit data and the fp32
 * bound for fp32); the bad-argument positions are the CPU's (the checks
 * come first, test_fp8); host operands on a named GPU backend and the
 * cuda-lt backend are FB_STATUS_NOT_SUPPORTED.
 *
 * Prints "1..0 # SKIP no CUDA device" where there is none.
 */
#include <string.h>
#include "cuda_mem.h"
#include "fp8_check.h"

static fp8_target device_target(const char *name, fb_backend b)
{
    fp8_target t = {name, handle_on(b), &tmem_cuda, ARITH_FP32, ARITH_TENSOR,
                    1};
    return t;
}

/* Host operands on a GPU backend, and cuda-lt: refused, nothing run. */
static void not_supported(void)
{
    static float x[16], c[16], s[4];
    static fb_e4m3 w[16];
    fb_handle h = handle_on(FB_BACKEND_CUDA_FUSED);
    fb_status st = gemm_e4m3_bias_act(h, FB_DTYPE_F32, FB_ROW_MAJOR,
                                      FB_NO_TRANS, FB_TRANS, 4, 4, 4, 1.0f, x,
                                      4, w, 4, s, 0.0f, c, 4, NULL,
                                      FB_ACT_NONE);
    tap_ok(st == FB_STATUS_NOT_SUPPORTED,
           "cuda-fused: e4m3 gemm on host memory is not supported (%s: %s)",
           fb_status_string(st), fb_handle_last_message(h));
    fb_destroy(h);
    h = handle_on(FB_BACKEND_CUDA_LT);
    void *dx = tmem_cuda.alloc(64), *dw = tmem_cuda.alloc(16),
         *ds = tmem_cuda.alloc(16), *dc = tmem_cuda.alloc(64);
    st = gemm_e4m3_bias_act(h, FB_DTYPE_BF16, FB_ROW_MAJOR, FB_NO_TRANS,
                            FB_TRANS, 4, 4, 4, 1.0f, dx, 4, dw, 4, ds, 0.0f,
                            dc, 4, NULL, FB_ACT_NONE);
    tap_ok(st == FB_STATUS_NOT_SUPPORTED,
           "cuda-lt: no e4m3 path, not supported (%s)",
           fb_status_string(st));
    tmem_cuda.release(dx), tmem_cuda.release(dw), tmem_cuda.release(ds);
    tmem_cuda.release(dc);
    fb_destroy(h);
}

int main(void)
{
    tap_begin("test_gpu_fp8");
    if (fb_backend_available(FB_BACKEND_CUDA_FUSED) != FB_STATUS_SUCCESS ||
        cuda_device_count() == 0)
        tap_skip_all("no CUDA device");
    char name[256];
    int sms;
    cuda_device_describe(name, sizeof name, &sms);
    tap_diag("device: %s, %d SMs", name, sms);
    fp8_target t[3] = {device_target("cuda-fused", FB_BACKEND_CUDA_FUSED),
                       device_target("cuda", FB_BACKEND_CUDA),
                       device_target("auto", FB_BACKEND_AUTO)};
    for (int i = 0; i < 3; i++) {
        fp8_sweep_gemm(&t[i]);
        fp8_sweep_mlp(&t[i]);
    }
    /* Each GPU kernel family is what runs where the pages say. */
    static const struct {
        fb_dtype dt;
        fb_transpose tb;
        int64_t m, n, k, pad;
        const char *path;
    } paths[] = {
        {FB_DTYPE_BF16, FB_TRANS, 1, 40, 256, 0, "e4m3-decode-mma"},
        {FB_DTYPE_F16, FB_TRANS, 16, 24, 64, 0, "e4m3-decode-mma"},
        {FB_DTYPE_BF16, FB_TRANS, 4, 24, 40, 0, "e4m3-tiled-fp32"}, /* ldb 40 */
        {FB_DTYPE_F32, FB_TRANS, 2, 24, 64, 0, "e4m3-tiled-fp32"},
        {FB_DTYPE_BF16, FB_TRANS, 17, 72, 128, 0, "e4m3-lt-prefill"},
        {FB_DTYPE_F16, FB_NO_TRANS, 100, 72, 96, 0, "e4m3-lt-prefill"}};
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
        fp8_gemm_case(&t[0], paths[i].dt, FB_ROW_MAJOR, FB_NO_TRANS,
                      paths[i].tb, paths[i].m, paths[i].n, paths[i].k, 1.0f,
                      0.0f, 1, FB_ACT_GELU_TANH, 0, paths[i].pad);
        const char *ran = fb_handle_last_path(t[0].handle);
        tap_ok(strstr(ran, paths[i].path) != NULL,
               "cuda-fused: %s m=%lld n=%lld k=%lld ran %s (want %s)",
               dt_name(paths[i].dt), (long long)paths[i].m,
               (long long)paths[i].n, (long long)paths[i].k, ran,
               paths[i].path);
    }
    /* Decode at the goal's widths, one case each (the oracle is slow). */
    fp8_mlp_case(&t[0], FB_DTYPE_BF16, FB_ACT_SILU, 1, 4096, 11008, 4096, 0,
                 0, 0);
    fp8_gemm_case(&t[0], FB_DTYPE_BF16, FB_ROW_MAJOR, FB_NO_TRANS, FB_TRANS,
                  16, 11008, 4096, 1.0f, 0.0f, 1, FB_ACT_GELU_TANH, 0, 0);
    not_supported();
    for (int i = 0; i < 3; i++)
        fb_destroy(t[i].handle);
    return tap_end();
}
