/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * act_sweep.h -- see act_sweep.cu.
 */
#ifndef FB_TEST_ACT_SWEEP_H
#define FB_TEST_ACT_SWEEP_H

#ifdef __cplusplus
extern "C" {
#endif

/* fast[i] and accurate[i]: activation act (an fb_activation) of x[i], on
 * the current device, host arrays of n. 1 on success, 0 on a CUDA error. */
int fb_test_act_sweep(int act, const float *x, float *fast, float *accurate,
                      int n);

#ifdef __cplusplus
}
#endif

#endif /* FB_TEST_ACT_SWEEP_H */
