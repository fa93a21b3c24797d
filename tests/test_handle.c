/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_handle.c -- handles, settings, library queries, the 16-bit
 * conversions (exhaustively), and what a handle remembers of its last call.
 */
#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gemm_check.h"
#include "oracle.h"
#include "tap_child.h"

static void create_destroy(void)
{
    enum { N = 1000 };
    fb_handle *hs = calloc(N, sizeof *hs);
    int ok = hs != NULL;
    for (int i = 0; ok && i < N; i++)
        ok = fb_create(&hs[i]) == FB_STATUS_SUCCESS && hs[i] != NULL;
    for (int i = 1; ok && i < N; i++)
        ok = hs[i] != hs[i - 1] && hs[i] != hs[0];
    for (int i = 0; hs != NULL && i < N; i++)
        if (hs[i] != NULL && fb_destroy(hs[i]) != FB_STATUS_SUCCESS)
            ok = 0;
    free(hs);
    tap_ok(ok, "fb_create makes %d distinct handles, fb_destroy frees them", N);
}

static void settings(void)
{
    fb_handle h = handle_on(FB_BACKEND_CPU);
    int ok = 1;
    static const fb_backend backends[] = {
        FB_BACKEND_AUTO, FB_BACKEND_CPU, FB_BACKEND_CUDA, FB_BACKEND_CUDA_LT,
        FB_BACKEND_CUDA_FUSED};
    for (size_t i = 0; i < 5; i++) {
        fb_backend b = (fb_backend)-1;
        ok &= fb_set_backend(h, backends[i]) == FB_STATUS_SUCCESS;
        ok &= fb_get_backend(h, &b) == FB_STATUS_SUCCESS && b == backends[i];
        ok &= fb_handle_last_status(h) == FB_STATUS_SUCCESS &&
              fb_handle_last_arg(h) == 0;
    }
    tap_ok(ok, "fb_set_backend / fb_get_backend keep every backend");
    ok = fb_set_threads(h, 0) == FB_STATUS_SUCCESS &&
         fb_set_threads(h, 1) == FB_STATUS_SUCCESS &&
         fb_set_threads(h, 3) == FB_STATUS_SUCCESS &&
         fb_set_math_mode(h, FB_MATH_ALLOW_TF32) == FB_STATUS_SUCCESS &&
         fb_set_math_mode(h, FB_MATH_DEFAULT) == FB_STATUS_SUCCESS &&
         fb_set_verbose(h, 0) == FB_STATUS_SUCCESS &&
         fb_set_cuda_device(h, 0) == FB_STATUS_SUCCESS &&
         fb_set_cuda_stream(h, NULL) == FB_STATUS_SUCCESS;
    tap_ok(ok, "threads, math mode, verbose, CUDA device and stream accept "
           "legal values");
    fb_destroy(h);
}

static void queries(void)
{
    const char *s[7];
    int ok = 1;
    for (int i = 0; i < 7; i++) {
        s[i] = fb_status_string((fb_status)i);
        ok &= s[i] != NULL && s[i][0] != '\0';
        for (int j = 0; ok && j < i; j++)
            ok &= strcmp(s[i], s[j]) != 0;
    }
    ok &= fb_status_string((fb_status)99) != NULL &&
          fb_status_string((fb_status)-1) != NULL;
    tap_ok(ok, "fb_status_string names every status, distinctly; unknown "
           "ones get a string too");

    char expect[32];
    snprintf(expect, sizeof expect, "%d.%d.%d", FUSEDBLAS_VERSION_MAJOR,
             FUSEDBLAS_VERSION_MINOR, FUSEDBLAS_VERSION_PATCH);
    tap_ok(fb_version() != NULL &&
               strcmp(fb_version(), FUSEDBLAS_VERSION_STRING) == 0 &&
               strcmp(expect, FUSEDBLAS_VERSION_STRING) == 0 &&
               FUSEDBLAS_VERSION_NUMBER ==
                   FUSEDBLAS_VERSION_MAJOR * 10000 +
                       FUSEDBLAS_VERSION_MINOR * 100 + FUSEDBLAS_VERSION_PATCH,
           "fb_version() is \"%s\", as the macros say",
           fb_version() ? fb_version() : "(null)");

    /* The names FUSEDBLAS_BACKEND takes (docs/DESIGN.md). */
    static const char *names[5] = {"auto", "cpu", "cuda", "cuda-lt",
                                   "cuda-fused"};
    ok = 1;
    for (int i = 0; i < 5; i++) {
        const char *n = fb_backend_name((fb_backend)i);
        ok &= n != NULL && strcmp(n, names[i]) == 0;
    }
    ok &= fb_backend_name((fb_backend)42) != NULL;
    tap_ok(ok, "fb_backend_name gives auto, cpu, cuda, cuda-lt, cuda-fused");

    const fb_status lt = fb_backend_available(FB_BACKEND_CUDA_LT);
    tap_ok(fb_backend_available(FB_BACKEND_CPU) == FB_STATUS_SUCCESS &&
               fb_backend_available(FB_BACKEND_AUTO) == FB_STATUS_SUCCESS &&
               (lt == FB_STATUS_SUCCESS ||
                lt == FB_STATUS_BACKEND_UNAVAILABLE) &&
               fb_backend_available((fb_backend)42) != FB_STATUS_SUCCESS,
           "fb_backend_available: cpu and auto always; cuda-lt here: %s",
           fb_status_string(lt));
}

