/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tp_bench.c -- the gated MLP on one GPU against the same layer
 * tensor-parallel on two (mlp_geglu_forward_tp over NCCL, one thread per
 * GPU), with CUDA-event times per rank.
 *
 * Default layer: Llama-3-70B's MLP, 8192 -> 28672 -> 8192, bf16, SwiGLU,
 * no biases, at 16 rows (decode) and 4096 rows (prefill). Each rank holds
 * its shard contiguously, as a deployment stores it: h/2 rows of Wg and
 * Wu (Wu right after Wg, one gate_up weight), and Wd's n x h/2 column
 * slice copied out (ldwd = h/2). Rows:
 *
 *   one-gpu     mlp_geglu_forward of the whole layer on GPU 0
 *   local-half  mlp_geglu_forward of one shard on GPU 0 alone (the
 *               compute a rank does, without the all-reduce)
 *   tp          mlp_geglu_forward_tp, per rank
 *   tp-graph    the same call captured in a CUDA graph and replayed, per
 *               rank (no launch cost on the host)
 *   allreduce   ncclAllReduce of the m x n fp32 partial alone, per rank
 *   rs+ag       ncclReduceScatter of the m x n fp32 partial, then
 *               ncclAllGather of the m x n bf16 output, alone, per rank
 *               (the collectives of the chunked call's reduce-scatter
 *               form, without its epilogue; m a multiple of the ranks)
 *
 * Then, per m and rank, one more tp call traced with CUDA events (the
 * module's trace hook, lib/cuda/tp/tp_trace.h): each chunk's compute span
 * on the handle's stream and communication span (the all-reduce, or the
 * reduce-scatter, epilogue and all-gather) on the communication stream,
 * in microseconds from an event recorded just before the call, and the
 * fraction of the communication time that ran while a chunk computed.
 *
 * Calls are enqueued back to back, as a model's layers are, with an event
 * pair around each; the time of a row is the median of those pairs (p10
 * and p90 beside it). The last lines ("tp_bench: ...") summarise each m
 * for scripts/gpu-tp-check.sh. NCCL is found as the library finds it
 * (FUSEDBLAS_NCCL_LIBRARY, else libnccl.so.2).
 *
 * Usage: tp_bench [-m M[,M...]] [-k K] [-H H] [-n N] [-i ITERS] [-w WARMUP]
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cuda_runtime_api.h>
#include "fusedblas.h"
#include "../lib/cuda/tp/tp_trace.h"

#define NRANKS 2
#define MAX_ITERS 1000
#define MAX_M 8

static struct {
    int (*comm_init_all)(void **comms, int ndev, const int *devlist);
    int (*comm_destroy)(void *comm);
    int (*all_reduce)(const void *send, void *recv, size_t count, int dtype,
                      int op, void *comm, void *stream);
    int (*reduce_scatter)(const void *send, void *recv, size_t recvcount,
                          int dtype, int op, void *comm, void *stream);
    int (*all_gather)(const void *send, void *recv, size_t sendcount,
                      int dtype, void *comm, void *stream);
    const char *(*error_string)(int result);
    int (*get_version)(int *version);
} nccl;

static int64_t K = 8192, H = 28672, N = 8192;
static int iters = 50, warmup = 10;

static void die(const char *what)
{
    fprintf(stderr, "tp_bench: %s\n", what);
    exit(1);
}

#define CUDA(call)                                                             \
    do {                                                                       \
        cudaError_t e_ = (call);                                               \
        if (e_ != cudaSuccess) {                                               \
            fprintf(stderr, "tp_bench: %s: %s\n", #call,                       \
                    cudaGetErrorString(e_));                                   \
            exit(1);                                                           \
        }                                                                      \
    } while (0)

#define FB(h, call)                                                            \
    do {                                                                       \
        fb_status s_ = (call);                                                 \
        if (s_ != FB_STATUS_SUCCESS) {                                         \
            fprintf(stderr, "tp_bench: %s: %s: %s\n", #call,                   \
                    fb_status_string(s_), fb_handle_last_message(h));          \
            exit(1);                                                           \
        }                                                                      \
    } while (0)

