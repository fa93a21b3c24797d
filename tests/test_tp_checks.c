/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_tp_checks.c -- the tensor-parallel calls (fb_set_nccl_comm,
 * mlp_geglu_forward_tp, gemm_bias_act_tp) on any machine, GPU or not:
 *  - without NCCL (FUSEDBLAS_NCCL_LIBRARY naming a missing file, a
 *    relative path, a directory) fb_set_nccl_comm answers
 *    FB_STATUS_BACKEND_UNAVAILABLE with a message naming the variable;
 *  - with a stand-in NCCL (tests/.libs/libnccl.so, fake_libnccl.c): no
 *    other call maps it, nor a tensor-parallel call stopped by its
 *    arguments or by a missing communicator (/proc/self/maps), and
 *    attaching a communicator does (the witness); every bad argument is
 *    INVALID_ARGUMENT at its position with the output untouched; a
 *    communicator NCCL refuses, or on another device than the handle's,
 *    is INVALID_ARGUMENT; backends without a tensor-parallel path are
 *    NOT_SUPPORTED; host memory is INVALID_ARGUMENT where a CUDA device
 *    exists, BACKEND_UNAVAILABLE where none does -- and no call reached
 *    a collective.
 * Each case runs in a child process with its own environment
 * (tap_child.h), since the library reads it once per process.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "harness.h"
#include "tap_child.h"

#define CHILD_SECONDS 120
#define FAKE_NCCL_MAGIC 0x6e63636cu

typedef struct fake_nccl_comm {
    unsigned magic;
    int nranks, rank, device;
} fake_nccl_comm;

/* Whether the process maps a file whose name contains "libnccl". */
static int nccl_mapped(void)
{
    FILE *f = fopen("/proc/self/maps", "r");
    if (f == NULL)
        tap_bail("cannot read /proc/self/maps");
    char line[1024];
    int found = 0;
    while (!found && fgets(line, sizeof line, f) != NULL)
        found = strstr(line, "libnccl") != NULL;
    fclose(f);
    return found;
}

static fb_handle new_handle(void)
{
    fb_handle h = NULL;
    if (fb_create(&h) != FB_STATUS_SUCCESS)
        tap_bail("fb_create failed");
    return h;
}

/* ---- argument tables ---------------------------------------------------- */

/* A valid mlp_geglu_forward_tp call on host buffers; rows change one
 * argument. */
typedef struct mlp_args {
    fb_dtype dtype;
    fb_activation act;
    int64_t m, k, h, n;
    const void *x;
    int64_t ldx;
    const void *wg, *bg, *wu, *bu, *wd;
    int64_t ldwd;
    const void *bd;
    void *y;
    int64_t ldy;
} mlp_args;

static float in_buf[4096], out_buf[256];

static mlp_args mlp_base(void)
{
    /* m 2, k 3, h_local 4, n 5; Wd's rows 8 apart (a slice of h = 8) */
    const mlp_args a = {FB_DTYPE_F32, FB_ACT_SILU, 2, 3, 4, 5,
                        in_buf, 3, in_buf + 100, in_buf + 200,
                        in_buf + 300, in_buf + 400, in_buf + 500, 8,
                        in_buf + 600, out_buf, 5};
    return a;
}

static fb_status mlp_call(fb_handle h, const mlp_args *a)
{
    return mlp_geglu_forward_tp(h, a->dtype, a->act, a->m, a->k, a->h, a->n,
                                a->x, a->ldx, a->wg, a->bg, a->wu, a->bu,
                                a->wd, a->ldwd, a->bd, a->y, a->ldy);
}

typedef struct gemm_args {
    fb_dtype dtype;
    fb_layout layout;
    fb_transpose ta, tb;
    int64_t m, n, k;
    float alpha;
    const void *a;
    int64_t lda;
    const void *b;
    int64_t ldb;
    float beta;
    void *c;
    int64_t ldc;
    const void *bias;
    fb_activation act;
} gemm_args;

