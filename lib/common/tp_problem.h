/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tp_problem.h -- a checked tensor-parallel call, as the CUDA module
 * receives it: the communicator and this rank's share of the layer.
 *
 * Megatron's layout: each of nranks ranks holds a slice of the reduced
 * dimension (the MLP's hidden width h, or a gemm's k), computes the fp32
 * partial of the output without bias, and the partials are summed by
 * ncclAllReduce (or, for the MLP's chunks, ncclReduceScatter, with the
 * rounded output all-gathered); the bias, activation and the one rounding
 * follow the sum. Plain C, shared with the module (lib/cuda).
 */
#ifndef FB_TP_PROBLEM_H
#define FB_TP_PROBLEM_H

#include <stdint.h>
#include "nccl_api.h"
#include "problem.h"

/* The handle's communicator, as fb_set_nccl_comm() attached it. */
typedef struct fb_tp_comm {
    const fb_nccl_api *nccl;
    void *comm;  /* ncclComm_t */
    int nranks;  /* ncclCommCount */
    int rank;    /* ncclCommUserRank */
    int device;  /* ncclCommCuDevice */
} fb_tp_comm;

/* mlp_geglu_forward_tp: mlp.h is this rank's h_local; Wg, Wu (h_local x k,
 * contiguous) and bg, bu (h_local) are its rows; Wd is its n x h_local
 * column slice of the down weights, rows ldwd elements apart (ldwd is the
 * whole layer's h when Wd is sliced in place). mlp.bd is added once, to
 * the sum. */
typedef struct fb_tp_mlp_problem {
    fb_mlp_problem mlp;
    int64_t ldwd;
} fb_tp_mlp_problem;

#endif /* FB_TP_PROBLEM_H */