/* ---- 16-bit conversions ---------------------------------------------------- */

static float float_of_bits(uint32_t b)
{
    float f;
    memcpy(&f, &b, 4);
    return f;
}

static uint32_t bits_of_float(float f)
{
    uint32_t b;
    memcpy(&b, &f, 4);
    return b;
}

/* The 16-bit result of converting f, as bits. */
static uint32_t to16(fb_dtype t, float f)
{
    if (t == FB_DTYPE_F16)
        return fb_float_to_half(f).bits;
    return fb_float_to_bfloat16(f).bits;
}

static float from16(fb_dtype t, uint32_t bits)
{
    if (t == FB_DTYPE_F16) {
        fb_half x = {(uint16_t)bits};
        return fb_half_to_float(x);
    }
    fb_bfloat16 x = {(uint16_t)bits};
    return fb_bfloat16_to_float(x);
}

static int is_nan16(fb_dtype t, uint32_t b)
{
    return t == FB_DTYPE_F16 ? (b & 0x7c00u) == 0x7c00u && (b & 0x3ffu)
                             : (b & 0x7f80u) == 0x7f80u && (b & 0x7fu);
}

static void conversions(fb_dtype t)
{
    const char *name = dt_name(t);
    /* Every bit pattern: widening is exact, and narrowing gives it back. */
    long bad_widen = 0, bad_trip = 0;
    uint32_t first_widen = 0, first_trip = 0;
    for (uint32_t b = 0; b < 65536u; b++) {
        uint16_t cell = (uint16_t)b;
        const double want = dt_get(t, &cell, 0);
        const float f = from16(t, b);
        const int widen_ok = isnan(want) ? isnan(f)
                                         : bits_of_float(f) ==
                                               bits_of_float((float)want);
        if (!widen_ok && bad_widen++ == 0)
            first_widen = b;
        const uint32_t back = to16(t, f);
        const int trip_ok = is_nan16(t, b) ? is_nan16(t, back) : back == b;
        if (!trip_ok && bad_trip++ == 0)
            first_trip = b;
    }
    tap_ok(bad_widen == 0, "%s -> float is exact for all 65536 patterns "
           "(%ld wrong, first 0x%04x)", name, bad_widen, first_widen);
    tap_ok(bad_trip == 0, "float -> %s -> float round-trips all 65536 "
           "patterns, NaN stays NaN (%ld wrong, first 0x%04x)", name,
           bad_trip, first_trip);

    /* Halfway between neighbours: ties to even; a hair either side goes to
     * the nearer. Includes subnormals and the top, where the tie above the
     * largest finite value rounds to Inf. */
    long bad_tie = 0;
    uint32_t first_tie = 0;
    const uint32_t top = t == FB_DTYPE_F16 ? 0x7bffu : 0x7f7fu;
    for (uint32_t x = 0; x <= top; x++)
        for (int neg = 0; neg < 2; neg++) {
            const uint32_t sign = neg ? 0x8000u : 0u;
            const double a = fabs(dt_get(t, &(uint16_t){(uint16_t)x}, 0));
            /* above the largest finite value: the next power of two */
            const double b = x == top ? (t == FB_DTYPE_F16 ? 0x1p16 : 0x1p128)
                                      : fabs(dt_get(t, &(uint16_t){(uint16_t)(x + 1)}, 0));
            const float mid = (float)((a + b) / 2.0); /* exact in float */
            const float s = neg ? -1.0f : 1.0f;
            const uint32_t even = (x % 2 == 0 ? x : x + 1) | sign;
            const float below = nextafterf(mid, 0.0f);
            const float above = nextafterf(mid, INFINITY);
            if (to16(t, s * mid) != even ||
                to16(t, s * below) != (x | sign) ||
                to16(t, s * above) != ((x + 1) | sign)) {
                if (bad_tie++ == 0)
                    first_tie = x | sign;
            }
        }
    tap_ok(bad_tie == 0, "float -> %s rounds to nearest, ties to even, at "
           "every midpoint (%ld wrong, first at 0x%04x)", name, bad_tie,
           first_tie);

    /* Random floats against the oracle's independent rounding. */
    long bad_rand = 0;
    uint32_t first_rand = 0;
    for (int i = 0; i < 200000; i++) {
        const uint32_t fb = (uint32_t)rng_next();
        const float f = float_of_bits(fb);
        const uint32_t got = to16(t, f);
        uint16_t cell = (uint16_t)got;
        const double g = dt_get(t, &cell, 0);
        const double want = oracle_round(t, (double)f);
        const int ok = isnan(f) ? isnan(g)
                                : g == want && signbit(g) == signbit(want);
        if (!ok && bad_rand++ == 0)
            first_rand = fb;
    }
    tap_ok(bad_rand == 0, "float -> %s agrees with an independent rounding "
           "on 200000 random floats (%ld wrong, first 0x%08x)", name,
           bad_rand, first_rand);

    /* Named cases. */
    int ok = 1;
    if (t == FB_DTYPE_F16) {
        ok &= to16(t, 65519.99f) == 0x7bffu;  /* just below the tie */
        ok &= to16(t, 65520.0f) == 0x7c00u;   /* the tie: to even = Inf */
        ok &= to16(t, 1e5f) == 0x7c00u && to16(t, -1e5f) == 0xfc00u;
        ok &= to16(t, FLT_MAX) == 0x7c00u && to16(t, INFINITY) == 0x7c00u;
        ok &= to16(t, -INFINITY) == 0xfc00u;
        ok &= to16(t, 0x1p-24f) == 0x0001u;   /* smallest subnormal */
        ok &= to16(t, 0x1p-25f) == 0x0000u;   /* tie with 0: to even */
        ok &= to16(t, 0x1.000002p-25f) == 0x0001u;
        ok &= to16(t, 0x1p-26f) == 0x0000u;
        ok &= to16(t, -0x1p-26f) == 0x8000u;  /* sign of zero kept */
        ok &= to16(t, 1e-40f) == 0x0000u && to16(t, -1e-40f) == 0x8000u;
        ok &= to16(t, 0x1.ffcp-15f) == 0x0400u; /* tie: up to the normals */
    } else {
        ok &= to16(t, FLT_MAX) == 0x7f80u;    /* above the top tie: Inf */
        ok &= to16(t, INFINITY) == 0x7f80u && to16(t, -INFINITY) == 0xff80u;
        ok &= to16(t, float_of_bits(0x00010000u)) == 0x0001u; /* subnormal */
        ok &= to16(t, float_of_bits(0x00008000u)) == 0x0000u; /* tie to 0 */
        ok &= to16(t, float_of_bits(0x80018000u)) == 0x8002u; /* tie to even */
        ok &= to16(t, 1.0f) == 0x3f80u && to16(t, -2.0f) == 0xc000u;
    }
    ok &= is_nan16(t, to16(t, NAN)) && is_nan16(t, to16(t, -NAN));
    ok &= is_nan16(t, to16(t, float_of_bits(0x7f800001u))); /* sNaN, low bits */
    ok &= is_nan16(t, to16(t, float_of_bits(0x7fffe000u)));
    tap_ok(ok, "float -> %s: overflow, Inf, subnormals, signed zero, NaN "
           "with only low payload bits", name);
}

