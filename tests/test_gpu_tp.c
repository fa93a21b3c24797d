/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_gpu_tp.c -- mlp_geglu_forward_tp and gemm_bias_act_tp on two GPUs
 * with the real NCCL, in both ways a program can drive them:
 *
 *   processes  two child processes, one per GPU; rank 0 makes the
 *              ncclUniqueId and hands it to rank 1 through a pipe;
 *              ncclCommInitRank in each;
 *   threads    one process, ncclCommInitAll, one thread per GPU.
 *
 * The same rank program runs in both. Every case's full layer is made
 * once, before any rank starts (so both ranks see the same data), with
 * the double oracle and its per-element bound (tests/oracle.h, tol_mlp,
 * tol_gemm); each rank then takes its slice in Megatron's layout (rows of
 * Wg, Wu, bg, bu and a column slice of Wd in place, ldwd = h; for the gemm
 * a k slice of op(A) and op(B)), and checks:
 *  - Y within the contract's bound of the oracle, every element, and the
 *    padding of Y untouched; the inputs untouched;
 *  - a second call gives the same bits (every run), and so does the call
 *    captured in a CUDA graph and replayed;
 *  - the single-GPU mlp_geglu_forward / gemm_bias_act of the whole layer
 *    on this rank's GPU within the sum of both bounds;
 *  - the ranks' Y, bit for bit (each rank reports a hash of its Y; the
 *    parent compares);
 *  - the path: whether the call chunked, and which form its collectives
 *    took (a reduce-scatter, per-rank epilogue and all-gather per chunk,
 *    or the all-reduce);
 *  - bad arguments: shapes that differ between the ranks (k, m, whether
 *    ldy == n, another routine) are INVALID_ARGUMENT on both ranks at the
 *    position of the first field that differs, with Y untouched and the
 *    communicator still usable afterwards; a handle on another device
 *    than the communicator's, and host memory, are INVALID_ARGUMENT
 *    without any collective.
 * Uneven shards (h_local 104 of 264; h_local 0 on one rank) are cases too,
 * and so are m large enough for the chunked path (its communication
 * overlapped with compute), all captured: in the reduce-scatter form
 * (bf16 and fp16, n not a multiple of 8, uneven shards, h_local 0 on one
 * rank) and in each of its fallbacks to the all-reduce (ldy != n, a last
 * chunk of an odd number of rows, fp32).
 *
 * A watchdog (alarm) ends a run that hangs -- a rank that never joins a
 * collective -- with a "Bail out!" that says so, killing the children.
 * "1..0 # SKIP" without two CUDA devices or without NCCL
 * (FUSEDBLAS_NCCL_LIBRARY, else libnccl.so.2, as the library finds it).
 * Arguments: "processes" or "threads" runs only that mode.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cuda_runtime_api.h>
#include "cuda_mem.h"
#include "gemm_check.h"
#include "harness.h"
#include "mlp_check.h"
#include "oracle.h"

#define NRANKS 2
#define WATCHDOG_S 120
#define MAX_POINTS 128
#define MAX_HASHES 32

/* ---- NCCL, declared from its documented C ABI (no nccl.h needed) ----- */

typedef struct nccl_unique_id {
    char internal[128]; /* NCCL_UNIQUE_ID_BYTES */
} nccl_unique_id;

static struct {
    int (*get_unique_id)(nccl_unique_id *id);
    int (*comm_init_rank)(void **comm, int nranks, nccl_unique_id id,
                          int rank);
    int (*comm_init_all)(void **comms, int ndev, const int *devlist);
    int (*comm_destroy)(void *comm);
    const char *(*error_string)(int result);
} nccl;

static int load_nccl(char *why, size_t len)
{
    const char *path = getenv("FUSEDBLAS_NCCL_LIBRARY");
    if (path == NULL || *path == '\0')
        path = "libnccl.so.2";
    void *lib = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
    if (lib == NULL) {
        snprintf(why, len, "no NCCL: %s", dlerror());
        return 0;
    }
    struct {
        const char *name;
        void *fn;
        size_t size;
    } syms[5] = {
        {"ncclGetUniqueId", &nccl.get_unique_id, sizeof nccl.get_unique_id},
        {"ncclCommInitRank", &nccl.comm_init_rank,
         sizeof nccl.comm_init_rank},
        {"ncclCommInitAll", &nccl.comm_init_all, sizeof nccl.comm_init_all},
        {"ncclCommDestroy", &nccl.comm_destroy, sizeof nccl.comm_destroy},
        {"ncclGetErrorString", &nccl.error_string, sizeof nccl.error_string}};
    for (int i = 0; i < 5; i++) {
        void *s = dlsym(lib, syms[i].name);
        if (s == NULL) {
            snprintf(why, len, "no NCCL: %s has no %s", path, syms[i].name);
            return 0;
        }
        memcpy(syms[i].fn, &s, syms[i].size);
    }
    return 1;
}

/* ---- the watchdog ------------------------------------------------------- */

static pid_t children[NRANKS];

/* SIGALRM (the watchdog) or SIGTERM (a caller's time limit): say so, and
 * take the rank processes down too, so that no rank is left holding a
 * GPU. */
static void watchdog(int sig)
{
    static const char alarm_msg[] =
        "Bail out! test_gpu_tp: no result after the watchdog's time: a rank "
        "hangs (a collective that another rank never joined?)\n";
    static const char term_msg[] =
        "Bail out! test_gpu_tp: terminated (SIGTERM) before the end\n";
    const char *msg = sig == SIGALRM ? alarm_msg : term_msg;
    const size_t len = sig == SIGALRM ? sizeof alarm_msg - 1
                                      : sizeof term_msg - 1;
    ssize_t w = write(STDOUT_FILENO, msg, len);
    (void)w;
    for (int r = 0; r < NRANKS; r++)
        if (children[r] > 0 && children[r] != getpid())
            kill(children[r], SIGKILL);
    _exit(98);
}

