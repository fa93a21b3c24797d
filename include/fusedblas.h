/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fusedblas.h -- fused dense-layer routines with BLAS conventions.
 *
 *   C <- act( alpha * op(A) * op(B) + beta * C + bias )      (x)gemm_bias_act
 *   Y  = ( act_g(X Wg^T + bg) .* (X Wu^T + bu) ) Wd^T + bd    mlp_geglu_forward
 *
 * One API, several backends picked at run time (CPU: OpenMP + OpenBLAS;
 * CUDA: cuBLASLt epilogue fusion, or hand-written fused kernels).
 * Every routine returns an fb_status and never aborts, exits or prints.
 * This header is plain C (C99 or later) and usable from C++.
 * The overview is fusedblas(3); each routine has its own page.
 */
#ifndef FUSEDBLAS_H
#define FUSEDBLAS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- version ---------------------------------------------------------- */

#define FUSEDBLAS_VERSION_MAJOR 0
#define FUSEDBLAS_VERSION_MINOR 1
#define FUSEDBLAS_VERSION_PATCH 0
#define FUSEDBLAS_VERSION_STRING "0.1.0"
/* MAJOR * 10000 + MINOR * 100 + PATCH, for #if comparisons. */
#define FUSEDBLAS_VERSION_NUMBER                                              \
    (FUSEDBLAS_VERSION_MAJOR * 10000 + FUSEDBLAS_VERSION_MINOR * 100 +        \
     FUSEDBLAS_VERSION_PATCH)

/* ---- export and attributes -------------------------------------------- */

#if defined(FUSEDBLAS_BUILDING) && defined(__GNUC__) && __GNUC__ >= 4
#define FB_EXPORT __attribute__((visibility("default")))
#else
#define FB_EXPORT
#endif

#if defined(__GNUC__) && __GNUC__ >= 4
#define FB_WARN_UNUSED __attribute__((warn_unused_result))
#else
#define FB_WARN_UNUSED
#endif

/* ---- enums ------------------------------------------------------------ */

typedef enum fb_status {
    FB_STATUS_SUCCESS = 0,
    FB_STATUS_INVALID_ARGUMENT = 1,   /* fb_handle_last_arg() says which */
    FB_STATUS_NOT_SUPPORTED = 2,      /* this combination, this backend */
    FB_STATUS_ALLOC_FAILED = 3,       /* host or device memory */
    FB_STATUS_BACKEND_UNAVAILABLE = 4,/* no CUDA module, driver or device */
    FB_STATUS_EXECUTION_FAILED = 5,   /* a CUDA or cuBLAS error; text kept */
    FB_STATUS_INTERNAL = 6
} fb_status;

/* CBLAS values, so CblasRowMajor etc. can be passed straight through. */
typedef enum fb_layout {
    FB_ROW_MAJOR = 101,
    FB_COL_MAJOR = 102
} fb_layout;

typedef enum fb_transpose {
    FB_NO_TRANS = 111,
    FB_TRANS = 112,
    FB_CONJ_TRANS = 113 /* the same as FB_TRANS for real data */
} fb_transpose;

typedef enum fb_activation {
    FB_ACT_NONE = 0,
    FB_ACT_RELU = 1,      /* max(x, 0); NaN stays NaN */
    FB_ACT_GELU_TANH = 2, /* 0.5x(1+tanh(sqrt(2/pi)(x+0.044715x^3))) */
    FB_ACT_GELU_ERF = 3,  /* 0.5x(1+erf(x/sqrt(2))) */
    FB_ACT_SILU = 4       /* x * sigmoid(x) */
} fb_activation;

typedef enum fb_dtype {
    FB_DTYPE_F32 = 0,
    FB_DTYPE_F16 = 1,  /* IEEE binary16, stored as fb_half */
    FB_DTYPE_BF16 = 2  /* bfloat16, stored as fb_bfloat16 */
} fb_dtype;

typedef enum fb_backend {
    FB_BACKEND_AUTO = 0,       /* device data to the GPU, host data to the CPU */
    FB_BACKEND_CPU = 1,
    FB_BACKEND_CUDA = 2,       /* a GPU path; the shape rule picks which */
    FB_BACKEND_CUDA_LT = 3,    /* cuBLASLt with epilogue fusion */
    FB_BACKEND_CUDA_FUSED = 4  /* fusedblas's own kernels */
} fb_backend;