static void load_nccl(void)
{
    const char *path = getenv("FUSEDBLAS_NCCL_LIBRARY");
    if (path == NULL || *path == '\0')
        path = "libnccl.so.2";
    void *lib = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
    if (lib == NULL) {
        fprintf(stderr, "tp_bench: no NCCL: %s\n", dlerror());
        exit(77);
    }
    const char *names[7] = {"ncclCommInitAll",   "ncclCommDestroy",
                            "ncclAllReduce",     "ncclReduceScatter",
                            "ncclAllGather",     "ncclGetErrorString",
                            "ncclGetVersion"};
    void *fns[7] = {&nccl.comm_init_all,  &nccl.comm_destroy,
                    &nccl.all_reduce,     &nccl.reduce_scatter,
                    &nccl.all_gather,     &nccl.error_string,
                    &nccl.get_version};
    size_t sizes[7] = {sizeof nccl.comm_init_all,  sizeof nccl.comm_destroy,
                       sizeof nccl.all_reduce,     sizeof nccl.reduce_scatter,
                       sizeof nccl.all_gather,     sizeof nccl.error_string,
                       sizeof nccl.get_version};
    for (int i = 0; i < 7; i++) {
        void *s = dlsym(lib, names[i]);
        if (s == NULL)
            die("NCCL lacks a function it needs");
        memcpy(fns[i], &s, sizes[i]);
    }
}

/* bf16 values of about +-1/sqrt(fan_in), from a fixed pattern: the times
 * do not depend on the values, only on their being ordinary numbers. */
static void *device_bf16(int64_t elems, double scale)
{
    const int64_t chunk = (int64_t)1 << 22;
    uint16_t *host = malloc((size_t)chunk * 2);
    if (host == NULL)
        die("out of host memory");
    uint32_t x = 12345;
    for (int64_t i = 0; i < chunk; i++) {
        x = x * 1664525u + 1013904223u;
        const float v = (float)(((x >> 8) / 16777216.0 - 0.5) * 2 * scale);
        host[i] = fb_float_to_bfloat16(v).bits;
    }
    void *d;
    CUDA(cudaMalloc(&d, (size_t)(elems > 0 ? elems : 1) * 2));
    for (int64_t off = 0; off < elems; off += chunk) {
        const int64_t n = elems - off < chunk ? elems - off : chunk;
        CUDA(cudaMemcpy((char *)d + off * 2, host, (size_t)n * 2,
                        cudaMemcpyHostToDevice));
    }
    free(host);
    return d;
}

typedef struct stats {
    double med, p10, p90; /* microseconds */
} stats;

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static stats summarise(cudaEvent_t *ev0, cudaEvent_t *ev1, int n)
{
    double t[MAX_ITERS];
    for (int i = 0; i < n; i++) {
        float ms = 0;
        CUDA(cudaEventElapsedTime(&ms, ev0[i], ev1[i]));
        t[i] = ms * 1e3;
    }
    qsort(t, (size_t)n, sizeof t[0], cmp_double);
    stats s = {t[n / 2], t[n / 10], t[(n * 9) / 10]};
    return s;
}

/* What one GPU holds for a layer of h_local hidden rows. */
typedef struct shard {
    void *wg, *wu, *wd, *x, *y;
    int64_t h;
} shard;

static shard make_shard(int64_t m_max, int64_t h_local)
{
    shard s;
    s.h = h_local;
    /* Wu right after Wg, one gate_up weight as checkpoints and serving
     * engines store it: cuda-lt's MLP then runs one GEMM for both. */
    s.wg = device_bf16(2 * h_local * K, 1.0 / 90.5);
    s.wu = (char *)s.wg + h_local * K * 2;
    s.wd = device_bf16(N * h_local, 1.0 / 169.3);
    s.x = device_bf16(m_max * K, 1.0);
    CUDA(cudaMalloc(&s.y, (size_t)(m_max * N) * 2));
    return s;
}

static void free_shard(shard *s)
{
    void *all[4] = {s->wg, s->wd, s->x, s->y};
    for (int i = 0; i < 4; i++)
        CUDA(cudaFree(all[i]));
}

/* Kinds of timed call. */
enum { CALL_PLAIN, CALL_TP, CALL_ALLREDUCE, CALL_RSAG };

typedef struct timed {
    int kind;
    fb_handle h;
    const shard *s;
    int64_t m;
    void *comm;
    float *ar_buf;
    cudaStream_t stream;
    int rank;
} timed;