static void arm_watchdog(void)
{
    signal(SIGALRM, watchdog);
    signal(SIGTERM, watchdog);
    alarm(WATCHDOG_S);
}

/* ---- the cases ---------------------------------------------------------- */

typedef struct mlp_tp_case {
    mlp_case c;
    int64_t h0;    /* rank 0 holds rows [0, h0), rank 1 [h0, h) */
    int chunks;    /* the path's "chunks=" (0: none, one all-reduce) */
    int rsag;      /* 1: the chunks' reduce-scatter form; 0: all-reduce */
    mlp_data d;    /* the whole layer (host images) */
    double *ref;   /* the oracle's Y (m x n, ldy) */
    double *bound; /* its bound per element */
} mlp_tp_case;

typedef struct gemm_tp_case {
    gemm_case c;
    int64_t k0;    /* rank 0 holds k in [0, k0), rank 1 [k0, k) */
    gemm_data d;
    double *ref, *bound; /* C's shape (ldc) */
} gemm_tp_case;

static mlp_tp_case mcases[] = {
    /* dtype, act, m, k, h, n, ldx, ldy, biases, offset; h0 */
    {.c = {FB_DTYPE_BF16, FB_ACT_SILU, 16, 512, 1024, 512, 512, 512,
           MLP_ALL_BIASES, 0},
     .h0 = 512},
    {.c = {FB_DTYPE_F16, FB_ACT_GELU_TANH, 37, 200, 264, 136, 203, 141,
           MLP_ALL_BIASES, 0},
     .h0 = 104},
    {.c = {FB_DTYPE_F32, FB_ACT_GELU_ERF, 5, 96, 130, 70, 96, 70, 0, 0},
     .h0 = 65},
    {.c = {FB_DTYPE_BF16, FB_ACT_SILU, 300, 256, 512, 384, 256, 384, MLP_BD,
           0},
     .h0 = 256},
    /* rank 1 holds nothing: h_local = 0 */
    {.c = {FB_DTYPE_BF16, FB_ACT_RELU, 1, 64, 64, 64, 64, 64, MLP_ALL_BIASES,
           0},
     .h0 = 64},
    /* prefill-sized m: the rows cut into chunks whose communication
     * overlaps the next chunk's compute, 1000 rows as 256 + 256 + 256 +
     * 232; Y padded (ldy != n), so the all-reduce */
    {.c = {FB_DTYPE_BF16, FB_ACT_SILU, 1000, 256, 512, 384, 264, 392,
           MLP_ALL_BIASES, 0},
     .h0 = 256, .chunks = 4},
    /* the reduce-scatter form: 16-bit, ldy == n, chunks even; n not a
     * multiple of 8 (the partial's rows padded, Y's not) */
    {.c = {FB_DTYPE_BF16, FB_ACT_SILU, 1024, 256, 512, 380, 264, 380,
           MLP_ALL_BIASES, 0},
     .h0 = 256, .chunks = 4, .rsag = 1},
    /* and fp16, uneven shards, 2048 rows as 4 x 512 */
    {.c = {FB_DTYPE_F16, FB_ACT_GELU_TANH, 2048, 128, 192, 198, 136, 198,
           MLP_ALL_BIASES, 0},
     .h0 = 80, .chunks = 4, .rsag = 1},
    /* and rank 1 holding nothing: its zero partial chunked alike */
    {.c = {FB_DTYPE_F16, FB_ACT_RELU, 512, 64, 128, 64, 64, 64, MLP_BD, 0},
     .h0 = 128, .chunks = 4, .rsag = 1},
    /* all-reduce: the last chunk's 233 rows do not split over 2 ranks */
    {.c = {FB_DTYPE_BF16, FB_ACT_GELU_ERF, 1001, 128, 256, 264, 128, 264,
           MLP_ALL_BIASES, 0},
     .h0 = 128, .chunks = 4},
    /* all-reduce: fp32 output, ldy == n, chunks 192 x 3 + 24 */
    {.c = {FB_DTYPE_F32, FB_ACT_GELU_ERF, 600, 96, 130, 72, 96, 72,
           MLP_ALL_BIASES, 0},
     .h0 = 65, .chunks = 4},
};
#define N_MCASES ((int)(sizeof mcases / sizeof mcases[0]))

static gemm_tp_case gcases[] = {
    /* dtype, layout, ta, tb, m, n, k, lda, ldb, ldc, alpha, beta,
     * has_bias, act, offset, note; k0 */
    {.c = {FB_DTYPE_BF16, FB_ROW_MAJOR, FB_NO_TRANS, FB_NO_TRANS, 16, 384,
           512, 0, 0, 0, 1.0f, 0.0f, 1, FB_ACT_GELU_TANH, 0, NULL},
     .k0 = 256},
    {.c = {FB_DTYPE_F32, FB_COL_MAJOR, FB_NO_TRANS, FB_TRANS, 33, 70, 130, 0,
           0, 0, 0.75f, 0.5f, 1, FB_ACT_RELU, 0, NULL},
     .k0 = 65},
    {.c = {FB_DTYPE_F16, FB_ROW_MAJOR, FB_TRANS, FB_NO_TRANS, 8, 64, 96, 0, 0,
           0, 1.0f, 0.0f, 0, FB_ACT_SILU, 0, NULL},
     .k0 = 40},
};
#define N_GCASES ((int)(sizeof gcases / sizeof gcases[0]))