static gemm_args gemm_base(void)
{
    /* row-major C 4 x 5 = A (4 x 3) B (3 x 5) */
    const gemm_args g = {FB_DTYPE_BF16, FB_ROW_MAJOR, FB_NO_TRANS,
                         FB_NO_TRANS, 4, 5, 3, 1.0f, in_buf, 3,
                         in_buf + 100, 5, 0.0f, out_buf, 5, in_buf + 200,
                         FB_ACT_GELU_ERF};
    return g;
}

static fb_status gemm_call(fb_handle h, const gemm_args *g)
{
    return gemm_bias_act_tp(h, g->dtype, g->layout, g->ta, g->tb, g->m, g->n,
                            g->k, g->alpha, g->a, g->lda, g->b, g->ldb,
                            g->beta, g->c, g->ldc, g->bias, g->act);
}

/* Every bad argument of both routines, on h: INVALID_ARGUMENT at its
 * position, the output untouched, NCCL not loaded by the call. */
static void bad_arguments(fb_handle h)
{
    struct {
        const char *what;
        int pos;
        mlp_args a;
    } mr[16];
    int n = 0;
#define MROW(WHAT, POS, FIELD, VALUE)                                          \
    do {                                                                       \
        mr[n].what = WHAT, mr[n].pos = POS, mr[n].a = mlp_base();              \
        mr[n].a.FIELD = VALUE;                                                 \
        n++;                                                                   \
    } while (0)
    MROW("dtype 7", 2, dtype, (fb_dtype)7);
    MROW("gate_act 99", 3, act, (fb_activation)99);
    MROW("m < 0", 4, m, -1);
    MROW("k < 0", 5, k, -2);
    MROW("h_local < 0", 6, h, -1);
    MROW("n < 0", 7, n, -5);
    MROW("X NULL", 8, x, NULL);
    MROW("ldx < k", 9, ldx, 2);
    MROW("Wg NULL", 10, wg, NULL);
    MROW("Wu NULL", 12, wu, NULL);
    MROW("Wd NULL", 14, wd, NULL);
    MROW("ldwd < h_local", 15, ldwd, 3);
    MROW("Y NULL", 17, y, NULL);
    MROW("ldy < n", 18, ldy, 4);
    /* Y inside Wd's last row, which a contiguous n x h_local Wd would not
     * reach: (n-1) * ldwd = 32 elements in, h_local contiguous only 20. */
    MROW("Y overlaps Wd's strided extent", 17, y, (float *)in_buf + 500 + 33);
#undef MROW
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < 256; j++)
            out_buf[j] = -7.0f;
        const fb_status st = mlp_call(h, &mr[i].a);
        int untouched = 1;
        for (int j = 0; j < 256; j++)
            untouched &= out_buf[j] == -7.0f;
        tap_ok(st == FB_STATUS_INVALID_ARGUMENT &&
                   fb_handle_last_arg(h) == mr[i].pos && untouched &&
                   !nccl_mapped(),
               "mlp_geglu_forward_tp, %s: %s at %d (want %d), Y %s, NCCL "
               "%s: %s", mr[i].what, fb_status_string(st),
               fb_handle_last_arg(h), mr[i].pos,
               untouched ? "untouched" : "WRITTEN",
               nccl_mapped() ? "MAPPED" : "not loaded",
               fb_handle_last_message(h));
    }

    struct {
        const char *what;
        int pos;
        gemm_args g;
    } gr[12];
    n = 0;
