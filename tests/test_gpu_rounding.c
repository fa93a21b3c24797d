/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_gpu_rounding.c -- "rounded once", bit for bit, on every backend:
 * the exact-result family of exact_gemm.h on cpu (host memory), cuda-lt,
 * cuda-fused (where it takes the call; NOT_SUPPORTED is a skip), cuda and
 * auto (device memory). Each point's label ends with the path that ran;
 * the table at the end counts failures per backend, dtype, layout and
 * transpose pair.
 *
 * Prints "1..0 # SKIP no CUDA device" where there is none.
 */
#include <time.h>
#include "cuda_mem.h"
#include "exact_gemm.h"

static target device_target(const char *name, fb_backend b)
{
    target t = {name, handle_on(b), b, &tmem_cuda, ARITH_FP32, ARITH_TENSOR,
                b == FB_BACKEND_CUDA_FUSED, 0};
    return t;
}

int main(void)
{
    tap_begin("test_gpu_rounding");
    const fb_status avail = fb_backend_available(FB_BACKEND_CUDA_LT);
    if (avail != FB_STATUS_SUCCESS || cuda_device_count() == 0)
        tap_skip_all("no CUDA device");
    char name[256];
    int sms;
    cuda_device_describe(name, sizeof name, &sms);
    tap_diag("device: %s, %d SMs", name, sms);
    const time_t start = time(NULL);

    exact_checker_can_fail();
    target t[5];
    t[0] = target_cpu();
    t[1] = device_target("cuda-lt", FB_BACKEND_CUDA_LT);
    t[2] = device_target("cuda-fused", FB_BACKEND_CUDA_FUSED);
    t[3] = device_target("cuda", FB_BACKEND_CUDA);
    t[4] = device_target("auto", FB_BACKEND_AUTO);
    exact_sweep(t, 5, 8, (int64_t)1 << 26);
    tap_diag("ran for %.0f s", difftime(time(NULL), start));
    for (int i = 0; i < 5; i++)
        fb_destroy(t[i].handle);
    return tap_end();
}