static tarith arith_of(fb_dtype t)
{
    return t == FB_DTYPE_F32 ? ARITH_FP32 : ARITH_TENSOR;
}

static void make_mlp_case(mlp_tp_case *tc)
{
    const mlp_case *c = &tc->c;
    mlp_data_make(&tc->d, c);
    double *X = tbuf_to_double(&tc->d.X), *Wg = tbuf_to_double(&tc->d.Wg);
    double *Wu = tbuf_to_double(&tc->d.Wu), *Wd = tbuf_to_double(&tc->d.Wd);
    double *bg = c->biases & MLP_BG ? tbuf_to_double(&tc->d.bg) : NULL;
    double *bu = c->biases & MLP_BU ? tbuf_to_double(&tc->d.bu) : NULL;
    double *bd = c->biases & MLP_BD ? tbuf_to_double(&tc->d.bd) : NULL;
    double *H = malloc((size_t)(c->m * c->h + 1) * sizeof *H);
    tc->ref = tbuf_to_double(&tc->d.Y);
    tc->bound = tbuf_to_double(&tc->d.Y);
    if (H == NULL)
        tap_bail("out of host memory");
    oracle_mlp_geglu(c->dtype, c->act, c->m, c->k, c->h, c->n, X, c->ldx, Wg,
                     bg, Wu, bu, Wd, bd, tc->ref, c->ldy, H);
    const tol t = tol_make(c->dtype, arith_of(c->dtype));
    tol_mlp(&t, c->act, c->m, c->k, c->h, c->n, X, c->ldx, Wg, bg, Wu, bu,
            Wd, bd, H, tc->ref, c->ldy, tc->bound);
    double *all[8] = {X, Wg, Wu, Wd, bg, bu, bd, H};
    for (int i = 0; i < 8; i++)
        free(all[i]);
}

static void make_gemm_case(gemm_tp_case *tc)
{
    gemm_case *c = &tc->c;
    gemm_case_set_lds(c, 0, 0, 0);
    gemm_data_make(&tc->d, c);
    double *A = tbuf_to_double(&tc->d.A), *B = tbuf_to_double(&tc->d.B);
    double *C = tbuf_to_double(&tc->d.C);
    double *bias = c->has_bias ? tbuf_to_double(&tc->d.bias) : NULL;
    tc->ref = tbuf_to_double(&tc->d.C);
    tc->bound = tbuf_to_double(&tc->d.C);
    oracle_gemm_bias_act(c->layout, c->transa, c->transb, c->m, c->n, c->k,
                         c->alpha, A, c->lda, B, c->ldb, c->beta, tc->ref,
                         c->ldc, bias, c->act);
    double *G = tbuf_to_double(&tc->d.C);
    oracle_gemm_gauge(c->layout, c->transa, c->transb, c->m, c->n, c->k,
                      c->alpha, A, c->lda, B, c->ldb, c->beta, C, c->ldc,
                      bias, G);
    const tol t = tol_make(c->dtype, arith_of(c->dtype));
    for (int64_t i = 0; i < c->m; i++)
        for (int64_t j = 0; j < c->n; j++) {
            const int64_t e = oracle_at(c->layout, i, j, c->ldc);
            tc->bound[e] = tol_gemm(&t, c->k, c->act, G[e], tc->ref[e]);
        }
    free(A), free(B), free(C), free(bias), free(G);
}

/* ---- one rank's run ----------------------------------------------------- */

/* What a rank reports: its test points and the hash of each result. */
typedef struct report {
    int n;
    int pass[MAX_POINTS];
    char text[MAX_POINTS][240];
    int nhash;
    uint64_t hash[MAX_HASHES];
} report;