#define GROW(WHAT, POS, FIELD, VALUE)                                          \
    do {                                                                       \
        gr[n].what = WHAT, gr[n].pos = POS, gr[n].g = gemm_base();             \
        gr[n].g.FIELD = VALUE;                                                 \
        n++;                                                                   \
    } while (0)
    GROW("dtype -1", 2, dtype, (fb_dtype)-1);
    GROW("layout 7", 3, layout, (fb_layout)7);
    GROW("transa 0", 4, ta, (fb_transpose)0);
    GROW("m < 0", 6, m, -1);
    GROW("k < 0", 8, k, -1);
    GROW("A NULL", 10, a, NULL);
    GROW("lda < k", 11, lda, 2);
    GROW("ldb < n", 13, ldb, 4);
    GROW("C NULL", 15, c, NULL);
    GROW("ldc < n", 16, ldc, 1);
    GROW("act 42", 18, act, (fb_activation)42);
#undef GROW
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < 256; j++)
            out_buf[j] = -7.0f;
        const fb_status st = gemm_call(h, &gr[i].g);
        int untouched = 1;
        for (int j = 0; j < 256; j++)
            untouched &= out_buf[j] == -7.0f;
        tap_ok(st == FB_STATUS_INVALID_ARGUMENT &&
                   fb_handle_last_arg(h) == gr[i].pos && untouched &&
                   !nccl_mapped(),
               "gemm_bias_act_tp, %s: %s at %d (want %d), C %s: %s",
               gr[i].what, fb_status_string(st), fb_handle_last_arg(h),
               gr[i].pos, untouched ? "untouched" : "WRITTEN",
               fb_handle_last_message(h));
    }
}

/* ---- phases ------------------------------------------------------------- */

/* FUSEDBLAS_NCCL_LIBRARY names nothing loadable: attaching is
 * BACKEND_UNAVAILABLE with a message naming the variable and why. */
static void phase_unavailable(const char *expect)
{
    fb_handle h = new_handle();
    fake_nccl_comm comm = {FAKE_NCCL_MAGIC, 2, 0, 0};
    const fb_status st = fb_set_nccl_comm(h, &comm);
    const char *msg = fb_handle_last_message(h);
    tap_ok(st == FB_STATUS_BACKEND_UNAVAILABLE &&
               strstr(msg, "FUSEDBLAS_NCCL_LIBRARY") != NULL &&
               strstr(msg, expect) != NULL,
           "fb_set_nccl_comm without NCCL: %s: %s", fb_status_string(st),
           msg);
    const mlp_args a = mlp_base();
    const fb_status st2 = mlp_call(h, &a);
    tap_ok(st2 == FB_STATUS_INVALID_ARGUMENT && fb_handle_last_arg(h) == 1 &&
               strstr(fb_handle_last_message(h), "fb_set_nccl_comm") != NULL,
           "then mlp_geglu_forward_tp: %s at %d: %s", fb_status_string(st2),
           fb_handle_last_arg(h), fb_handle_last_message(h));
    tap_ok(!nccl_mapped(), "no NCCL is mapped");
    fb_destroy(h);
}

static long collectives(void)
{
    void *lib = dlopen(FB_FAKE_LIBNCCL, RTLD_NOW | RTLD_NOLOAD);
    if (lib == NULL)
        return -1;
    const long *n = (const long *)dlsym(lib, "fake_nccl_collectives");
    const long v = n ? *n : -1;
    dlclose(lib);
    return v;
}

