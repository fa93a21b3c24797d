/*
 * bench_roofline.c -- the roofline time of a case: what it would take if it
 * ran at the measured GEMM rate or the measured bandwidth, whichever binds.
 * On the CPU the GEMM rate is the best of OpenBLAS and oneDNN; fp16 has no
 * GEMM of its own there and is held to the fp32 rate, bf16 to the better of
 * the bf16 and fp32 rates.
 */
#include "bench_ceilings.h"
#include "bench_workloads.h"

double bench_roofline_s(const bench_ceilings *cl, const bench_case *c, int gpu,
                        int tf32)
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
        double f32 = cl->cpu_sgemm_gflops > cl->cpu_dnnl_f32_gflops
                         ? cl->cpu_sgemm_gflops
                         : cl->cpu_dnnl_f32_gflops;
        double bf16 = cl->cpu_sbgemm_gflops > cl->cpu_dnnl_bf16_gflops
                          ? cl->cpu_sbgemm_gflops
                          : cl->cpu_dnnl_bf16_gflops;
        flops = c->dtype == FB_DTYPE_BF16 && bf16 > f32 ? bf16 : f32;
        flops *= 1e9;
    }
    if (flops <= 0 || bw <= 0)
        return 0;
    double t_flop = bench_case_flops(c) / flops;
    double t_byte = bench_case_bytes(c) / (bw * 1e9);
    return t_flop > t_byte ? t_flop : t_byte;
}