static int point(report *rp, int pass, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int point(report *rp, int pass, const char *fmt, ...)
{
    if (rp->n == MAX_POINTS)
        return pass;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(rp->text[rp->n], sizeof rp->text[rp->n], fmt, ap);
    va_end(ap);
    rp->pass[rp->n++] = pass;
    return pass;
}

typedef struct placed {
    void *alloc, *data;
} placed;

static placed place(const tbuf *b)
{
    placed p;
    p.alloc = tbuf_place(b, &tmem_cuda, &p.data);
    if (p.alloc == NULL)
        tap_bail("cudaMalloc failed");
    return p;
}

static void *at(const placed *p, fb_dtype t, int64_t elems)
{
    return (char *)p->data + elems * (int64_t)dt_size(t);
}

/* Y read back against the oracle: the number of elements outside the
 * bound, the largest error/bound, and the hash of the window's bits. */
static void judge_y(const tbuf *img, const tshape *s, const double *ref,
                    const double *bound, int *bad, double *worst,
                    uint64_t *hash)
{
    double *y = tbuf_to_double(img);
    *bad = 0;
    *worst = 0;
    uint64_t h = 1469598103934665603ull;
    int64_t i, j;
    for (int64_t e = 0; e < img->nelem; e++) {
        if (!tshape_window(s, e, &i, &j))
            continue;
        double ratio = 0;
        if (judge(y[e], ref[e], ref[e], FB_ACT_NONE, bound[e], &ratio))
            (*bad)++;
        if (ratio > *worst)
            *worst = ratio;
        const uint32_t bits = dt_bits(img->dtype, tbuf_data(img), e);
        h = (h ^ bits) * 1099511628211ull;
    }
    *hash = h;
    free(y);
}

/* Whether the elements of img outside the window hold what the placed
 * image held (the poisoned Y's padding and guards). */
static int padding_untouched(const tbuf *before, const tbuf *after,
                             const tshape *s)
{
    tcheck chk;
    tcheck_init(&chk);
    check_untouched(&chk, "Y", before, after, s);
    return !chk.failed;
}

static void run_mlp_case(report *rp, fb_handle h, int rank, mlp_tp_case *tc,
                         int capture)
{
    const mlp_case *c = &tc->c;
    const fb_dtype t = c->dtype;
    const int64_t h0 = rank == 0 ? 0 : tc->h0;
    const int64_t hl = rank == 0 ? tc->h0 : c->h - tc->h0;
    char label[160];
    mlp_case_label(c, label, sizeof label);
    placed X = place(&tc->d.X), Wg = place(&tc->d.Wg), Wu = place(&tc->d.Wu);
    placed Wd = place(&tc->d.Wd), bg = place(&tc->d.bg), bu = place(&tc->d.bu);
    placed bd = place(&tc->d.bd), Y = place(&tc->d.Y);
    const void *pbg = c->biases & MLP_BG ? at(&bg, t, h0) : NULL;
    const void *pbu = c->biases & MLP_BU ? at(&bu, t, h0) : NULL;
    const void *pbd = c->biases & MLP_BD ? bd.data : NULL;

    fb_status st = mlp_geglu_forward_tp(
        h, t, c->act, c->m, c->k, hl, c->n, X.data, c->ldx,
        at(&Wg, t, h0 * c->k), pbg, at(&Wu, t, h0 * c->k), pbu,
        at(&Wd, t, h0), c->h, pbd, Y.data, c->ldy);
    char path[160];
    snprintf(path, sizeof path, "%s", fb_handle_last_path(h));
    tbuf y1;
    tbuf_fetch(&tc->d.Y, &tmem_cuda, Y.alloc, &y1);
    int bad, untouched;
    double worst;
    uint64_t hash1;
    judge_y(&y1, &tc->d.sy, tc->ref, tc->bound, &bad, &worst, &hash1);
    untouched = padding_untouched(&tc->d.Y, &y1, &tc->d.sy);
    point(rp, st == FB_STATUS_SUCCESS && bad == 0 && untouched,
          "rank %d h_local=%lld %s: %s, %d outside the bound (worst "
          "error/bound %.3g), padding %s, path %s%s%s",
          rank, (long long)hl, label, fb_status_string(st), bad, worst,
          untouched ? "untouched" : "WRITTEN", path,
          st ? ": " : "", st ? fb_handle_last_message(h) : "");
    if (rp->nhash < MAX_HASHES)
        rp->hash[rp->nhash++] = hash1;
    {
        char want[16], form[48];
        snprintf(want, sizeof want, "chunks=%d,", tc->chunks);
        if (tc->rsag)
            snprintf(form, sizeof form, ",rs(f32,%d)+fb_epilogue+ag(%s,%d))",
                     NRANKS, t == FB_DTYPE_F16 ? "f16" : "bf16", NRANKS);
        else
            snprintf(form, sizeof form, ",allreduce(f32,%d),fb_epilogue)",
                     NRANKS);
        const int ok = (tc->chunks ? strstr(path, want) != NULL
                                   : strstr(path, "chunks=") == NULL) &&
                       strstr(path, form) != NULL;
        point(rp, ok, "rank %d m=%lld: the path has %s and %s%s", rank,
              (long long)c->m, tc->chunks ? want : "no chunks", form,
              ok ? "" : " (NOT SO)");
    }

    /* Again: the same bits. */
    st = mlp_geglu_forward_tp(h, t, c->act, c->m, c->k, hl, c->n, X.data,
                              c->ldx, at(&Wg, t, h0 * c->k), pbg,
                              at(&Wu, t, h0 * c->k), pbu, at(&Wd, t, h0),
                              c->h, pbd, Y.data, c->ldy);
    tbuf y2;
    tbuf_fetch(&tc->d.Y, &tmem_cuda, Y.alloc, &y2);
    point(rp, st == FB_STATUS_SUCCESS && memcmp(y1.img, y2.img, y1.bytes) == 0,
          "rank %d %s: a second call gives the same bits (%s)", rank, label,
          fb_status_string(st));
    tbuf_free(&y2);

    if (capture) {
        /* The agreed shape makes no host synchronisation: capture it. */
        cudaStream_t s;
        cudaGraph_t g = NULL;
        cudaGraphExec_t ge = NULL;
        if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) !=
            cudaSuccess)
            tap_bail("cudaStreamCreate failed");
        if (fb_set_cuda_stream(h, s) != FB_STATUS_SUCCESS)
            tap_bail("fb_set_cuda_stream failed");
        /* Poison Y again, so that the replay must write it. */
        tmem_cuda.put(Y.alloc, tc->d.Y.img, tc->d.Y.bytes);
        cudaError_t e = cudaStreamBeginCapture(
            s, cudaStreamCaptureModeThreadLocal);
        fb_status cst = FB_STATUS_INTERNAL;
        if (e == cudaSuccess) {
            cst = mlp_geglu_forward_tp(
                h, t, c->act, c->m, c->k, hl, c->n, X.data, c->ldx,
                at(&Wg, t, h0 * c->k), pbg, at(&Wu, t, h0 * c->k), pbu,
                at(&Wd, t, h0), c->h, pbd, Y.data, c->ldy);
            e = cudaStreamEndCapture(s, &g);
        }
        if (e == cudaSuccess)
            e = cudaGraphInstantiate(&ge, g, 0);
        if (e == cudaSuccess)
            e = cudaGraphLaunch(ge, s);
        if (e == cudaSuccess)
            e = cudaStreamSynchronize(s);
        tbuf y3;
        tbuf_fetch(&tc->d.Y, &tmem_cuda, Y.alloc, &y3);
        point(rp, cst == FB_STATUS_SUCCESS && e == cudaSuccess &&
                      memcmp(y1.img, y3.img, y1.bytes) == 0,
              "rank %d %s: captured in a CUDA graph and replayed: %s, %s, "
              "%s", rank, label, fb_status_string(cst),
              cudaGetErrorString(e),
              memcmp(y1.img, y3.img, y1.bytes) == 0 ? "the same bits"
                                                    : "OTHER BITS");
        tbuf_free(&y3);
        if (ge)
            cudaGraphExecDestroy(ge);
        if (g)
            cudaGraphDestroy(g);
        if (fb_set_cuda_stream(h, NULL) != FB_STATUS_SUCCESS)
            tap_bail("fb_set_cuda_stream failed");
        cudaStreamDestroy(s);
    }

    /* The inputs as they were placed. */
    {
        const tbuf *in[7] = {&tc->d.X,  &tc->d.Wg, &tc->d.Wu, &tc->d.Wd,
                             &tc->d.bg, &tc->d.bu, &tc->d.bd};
        const placed *pl[7] = {&X, &Wg, &Wu, &Wd, &bg, &bu, &bd};
        int same = 1;
        for (int i = 0; i < 7; i++) {
            tbuf after;
            tbuf_fetch(in[i], &tmem_cuda, pl[i]->alloc, &after);
            same &= memcmp(after.img, in[i]->img, after.bytes) == 0;
            tbuf_free(&after);
        }
        point(rp, same, "rank %d %s: the inputs are untouched", rank,
              label);
    }

    /* The whole layer on this GPU alone, by the plain routine. */
    fb_handle one;
    if (fb_create(&one) != FB_STATUS_SUCCESS ||
        fb_set_cuda_device(one, rank) != FB_STATUS_SUCCESS)
        tap_bail("fb_create failed");
    tmem_cuda.put(Y.alloc, tc->d.Y.img, tc->d.Y.bytes);
    st = mlp_geglu_forward(one, t, c->act, c->m, c->k, c->h, c->n, X.data,
                           c->ldx, Wg.data,
                           c->biases & MLP_BG ? bg.data : NULL, Wu.data,
                           c->biases & MLP_BU ? bu.data : NULL, Wd.data, pbd,
                           Y.data, c->ldy);
    tbuf ys;
    tbuf_fetch(&tc->d.Y, &tmem_cuda, Y.alloc, &ys);
    double *a = tbuf_to_double(&y1), *b = tbuf_to_double(&ys);
    int64_t far = 0, i, j;
    for (int64_t e = 0; e < y1.nelem; e++)
        if (tshape_window(&tc->d.sy, e, &i, &j) &&
            !(fabs(a[e] - b[e]) <= 2 * tc->bound[e]))
            far++;
    point(rp, st == FB_STATUS_SUCCESS && far == 0,
          "rank %d %s: within both bounds of the single-GPU "
          "mlp_geglu_forward (%s, %s): %lld elements not", rank, label,
          fb_status_string(st), fb_handle_last_path(one), (long long)far);
    free(a), free(b);
    tbuf_free(&ys);
    fb_destroy(one);
    tbuf_free(&y1);
    placed all[8] = {X, Wg, Wu, Wd, bg, bu, bd, Y};
    for (int k = 0; k < 8; k++)
        tmem_cuda.release(all[k].alloc);
}