/* ---- what a handle remembers ------------------------------------------------------- */

static fb_status small_sgemm(fb_handle h, int64_t lda)
{
    float a[6] = {1, 2, 3, 4, 5, 6}, b[6] = {1, -1, 2, -2, 3, -3}, c[4];
    return sgemm_bias_act(h, FB_ROW_MAJOR, FB_NO_TRANS, FB_NO_TRANS, 2, 2, 3,
                          1.0f, a, lda, b, 2, 0.0f, c, 2, NULL, FB_ACT_RELU);
}

static void last_call(void)
{
    fb_handle h = handle_on(FB_BACKEND_CPU);
    fb_status st = small_sgemm(h, 3);
    const char *path = fb_handle_last_path(h);
    tap_ok(st == FB_STATUS_SUCCESS &&
               fb_handle_last_status(h) == FB_STATUS_SUCCESS &&
               fb_handle_last_arg(h) == 0 &&
               fb_handle_last_message(h) != NULL &&
               fb_handle_last_message(h)[0] == '\0' &&
               fb_handle_last_backend(h) == FB_BACKEND_CPU && path != NULL &&
               strncmp(path, "cpu", 3) == 0,
           "after a success: status, arg 0, empty message, backend cpu, path "
           "\"%s\"", path ? path : "(null)");
    st = small_sgemm(h, 2); /* lda 2 < k = 3 */
    const char *msg = fb_handle_last_message(h);
    tap_ok(st == FB_STATUS_INVALID_ARGUMENT &&
               fb_handle_last_status(h) == FB_STATUS_INVALID_ARGUMENT &&
               fb_handle_last_arg(h) == 10 && msg != NULL && msg[0] != '\0',
           "after a bad lda: invalid argument 10, message \"%s\"",
           msg ? msg : "(null)");
    st = small_sgemm(h, 3);
    tap_ok(st == FB_STATUS_SUCCESS && fb_handle_last_arg(h) == 0 &&
               fb_handle_last_message(h)[0] == '\0' &&
               fb_handle_last_backend(h) == FB_BACKEND_CPU,
           "the next success clears the error");
    fb_destroy(h);
}

