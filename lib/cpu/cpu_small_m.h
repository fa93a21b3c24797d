/*
 * cpu_small_m.h -- out (m x n) = x (m x k) w^T (w is n x k), m <= 32: the
 * decode shape, where OpenBLAS's packing does not pay and the weights
 * should stream through once at memory speed.
 */
#ifndef FB_CPU_SMALL_M_H
#define FB_CPU_SMALL_M_H

#include <stdint.h>

/* The most rows of x the kernel takes. */
#define FB_SMALL_M_MAX 32

/* Non-zero if this CPU runs the kernel (AVX-512F); otherwise callers use
 * OpenBLAS. */
int fb_cpu_small_m_available(void);

/* out[i*ldo + j] = (accumulate ? out[i*ldo + j] : 0)
 *                  + sum_p x[i*ldx + p] w[j*ldw + p]
 * for i < m <= FB_SMALL_M_MAX, j < n. Single-threaded: callers split n. */
void fb_cpu_small_m_nt(int64_t m, int64_t n, int64_t k, const float *x,
                       int64_t ldx, const float *w, int64_t ldw, float *out,
                       int64_t ldo, int accumulate);

#endif /* FB_CPU_SMALL_M_H */