/* op(A)'s column k0 and op(B)'s row k0 in their storage: where a rank's
 * k slice starts. */
static int64_t slice_a(const gemm_case *c, int64_t k0)
{
    return c->transa != FB_NO_TRANS ? oracle_at(c->layout, k0, 0, c->lda)
                                    : oracle_at(c->layout, 0, k0, c->lda);
}

static int64_t slice_b(const gemm_case *c, int64_t k0)
{
    return c->transb != FB_NO_TRANS ? oracle_at(c->layout, 0, k0, c->ldb)
                                    : oracle_at(c->layout, k0, 0, c->ldb);
}

static void run_gemm_case(report *rp, fb_handle h, int rank,
                          gemm_tp_case *tc)
{
    const gemm_case *c = &tc->c;
    const fb_dtype t = c->dtype;
    const int64_t k0 = rank == 0 ? 0 : tc->k0;
    const int64_t kl = rank == 0 ? tc->k0 : c->k - tc->k0;
    char label[200];
    gemm_case_label(c, label, sizeof label);
    placed A = place(&tc->d.A), B = place(&tc->d.B), C = place(&tc->d.C);
    placed bias = place(&tc->d.bias);
    const void *pbias = c->has_bias ? bias.data : NULL;
    fb_status st = gemm_bias_act_tp(
        h, t, c->layout, c->transa, c->transb, c->m, c->n, kl, c->alpha,
        at(&A, t, slice_a(c, k0)), c->lda, at(&B, t, slice_b(c, k0)), c->ldb,
        c->beta, C.data, c->ldc, pbias, c->act);
    tbuf c1;
    tbuf_fetch(&tc->d.C, &tmem_cuda, C.alloc, &c1);
    int bad, untouched;
    double worst;
    uint64_t hash;
    judge_y(&c1, &tc->d.sc, tc->ref, tc->bound, &bad, &worst, &hash);
    untouched = padding_untouched(&tc->d.C, &c1, &tc->d.sc);
    point(rp, st == FB_STATUS_SUCCESS && bad == 0 && untouched,
          "rank %d k_local=%lld %s: %s, %d outside the bound (worst "
          "error/bound %.3g), padding %s, path %s%s%s", rank, (long long)kl,
          label, fb_status_string(st), bad, worst,
          untouched ? "untouched" : "WRITTEN", fb_handle_last_path(h),
          st ? ": " : "", st ? fb_handle_last_message(h) : "");
    if (rp->nhash < MAX_HASHES)
        rp->hash[rp->nhash++] = hash;

    /* The whole product on this GPU alone. */
    fb_handle one;
    if (fb_create(&one) != FB_STATUS_SUCCESS ||
        fb_set_cuda_device(one, rank) != FB_STATUS_SUCCESS)
        tap_bail("fb_create failed");
    tmem_cuda.put(C.alloc, tc->d.C.img, tc->d.C.bytes);
    st = gemm_call(one, t, c->layout, c->transa, c->transb, c->m, c->n, c->k,
                   c->alpha, A.data, c->lda, B.data, c->ldb, c->beta, C.data,
                   c->ldc, pbias, c->act);
    tbuf cs;
    tbuf_fetch(&tc->d.C, &tmem_cuda, C.alloc, &cs);
    double *a = tbuf_to_double(&c1), *b = tbuf_to_double(&cs);
    int64_t far = 0, i, j;
    for (int64_t e = 0; e < c1.nelem; e++)
        if (tshape_window(&tc->d.sc, e, &i, &j) &&
            !(fabs(a[e] - b[e]) <= 2 * tc->bound[e]))
            far++;
    point(rp, st == FB_STATUS_SUCCESS && far == 0,
          "rank %d %s: within both bounds of the single-GPU gemm_bias_act "
          "(%s): %lld elements not", rank, label, fb_status_string(st),
          (long long)far);
    free(a), free(b);
    tbuf_free(&cs);
    tbuf_free(&c1);
    fb_destroy(one);
    placed all[4] = {A, B, C, bias};
    for (int k = 0; k < 4; k++)
        tmem_cuda.release(all[k].alloc);
}