/* The calling thread's default handle, in another thread. */
static void *other_thread(void *arg)
{
    int *ok = arg;
    *ok = fb_set_backend(NULL, FB_BACKEND_CUDA_FUSED) == FB_STATUS_SUCCESS &&
          small_sgemm(NULL, 1) == FB_STATUS_INVALID_ARGUMENT &&
          fb_handle_last_arg(NULL) == 10;
    return NULL;
}

static void default_handle(void)
{
    int ok = fb_set_backend(NULL, FB_BACKEND_CPU) == FB_STATUS_SUCCESS;
    fb_backend b = FB_BACKEND_AUTO;
    ok &= fb_get_backend(NULL, &b) == FB_STATUS_SUCCESS && b == FB_BACKEND_CPU;
    ok &= small_sgemm(NULL, 3) == FB_STATUS_SUCCESS &&
          fb_handle_last_status(NULL) == FB_STATUS_SUCCESS &&
          fb_handle_last_backend(NULL) == FB_BACKEND_CPU;
    tap_ok(ok, "a NULL handle is the thread's default: settings stick, "
           "calls run and are recorded");
    ok = small_sgemm(NULL, 1) == FB_STATUS_INVALID_ARGUMENT &&
         fb_handle_last_arg(NULL) == 10;
    tap_ok(ok, "a bad call on the default handle is recorded there");

    int other_ok = 0;
    pthread_t th;
    const int started = pthread_create(&th, NULL, other_thread, &other_ok) == 0;
    if (started)
        pthread_join(th, NULL);
    b = FB_BACKEND_AUTO;
    ok = started && other_ok &&
         fb_get_backend(NULL, &b) == FB_STATUS_SUCCESS && b == FB_BACKEND_CPU;
    ok &= small_sgemm(NULL, 3) == FB_STATUS_SUCCESS &&
          fb_handle_last_backend(NULL) == FB_BACKEND_CPU;
    tap_ok(ok, "another thread's default handle is its own (its backend and "
           "errors do not reach this thread's)");
}

/* ---- handles that are not live -------------------------------------------- */