static void call_once(const timed *c)
{
    const shard *s = c->s;
    switch (c->kind) {
    case CALL_PLAIN:
        FB(c->h, mlp_geglu_forward(c->h, FB_DTYPE_BF16, FB_ACT_SILU, c->m, K,
                                   s->h, N, s->x, K, s->wg, NULL, s->wu, NULL,
                                   s->wd, NULL, s->y, N));
        break;
    case CALL_TP:
        FB(c->h, mlp_geglu_forward_tp(c->h, FB_DTYPE_BF16, FB_ACT_SILU, c->m,
                                      K, s->h, N, s->x, K, s->wg, NULL, s->wu,
                                      NULL, s->wd, s->h, NULL, s->y, N));
        break;
    case CALL_ALLREDUCE: {
        const int e = nccl.all_reduce(c->ar_buf, c->ar_buf,
                                      (size_t)(c->m * N), 7 /* float32 */,
                                      0 /* sum */, c->comm, c->stream);
        if (e != 0)
            die(nccl.error_string(e));
        break;
    }
    case CALL_RSAG: {
        /* in place, as the tp call's chunks: this rank's q rows of each */
        const size_t q = (size_t)(c->m / NRANKS * N);
        int e = nccl.reduce_scatter(c->ar_buf, c->ar_buf + c->rank * q, q,
                                    7 /* float32 */, 0 /* sum */, c->comm,
                                    c->stream);
        uint16_t *y = s->y;
        if (e == 0)
            e = nccl.all_gather(y + c->rank * q, y, q, 9 /* bfloat16 */,
                                c->comm, c->stream);
        if (e != 0)
            die(nccl.error_string(e));
        break;
    }
    }
}

/* Warm up, then time iters calls back to back (or graph replays). */
static stats time_calls(const timed *c, int graph)
{
    static __thread cudaEvent_t ev0[MAX_ITERS], ev1[MAX_ITERS];
    for (int i = 0; i < iters; i++) {
        CUDA(cudaEventCreate(&ev0[i]));
        CUDA(cudaEventCreate(&ev1[i]));
    }
    for (int i = 0; i < warmup; i++)
        call_once(c);
    cudaGraphExec_t exec = NULL;
    cudaGraph_t g = NULL;
    if (graph) {
        CUDA(cudaStreamSynchronize(c->stream));
        CUDA(cudaStreamBeginCapture(c->stream,
                                    cudaStreamCaptureModeThreadLocal));
        call_once(c);
        CUDA(cudaStreamEndCapture(c->stream, &g));
        CUDA(cudaGraphInstantiate(&exec, g, 0));
        CUDA(cudaGraphLaunch(exec, c->stream));
    }
    for (int i = 0; i < iters; i++) {
        CUDA(cudaEventRecord(ev0[i], c->stream));
        if (graph)
            CUDA(cudaGraphLaunch(exec, c->stream));
        else
            call_once(c);
        CUDA(cudaEventRecord(ev1[i], c->stream));
    }
    CUDA(cudaStreamSynchronize(c->stream));
    const stats s = summarise(ev0, ev1, iters);
    for (int i = 0; i < iters; i++) {
        CUDA(cudaEventDestroy(ev0[i]));
        CUDA(cudaEventDestroy(ev1[i]));
    }
    if (graph) {
        CUDA(cudaGraphExecDestroy(exec));
        CUDA(cudaGraphDestroy(g));
    }
    return s;
}

/* The loaded CUDA module's trace setter, found among the loaded objects
 * (the library dlopens the module privately): NULL if absent. */
static int find_module(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    const char *name = info->dlpi_name, *tail = "fusedblas_cuda.so";
    const size_t n = strlen(name), t = strlen(tail);
    if (n < t || strcmp(name + n - t, tail) != 0)
        return 0;
    void *lib = dlopen(name, RTLD_NOW | RTLD_NOLOAD);
    if (lib != NULL)
        *(void **)data = dlsym(lib, FB_TP_TRACE_SYMBOL);
    return 1;
}

static fb_tp_trace_setter trace_setter(void)
{
    void *sym = NULL;
    dl_iterate_phdr(find_module, &sym);
    fb_tp_trace_setter f = NULL;
    memcpy(&f, &sym, sizeof f);
    return f;
}

/* One traced call: spans in microseconds from the call's start. */
typedef struct timeline {
    int chunks; /* -1: no trace hook in the module */
    double cb[FB_TP_TRACE_MAX_CHUNKS], ce[FB_TP_TRACE_MAX_CHUNKS];
    double rb[FB_TP_TRACE_MAX_CHUNKS], re[FB_TP_TRACE_MAX_CHUNKS];
} timeline;