/* Calls the ranks make differently, and calls one rank gets wrong alone:
 * statuses, never a hang, and the communicator usable afterwards. */
static void run_bad_calls(report *rp, fb_handle h, int rank)
{
    mlp_tp_case *tc = &mcases[0];
    const mlp_case *c = &tc->c;
    const fb_dtype t = c->dtype;
    const int64_t hl = rank == 0 ? tc->h0 : c->h - tc->h0;
    const int64_t h0 = rank == 0 ? 0 : tc->h0;
    placed X = place(&tc->d.X), Wg = place(&tc->d.Wg), Wu = place(&tc->d.Wu);
    placed Wd = place(&tc->d.Wd), Y = place(&tc->d.Y);
    const void *wg = at(&Wg, t, h0 * c->k), *wu = at(&Wu, t, h0 * c->k);
    const void *wd = at(&Wd, t, h0);

    /* Shapes no rank has run yet (a run shape is not compared again). */
    struct {
        const char *what;
        int64_t m[NRANKS], k[NRANKS];
        int pos;
    } differ[2] = {{"k differs (ranks: 504, 496)", {c->m - 1, c->m - 1},
                    {c->k - 8, c->k - 16}, 5},
                   {"m differs (ranks: 13, 12)", {c->m - 3, c->m - 4},
                    {c->k, c->k}, 4}};
    for (int i = 0; i < 2; i++) {
        const fb_status st = mlp_geglu_forward_tp(
            h, t, c->act, differ[i].m[rank], differ[i].k[rank], hl, c->n,
            X.data, c->ldx, wg, NULL, wu, NULL, wd, c->h, NULL, Y.data,
            c->ldy);
        tbuf y;
        tbuf_fetch(&tc->d.Y, &tmem_cuda, Y.alloc, &y);
        const int same = memcmp(y.img, tc->d.Y.img, y.bytes) == 0;
        tbuf_free(&y);
        point(rp, st == FB_STATUS_INVALID_ARGUMENT &&
                      fb_handle_last_arg(h) == differ[i].pos && same,
              "rank %d, %s: %s at %d (want %d), Y %s: %s", rank,
              differ[i].what, fb_status_string(st), fb_handle_last_arg(h),
              differ[i].pos, same ? "untouched" : "WRITTEN",
              fb_handle_last_message(h));
    }
    /* Y contiguous on rank 0 only (ldy = n, n + 8): position 18, ldy --
     * it picks the collectives, so it must agree. */
    {
        const int64_t ldy = rank == 0 ? c->n : c->n + 8;
        const fb_status st = mlp_geglu_forward_tp(
            h, t, c->act, c->m - 5, c->k, hl, c->n, X.data, c->ldx, wg, NULL,
            wu, NULL, wd, c->h, NULL, Y.data, ldy);
        tbuf y;
        tbuf_fetch(&tc->d.Y, &tmem_cuda, Y.alloc, &y);
        const int same = memcmp(y.img, tc->d.Y.img, y.bytes) == 0;
        tbuf_free(&y);
        point(rp, st == FB_STATUS_INVALID_ARGUMENT &&
                      fb_handle_last_arg(h) == 18 && same,
              "rank %d, ldy == n on rank 0 only: %s at %d (want 18), Y %s: "
              "%s", rank, fb_status_string(st), fb_handle_last_arg(h),
              same ? "untouched" : "WRITTEN", fb_handle_last_message(h));
    }
    /* k = 0 with h > 0: not supported, decided alike on both ranks. */
    {
        const fb_status st = mlp_geglu_forward_tp(
            h, t, c->act, 2, 0, hl, c->n, X.data, c->ldx, wg, NULL, wu,
            NULL, wd, c->h, NULL, Y.data, c->ldy);
        point(rp, st == FB_STATUS_NOT_SUPPORTED,
              "rank %d, k = 0 with h > 0: %s: %s", rank,
              fb_status_string(st), fb_handle_last_message(h));
    }
    /* One rank in the MLP, the other in the gemm: position 0. */
    {
        fb_status st;
        if (rank == 0)
            st = mlp_geglu_forward_tp(h, t, c->act, 3, c->k, hl, c->n,
                                      X.data, c->ldx, wg, NULL, wu, NULL,
                                      wd, c->h, NULL, Y.data, c->ldy);
        else
            st = gemm_bias_act_tp(h, t, FB_ROW_MAJOR, FB_NO_TRANS,
                                  FB_NO_TRANS, 3, c->n, 8, 1.0f, X.data,
                                  c->ldx, wg, c->n, 0.0f, Y.data, c->ldy,
                                  NULL, FB_ACT_NONE);
        point(rp, st == FB_STATUS_INVALID_ARGUMENT &&
                      fb_handle_last_arg(h) == 0,
              "rank %d, the ranks in different routines: %s at %d: %s",
              rank, fb_status_string(st), fb_handle_last_arg(h),
              fb_handle_last_message(h));
    }
    /* Alone: the handle on the other rank's device; host memory. */
    if (fb_set_cuda_device(h, 1 - rank) != FB_STATUS_SUCCESS)
        tap_bail("fb_set_cuda_device failed");
    fb_status st = mlp_geglu_forward_tp(h, t, c->act, c->m, c->k, hl, c->n,
                                        X.data, c->ldx, wg, NULL, wu, NULL,
                                        wd, c->h, NULL, Y.data, c->ldy);
    point(rp, st == FB_STATUS_INVALID_ARGUMENT && fb_handle_last_arg(h) == 1,
          "rank %d, handle on device %d, communicator on %d: %s at %d: %s",
          rank, 1 - rank, rank, fb_status_string(st), fb_handle_last_arg(h),
          fb_handle_last_message(h));
    if (fb_set_cuda_device(h, rank) != FB_STATUS_SUCCESS)
        tap_bail("fb_set_cuda_device failed");
    st = mlp_geglu_forward_tp(h, t, c->act, c->m, c->k, hl, c->n,
                              tbuf_data(&tc->d.X), c->ldx, wg, NULL, wu,
                              NULL, wd, c->h, NULL, Y.data, c->ldy);
    point(rp, st == FB_STATUS_INVALID_ARGUMENT && fb_handle_last_arg(h) == 8,
          "rank %d, X in host memory: %s at %d: %s", rank,
          fb_status_string(st), fb_handle_last_arg(h),
          fb_handle_last_message(h));
    placed all[5] = {X, Wg, Wu, Wd, Y};
    for (int k = 0; k < 5; k++)
        tmem_cuda.release(all[k].alloc);
}