/* Every entry point that takes a handle. */
static const char *const entry_names[] = {
    "fb_set_threads",        "fb_handle_last_status", "fb_destroy",
    "sgemm_bias_act",        "fb_set_backend",        "fb_get_backend",
    "fb_set_math_mode",      "fb_set_verbose",        "fb_set_cuda_device",
    "fb_set_cuda_stream",    "fb_handle_last_arg",    "fb_handle_last_message",
    "fb_handle_last_backend", "fb_handle_last_path",  "hgemm_bias_act",
    "bgemm_bias_act",        "mlp_geglu_forward"};
#define N_ENTRIES ((int)(sizeof entry_names / sizeof entry_names[0]))

/* Entry point f given v: its status, or for the getters other than
 * fb_handle_last_status, INVALID_ARGUMENT if it gave the answer for a
 * handle that is not live. out (4 floats, -7 on entry) is its output. */
static fb_status entry(int f, fb_handle v, float *out)
{
    const float a[4] = {1, 2, 3, 4}, b[4] = {1, 0, 0, 1};
    const uint16_t a16[4] = {0x3c00, 0x4000, 0x4200, 0x4400};
    fb_backend backend = FB_BACKEND_CPU;
    switch (f) {
    case 0: return fb_set_threads(v, 1);
    case 1: return fb_handle_last_status(v);
    case 2: return fb_destroy(v);
    case 3:
        return sgemm_bias_act(v, FB_ROW_MAJOR, FB_NO_TRANS, FB_NO_TRANS, 2, 2,
                              2, 1.0f, a, 2, b, 2, 0.0f, out, 2, NULL,
                              FB_ACT_NONE);
    case 4: return fb_set_backend(v, FB_BACKEND_CPU);
    case 5: {
        fb_status st = fb_get_backend(v, &backend);
        return backend == FB_BACKEND_CPU ? st : FB_STATUS_INTERNAL;
    }
    case 6: return fb_set_math_mode(v, FB_MATH_DEFAULT);
    case 7: return fb_set_verbose(v, 0);
    case 8: return fb_set_cuda_device(v, 0);
    case 9: return fb_set_cuda_stream(v, NULL);
    case 10:
        return fb_handle_last_arg(v) == 1 ? FB_STATUS_INVALID_ARGUMENT
                                          : FB_STATUS_SUCCESS;
    case 11:
        return strstr(fb_handle_last_message(v), "not a live") != NULL
                   ? FB_STATUS_INVALID_ARGUMENT
                   : FB_STATUS_SUCCESS;
    case 12:
        return fb_handle_last_backend(v) == FB_BACKEND_AUTO
                   ? FB_STATUS_INVALID_ARGUMENT
                   : FB_STATUS_SUCCESS;
    case 13:
        return fb_handle_last_path(v)[0] == '\0' ? FB_STATUS_INVALID_ARGUMENT
                                                 : FB_STATUS_SUCCESS;
    case 14:
        return hgemm_bias_act(v, FB_ROW_MAJOR, FB_NO_TRANS, FB_NO_TRANS, 2, 2,
                              2, 1.0f, (const fb_half *)a16, 2,
                              (const fb_half *)a16, 2, 0.0f, (fb_half *)out,
                              2, NULL, FB_ACT_NONE);
    case 15:
        return bgemm_bias_act(v, FB_ROW_MAJOR, FB_NO_TRANS, FB_NO_TRANS, 2, 2,
                              2, 1.0f, (const fb_bfloat16 *)a16, 2,
                              (const fb_bfloat16 *)a16, 2, 0.0f,
                              (fb_bfloat16 *)out, 2, NULL, FB_ACT_NONE);
    default:
        return mlp_geglu_forward(v, FB_DTYPE_F32, FB_ACT_GELU_TANH, 1, 2, 2,
                                 2, a, 2, b, NULL, b, NULL, b, NULL, out, 2);
    }
}

/* Whether v is refused as not live by every entry point that takes a
 * handle: each returns FB_STATUS_INVALID_ARGUMENT (the getters their
 * not-live answer) and records it on the calling thread's default handle
 * at argument 1, and writes nothing. The first entry point that accepts
 * it is named in why. */
