/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bad_args.h -- table-driven bad-argument tests, shared by test_badargs
 * (CPU, host memory) and test_gpu (each GPU path, device memory), so that
 * both see the same status and argument index for the same bad call.
 *
 * Each returns the number of calls it made (the cases tried) and emits
 * TAP points.
 */
#ifndef FB_TEST_BAD_ARGS_H
#define FB_TEST_BAD_ARGS_H

#include "harness.h"

/* Every argument of sgemm/hgemm/bgemm_bias_act given each class of bad
 * value in turn, under every layout and transpose pair, then in pairs
 * (the lower position must be reported): status
 * FB_STATUS_INVALID_ARGUMENT, the position from fb_handle_last_arg(), a
 * message, and C bit-for-bit unchanged. Then operands placed in one
 * allocation: C sharing bytes with A, B or the bias is argument 14 with
 * every byte unchanged (also beside other bad arguments: the lowest
 * position wins), while C next to them, A sharing bytes with B, and C on
 * top of operands the call does not read are computed right. */
long badargs_gemm(const target *t);
/* The same for mlp_geglu_forward (Y unchanged; Y sharing bytes with an
 * input is argument 16). */
long badargs_mlp(const target *t);
/* fb_create, fb_destroy and the handle setters and getters. Host only. */
long badargs_handle(void);
/* Legal edge cases next to the bad ones: m == 0 or n == 0 is a quick
 * success that writes nothing (also with NULL operands); k == 0 gives
 * C = act(beta C + bias) without reading A or B (NULL); the ld rule
 * lda >= max(1, rows) holds even for an empty matrix; mlp with m == 0. */
long edge_cases(const target *t);

/* Empty calls (m == 0 or n == 0) on a handle set to each CUDA backend:
 * where fb_backend_available() says that backend runs they succeed and
 * write nothing; where it does not, they are FB_STATUS_BACKEND_UNAVAILABLE
 * like every call on that handle. A bad argument is an invalid argument
 * either way (checks come first). Host only. */
long named_backend_empty_calls(void);

#endif /* FB_TEST_BAD_ARGS_H */