static void phase_fake(void)
{
    fb_handle h = new_handle();

    /* Other calls, on host data, and bad or premature TP calls load no
     * NCCL. */
    float a[16] = {1, 2, 3, 4}, c[16];
    fb_status st = sgemm_bias_act(h, FB_ROW_MAJOR, FB_NO_TRANS, FB_NO_TRANS, 2,
                                  2, 2, 1.0f, a, 2, a, 2, 0.0f, c, 2, NULL,
                                  FB_ACT_NONE);
    st |= mlp_geglu_forward(h, FB_DTYPE_F32, FB_ACT_SILU, 1, 2, 2, 2, a, 2,
                            a, NULL, a + 4, NULL, a + 8, NULL, c, 2);
    tap_ok(st == FB_STATUS_SUCCESS && !nccl_mapped(),
           "sgemm_bias_act and mlp_geglu_forward on the cpu (%s): NCCL %s",
           fb_status_string(st), nccl_mapped() ? "MAPPED" : "not loaded");

    const mlp_args base = mlp_base();
    st = mlp_call(h, &base);
    tap_ok(st == FB_STATUS_INVALID_ARGUMENT && fb_handle_last_arg(h) == 1 &&
               !nccl_mapped(),
           "mlp_geglu_forward_tp with no communicator: %s at %d, NCCL %s: "
           "%s", fb_status_string(st), fb_handle_last_arg(h),
           nccl_mapped() ? "MAPPED" : "not loaded",
           fb_handle_last_message(h));
    const gemm_args gbase = gemm_base();
    st = gemm_call(h, &gbase);
    tap_ok(st == FB_STATUS_INVALID_ARGUMENT && fb_handle_last_arg(h) == 1,
           "gemm_bias_act_tp with no communicator: %s at %d: %s",
           fb_status_string(st), fb_handle_last_arg(h),
           fb_handle_last_message(h));
    bad_arguments(h);

    /* A communicator NCCL refuses; then the witness: NCCL is mapped. */
    fake_nccl_comm bad = {0, 2, 0, 0};
    st = fb_set_nccl_comm(h, &bad);
    tap_ok(st == FB_STATUS_INVALID_ARGUMENT && fb_handle_last_arg(h) == 2,
           "fb_set_nccl_comm(a communicator NCCL refuses): %s at %d: %s",
           fb_status_string(st), fb_handle_last_arg(h),
           fb_handle_last_message(h));
    tap_ok(nccl_mapped(), "attaching loaded the stand-in NCCL (the maps "
                          "check sees it)");
    fake_nccl_comm out_of_range = {FAKE_NCCL_MAGIC, 2, 2, 0};
    st = fb_set_nccl_comm(h, &out_of_range);
    tap_ok(st == FB_STATUS_INVALID_ARGUMENT && fb_handle_last_arg(h) == 2,
           "fb_set_nccl_comm(rank 2 of 2): %s at %d: %s",
           fb_status_string(st), fb_handle_last_arg(h),
           fb_handle_last_message(h));

    /* The communicator on device 1, the handle on device 0. */
    fake_nccl_comm dev1 = {FAKE_NCCL_MAGIC, 2, 1, 1};
    st = fb_set_nccl_comm(h, &dev1);
    tap_ok(st == FB_STATUS_SUCCESS, "fb_set_nccl_comm(rank 1 of 2 on "
           "device 1): %s", fb_status_string(st));
    st = mlp_call(h, &base);
    tap_ok(st == FB_STATUS_INVALID_ARGUMENT && fb_handle_last_arg(h) == 1 &&
               strstr(fb_handle_last_message(h), "device 1") != NULL,
           "mlp_geglu_forward_tp, communicator on device 1, handle on 0: "
           "%s at %d: %s", fb_status_string(st), fb_handle_last_arg(h),
           fb_handle_last_message(h));

    /* On device 0: the backends without a path, then auto with host
     * memory. */
    fake_nccl_comm dev0 = {FAKE_NCCL_MAGIC, 2, 0, 0};
    st = fb_set_nccl_comm(h, &dev0);
    tap_ok(st == FB_STATUS_SUCCESS, "fb_set_nccl_comm(rank 0 of 2 on "
           "device 0): %s", fb_status_string(st));
    const fb_backend none[2] = {FB_BACKEND_CPU, FB_BACKEND_CUDA_FUSED};
    for (int i = 0; i < 2; i++) {
        if (fb_set_backend(h, none[i]) != FB_STATUS_SUCCESS)
            tap_bail("fb_set_backend failed");
        st = mlp_call(h, &base);
        tap_ok(st == FB_STATUS_NOT_SUPPORTED,
               "mlp_geglu_forward_tp on backend %s: %s: %s",
               fb_backend_name(none[i]), fb_status_string(st),
               fb_handle_last_message(h));
    }
    if (fb_set_backend(h, FB_BACKEND_AUTO) != FB_STATUS_SUCCESS)
        tap_bail("fb_set_backend failed");
    const int gpu = fb_backend_available(FB_BACKEND_CUDA) ==
                    FB_STATUS_SUCCESS;
    st = mlp_call(h, &base);
    if (gpu)
        tap_ok(st == FB_STATUS_INVALID_ARGUMENT && fb_handle_last_arg(h) == 8,
               "mlp_geglu_forward_tp on host memory, a GPU present: %s at "
               "%d: %s", fb_status_string(st), fb_handle_last_arg(h),
               fb_handle_last_message(h));
    else
        tap_ok(st == FB_STATUS_BACKEND_UNAVAILABLE,
               "mlp_geglu_forward_tp, no usable GPU: %s: %s",
               fb_status_string(st), fb_handle_last_message(h));
    st = gemm_call(h, &gbase);
    if (gpu)
        tap_ok(st == FB_STATUS_INVALID_ARGUMENT &&
                   fb_handle_last_arg(h) == 10,
               "gemm_bias_act_tp on host memory, a GPU present: %s at %d: "
               "%s", fb_status_string(st), fb_handle_last_arg(h),
               fb_handle_last_message(h));
    else
        tap_ok(st == FB_STATUS_BACKEND_UNAVAILABLE,
               "gemm_bias_act_tp, no usable GPU: %s: %s",
               fb_status_string(st), fb_handle_last_message(h));
    tap_ok(collectives() == 0, "no call reached a collective (%ld)",
           collectives());

    /* Detached: back to "no communicator". */
    st = fb_set_nccl_comm(h, NULL);
    const fb_status st2 = mlp_call(h, &base);
    tap_ok(st == FB_STATUS_SUCCESS && st2 == FB_STATUS_INVALID_ARGUMENT &&
               fb_handle_last_arg(h) == 1,
           "fb_set_nccl_comm(NULL) detaches (%s); then %s at %d",
           fb_status_string(st), fb_status_string(st2),
           fb_handle_last_arg(h));

    /* A handle that is not live. */
    fb_destroy(h);
    st = fb_set_nccl_comm(h, &dev0);
    tap_ok(st == FB_STATUS_INVALID_ARGUMENT,
           "fb_set_nccl_comm on a destroyed handle: %s",
           fb_status_string(st));
    st = mlp_call((fb_handle)(uintptr_t)8, &base);
    tap_ok(st == FB_STATUS_INVALID_ARGUMENT,
           "mlp_geglu_forward_tp on a made-up handle: %s",
           fb_status_string(st));
}