static double since(cudaEvent_t start, void *ev)
{
    float ms = 0;
    CUDA(cudaEventElapsedTime(&ms, start, (cudaEvent_t)ev));
    return ms * 1e3;
}

static timeline trace_call(const timed *c)
{
    timeline t;
    memset(&t, 0, sizeof t);
    fb_tp_trace_setter set = trace_setter();
    if (set == NULL) {
        t.chunks = -1;
        return t;
    }
    fb_tp_trace tr;
    memset(&tr, 0, sizeof tr);
    void **all[4] = {tr.compute_begin, tr.compute_end, tr.reduce_begin,
                     tr.reduce_end};
    for (int j = 0; j < 4; j++)
        for (int i = 0; i < FB_TP_TRACE_MAX_CHUNKS; i++) {
            cudaEvent_t ev;
            CUDA(cudaEventCreate(&ev));
            all[j][i] = ev;
        }
    cudaEvent_t start;
    CUDA(cudaEventCreate(&start));
    CUDA(cudaStreamSynchronize(c->stream));
    CUDA(cudaEventRecord(start, c->stream));
    set(&tr);
    call_once(c);
    set(NULL);
    CUDA(cudaStreamSynchronize(c->stream));
    t.chunks = tr.chunks;
    for (int i = 0; i < tr.chunks && i < FB_TP_TRACE_MAX_CHUNKS; i++) {
        t.cb[i] = since(start, tr.compute_begin[i]);
        t.ce[i] = since(start, tr.compute_end[i]);
        t.rb[i] = since(start, tr.reduce_begin[i]);
        t.re[i] = since(start, tr.reduce_end[i]);
    }
    for (int j = 0; j < 4; j++)
        for (int i = 0; i < FB_TP_TRACE_MAX_CHUNKS; i++)
            CUDA(cudaEventDestroy((cudaEvent_t)all[j][i]));
    CUDA(cudaEventDestroy(start));
    return t;
}

/* Of the communication spans' total, the time some compute span covered
 * (the compute spans, on one stream, do not overlap one another). */
static void overlap(const timeline *t, double *reduce, double *hidden)
{
    *reduce = *hidden = 0;
    for (int i = 0; i < t->chunks; i++) {
        *reduce += t->re[i] - t->rb[i];
        for (int j = 0; j < t->chunks; j++) {
            const double lo = t->rb[i] > t->cb[j] ? t->rb[i] : t->cb[j];
            const double hi = t->re[i] < t->ce[j] ? t->re[i] : t->ce[j];
            if (hi > lo)
                *hidden += hi - lo;
        }
    }
}

static int64_t ms_list[MAX_M];
static int nms;
static stats one_gpu[MAX_M], local_half[MAX_M];
static stats tp[MAX_M][NRANKS], tp_graph[MAX_M][NRANKS];
static stats allreduce[MAX_M][NRANKS];
static stats rsag[MAX_M][NRANKS]; /* med < 0: m not a multiple of NRANKS */
static timeline traced[MAX_M][NRANKS];

typedef struct rank_arg {
    int rank;
    void *comm;
    pthread_barrier_t *barrier;
} rank_arg;

static void *rank_main(void *p)
{
    const rank_arg *a = p;
    CUDA(cudaSetDevice(a->rank));
    int64_t m_max = 0;
    for (int i = 0; i < nms; i++)
        if (ms_list[i] > m_max)
            m_max = ms_list[i];
    shard s = make_shard(m_max, H / NRANKS);
    cudaStream_t stream;
    CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    fb_handle h;
    if (fb_create(&h) != FB_STATUS_SUCCESS)
        die("fb_create failed");
    FB(h, fb_set_cuda_device(h, a->rank));
    FB(h, fb_set_cuda_stream(h, stream));
    FB(h, fb_set_nccl_comm(h, a->comm));
    float *ar;
    CUDA(cudaMalloc((void **)&ar, (size_t)(m_max * N) * 4));
    CUDA(cudaMemset(ar, 0, (size_t)(m_max * N) * 4));
    for (int i = 0; i < nms; i++) {
        timed c = {CALL_TP, h, &s, ms_list[i], a->comm, ar, stream,
                   a->rank};
        pthread_barrier_wait(a->barrier);
        tp[i][a->rank] = time_calls(&c, 0);
        if (a->rank == 0)
            printf("# tp m=%lld path %s\n", (long long)ms_list[i],
                   fb_handle_last_path(h));
        pthread_barrier_wait(a->barrier);
        tp_graph[i][a->rank] = time_calls(&c, 1);
        pthread_barrier_wait(a->barrier);
        pthread_barrier_wait(a->barrier);
        traced[i][a->rank] = trace_call(&c);
        pthread_barrier_wait(a->barrier);
        c.kind = CALL_ALLREDUCE;
        allreduce[i][a->rank] = time_calls(&c, 0);
        rsag[i][a->rank].med = -1;
        if (ms_list[i] % NRANKS == 0) {
            pthread_barrier_wait(a->barrier);
            c.kind = CALL_RSAG;
            rsag[i][a->rank] = time_calls(&c, 0);
        }
    }
    if (a->rank == 0) {
        /* The shard alone, no communication: what a rank computes. */
        fb_handle one;
        if (fb_create(&one) != FB_STATUS_SUCCESS)
            die("fb_create failed");
        FB(one, fb_set_cuda_stream(one, stream));
        for (int i = 0; i < nms; i++) {
            timed c = {CALL_PLAIN, one, &s, ms_list[i], NULL, NULL, stream,
                       0};
            local_half[i] = time_calls(&c, 0);
        }
        fb_destroy(one);
    }
    fb_destroy(h);
    CUDA(cudaFree(ar));
    free_shard(&s);
    CUDA(cudaStreamDestroy(stream));
    return NULL;
}