typedef enum fb_math_mode {
    FB_MATH_DEFAULT = 0,   /* fp32 data: true fp32 arithmetic */
    FB_MATH_ALLOW_TF32 = 1 /* fp32 data may use TF32 tensor cores on the GPU */
} fb_math_mode;

/* ---- 16-bit storage types ----------------------------------------------
 * Plain structs so that any C compiler can hold, copy and pass them; the
 * bits are the IEEE binary16 / bfloat16 encodings, so arrays of these are
 * bit-compatible with __half, __nv_bfloat16, torch.float16 and
 * torch.bfloat16. Conversions round to nearest even and keep NaN a NaN. */
typedef struct fb_half { uint16_t bits; } fb_half;
typedef struct fb_bfloat16 { uint16_t bits; } fb_bfloat16;

FB_EXPORT fb_half fb_float_to_half(float x);
FB_EXPORT float fb_half_to_float(fb_half x);
FB_EXPORT fb_bfloat16 fb_float_to_bfloat16(float x);
FB_EXPORT float fb_bfloat16_to_float(fb_bfloat16 x);

/* ---- library ---------------------------------------------------------- */

FB_EXPORT const char *fb_status_string(fb_status status);
FB_EXPORT const char *fb_version(void);         /* FUSEDBLAS_VERSION_STRING */
FB_EXPORT const char *fb_backend_name(fb_backend backend); /* "cpu", ... */
/* FB_STATUS_SUCCESS if the backend can run here, else why not. */
FB_EXPORT fb_status fb_backend_available(fb_backend backend);

/* ---- handles -----------------------------------------------------------
 * A handle holds the backend choice, thread count, math mode, CUDA device
 * and stream, workspaces, the cuBLASLt plan cache and the last error.
 * Use one handle per thread; passing NULL anywhere a handle is taken means
 * the calling thread's default handle, made on first use. */
typedef struct fb_handle_s *fb_handle;

FB_EXPORT FB_WARN_UNUSED fb_status fb_create(fb_handle *handle);
FB_EXPORT fb_status fb_destroy(fb_handle handle);

FB_EXPORT fb_status fb_set_backend(fb_handle handle, fb_backend backend);
FB_EXPORT fb_status fb_get_backend(fb_handle handle, fb_backend *backend);
/* 0 means the OpenMP default (omp_get_max_threads()). */
FB_EXPORT fb_status fb_set_threads(fb_handle handle, int nthreads);
FB_EXPORT fb_status fb_set_math_mode(fb_handle handle, fb_math_mode mode);
/* Non-zero: log each backend choice and each error on stderr. */
FB_EXPORT fb_status fb_set_verbose(fb_handle handle, int verbose);
FB_EXPORT fb_status fb_set_cuda_device(fb_handle handle, int device);
/* A cudaStream_t, passed as void * so that this header needs no CUDA.
 * NULL is the legacy default stream. */
FB_EXPORT fb_status fb_set_cuda_stream(fb_handle handle, void *stream);
/* Run later calls on the implementation of this name (the start of the
 * path fb_handle_last_path reports, e.g. "cpu/f32-avx512",
 * "cuda-fused/mlp_decode", "cuda-lt"), within the backend the call goes
 * to; a call it does not apply to returns FB_STATUS_NOT_SUPPORTED. NULL:
 * the backend's own choice (the default). */
FB_EXPORT fb_status fb_set_implementation(fb_handle handle,
                                          const char *name);

/* What the last call on this handle did. */
FB_EXPORT fb_status fb_handle_last_status(fb_handle handle);
/* 1-based position of the offending argument after
 * FB_STATUS_INVALID_ARGUMENT (the handle itself is argument 1), else 0. */
FB_EXPORT int fb_handle_last_arg(fb_handle handle);
/* A sentence about the last error ("" after success); kept until the next
 * call on the handle. */
FB_EXPORT const char *fb_handle_last_message(fb_handle handle);
/* The backend that ran the last successful call (FB_BACKEND_AUTO if none). */
FB_EXPORT fb_backend fb_handle_last_backend(fb_handle handle);
/* The path that ran, in words, e.g. "cpu/openblas-openmp" or
 * "cuda-lt/epilogue=GELU_BIAS" ("" if none). */
FB_EXPORT const char *fb_handle_last_path(fb_handle handle);