/* Everything one rank does, on its communicator. */
static void rank_main(report *rp, int rank, void *comm)
{
    if (cudaSetDevice(rank) != cudaSuccess)
        tap_bail("cudaSetDevice(%d) failed", rank);
    fb_handle h;
    if (fb_create(&h) != FB_STATUS_SUCCESS ||
        fb_set_cuda_device(h, rank) != FB_STATUS_SUCCESS)
        tap_bail("fb_create failed");
    fb_status st = fb_set_nccl_comm(h, comm);
    point(rp, st == FB_STATUS_SUCCESS, "rank %d: fb_set_nccl_comm: %s %s",
          rank, fb_status_string(st), fb_handle_last_message(h));
    if (st != FB_STATUS_SUCCESS)
        return;
    for (int i = 0; i < N_MCASES; i++)
        run_mlp_case(rp, h, rank, &mcases[i], i == 0 || mcases[i].chunks);
    for (int i = 0; i < N_GCASES; i++)
        run_gemm_case(rp, h, rank, &gcases[i]);
    run_bad_calls(rp, h, rank);
    /* After the refusals, the communicator still works: the first case
     * again (its hash is compared across the ranks too). */
    run_mlp_case(rp, h, rank, &mcases[0], 0);
    fb_destroy(h);
}

/* ---- the two modes -------------------------------------------------------- */

static void relay(const char *mode, report rp[NRANKS])
{
    for (int r = 0; r < NRANKS; r++)
        for (int i = 0; i < rp[r].n; i++)
            tap_ok(rp[r].pass[i], "%s: %s", mode, rp[r].text[i]);
    int same = rp[0].nhash == rp[1].nhash && rp[0].nhash > 0;
    for (int i = 0; same && i < rp[0].nhash; i++)
        same = rp[0].hash[i] == rp[1].hash[i];
    tap_ok(same, "%s: the ranks' results are the same bits (%d results "
           "hashed on rank 0, %d on rank 1)", mode, rp[0].nhash,
           rp[1].nhash);
}

static int read_all(int fd, void *buf, size_t bytes)
{
    char *p = buf;
    while (bytes > 0) {
        const ssize_t n = read(fd, p, bytes);
        if (n <= 0)
            return 0;
        p += n, bytes -= (size_t)n;
    }
    return 1;
}

