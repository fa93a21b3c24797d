/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * harness.h -- what every fusedblas test program shares: TAP output, a
 * seeded random generator, the three storage types, memory providers
 * (host or device), guarded buffers, and the error bounds.
 *
 * Test programs are single-threaded and print TAP for automake's
 * tap-driver.sh. They may abort on their own malloc failures; the library
 * under test never may.
 */
#ifndef FB_TEST_HARNESS_H
#define FB_TEST_HARNESS_H

#include <stddef.h>
#include <stdint.h>
#include "fusedblas.h"

#if defined(__GNUC__)
#define T_PRINTF(f, a) __attribute__((format(printf, f, a)))
#define T_NORETURN __attribute__((noreturn))
#else
#define T_PRINTF(f, a)
#define T_NORETURN
#endif

/* ---- TAP ---------------------------------------------------------------
 * The plan is printed last ("1..N"), which tap-driver.sh accepts. */

/* Start a program: seed the generator (FB_TEST_SEED, else fresh) and print
 * the seed so that a failure can be repeated. */
void tap_begin(const char *program);
/* One test point; returns pass. */
int tap_ok(int pass, const char *fmt, ...) T_PRINTF(2, 3);
/* One test point that did not run, and why. */
void tap_skip(const char *fmt, ...) T_PRINTF(1, 2);
/* A comment line. */
void tap_diag(const char *fmt, ...) T_PRINTF(1, 2);
/* The whole program is skipped: "1..0 # SKIP reason", exit 0. */
T_NORETURN void tap_skip_all(const char *reason);
/* The test machinery itself failed (not the library): "Bail out!". */
T_NORETURN void tap_bail(const char *fmt, ...) T_PRINTF(1, 2);
/* Print the plan and a summary; the exit status for main(). */
int tap_end(void);

/* A test point's findings, printed after its ok / not ok line. */
#define TCHECK_MAXDIAG 6
typedef struct tcheck {
    int failed;
    int nproblems;                 /* all problems, shown or not */
    char diag[TCHECK_MAXDIAG][256];
    double worst;                  /* largest error / bound seen */
} tcheck;

void tcheck_init(tcheck *c);
/* Record a problem (the first few are kept for the diagnostics). */
void tcheck_fail(tcheck *c, const char *fmt, ...) T_PRINTF(2, 3);
/* Emit the test point for c: ok if nothing failed. Returns pass. */
int tap_check(const tcheck *c, const char *fmt, ...) T_PRINTF(2, 3);

/* ---- random numbers ----------------------------------------------------
 * xoshiro256** seeded through splitmix64: fast and the same everywhere. */
uint64_t test_seed(void);
uint64_t rng_next(void);
double rng_unit(void);                   /* [0, 1) */
int64_t rng_below(int64_t n);            /* [0, n) */
/* A value of dtype, uniform in [-1, 1] before rounding, never zero. */
double rng_value(fb_dtype dtype);

/* ---- storage types ----------------------------------------------------- */
size_t dt_size(fb_dtype t);
const char *dt_name(fb_dtype t);   /* "f32", "f16", "bf16" */
char dt_prefix(fb_dtype t);        /* 's', 'h', 'b' */
/* Element idx of an array of t, widened exactly to double. Decodes the
 * bits itself, so reading results does not trust the library. */
double dt_get(fb_dtype t, const void *base, int64_t idx);
/* Store v (a value representable in t) with the public conversions. */
void dt_set(fb_dtype t, void *base, int64_t idx, double v);
/* The raw bits of element idx, and storing raw bits. */
uint32_t dt_bits(fb_dtype t, const void *base, int64_t idx);
void dt_set_bits(fb_dtype t, void *base, int64_t idx, uint32_t bits);
/* Bit patterns: the guard that fills padding and the space around buffers
 * (a NaN, so a read of it leaks into results), and the poison written
 * into an output before each run (another NaN). */
uint32_t dt_guard_bits(fb_dtype t);
uint32_t dt_poison_bits(fb_dtype t);
/* Unit roundoff of t: fp32 2^-24, fp16 2^-11, bf16 2^-8. */
double dt_unit_roundoff(fb_dtype t);
/* Half the smallest positive subnormal of t: the absolute part of one
 * rounding to t. */
double dt_tiny(fb_dtype t);

/* ---- memory providers ---------------------------------------------------
 * Where the library's operands live: host memory (malloc) for the CPU
 * backend, device memory for the GPU programs. put/get copy whole byte
 * ranges between host and provider memory; failures bail out. */
typedef struct tmem {
    const char *name;
    void *(*alloc)(size_t bytes);
    void (*release)(void *p);
    void (*put)(void *dst, const void *src_host, size_t bytes);
    void (*get)(void *dst_host, const void *src, size_t bytes);
} tmem;

extern const tmem tmem_host;

/* ---- matrices and guarded buffers ---------------------------------------
 * A matrix as stored: rows x cols in layout with leading dimension ld.
 * Its buffer holds outer * ld elements (outer = rows if row-major, else
 * cols), so the padding of the last row or column exists too. */
typedef struct tshape {
    fb_layout layout;
    int64_t rows, cols, ld;
} tshape;

int64_t tshape_nelem(const tshape *s);
/* Whether element offset idx of the buffer lies in the rows x cols
 * window, and if so which (i, j). */
int tshape_window(const tshape *s, int64_t idx, int64_t *i, int64_t *j);

/* A host image of one operand: `front` guard elements (which shift the
 * operand off the allocation's alignment), the nelem data elements, then
 * TBUF_BACK guard elements. Everything starts as the guard pattern. */
