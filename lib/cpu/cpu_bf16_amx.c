/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cpu_bf16_amx.c -- the bf16 GEMMs' AMX engine: TDPBF16PS on 16 x 16
 * tiles (cpu_bf16_kernel.h has the engine's contract).
 *
 * One TDPBF16PS is a 16 x 16 x 32 product (16 K flops) in about 16
 * cycles, eight times VDPBF16PS's rate. Its operands: "A" is 16 rows of
 * 32 bf16 along k (64 bytes a row), "B" 16 k-pairs of 16 words, each word
 * the pair of one output column, and the accumulator 16 x 16 fp32. So:
 *  - op(B)'s panels (16 rows: C's columns) are packed in tile rows and are
 *    AMX's "A": one tile per 16 pairs, 64 bytes a row;
 *  - op(A)'s panels (32 rows of C) keep the pair-major packing of the
 *    AVX512-BF16 engine and are AMX's "B": the 16 words of rows 0-15 and
 *    of rows 16-31 of each pair are two tiles, 128 bytes a row;
 *  - the accumulator tile is then 16 columns of C by 16 rows, which is
 *    how a column-major acc lies: it is loaded and stored in place.
 * Eight tiles: four accumulators (two B panels by one A panel: 32 x 32 of
 * C), two of each operand; per 32 k, four loads and four products. k is
 * padded to 32 with zeros (kpad 16 pairs), so every tile is whole.
 *
 * TDPBF16PS reads denormal inputs as zero and flushes denormal results,
 * as VDPBF16PS does: the drivers' fb_bf16_products_exact rule holds for
 * both.
 *
 * Linux hands out the tile data state only to a process that asks
 * (arch_prctl ARCH_REQ_XCOMP_PERM), once; a process whose signal stacks
 * are too small for it is refused, and then this engine is not available.
 */
#include "config.h"
#include <stdint.h>
#include <string.h>
#include "cpu_bf16_kernel.h"
#include "cpu_bf16_gemm.h"
#include "env.h"

#if defined(__x86_64__) && defined(__GNUC__) && defined(__linux__)
#include <cpuid.h>
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>
#define FB_AMX 1
#define FB_AMX_TARGET                                                          \
    __attribute__((target("avx512f,amx-tile,amx-bf16")))
#endif

/* k pairs per pass over a block: two B panels (16 KiB each) stay in L1
 * while the A panels stream by from L2. */
#define KC_PAIRS 128

#if defined(FB_AMX)

#define ARCH_REQ_XCOMP_PERM 0x1023
#define XFEATURE_XTILEDATA 18

/* CPUID leaf 7 EDX: AMX-BF16 bit 22, AMX-TILE bit 24; XCR0 bits 17, 18:
 * the OS manages the tile configuration and data. Then leave to use the
 * data, which Linux grants per process. */
static int cpu_has_amx_bf16(void)
{
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_OSXSAVE))
        return 0;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d))
        return 0;
    const unsigned need = (1u << 22) | (1u << 24);
    if ((d & need) != need)
        return 0;
    unsigned xlo, xhi;
    __asm__ volatile("xgetbv" : "=a"(xlo), "=d"(xhi) : "c"(0));
    if ((xlo & 0x60000u) != 0x60000u)
        return 0;
    return syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM,
                   XFEATURE_XTILEDATA) == 0;
}

/* The tile configuration (palette 1): tiles 0-7, 16 rows of 64 bytes. */
typedef struct tile_config {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} tile_config;

/* A constant in memory: GCC 12 does not see LDTILECFG read all 64 bytes
 * of a local one, and dropped the stores of colsb and rows when this
 * function was not inlined (LDTILECFG then faults). */
static const tile_config amx_config = {
    1, 0, {0}, {64, 64, 64, 64, 64, 64, 64, 64}, {16, 16, 16, 16, 16, 16, 16, 16}};

FB_AMX_TARGET void fb_cpu_amx_configure(void)
{
    _tile_loadconfig(&amx_config);
}

/* acc columns [0, 32) (two B panels at b0, b1: runs of 16 pairs brun
 * bf16 apart, rows bld bytes apart), or [0, 16) where b1 is NULL, by rows
 * [0, 32) (the A panel at a) <- (load ? acc : 0) + kb runs of 16 pairs.
 * Tiles 0-3 accumulate, 4-5 hold B's rows, 6-7 A's pairs. */
FB_AMX_TARGET static void tiles(const uint16_t *a, const uint16_t *b0,
                                const uint16_t *b1, int64_t brun, size_t bld,
                                int64_t kb, float *c, int64_t ldc, int load)
{
    const size_t cs = (size_t)ldc * 4;
    float *c1 = c + 16 * ldc;
    if (load) {
        _tile_loadd(0, c, cs);
        _tile_loadd(1, c + 16, cs);
    } else {
        _tile_zero(0);
        _tile_zero(1);
    }
    if (b1 != NULL && load) {
        _tile_loadd(2, c1, cs);
        _tile_loadd(3, c1 + 16, cs);
    } else if (b1 != NULL) {
        _tile_zero(2);
        _tile_zero(3);
    }
    for (int64_t q = 0; q < kb; q++) {
        _tile_loadd(4, b0 + q * brun, bld);
        _tile_loadd(6, a + q * 1024, 128);
        _tile_loadd(7, a + q * 1024 + 32, 128);
        _tile_dpbf16ps(0, 4, 6);
        _tile_dpbf16ps(1, 4, 7);
        if (b1 == NULL)
            continue;
        _tile_loadd(5, b1 + q * brun, bld);
        _tile_dpbf16ps(2, 5, 6);
        _tile_dpbf16ps(3, 5, 7);
    }
    _tile_stored(0, c, cs);
    _tile_stored(1, c + 16, cs);
    if (b1 != NULL) {
        _tile_stored(2, c1, cs);
        _tile_stored(3, c1 + 16, cs);
    }
}