/* ---- gemm + bias + activation ------------------------------------------
 *   C <- act( alpha * op(A) * op(B) + beta * C + bias )
 * C is m x n, op(A) m x k, op(B) k x n; bias (length n, may be NULL) is
 * added to every row of C, as nn.Linear does. beta == 0: C is not read.
 * Argument positions, for fb_handle_last_arg():
 *   1 handle  2 layout  3 transa  4 transb  5 m  6 n  7 k  8 alpha
 *   9 A  10 lda  11 B  12 ldb  13 beta  14 C  15 ldc  16 bias  17 act
 * fp16 and bf16 take fp32 alpha and beta and accumulate in fp32. */
FB_EXPORT FB_WARN_UNUSED fb_status sgemm_bias_act(
    fb_handle handle, fb_layout layout, fb_transpose transa,
    fb_transpose transb, int64_t m, int64_t n, int64_t k, float alpha,
    const float *A, int64_t lda, const float *B, int64_t ldb, float beta,
    float *C, int64_t ldc, const float *bias, fb_activation act);

FB_EXPORT FB_WARN_UNUSED fb_status hgemm_bias_act(
    fb_handle handle, fb_layout layout, fb_transpose transa,
    fb_transpose transb, int64_t m, int64_t n, int64_t k, float alpha,
    const fb_half *A, int64_t lda, const fb_half *B, int64_t ldb, float beta,
    fb_half *C, int64_t ldc, const fb_half *bias, fb_activation act);

FB_EXPORT FB_WARN_UNUSED fb_status bgemm_bias_act(
    fb_handle handle, fb_layout layout, fb_transpose transa,
    fb_transpose transb, int64_t m, int64_t n, int64_t k, float alpha,
    const fb_bfloat16 *A, int64_t lda, const fb_bfloat16 *B, int64_t ldb,
    float beta, fb_bfloat16 *C, int64_t ldc, const fb_bfloat16 *bias,
    fb_activation act);

/* ---- gated MLP ---------------------------------------------------------
 *   H = act_g( X Wg^T + bg ) .* ( X Wu^T + bu )
 *   Y = H Wd^T + bd
 * Row-major throughout, weights in nn.Linear's [out, in] layout:
 * X m x k (ldx >= k), Wg and Wu h x k, Wd n x h (contiguous), Y m x n
 * (ldy >= n); biases of length h, h and n, each may be NULL. All arrays are
 * of type dtype (float, fb_half or fb_bfloat16). gate_act is
 * FB_ACT_GELU_TANH for GeGLU, FB_ACT_SILU for SwiGLU, FB_ACT_RELU for ReGLU
 * (any fb_activation is accepted). Y must not overlap the inputs.
 * Argument positions, for fb_handle_last_arg():
 *   1 handle  2 dtype  3 gate_act  4 m  5 k  6 h  7 n  8 X  9 ldx
 *   10 Wg  11 bg  12 Wu  13 bu  14 Wd  15 bd  16 Y  17 ldy */
FB_EXPORT FB_WARN_UNUSED fb_status mlp_geglu_forward(
    fb_handle handle, fb_dtype dtype, fb_activation gate_act, int64_t m,
    int64_t k, int64_t h, int64_t n, const void *X, int64_t ldx,
    const void *Wg, const void *bg, const void *Wu, const void *bu,
    const void *Wd, const void *bd, void *Y, int64_t ldy);

/* ---- plans -------------------------------------------------------------
 * A plan fixes an operation's weights, shapes and epilogue for many calls:
 * it decides the implementation for every m up to max_m once, packs the
 * weights once into that implementation's layout, and reserves its
 * workspace; executing it takes the activations and the output only, and
 * gives the same bits as the plain routine would. A plan belongs to its
 * handle (one thread at a time) and is destroyed with it. Device weights
 * make a GPU plan (under FB_BACKEND_AUTO), whose executions take device
 * pointers and can be captured in a CUDA graph. The overview is
 * fb_plan_create_gemm(3). */
typedef struct fb_plan_s *fb_plan;

/* gemm_bias_act with B (the weights), the epilogue and n, k fixed:
 *   C (m x n) <- act(alpha op(A) op(B) + beta C + bias), 0 <= m <= max_m.
 * Positions: 1 handle  2 dtype  3 layout  4 transa  5 transb  6 max_m
 *   7 n  8 k  9 alpha  10 B  11 ldb  12 beta  13 bias  14 act  15 plan */
FB_EXPORT FB_WARN_UNUSED fb_status fb_plan_create_gemm(
    fb_handle handle, fb_dtype dtype, fb_layout layout, fb_transpose transa,
    fb_transpose transb, int64_t max_m, int64_t n, int64_t k, float alpha,
    const void *B, int64_t ldb, float beta, const void *bias,
    fb_activation act, fb_plan *plan);
