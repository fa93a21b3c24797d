/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * geglu_mlp.c -- the feed-forward block of a GeGLU transformer, run on the
 * CPU and, where this machine has one, on the GPU.
 *
 *   H = gelu_tanh(X Wg^T) .* (X Wu^T)      X: tokens x 768, H: tokens x 3072
 *   Y = H Wd^T                             Y: tokens x 768
 *
 * The widths are GPT-2's (768 -> 3072 -> 768); the weights are in
 * torch.nn.Linear's own layout, [out][in], so real weights would be used as
 * they are. Prints a few outputs, the time per call on each backend, and the
 * largest difference between the CPU and GPU results.
 *
 *   usage:  geglu_mlp [tokens]          (default 256)
 *   build:  cc geglu_mlp.c $(pkg-config --cflags --libs fusedblas)
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <fusedblas.h>

enum { K = 768, H = 3072, N = 768 }; /* model width, hidden width, output */

/* Uniform values in [-scale, scale) from a fixed-seed xorshift generator,
 * so that every run on every machine computes the same thing. */
static void fill(float *v, size_t len, float scale, uint32_t *state)
{
    for (size_t i = 0; i < len; i++) {
        *state ^= *state << 13;
        *state ^= *state >> 17;
        *state ^= *state << 5;
        v[i] = scale * ((float)(*state >> 8) / 8388608.0f - 1.0f);
    }
}

static double absd(double v)
{
    return v < 0 ? -v : v;
}

static double seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* One untimed call first (the first GPU call also loads the CUDA module,
 * creates a context and plans the GEMMs), then the mean of reps calls.
 * Returns seconds per call, or a negative number if a call failed. */
static double time_mlp(fb_handle h, int reps, int64_t m, const float *x,
                       const float *wg, const float *wu, const float *wd,
                       float *y)
{
    double t0 = 0.0;
    for (int r = -1; r < reps; r++) {
        if (r == 0)
            t0 = seconds();
        /* No biases here (as in T5 and LLaMA); pass vectors to have them. */
        fb_status st = mlp_geglu_forward(h, FB_DTYPE_F32, FB_ACT_GELU_TANH,
                                         m, K, H, N, x, K, wg, NULL, wu,
                                         NULL, wd, NULL, y, N);
        if (st != FB_STATUS_SUCCESS) {
            fprintf(stderr, "mlp_geglu_forward: %s: %s\n",
                    fb_status_string(st), fb_handle_last_message(h));
            return -1.0;
        }
    }
    return (seconds() - t0) / reps;
}

static void report(const char *name, fb_handle h, double t, double flops)
{
    printf("%-4s %9.3f ms per call, %7.1f GFLOP/s   (%s)\n", name, 1e3 * t,
           flops / t * 1e-9, fb_handle_last_path(h));
}

int main(int argc, char **argv)
{
    const int64_t m = argc > 1 ? atol(argv[1]) : 256;
    if (m < 1) {
        fprintf(stderr, "usage: %s [tokens >= 1]\n", argv[0]);
        return EXIT_FAILURE;
    }
    const double flops = 2.0 * (double)m * K * H * 2 + 2.0 * (double)m * H * N;

    float *x = malloc(sizeof(float) * (size_t)m * K);
    float *wg = malloc(sizeof(float) * H * K);
    float *wu = malloc(sizeof(float) * H * K);
    float *wd = malloc(sizeof(float) * N * H);
    float *y_cpu = malloc(sizeof(float) * (size_t)m * N);
    float *y_gpu = malloc(sizeof(float) * (size_t)m * N);
    if (!x || !wg || !wu || !wd || !y_cpu || !y_gpu) {
        fprintf(stderr, "out of memory\n");
        return EXIT_FAILURE;
    }
    /* Weights scaled by about 1/sqrt(fan-in), as nn.Linear initialises. */
    uint32_t seed = 20240611u;
    fill(x, (size_t)m * K, 1.0f, &seed);
    fill(wg, (size_t)H * K, 0.036f, &seed);
    fill(wu, (size_t)H * K, 0.036f, &seed);
    fill(wd, (size_t)N * H, 0.018f, &seed);

    printf("GeGLU MLP, %lld tokens, %d -> %d -> %d, fp32 (fusedblas %s)\n",
           (long long)m, K, H, N, fb_version());

    /* CPU: a handle of our own, told to use the CPU backend. */
    fb_handle cpu;
    if (fb_create(&cpu) != FB_STATUS_SUCCESS ||
        fb_set_backend(cpu, FB_BACKEND_CPU) != FB_STATUS_SUCCESS) {
        fprintf(stderr, "cannot make a CPU handle\n");
        return EXIT_FAILURE;
    }
    const double t_cpu = time_mlp(cpu, 3, m, x, wg, wu, wd, y_cpu);
    if (t_cpu < 0)
        return EXIT_FAILURE;
    printf("Y[0][0..3] = %.6f %.6f %.6f %.6f\n", y_cpu[0], y_cpu[1],
           y_cpu[2], y_cpu[3]);
    report("cpu", cpu, t_cpu, flops);

    /* GPU, if there is one. These are host arrays, so the CUDA backend
     * copies them to the device and the result back on every call
     * (synchronously): the time includes those copies. A real program
     * keeps the weights in device memory (cudaMalloc) and passes those
     * pointers; fusedblas then runs on the GPU without copying. */
    int status = EXIT_SUCCESS;
    fb_status avail = fb_backend_available(FB_BACKEND_CUDA);
    if (avail != FB_STATUS_SUCCESS) {
        printf("gpu  not used: %s\n", fb_status_string(avail));
    } else {
        fb_handle gpu;
        if (fb_create(&gpu) != FB_STATUS_SUCCESS ||
            fb_set_backend(gpu, FB_BACKEND_CUDA) != FB_STATUS_SUCCESS) {
            fprintf(stderr, "cannot make a GPU handle\n");
            return EXIT_FAILURE;
        }
        const double t_gpu = time_mlp(gpu, 10, m, x, wg, wu, wd, y_gpu);
        if (t_gpu < 0) {
            status = EXIT_FAILURE;
        } else {
            report("gpu", gpu, t_gpu, flops);
            double diff = 0.0, big = 0.0;
            for (int64_t i = 0; i < m * N; i++) {
                const double d = absd((double)y_gpu[i] - y_cpu[i]);
                diff = d > diff ? d : diff;
                big = absd(y_cpu[i]) > big ? absd(y_cpu[i]) : big;
            }
            /* Both compute in fp32 (no TF32 unless the handle allows it),
             * only in a different order: expect about 1e-6 of max |Y|. */
            printf("largest |gpu - cpu| = %.3g (max |Y| = %.3g), "
                   "gpu %.1fx the speed of cpu\n",
                   diff, big, t_cpu / t_gpu);
            if (!(diff <= 1e-3 * big))
                status = EXIT_FAILURE;
        }
        fb_destroy(gpu);
    }

    fb_destroy(cpu);
    free(x), free(wg), free(wu), free(wd), free(y_cpu), free(y_gpu);
    return status;
}
