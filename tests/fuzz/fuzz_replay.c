/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz_replay.c -- the fuzzer's checks in `make check`: every input of the
 * committed seed corpus (and any file or directory given as an argument)
 * run once through the libFuzzer harness, built here with the project's
 * own compiler and libfusedblas.la, so that the seeds also run under the
 * ASan, valgrind and OpenMP builds. Before them, a few checks that the
 * harness's judge and argument model can fail at all.
 *
 * A harness check that fails aborts with its diagnostic on stderr (as it
 * does under libFuzzer); tap-driver.sh reports the program's death.
 */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fuzz_judge.h"
#include "harness.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The judge rejects what it must: a result just beyond its bound, NaN
 * where a number belongs, a number where IEEE gives NaN, the wrong Inf;
 * and the model reports the lowest bad argument. */
static void judge_can_fail(void)
{
    const fz_expect b = {FZ_BOUNDED, 3.0, 1e-6, 65520.0, 0, 0.0};
    const fz_expect n = {FZ_NAN, NAN, 0.0, 65520.0, 0, 0.0};
    const fz_expect i = {FZ_IEEE, INFINITY, 0.0, 65520.0, 0, 0.0};
    /* fp16 overflow: -6.5e4 within 1e3 may round to -Inf, never to +Inf;
     * -1e3 within 1e5 (cancellation) may round to either. */
    const fz_expect o = {FZ_BOUNDED, -6.5e4, 1e3, 65520.0, 0, 0.0};
    const fz_expect w = {FZ_BOUNDED, -1e3, 1e5, 65520.0, 0, 0.0};
    tap_ok(fz_judge(3.0 + 0.9e-6, &b) && !fz_judge(3.0 + 1.1e-6, &b) &&
               !fz_judge(NAN, &b) && !fz_judge(INFINITY, &b) &&
               fz_judge(NAN, &n) && !fz_judge(0.0, &n) &&
               fz_judge(INFINITY, &i) && !fz_judge(-INFINITY, &i) &&
               !fz_judge(NAN, &i) && fz_judge(-INFINITY, &o) &&
               !fz_judge(INFINITY, &o) && fz_judge(INFINITY, &w) &&
               fz_judge(-INFINITY, &w),
           "judge: rejects beyond the bound, misplaced NaN, missing NaN, "
           "wrong Inf (an Inf only where the bound reaches the threshold "
           "on its side)");

    float a[6], c[4];
    fz_gemm g = {FB_DTYPE_F32, 0, FB_COL_MAJOR, FB_NO_TRANS, FB_NO_TRANS,
                 2, 2, 3, 1.0f, 0.0f, a, 2, a, 3, c, 2, NULL, FB_ACT_NONE,
                 0};
    const fz_outcomes ok = fz_gemm_expect(&g);
    g.lda = 1;               /* below m */
    g.c = (char *)c + 1;     /* misaligned */
    const fz_outcomes two = fz_gemm_expect(&g);
    g.k = -1;
    const fz_outcomes dim = fz_gemm_expect(&g);
    tap_ok(ok == 1u && two == (1u << 10) && dim == (1u << 7),
           "model: a valid call succeeds; of lda (10) and C (14) the lower "
           "is expected; a negative k (7) comes before both");
    fz_gemm ov = {FB_DTYPE_F32, 0, FB_COL_MAJOR, FB_NO_TRANS, FB_NO_TRANS,
                  2, 2, 3, 1.0f, 0.0f, a, 2, a, 3, a + 2, 2, NULL,
                  FB_ACT_NONE, 0};
    const fz_outcomes into_a = fz_gemm_expect(&ov);
    ov.act = (fb_activation)99;
    const fz_outcomes with_act = fz_gemm_expect(&ov);
    ov.act = FB_ACT_NONE;
    ov.k = 0;
    const fz_outcomes unread = fz_gemm_expect(&ov);
    ov.k = 3;
    ov.unplaced = 1;
    const fz_outcomes standin = fz_gemm_expect(&ov);
    tap_ok(into_a == (1u << 14) && with_act == (1u << 14) && unread == 1u &&
               standin == 1u,
           "model: C inside A is C (14), also beside a bad act (17); not "
           "when k = 0 (A unread) or for stand-in pointers");
}

static int by_name(const void *x, const void *y)
{
    return strcmp(*(char *const *)x, *(char *const *)y);
}

/* Run one input file; returns 0 if it could not be read. */
static int replay_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return 0;
    uint8_t buf[4096];
    const size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    LLVMFuzzerTestOneInput(buf, n);
    return 1;
}

/* Every regular file of a directory, in name order; returns how many. */
static int replay_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (d == NULL)
        return -1;
    char *names[1024];
    int count = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL && count < 1024;)
        if (e->d_name[0] != '.')
            names[count++] = strdup(e->d_name);
    closedir(d);
    qsort(names, (size_t)count, sizeof names[0], by_name);
    int run = 0;
    for (int i = 0; i < count; i++) {
        char path[2048];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        if (names[i] != NULL && replay_file(path))
            run++;
        free(names[i]);
    }
    return run;
}

int main(int argc, char **argv)
{
    tap_begin("fuzz_replay");
    judge_can_fail();
    LLVMFuzzerInitialize(&argc, &argv);

    const char *top = getenv("top_srcdir");
    char corpus[1024];
    snprintf(corpus, sizeof corpus, "%s/tests/fuzz/corpus", top ? top : ".");
    const int seeds = replay_dir(corpus);
    tap_ok(seeds > 0, "the %d seeds of %s pass every harness check", seeds,
           corpus);
    for (int i = 1; i < argc; i++) {
        const int run = replay_dir(argv[i]);
        tap_ok(run >= 0 || replay_file(argv[i]), "%s: %d inputs pass",
               argv[i], run >= 0 ? run : 1);
    }
    return tap_end();
}