/* acc's rows [0, rows) of columns [0, cols) times alpha. */
FB_AMX_TARGET static void scale(float *acc, int64_t ldacc, int64_t rows,
                                int64_t cols, float alpha)
{
    const __m512 s = _mm512_set1_ps(alpha);
    for (int64_t j = 0; j < cols; j++)
        for (int64_t i = 0; i < rows; i += 16) {
            float *p = acc + j * ldacc + i;
            _mm512_storeu_ps(p, _mm512_mul_ps(_mm512_loadu_ps(p), s));
        }
}

/* The engine's block, B's panels bstride bf16 apart, each in runs of 16
 * pairs brun bf16 apart whose 16 rows are bld bytes apart: packed tile
 * rows (512, 64) or a row-major matrix read in place (32, its ld). */
FB_AMX_TARGET static void block_on(const uint16_t *a, int64_t astride,
                                   int64_t na, const uint16_t *b,
                                   int64_t bstride, int64_t brun, size_t bld,
                                   int64_t nb, int64_t np, float alpha,
                                   int accumulate, float *acc, int64_t ldacc)
{
    fb_cpu_amx_configure();
    /* Equal chunks of at most KC_PAIRS, whole runs of 16 pairs. */
    const int64_t runs = np / 16;
    const int64_t nchunks = (runs * 16 + KC_PAIRS - 1) / KC_PAIRS;
    const int64_t kc = nchunks > 0 ? (runs + nchunks - 1) / nchunks : 0;
    for (int64_t r0 = 0; r0 < runs; r0 += kc) {
        const int64_t rc = runs - r0 < kc ? runs - r0 : kc;
        const int load = accumulate || r0 > 0;
        for (int64_t jb = 0; jb < nb; jb += 2) {
            const uint16_t *b0 = b + jb * bstride + r0 * brun;
            float *cj = acc + jb * 16 * ldacc;
            for (int64_t ia = 0; ia < na; ia++) {
                const uint16_t *ai = a + ia * astride + r0 * 1024;
                tiles(ai, b0, jb + 1 < nb ? b0 + bstride : NULL, brun, bld,
                      rc, cj + ia * 32, ldacc, load);
            }
        }
    }
    _tile_release();
    if (runs == 0 && !accumulate)
        for (int64_t j = 0; j < nb * 16; j++)
            memset(acc + j * ldacc, 0, (size_t)na * 32 * sizeof(float));
    if (alpha != 1.0f)
        scale(acc, ldacc, na * 32, nb * 16, alpha);
}

static void block(const uint16_t *a, int64_t astride, int64_t na,
                  const uint16_t *b, int64_t bstride, int64_t nb, int64_t np,
                  float alpha, int accumulate, float *acc, int64_t ldacc)
{
    block_on(a, astride, na, b, bstride, 512, 64, nb, np, alpha, accumulate,
             acc, ldacc);
}

static void block_rows(const uint16_t *a, int64_t astride, int64_t na,
                       const uint16_t *b, int64_t ldb, int64_t nb,
                       int64_t np, float alpha, int accumulate, float *acc,
                       int64_t ldacc)
{
    block_on(a, astride, na, b, 16 * ldb, 32, (size_t)ldb * 2, nb, np, alpha,
             accumulate, acc, ldacc);
}

int fb_cpu_amx_available(void)
{
    /* A benign race between first callers, made well defined; the
     * permission asked twice is granted twice. */
    if (!fb_cpu_bf16_available() || fb_env_get()->cpu_no_amx)
        return 0;
    static int cached = -1;
    int v = __atomic_load_n(&cached, __ATOMIC_RELAXED);
    if (v < 0) {
        v = cpu_has_amx_bf16();
        __atomic_store_n(&cached, v, __ATOMIC_RELAXED);
    }
    return v;
}

#else /* not x86-64 Linux */

static void block(const uint16_t *a, int64_t astride, int64_t na,
                  const uint16_t *b, int64_t bstride, int64_t nb, int64_t np,
                  float alpha, int accumulate, float *acc, int64_t ldacc)
{
    (void)a, (void)astride, (void)na, (void)b, (void)bstride, (void)nb;
    (void)np, (void)alpha, (void)accumulate, (void)acc, (void)ldacc;
}
#define block_rows block

int fb_cpu_amx_available(void)
{
    return 0;
}

void fb_cpu_amx_configure(void)
{
}

#endif

const fb_bf16_engine fb_bf16_amx = {
    "cpu/bf16-amx", 32, 16, 16, 1, fb_cpu_amx_available, block, block_rows};
