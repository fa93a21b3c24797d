/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_roofline.c -- the roofline time of a case: what it would take if it
 * ran at its data type's compute ceiling or at the measured bandwidth,
 * whichever binds.
 *
 * On the CPU a type's compute ceiling is the best of what was measured for
 * that type: the GEMM rates (OpenBLAS, oneDNN) and the arithmetic peak. A
 * 16-bit type without arithmetic of its own on this CPU (bf16 without
 * AVX512-BF16, fp16 without AVX512-FP16) is converted and computed in fp32,
 * so fp32's ceiling is its own; with it, the 16-bit peak is the higher one
 * (VDPBF16PS: twice the fp32 FMA's work).
 */
#include "bench_ceilings.h"
#include "bench_workloads.h"

static double max2(double a, double b)
{
    return a > b ? a : b;
}

/* GFLOP/s: the CPU's compute ceiling for data type t. */
static double cpu_compute_ceiling(const bench_ceilings *cl, fb_dtype t)
{
    const double f32 = max2(max2(cl->cpu_sgemm_gflops, cl->cpu_dnnl_f32_gflops),
                            cl->cpu_f32_peak_gflops);
    switch (t) {
    case FB_DTYPE_BF16:
        return max2(f32, max2(max2(cl->cpu_sbgemm_gflops, cl->cpu_dnnl_bf16_gflops),
                              cl->cpu_bf16_peak_gflops));
    case FB_DTYPE_F16:
        return max2(f32, cl->cpu_f16_peak_gflops);
    case FB_DTYPE_F32:
        break;
    }
    return f32;
}

double bench_roofline_s(const bench_ceilings *cl, const bench_case *c, int gpu,
                        int tf32)
{
    return bench_roofline_bytes_s(cl, c, gpu, tf32, bench_case_bytes(c));
}

double bench_roofline_bytes_s(const bench_ceilings *cl, const bench_case *c,
                              int gpu, int tf32, double bytes)
{
    double flops = 0, bw = 0;
    if (gpu) {
        bw = cl->gpu_copy_gbs;
        switch (c->dtype) {
        case FB_DTYPE_F32: flops = tf32 ? cl->gpu_tf32_tflops : cl->gpu_f32_tflops; break;
        case FB_DTYPE_F16: flops = cl->gpu_f16_tflops; break;
        case FB_DTYPE_BF16: flops = cl->gpu_bf16_tflops; break;
        }
        flops *= 1e12;
    } else {
        bw = cl->cpu_read_gbs;
        flops = cpu_compute_ceiling(cl, c->dtype) * 1e9;
    }
    if (flops <= 0 || bw <= 0)
        return 0;
    double t_flop = bench_case_flops(c) / flops;
    double t_byte = bytes / (bw * 1e9);
    return t_flop > t_byte ? t_flop : t_byte;
}