/* Positions: 1 plan  2 m  3 A  4 lda  5 C  6 ldc */
FB_EXPORT FB_WARN_UNUSED fb_status fb_plan_gemm(fb_plan plan, int64_t m,
                                                const void *A, int64_t lda,
                                                void *C, int64_t ldc);

/* The gated MLP with its weights and biases fixed, 0 <= m <= max_m.
 * Positions: 1 handle  2 dtype  3 gate_act  4 max_m  5 k  6 h  7 n
 *   8 Wg  9 bg  10 Wu  11 bu  12 Wd  13 bd  14 plan */
FB_EXPORT FB_WARN_UNUSED fb_status fb_plan_create_mlp(
    fb_handle handle, fb_dtype dtype, fb_activation gate_act, int64_t max_m,
    int64_t k, int64_t h, int64_t n, const void *Wg, const void *bg,
    const void *Wu, const void *bu, const void *Wd, const void *bd,
    fb_plan *plan);
/* Positions: 1 plan  2 m  3 X  4 ldx  5 Y  6 ldy */
FB_EXPORT FB_WARN_UNUSED fb_status fb_plan_mlp(fb_plan plan, int64_t m,
                                               const void *X, int64_t ldx,
                                               void *Y, int64_t ldy);

/* NULL is accepted and does nothing; a plan that is not live is
 * FB_STATUS_INVALID_ARGUMENT. */
FB_EXPORT fb_status fb_plan_destroy(fb_plan plan);
/* The implementation m rows would run, e.g. "cpu/f32-avx512" or
 * "cuda-fused/mlp_decode" ("" for a plan that is not live, or an m out of
 * range or that no implementation takes). */
FB_EXPORT const char *fb_plan_path(fb_plan plan, int64_t m);
/* ---- FP8 (OCP e4m3) weights ------------------------------------------
 * Weights stored in one byte (OCP FP8 e4m3: 1 sign, 4 exponent bits of
 * bias 7, 3 mantissa bits; finite range +-448, no infinities, one NaN
 * pattern S.1111.111), each output channel with an fp32 scale: the weight
 * is w = e4m3 * scale. Activations, biases and outputs are of dtype
 * (FB_DTYPE_F32, FB_DTYPE_F16 or FB_DTYPE_BF16; the GPU's tensor-core
 * paths take the 16-bit ones). The result is the other routines' with the
 * dequantised weights (fp32 accumulation, one rounding of the output); see
 * gemm_e4m3_bias_act(3). Bit-compatible with torch.float8_e4m3fn and
 * __nv_fp8_e4m3. */
typedef struct fb_e4m3 { uint8_t bits; } fb_e4m3;

/* Round to nearest even; saturating: a finite value beyond +-448 and an
 * infinity give +-448; NaN gives the NaN pattern with its sign. */
FB_EXPORT fb_e4m3 fb_float_to_e4m3(float x);
/* Exact (every e4m3 value is an fp32); the NaN pattern gives a NaN. */
FB_EXPORT float fb_e4m3_to_float(fb_e4m3 x);

/* Row-wise quantisation of a row-major rows x cols fp32 matrix W (ldw >=
 * cols), e.g. an nn.Linear weight [out, in]: scales[r] = max |W(r, :)| /
 * 448 (1 for a row of zeros), Q(r, c) = fb_float_to_e4m3(W(r, c) /
 * scales[r]) (ldq >= cols). Host memory. A non-finite W is an invalid
 * argument. Positions: 1 handle 2 rows 3 cols 4 W 5 ldw 6 Q 7 ldq
 * 8 scales. */
FB_EXPORT FB_WARN_UNUSED fb_status fb_quantize_e4m3_rows(
    fb_handle handle, int64_t rows, int64_t cols, const float *W,
    int64_t ldw, fb_e4m3 *Q, int64_t ldq, float *scales);

/*   C <- act( alpha * op(A) * (op(B) diag(b_scale)) + beta * C + bias )
 * gemm_bias_act with e4m3 B and b_scale[j] (n floats) scaling column j of
 * op(B), the output channel j; A, C and bias are of dtype. nn.Linear in
 * row-major: transb = FB_TRANS, B the [n, k] weight, ldb >= k.
 * Positions: 1 handle  2 dtype  3 layout  4 transa  5 transb  6 m  7 n
 *   8 k  9 alpha  10 A  11 lda  12 B  13 ldb  14 b_scale  15 beta  16 C
 *   17 ldc  18 bias  19 act */