int main(int argc, char **argv)
{
    const char *phase = tap_child_init(argc, argv);
    tap_begin("test_tp_checks");
    if (phase != NULL) {
        if (strcmp(phase, "fake") == 0)
            phase_fake();
        else if (strcmp(phase, "missing") == 0)
            phase_unavailable("No such file");
        else if (strcmp(phase, "relative") == 0)
            phase_unavailable("not an absolute path");
        else if (strcmp(phase, "directory") == 0)
            phase_unavailable("not a regular file");
        return tap_end();
    }
    const char *missing[] = {
        "FUSEDBLAS_NCCL_LIBRARY=/nonexistent/fusedblas/libnccl.so.2", NULL};
    const char *relative[] = {"FUSEDBLAS_NCCL_LIBRARY=libnccl.so.2", NULL};
    const char *directory[] = {"FUSEDBLAS_NCCL_LIBRARY=/", NULL};
    const char *fake[] = {"FUSEDBLAS_NCCL_LIBRARY=" FB_FAKE_LIBNCCL, NULL};
    tap_rerun("missing", missing, CHILD_SECONDS);
    tap_rerun("relative", relative, CHILD_SECONDS);
    tap_rerun("directory", directory, CHILD_SECONDS);
    tap_rerun("fake", fake, CHILD_SECONDS);
    return tap_end();
}
