/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tensor_parallel.h -- what a handle keeps of its NCCL communicator
 * (tensor_parallel.c: fb_set_nccl_comm, mlp_geglu_forward_tp,
 * gemm_bias_act_tp).
 */
#ifndef FB_TENSOR_PARALLEL_H
#define FB_TENSOR_PARALLEL_H

struct fb_tp_state;

/* Frees what fb_set_nccl_comm attached (not the communicator, which is
 * the caller's); NULL is a no-op. */
void fb_tp_state_free(struct fb_tp_state *s);

#endif /* FB_TENSOR_PARALLEL_H */