FB_EXPORT FB_WARN_UNUSED fb_status gemm_e4m3_bias_act(
    fb_handle handle, fb_dtype dtype, fb_layout layout, fb_transpose transa,
    fb_transpose transb, int64_t m, int64_t n, int64_t k, float alpha,
    const void *A, int64_t lda, const fb_e4m3 *B, int64_t ldb,
    const float *b_scale, float beta, void *C, int64_t ldc,
    const void *bias, fb_activation act);

/* mlp_geglu_forward with e4m3 weights Wg, Wu (h x k) and Wd (n x h), each
 * row r scaled by sg[r], su[r] (h floats) and sd[r] (n floats).
 * Positions: 1 handle  2 dtype  3 gate_act  4 m  5 k  6 h  7 n  8 X  9 ldx
 *   10 Wg  11 sg  12 bg  13 Wu  14 su  15 bu  16 Wd  17 sd  18 bd  19 Y
 *   20 ldy */
FB_EXPORT FB_WARN_UNUSED fb_status mlp_geglu_forward_e4m3(
    fb_handle handle, fb_dtype dtype, fb_activation gate_act, int64_t m,
    int64_t k, int64_t h, int64_t n, const void *X, int64_t ldx,
    const fb_e4m3 *Wg, const float *sg, const void *bg, const fb_e4m3 *Wu,
    const float *su, const void *bu, const fb_e4m3 *Wd, const float *sd,
    const void *bd, void *Y, int64_t ldy);

/* ---- tensor parallelism over NCCL --------------------------------------
 * The caller brings an NCCL communicator (an ncclComm_t, passed as void *
 * so that this header needs no NCCL), one rank per GPU, made with one
 * process or one thread per GPU, and attaches it to the handle whose CUDA
 * device is that rank's; NULL detaches. NCCL itself (libnccl.so.2, or
 * FUSEDBLAS_NCCL_LIBRARY) is loaded by these calls only. The layer is
 * split in Megatron's layout; every rank makes the same calls in the same
 * order, as for any NCCL collective, and gets the same bits. Device
 * memory only; see mlp_geglu_forward_tp(3).
 *
 * mlp_geglu_forward_tp: this rank's h_local rows of Wg, Wu (h_local x k,
 * contiguous), bg and bu, and its n x h_local column slice of Wd, whose
 * rows are ldwd elements apart (ldwd = the layer's h for a slice taken in
 * place); Y (m x n) receives the whole layer's output on every rank,
 * bd added once, rounded once. Argument positions:
 *   1 handle  2 dtype  3 gate_act  4 m  5 k  6 h_local  7 n  8 X  9 ldx
 *   10 Wg  11 bg  12 Wu  13 bu  14 Wd  15 ldwd  16 bd  17 Y  18 ldy
 * gemm_bias_act_tp: row-parallel gemm_bias_act, k split across the ranks
 * (this rank's k columns of op(A), rows of op(B)):
 *   C <- act( alpha * sum_ranks op(A_r) op(B_r) + beta * C + bias )
 * with bias and act applied once, to the sum. Argument positions:
 *   1 handle  2 dtype  3 layout  4 transa  5 transb  6 m  7 n  8 k
 *   9 alpha  10 A  11 lda  12 B  13 ldb  14 beta  15 C  16 ldc  17 bias
 *   18 act */
FB_EXPORT fb_status fb_set_nccl_comm(fb_handle handle, void *nccl_comm);

FB_EXPORT FB_WARN_UNUSED fb_status mlp_geglu_forward_tp(
    fb_handle handle, fb_dtype dtype, fb_activation gate_act, int64_t m,
    int64_t k, int64_t h_local, int64_t n, const void *X, int64_t ldx,
    const void *Wg, const void *bg, const void *Wu, const void *bu,
    const void *Wd, int64_t ldwd, const void *bd, void *Y, int64_t ldy);

FB_EXPORT FB_WARN_UNUSED fb_status gemm_bias_act_tp(
    fb_handle handle, fb_dtype dtype, fb_layout layout, fb_transpose transa,
    fb_transpose transb, int64_t m, int64_t n, int64_t k, float alpha,
    const void *A, int64_t lda, const void *B, int64_t ldb, float beta,
    void *C, int64_t ldc, const void *bias, fb_activation act);

#ifdef __cplusplus
}
#endif

#endif /* FUSEDBLAS_H */