static int refused(fb_handle v, const char **why)
{
    for (int f = 0; f < N_ENTRIES; f++) {
        float out[4] = {-7, -7, -7, -7};
        /* A success on the default handle clears its record, so that the
         * refusal below must write it anew. */
        if (fb_set_verbose(NULL, 0) != FB_STATUS_SUCCESS ||
            fb_handle_last_arg(NULL) != 0)
            tap_bail("fb_set_verbose(NULL, 0) failed");
        const fb_status st = entry(f, v, out);
        if (st != FB_STATUS_INVALID_ARGUMENT ||
            fb_handle_last_status(NULL) != FB_STATUS_INVALID_ARGUMENT ||
            fb_handle_last_arg(NULL) != 1 || out[0] != -7 || out[1] != -7 ||
            out[2] != -7 || out[3] != -7) {
            *why = entry_names[f];
            return 0;
        }
    }
    return 1;
}

/* A small call that must succeed on a live handle. */
static int works(fb_handle h)
{
    const float a[4] = {1, 2, 3, 4}, b[4] = {1, 0, 0, 1};
    float c[4] = {0, 0, 0, 0};
    return fb_set_threads(h, 1) == FB_STATUS_SUCCESS &&
           sgemm_bias_act(h, FB_ROW_MAJOR, FB_NO_TRANS, FB_NO_TRANS, 2, 2, 2,
                          1.0f, a, 2, b, 2, 0.0f, c, 2, NULL,
                          FB_ACT_NONE) == FB_STATUS_SUCCESS &&
           c[0] == 1 && c[1] == 2 && c[2] == 3 && c[3] == 4;
}

/* After many handles are made and destroyed in varied orders (which leaves
 * removed slots in the registry), made-up values and destroyed handles
 * are refused by every entry point that takes a handle, and the handles
 * still alive are unaffected. Runs as a
 * child process (phase "not-live"), so that a crash is a failed point. */