#define TBUF_BACK 16
typedef struct tbuf {
    fb_dtype dtype;
    int64_t front, nelem;
    size_t bytes;         /* of the whole image */
    unsigned char *img;
} tbuf;

void tbuf_init(tbuf *b, fb_dtype t, int64_t nelem, int64_t front);
void tbuf_free(tbuf *b);
/* The data elements inside the host image. */
void *tbuf_data(const tbuf *b);
/* All nelem data elements widened to double (guards become NaN). */
double *tbuf_to_double(const tbuf *b);
/* The image placed in memory provider mem: an allocation holding a copy
 * of the image; *data is where the operand starts inside it. */
void *tbuf_place(const tbuf *b, const tmem *mem, void **data);
/* The image read back from a placed allocation (a new host image). */
void tbuf_fetch(const tbuf *b, const tmem *mem, const void *alloc,
                tbuf *out);

/* Fill a matrix's window with fresh random values of its type. */
void fill_random(tbuf *b, const tshape *s);
/* Fill the window with the poison pattern. */
void fill_poison(tbuf *b, const tshape *s);

/* Compare a read-back image with the one that was placed. If s is NULL
 * every byte must match (a read-only operand); otherwise only the bytes
 * outside the window must (the window is checked against the oracle).
 * Mismatches are recorded in c under the operand's name. */
void check_untouched(tcheck *c, const char *name, const tbuf *before,
                     const tbuf *after, const tshape *s);

/* ---- error bounds --------------------------------------------------------
 * See harness.c for the derivation. */
typedef struct tol {
    double u_acc;   /* unit roundoff of each accumulation step */
    double u_in;    /* relative error of each input as the arithmetic sees
                       it: 0, or TF32's rounding */
    double u_out;   /* unit roundoff of the output type */
    double tiny_out;/* absolute part of the output rounding */
    double u_mid;   /* mlp: unit roundoff of the stored intermediates */
    double tiny_mid;
} tol;

/* Which arithmetic a path may use. */
typedef enum tarith {
    ARITH_FP32 = 0,      /* fp32 operations, round to nearest (CPU, SIMT) */
    ARITH_TENSOR = 1,    /* tensor cores: 16-bit inputs exact, fp32
                            accumulation whose adders may truncate */
    ARITH_TF32 = 2       /* tensor cores on fp32 data rounded to TF32 */
} tarith;

tol tol_make(fb_dtype dtype, tarith arith);
/* sup |act'(x)|. */
double act_slope(fb_activation act);
/* The activation evaluation error the library promises, in units of
 * 2^-24 times |x|. */
double act_eval_units(fb_activation act);
const char *act_name(fb_activation act);

/* Bound on |computed - oracle| for one element of gemm_bias_act:
 * gauge is oracle_gemm_gauge's G(i, j), ref the oracle's value. */
double tol_gemm(const tol *t, int64_t k, fb_activation act, double gauge,
                double ref);

/* The per-element bound for mlp_geglu_forward (all m x n, row-major,
 * ldy), from the double inputs the oracle was given and its H (m x h).
 * Writes bound into B (m x n, ld ldy). */
void tol_mlp(const tol *t, fb_activation act, int64_t m, int64_t k,
             int64_t h, int64_t n, const double *X, int64_t ldx,
             const double *Wg, const double *bg, const double *Wu,
             const double *bu, const double *Wd, const double *bd,
             const double *H, const double *Yref, int64_t ldy, double *B);

/* ---- comparing one element ----------------------------------------------
 * The verdict on got against the oracle's ref: 0 if acceptable.
 *  - ref NaN: got must be NaN;
 *  - ref +-Inf: got must be the same Inf;
 *  - ref finite with an infinite gauge (act(-Inf) = 0, the limit, for
 *    every activation but none): got == ref (either zero);
 *  - otherwise |got - ref| <= bound.
 * *ratio receives |got - ref| / bound for the finite case (0 otherwise).
 * z (the pre-activation) and act no longer change the verdict: the oracle
 * gives each activation's limit at -Inf itself. */
int judge(double got, double ref, double z, fb_activation act, double bound,
          double *ratio);

/* ---- targets ---------------------------------------------------------------
 * One way of running the library that a sweep checks: a handle set to a
 * backend, the memory its operands live in, and the arithmetic that path
 * may use (which sets the error bound). */
typedef struct target {
    const char *name;        /* for TAP lines: "cpu", "cuda-lt/staged" */
    fb_handle handle;
    fb_backend expect;       /* what fb_handle_last_backend() must say;
                                FB_BACKEND_CUDA accepts either GPU path */
    const tmem *mem;
    tarith arith_f32;        /* for fp32 data */
    tarith arith_16;         /* for fp16 and bf16 data */
    int not_supported_skips; /* FB_STATUS_NOT_SUPPORTED is a skip */
    int f32_only;            /* run only fp32 cases (a TF32 target) */
} target;

/* Whether backend ran is what t expects. */
int target_ran_expected(const target *t, fb_backend ran);
/* The bound parameters of t for data of dtype. */
tol target_tol(const target *t, fb_dtype dtype);

/* Create a handle on backend b; bails out if that fails. */
fb_handle handle_on(fb_backend b);
/* The CPU target: a handle on FB_BACKEND_CPU, host memory. */
target target_cpu(void);

/* Order-of-magnitude sizes for loops over enum values. */
#define N_ACTS 5
extern const fb_activation all_acts[N_ACTS];
extern const fb_dtype all_dtypes[3];

#endif /* FB_TEST_HARNESS_H */