static int write_all(int fd, const void *buf, size_t bytes)
{
    const char *p = buf;
    while (bytes > 0) {
        const ssize_t n = write(fd, p, bytes);
        if (n <= 0)
            return 0;
        p += n, bytes -= (size_t)n;
    }
    return 1;
}

/* One process per GPU: fork two children before this process touches
 * CUDA; rank 0 makes the id and writes it to rank 1's pipe; each sends
 * its report back through its own pipe. */
static void mode_processes(void)
{
    int id_pipe[2], out[NRANKS][2];
    if (pipe(id_pipe) != 0)
        tap_bail("pipe failed");
    for (int r = 0; r < NRANKS; r++)
        if (pipe(out[r]) != 0)
            tap_bail("pipe failed");
    for (int r = 0; r < NRANKS; r++) {
        children[r] = fork();
        if (children[r] < 0)
            tap_bail("fork failed");
        if (children[r] > 0)
            continue;
        /* the child, rank r: keep only its own pipe ends, so that a rank
         * that dies is an end of file to the others, not a wait */
        static report rp;
        memset(&rp, 0, sizeof rp);
        close(id_pipe[r == 0 ? 0 : 1]);
        for (int o = 0; o < NRANKS; o++) {
            close(out[o][0]);
            if (o != r)
                close(out[o][1]);
        }
        nccl_unique_id id;
        if (cudaSetDevice(r) != cudaSuccess)
            _exit(3);
        if (r == 0) {
            if (nccl.get_unique_id(&id) != 0)
                _exit(4);
            if (!write_all(id_pipe[1], &id, sizeof id))
                _exit(5);
        } else if (!read_all(id_pipe[0], &id, sizeof id)) {
            _exit(5);
        }
        void *comm = NULL;
        const int e = nccl.comm_init_rank(&comm, NRANKS, id, r);
        if (e != 0) {
            point(&rp, 0, "rank %d: ncclCommInitRank: %s", r,
                  nccl.error_string(e));
        } else {
            rank_main(&rp, r, comm);
            nccl.comm_destroy(comm);
        }
        _exit(write_all(out[r][1], &rp, sizeof rp) ? 0 : 6);
    }
    static report rp[NRANKS];
    close(id_pipe[0]);
    close(id_pipe[1]);
    for (int r = 0; r < NRANKS; r++) {
        close(out[r][1]);
        if (!read_all(out[r][0], &rp[r], sizeof rp[r])) {
            memset(&rp[r], 0, sizeof rp[r]);
            point(&rp[r], 0, "rank %d (process) sent no report", r);
        }
    }
    for (int r = 0; r < NRANKS; r++) {
        int status = 0;
        waitpid(children[r], &status, 0);
        children[r] = 0;
        tap_ok(WIFEXITED(status) && WEXITSTATUS(status) == 0,
               "processes: rank %d's process ended normally (status %d)", r,
               status);
    }
    relay("processes", rp);
}

typedef struct rank_thread {
    int rank;
    void *comm;
    report rp;
} rank_thread;

static void *rank_thread_main(void *arg)
{
    rank_thread *t = arg;
    rank_main(&t->rp, t->rank, t->comm);
    return NULL;
}

/* One thread per GPU, communicators from ncclCommInitAll. */
static void mode_threads(void)
{
    static rank_thread th[NRANKS];
    void *comms[NRANKS] = {NULL, NULL};
    const int devs[NRANKS] = {0, 1};
    const int e = nccl.comm_init_all(comms, NRANKS, devs);
    if (!tap_ok(e == 0, "threads: ncclCommInitAll: %s", nccl.error_string(e)))
        return;
    pthread_t tid[NRANKS];
    for (int r = 0; r < NRANKS; r++) {
        memset(&th[r], 0, sizeof th[r]);
        th[r].rank = r;
        th[r].comm = comms[r];
        if (pthread_create(&tid[r], NULL, rank_thread_main, &th[r]) != 0)
            tap_bail("pthread_create failed");
    }
    for (int r = 0; r < NRANKS; r++)
        pthread_join(tid[r], NULL);
    report rp[NRANKS];
    for (int r = 0; r < NRANKS; r++)
        rp[r] = th[r].rp;
    relay("threads", rp);
    for (int r = 0; r < NRANKS; r++)
        nccl.comm_destroy(comms[r]);
}

/* The device count, asked in a child so that this process has not
 * touched CUDA when it forks the ranks. */
static int device_count(void)
{
    const pid_t pid = fork();
    if (pid == 0)
        _exit(cuda_device_count() > 100 ? 100 : cuda_device_count());
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
        return 0;
    return WEXITSTATUS(status);
}

int main(int argc, char **argv)
{
    const char *only = argc > 1 ? argv[1] : NULL;
    tap_begin("test_gpu_tp");
    const int devices = device_count();
    if (devices < NRANKS) {
        char why[64];
        snprintf(why, sizeof why, "%d CUDA device(s), 2 needed", devices);
        tap_skip_all(devices == 0 ? "no CUDA device" : why);
    }
    char why[320];
    if (!load_nccl(why, sizeof why))
        tap_skip_all(why);
    for (int i = 0; i < N_MCASES; i++)
        make_mlp_case(&mcases[i]);
    for (int i = 0; i < N_GCASES; i++)
        make_gemm_case(&gcases[i]);
    if (only == NULL || strcmp(only, "processes") == 0) {
        arm_watchdog();
        mode_processes();
    }
    if (only == NULL || strcmp(only, "threads") == 0) {
        arm_watchdog();
        mode_threads();
    }
    alarm(0);
    return tap_end();
}