static void not_live(void)
{
    enum { N = 1000, ROUNDS = 6, KEEP = 37, MADE_UP = 4096 };
    fb_handle live[N] = {0};
    size_t nstale = 0, cap = 4 * N;
    fb_handle *stale = malloc(cap * sizeof *stale);
    if (stale == NULL)
        tap_bail("out of memory");
    const char *why = "", *why_during = "";
    fb_handle during = NULL;
    int order[N];
    /* First a few handles at a time, n = 1..64, each batch destroyed in a
     * random order, with the probes below between every two changes: a
     * small registry, whose removed slots soon lie where a made-up value
     * is looked up. */
    for (int n = 1; n <= 64; n++) {
        for (int i = 0; i < n; i++) {
            if (fb_create(&live[i]) != FB_STATUS_SUCCESS)
                tap_bail("fb_create failed");
            order[i] = i;
        }
        for (int i = n - 1; i > 0; i--) {
            const int j = (int)rng_below(i + 1), t = order[i];
            order[i] = order[j], order[j] = t;
        }
        for (int s = 0; s < n; s++) {
            if (fb_destroy(live[order[s]]) != FB_STATUS_SUCCESS)
                tap_bail("fb_destroy of a live handle failed");
            live[order[s]] = NULL;
            const fb_handle probes[2] = {(fb_handle)(uintptr_t)1,
                                         (fb_handle)(uintptr_t)(2 + s)};
            for (int p = 0; p < 2; p++)
                if (!refused(probes[p], &why) && during == NULL)
                    during = probes[p], why_during = why;
        }
    }
    for (int i = 0; i < N; i++)
        order[i] = i;
    for (int r = 0; r < ROUNDS; r++) {
        /* The slots in a new random order each round: the first round
         * makes every handle, later ones destroy or remake each slot's
         * handle on a coin toss. */
        for (int i = N - 1; i > 0; i--) {
            const int j = (int)rng_below(i + 1), t = order[i];
            order[i] = order[j], order[j] = t;
        }
        for (int s = 0; s < N; s++) {
            const int i = order[s];
            /* Value 1 and a rotating made-up value are checked between
             * every two changes of the registry, so that every state it
             * passes through is tried, whichever slot removed handles
             * left marked. */
            const fb_handle probes[2] = {(fb_handle)(uintptr_t)1,
                                         (fb_handle)(uintptr_t)(2 + s % 4095)};
            for (int p = 0; p < 2; p++)
                if (!refused(probes[p], &why) && during == NULL)
                    during = probes[p], why_during = why;
            if (r > 0 && rng_below(2) == 0)
                continue;
            if (live[i] != NULL) {
                if (fb_destroy(live[i]) != FB_STATUS_SUCCESS)
                    tap_bail("fb_destroy of a live handle failed");
                if (nstale == cap &&
                    (stale = realloc(stale, (cap *= 2) * sizeof *stale)) == NULL)
                    tap_bail("out of memory");
                stale[nstale++] = live[i];
                live[i] = NULL;
            } else if (fb_create(&live[i]) != FB_STATUS_SUCCESS) {
                tap_bail("fb_create failed");
            }
        }
    }
    /* All but KEEP handles destroyed, in a random order. */
    int nlive = 0;
    for (int i = 0; i < N; i++)
        nlive += live[i] != NULL;
    while (nlive > KEEP) {
        const int i = (int)rng_below(N);
        if (live[i] == NULL)
            continue;
        if (fb_destroy(live[i]) != FB_STATUS_SUCCESS)
            tap_bail("fb_destroy of a live handle failed");
        if (nstale == cap &&
            (stale = realloc(stale, (cap *= 2) * sizeof *stale)) == NULL)
            tap_bail("out of memory");
        stale[nstale++] = live[i];
        live[i] = NULL;
        nlive--;
    }
    /* A destroyed handle's memory may hold a live handle again: those
     * values are live, not stale. */
    size_t k = 0;
    for (size_t s = 0; s < nstale; s++) {
        int reused = 0;
        for (int i = 0; i < N && !reused; i++)
            reused = live[i] == stale[s];
        if (!reused)
            stale[k++] = stale[s];
    }
    nstale = k;

    if (during != NULL)
        tap_diag("value %p accepted by %s", (void *)during, why_during);
    tap_ok(during == NULL, "while batches of 1..64 handles, then %d "
           "handles %d times over, are made and destroyed: handle values 1 "
           "and 2..4096 refused between every two changes", N, ROUNDS);
    uintptr_t bad = 0;
    for (uintptr_t v = 1; v <= MADE_UP && bad == 0; v++)
        if (!refused((fb_handle)v, &why))
            bad = v;
    if (bad != 0)
        tap_diag("value %lu accepted by %s", (unsigned long)bad, why);
    tap_ok(bad == 0, "made-up handles 1..%d after churn: refused by the %d "
           "entry points that take a handle, at argument 1 on the default "
           "handle", MADE_UP, N_ENTRIES);
    size_t first = nstale;
    for (size_t s = 0; s < nstale && first == nstale; s++)
        if (!refused(stale[s], &why))
            first = s;
    tap_ok(first == nstale, "%zu destroyed handles: refused the same way%s%s",
           nstale, first < nstale ? "; one accepted by " : "",
           first < nstale ? why : "");
    free(stale);

    int ok = 1;
    for (int i = 0; i < N; i++)
        if (live[i] != NULL)
            ok &= works(live[i]);
    for (int i = 0; i < N; i++)
        if (live[i] != NULL) {
            ok &= fb_destroy(live[i]) == FB_STATUS_SUCCESS;
            ok &= fb_destroy(live[i]) == FB_STATUS_INVALID_ARGUMENT;
        }
    tap_ok(ok, "the %d live handles still work, and each is destroyed "
           "exactly once", KEEP);

    /* The registry still makes, finds and frees handles. */
    ok = 1;
    for (int i = 0; i < N && ok; i++)
        ok = fb_create(&live[i]) == FB_STATUS_SUCCESS && works(live[i]);
    for (int i = 0; i < N; i++)
        ok &= live[i] == NULL || fb_destroy(live[i]) == FB_STATUS_SUCCESS;
    tap_ok(ok, "afterwards %d new handles are made, used and destroyed", N);
}

int main(int argc, char **argv)
{
    const char *phase = tap_child_init(argc, argv);
    tap_begin("test_handle");
    if (phase != NULL) {
        if (tap_in_phase("not-live"))
            not_live();
        else
            tap_bail("unknown phase %s", phase);
        return tap_end();
    }
    tap_rerun("not-live", NULL, 120);
    create_destroy();
    settings();
    queries();
    conversions(FB_DTYPE_F16);
    conversions(FB_DTYPE_BF16);
    last_call();
    default_handle();
    return tap_end();
}