static void parse_ms(const char *arg)
{
    nms = 0;
    char *copy = strdup(arg), *save = NULL;
    for (char *t = strtok_r(copy, ",", &save); t && nms < MAX_M;
         t = strtok_r(NULL, ",", &save))
        ms_list[nms++] = strtoll(t, NULL, 10);
    free(copy);
}

int main(int argc, char **argv)
{
    parse_ms("16,4096");
    int opt;
    while ((opt = getopt(argc, argv, "m:k:H:n:i:w:")) != -1) {
        switch (opt) {
        case 'm': parse_ms(optarg); break;
        case 'k': K = strtoll(optarg, NULL, 10); break;
        case 'H': H = strtoll(optarg, NULL, 10); break;
        case 'n': N = strtoll(optarg, NULL, 10); break;
        case 'i': iters = atoi(optarg); break;
        case 'w': warmup = atoi(optarg); break;
        default:
            fprintf(stderr, "usage: %s [-m M,...] [-k K] [-H H] [-n N] "
                            "[-i ITERS] [-w WARMUP]\n", argv[0]);
            return 2;
        }
    }
    if (iters < 1 || iters > MAX_ITERS || nms == 0 || H % NRANKS != 0)
        die("bad arguments");
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices < NRANKS) {
        fprintf(stderr, "tp_bench: %d CUDA devices, 2 needed\n", devices);
        return 77;
    }
    load_nccl();
    int version = 0;
    nccl.get_version(&version);
    struct cudaDeviceProp prop;
    CUDA(cudaGetDeviceProperties(&prop, 0));
    printf("# tp_bench: bf16 MLP %lld -> %lld -> %lld, SwiGLU, no bias; "
           "%s x %d, NCCL %d; %d calls after %d warm-up, back to back\n",
           (long long)K, (long long)H, (long long)N, prop.name, NRANKS,
           version, iters, warmup);

    /* One GPU, the whole layer. */
    {
        CUDA(cudaSetDevice(0));
        int64_t m_max = 0;
        for (int i = 0; i < nms; i++)
            if (ms_list[i] > m_max)
                m_max = ms_list[i];
        shard s = make_shard(m_max, H);
        cudaStream_t stream;
        CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
        fb_handle h;
        if (fb_create(&h) != FB_STATUS_SUCCESS)
            die("fb_create failed");
        FB(h, fb_set_cuda_stream(h, stream));
        for (int i = 0; i < nms; i++) {
            timed c = {CALL_PLAIN, h, &s, ms_list[i], NULL, NULL, stream};
            one_gpu[i] = time_calls(&c, 0);
            printf("# one-gpu m=%lld path %s\n", (long long)ms_list[i],
                   fb_handle_last_path(h));
        }
        fb_destroy(h);
        free_shard(&s);
        CUDA(cudaStreamDestroy(stream));
    }

    /* Two GPUs, one thread each. */
    void *comms[NRANKS];
    const int devs[NRANKS] = {0, 1};
    const int e = nccl.comm_init_all(comms, NRANKS, devs);
    if (e != 0)
        die(nccl.error_string(e));
    pthread_barrier_t barrier;
    pthread_barrier_init(&barrier, NULL, NRANKS);
    pthread_t tid[NRANKS];
    rank_arg args[NRANKS];
    for (int r = 0; r < NRANKS; r++) {
        args[r] = (rank_arg){r, comms[r], &barrier};
        if (pthread_create(&tid[r], NULL, rank_main, &args[r]) != 0)
            die("pthread_create failed");
    }
    for (int r = 0; r < NRANKS; r++)
        pthread_join(tid[r], NULL);
    for (int r = 0; r < NRANKS; r++)
        nccl.comm_destroy(comms[r]);

    printf("%6s  %-11s %4s %10s %10s %10s\n", "m", "row", "rank",
           "median_us", "p10_us", "p90_us");
    for (int i = 0; i < nms; i++) {
        const long long m = (long long)ms_list[i];
        const stats *s = &one_gpu[i];
        printf("%6lld  %-11s %4s %10.1f %10.1f %10.1f\n", m, "one-gpu", "0",
               s->med, s->p10, s->p90);
        s = &local_half[i];
        printf("%6lld  %-11s %4s %10.1f %10.1f %10.1f\n", m, "local-half",
               "0", s->med, s->p10, s->p90);
        for (int r = 0; r < NRANKS; r++) {
            s = &tp[i][r];
            printf("%6lld  %-11s %4d %10.1f %10.1f %10.1f\n", m, "tp", r,
                   s->med, s->p10, s->p90);
        }
        for (int r = 0; r < NRANKS; r++) {
            s = &tp_graph[i][r];
            printf("%6lld  %-11s %4d %10.1f %10.1f %10.1f\n", m, "tp-graph",
                   r, s->med, s->p10, s->p90);
        }
        for (int r = 0; r < NRANKS; r++) {
            s = &allreduce[i][r];
            printf("%6lld  %-11s %4d %10.1f %10.1f %10.1f\n", m, "allreduce",
                   r, s->med, s->p10, s->p90);
        }
        for (int r = 0; r < NRANKS && rsag[i][0].med >= 0; r++) {
            s = &rsag[i][r];
            printf("%6lld  %-11s %4d %10.1f %10.1f %10.1f\n", m, "rs+ag", r,
                   s->med, s->p10, s->p90);
        }
    }
    printf("%6s  %4s %5s %10s %10s %10s %10s\n", "m", "rank", "chunk",
           "comp_from", "comp_to", "comm_from", "comm_to");
    for (int i = 0; i < nms; i++)
        for (int r = 0; r < NRANKS; r++) {
            const timeline *t = &traced[i][r];
            if (t->chunks < 0)
                printf("# m=%lld rank %d: no trace hook in the CUDA module\n",
                       (long long)ms_list[i], r);
            for (int c = 0; c < t->chunks; c++)
                printf("%6lld  %4d %5d %10.1f %10.1f %10.1f %10.1f\n",
                       (long long)ms_list[i], r, c, t->cb[c], t->ce[c],
                       t->rb[c], t->re[c]);
        }
    for (int i = 0; i < nms; i++)
        for (int r = 0; r < NRANKS; r++) {
            const timeline *t = &traced[i][r];
            if (t->chunks <= 0)
                continue;
            double reduce = 0, hidden = 0;
            overlap(t, &reduce, &hidden);
            printf("tp_bench: m=%lld rank %d: %d chunk(s), communication "
                   "%.1f us in all, %.1f us of it under compute (%.0f%%), "
                   "call %.1f us\n",
                   (long long)ms_list[i], r, t->chunks, reduce, hidden,
                   reduce > 0 ? 100.0 * hidden / reduce : 0.0,
                   t->re[t->chunks - 1]);
        }
    for (int i = 0; i < nms; i++) {
        double t = 0, tg = 0, ar = 0;
        for (int r = 0; r < NRANKS; r++) {
            t = tp[i][r].med > t ? tp[i][r].med : t;
            tg = tp_graph[i][r].med > tg ? tp_graph[i][r].med : tg;
            ar = allreduce[i][r].med > ar ? allreduce[i][r].med : ar;
        }
        printf("tp_bench: m=%lld one-gpu %.1f us, tp %.1f us (%.2fx), "
               "tp-graph %.1f us (%.2fx), allreduce alone %.1f us, "
               "local half %.1f us\n",
               (long long)ms_list[i], one_gpu[i].med, t, one_gpu[i].med / t,
               tg, one_gpu[i].med / tg, ar, local_half[i].med);
    }
    return 0;
}
