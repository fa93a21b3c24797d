/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_alloc_limit.c -- calls under an address-space limit end in
 * FB_STATUS_ALLOC_FAILED with the output untouched: never a hang, never a
 * try at another path that allocates more.
 *
 * Each case runs in a child process, forked before this process has made
 * any call of the library (so before OpenMP or OpenBLAS have run): the
 * child is a process that has not called OpenBLAS. It makes its arrays,
 * reads its mapped size (/proc/self/statm), sets RLIMIT_AS to that plus
 * 40 MB, makes the call and writes the outcome to a pipe. The parent waits
 * at most TIMEOUT_S for the answer; a child that has not answered by then
 * is killed, and the case fails: a hang is a failure, not a hung test.
 *
 * The cases are the report's (fp32 mlp_geglu_forward 2000 x 4096 -> 4096
 * -> 64), the same in bf16, and GEMMs whose kernels' workspaces exceed the
 * 40 MB (the fp32 packed, small-k and bf16 kernels). Where this CPU lacks
 * a kernel the call reaches OpenBLAS, whose first call maps a buffer per
 * thread and retries forever if it cannot: the library must see that
 * coming and fail too. Then the same with OpenBLAS already run (its
 * buffers held): a call that needs nothing new runs, and a kernel whose
 * workspace does not fit fails where that kernel runs, rather than going
 * on to OpenBLAS. The handle runs one thread, so that no thread is made
 * under the limit.
 *
 * Which path a call takes depends on the CPU (our AVX-512 kernels, or
 * OpenBLAS) and on FUSEDBLAS_CPU_SGEMM, which the library reads once, at
 * its first call: the child sets it (or unsets it) before that. Where a
 * case's outcome depends on the path, the child lifts the limit after the
 * call and makes the same call again: the path that one ran is the path
 * the call takes here, and decides what the limited call should have
 * done. A case that means a path (OpenBLAS, for FUSEDBLAS_CPU_SGEMM=
 * openblas) asserts it, so that a case that no longer reaches what it is
 * about fails rather than passes on another path. OpenBLAS is warmed by
 * an hgemm, which reaches its panels on every CPU and whatever
 * FUSEDBLAS_CPU_SGEMM says.
 *
 * Last, in a process started again with OMP_NUM_THREADS at four times the
 * CPUs (libgomp reads it when it is loaded), a call asked for one thread
 * under a limit with room for OpenBLAS's buffers for one thread per CPU:
 * it must run, on one thread. OpenBLAS's OpenMP build, called outside an
 * active parallel region, would start a team of OMP_NUM_THREADS threads
 * of its own and map a buffer for each first, retrying forever.
 *
 * AddressSanitizer reserves terabytes of shadow memory, so RLIMIT_AS
 * cannot be used under it: the program skips there. Under valgrind
 * (recognised by its preload library) it skips too: valgrind's own memory
 * counts against the limit, and the cases' GEMMs would take minutes.
 */
#define _GNU_SOURCE /* CPU_COUNT */
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include "harness.h"
#include "tap_child.h"

#if defined(__SANITIZE_ADDRESS__)
#define FB_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FB_TEST_ASAN 1
#endif
#endif

#define MARGIN ((size_t)40 << 20)
/* What OpenBLAS 0.3 maps per thread at its first call, and the malloc
 * arena (64 MiB of address space) a thread's first malloc may take. */
#define BLAS_BUFFER ((size_t)128 * 1024 * 1024 + 4096)
#define THREAD_ARENA ((size_t)64 << 20)
#define TIMEOUT_S 60
#define PATTERN 0x5a

/* What a child reports. */
typedef struct outcome {
    int status;
    int untouched;    /* every byte of the output as it was */
    int zero;         /* every element of the output 0 (inputs are 0) */
    int rerun;        /* the same call was made with the limit lifted */
    int rerun_status; /* its status */
    char message[200];
    char path[120];
    char rerun_path[120]; /* the path it ran: the call's path here */
    char warm_path[120];  /* warm cases: the warming call's path */
} outcome;

/* One call under the limit. */
typedef struct lcase {
    const char *what;
    int mlp;
    fb_dtype dtype;
    int64_t m, n, k, h;       /* gemm column-major NN m x n x k; mlp m, k,
                                 h, n */
    const char *sgemm;        /* FUSEDBLAS_CPU_SGEMM for the process, or
                                 NULL: unset */
    int warm;                 /* OpenBLAS has run before the limit */
    const char *kernel;       /* warm: the kernel family whose workspace
                                 does not fit; NULL: none is meant */
    const char *path;         /* the path the call must take on every CPU
                                 (a prefix), or NULL */
} lcase;

/* The path prefix of every call on OpenBLAS ("cpu/openblas-openmp/" or
 * "cpu/openblas-own-threads(...)/", as its build is). */
#define OPENBLAS_PATH "cpu/openblas-"

static const lcase cases[] = {
    /* A process that has not called OpenBLAS: whatever path the call
     * takes (our kernel, or OpenBLAS where this CPU lacks it), it fails
     * cleanly. The first is the report's. */
    {"fp32 mlp 2000 x 4096 -> 4096 -> 64", 1, FB_DTYPE_F32, 2000, 64, 4096,
     4096, NULL, 0, NULL, NULL},
    {"bf16 mlp 2000 x 4096 -> 4096 -> 64", 1, FB_DTYPE_BF16, 2000, 64, 4096,
     4096, NULL, 0, NULL, NULL},
    {"sgemm 512 x 512 x 24576, FUSEDBLAS_CPU_SGEMM=packed", 0, FB_DTYPE_F32,
     512, 512, 24576, 0, "packed", 0, NULL, NULL},
    {"sgemm 40000 x 16 x 512 (small k)", 0, FB_DTYPE_F32, 40000, 16, 512, 0,
     NULL, 0, NULL, NULL},
    {"bgemm 4096 x 64 x 6144", 0, FB_DTYPE_BF16, 4096, 64, 6144, 0, NULL, 0,
     NULL, NULL},
    /* FUSEDBLAS_CPU_SGEMM=openblas keeps fp32 off our kernels, small-k
     * and packed alike: OpenBLAS's first call, on every CPU. */
    {"sgemm 256 x 256 x 256, FUSEDBLAS_CPU_SGEMM=openblas", 0, FB_DTYPE_F32,
     256, 256, 256, 0, "openblas", 0, NULL, OPENBLAS_PATH},
    /* OpenBLAS has its buffers: a call that needs nothing new runs. */
    {"sgemm 256 x 256 x 256, FUSEDBLAS_CPU_SGEMM=openblas", 0, FB_DTYPE_F32,
     256, 256, 256, 0, "openblas", 1, NULL, OPENBLAS_PATH},
    /* OpenBLAS has its buffers, and our kernel's workspace does not fit:
     * where the kernel runs the call fails, and does not go on to
     * OpenBLAS (which would succeed); where it does not run, OpenBLAS
     * does the call. */
    {"fp32 mlp 40 x 4096 -> 4096 -> 64", 1, FB_DTYPE_F32, 40, 64, 4096,
     4096, NULL, 1, "cpu/f32-avx512/", NULL},
    {"bf16 mlp 40 x 4096 -> 4096 -> 64", 1, FB_DTYPE_BF16, 40, 64, 4096,
     4096, NULL, 1, "cpu/bf16-", NULL},
    {"sgemm 512 x 512 x 24576, FUSEDBLAS_CPU_SGEMM=packed", 0, FB_DTYPE_F32,
     512, 512, 24576, 0, "packed", 1, "cpu/f32-avx512/", NULL},
    {"sgemm 40000 x 16 x 512 (small k)", 0, FB_DTYPE_F32, 40000, 16, 512, 0,
     NULL, 1, "cpu/f32-small-k/", NULL},
    {"bgemm 4096 x 64 x 6144", 0, FB_DTYPE_BF16, 4096, 64, 6144, 0, NULL, 1,
     "cpu/bf16-", NULL},
};
#define N_CASES ((int)(sizeof cases / sizeof cases[0]))

/* The cases of phase omp-wide (OMP_NUM_THREADS at four times the CPUs):
 * OpenBLAS's first call, from gemm_bias_act and from the MLP (more than
 * 32 rows: not the decode kernel, which takes any dtype). */
static const lcase wide_cases[] = {
    {"sgemm 256 x 256 x 256, FUSEDBLAS_CPU_SGEMM=openblas", 0, FB_DTYPE_F32,
     256, 256, 256, 0, "openblas", 0, NULL, OPENBLAS_PATH},
    {"fp32 mlp 64 x 512 -> 512 -> 64, FUSEDBLAS_CPU_SGEMM=openblas", 1,
     FB_DTYPE_F32, 64, 64, 512, 512, "openblas", 0, NULL, OPENBLAS_PATH},
};
#define N_WIDE ((int)(sizeof wide_cases / sizeof wide_cases[0]))

/* The process's mapped size, as RLIMIT_AS counts it. */
static size_t mapped_bytes(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    long pages = 0;
    if (f == NULL || fscanf(f, "%ld", &pages) != 1)
        pages = 0;
    if (f != NULL)
        fclose(f);
    return (size_t)pages * (size_t)sysconf(_SC_PAGESIZE);
}

/* Zeroed memory, mapped but not touched (calloc of this size maps fresh
 * pages): it counts against RLIMIT_AS and costs nothing. */
static void *zeros(size_t bytes)
{
    void *p = calloc(bytes > 0 ? bytes : 1, 1);
    if (p == NULL) {
        fprintf(stderr, "out of memory before the limit\n");
        _exit(3);
    }
    return p;
}

static int all_pattern(const void *v, size_t bytes)
{
    const unsigned char *p = v;
    for (size_t i = 0; i < bytes; i++)
        if (p[i] != PATTERN)
            return 0;
    return 1;
}

static int all_zero(const void *v, size_t bytes)
{
    const unsigned char *p = v;
    for (size_t i = 0; i < bytes; i++)
        if (p[i] != 0)
            return 0;
    return 1;
}

/* The soft limit only (mapped + margin), never above a hard limit
 * already there; *old receives the limit as it was. */
static int set_limit(size_t margin, struct rlimit *old)
{
    struct rlimit r;
    if (getrlimit(RLIMIT_AS, &r) != 0)
        return -1;
    *old = r;
    const rlim_t lim = (rlim_t)(mapped_bytes() + margin);
    r.rlim_cur = r.rlim_max != RLIM_INFINITY && r.rlim_max < lim ? r.rlim_max
                                                                 : lim;
    return setrlimit(RLIMIT_AS, &r);
}

/* A case's inputs, all zero. */
typedef struct inputs {
    void *a, *b, *u, *d;
} inputs;

static void inputs_make(const lcase *c, int64_t m, int64_t n, int64_t k,
                        int64_t h, inputs *in)
{
    const size_t es = c->dtype == FB_DTYPE_F32 ? 4 : 2;
    in->a = zeros((size_t)(m * k) * es);
    in->b = zeros((size_t)((c->mlp ? h : n) * k) * es);
    in->u = c->mlp ? zeros((size_t)(h * k) * es) : NULL;
    in->d = c->mlp ? zeros((size_t)(n * h) * es) : NULL;
}

/* The case's call at m x n x k (h) into out. */
static fb_status call(fb_handle hd, const lcase *c, int64_t m, int64_t n,
                      int64_t k, int64_t h, const inputs *in, void *out)
{
    if (c->mlp)
        return mlp_geglu_forward(hd, c->dtype, FB_ACT_GELU_TANH, m, k, h, n,
                                 in->a, k, in->b, NULL, in->u, NULL, in->d,
                                 NULL, out, n);
    if (c->dtype == FB_DTYPE_BF16)
        return bgemm_bias_act(hd, FB_COL_MAJOR, FB_NO_TRANS, FB_NO_TRANS, m,
                              n, k, 1.0f, in->a, m, in->b, k, 0.0f, out, m,
                              NULL, FB_ACT_NONE);
    return sgemm_bias_act(hd, FB_COL_MAJOR, FB_NO_TRANS, FB_NO_TRANS, m, n,
                          k, 1.0f, in->a, m, in->b, k, 0.0f, out, m, NULL,
                          FB_ACT_NONE);
}

/* OpenBLAS run on this thread before the limit, with its buffers then
 * held: an hgemm, on a handle of its own (its workspace goes with it),
 * large enough that OpenBLAS runs it on all its threads. fp16 has no
 * kernel of ours in this form (column-major NN is not the decode form),
 * so it reaches OpenBLAS's panels on every CPU. Its path into path. */
static void warm_openblas(char *path, size_t len)
{
    enum { W = 1024 };
    fb_handle h = NULL;
    if (fb_create(&h) != FB_STATUS_SUCCESS ||
        fb_set_backend(h, FB_BACKEND_CPU) != FB_STATUS_SUCCESS ||
        fb_set_threads(h, 1) != FB_STATUS_SUCCESS)
        _exit(6);
    fb_half *a = zeros((size_t)W * W * sizeof *a);
    fb_half *b = zeros((size_t)W * W * sizeof *b);
    fb_half *out = zeros((size_t)W * W * sizeof *out);
    if (hgemm_bias_act(h, FB_COL_MAJOR, FB_NO_TRANS, FB_NO_TRANS, W, W, W,
                       1.0f, a, W, b, W, 0.0f, out, W, NULL, FB_ACT_NONE) !=
        FB_STATUS_SUCCESS)
        _exit(6);
    snprintf(path, len, "%s", fb_handle_last_path(h));
    free(a), free(b), free(out);
    fb_destroy(h);
}

/* The child's work: everything but the call before the limit. */
static void run_case(const lcase *c, size_t margin, outcome *o)
{
    /* Before the library's first call, which reads the environment. */
    if (c->sgemm != NULL)
        setenv("FUSEDBLAS_CPU_SGEMM", c->sgemm, 1);
    else
        unsetenv("FUSEDBLAS_CPU_SGEMM");
    fb_handle h = NULL;
    if (fb_create(&h) != FB_STATUS_SUCCESS ||
        fb_set_backend(h, FB_BACKEND_CPU) != FB_STATUS_SUCCESS ||
        fb_set_threads(h, 1) != FB_STATUS_SUCCESS)
        _exit(4);
    /* One call that reaches no GEMM (k = 0), so that what a first call
     * sets up, short of OpenBLAS, is done before the limit. */
    float c0[4] = {0};
    if (sgemm_bias_act(h, FB_COL_MAJOR, FB_NO_TRANS, FB_NO_TRANS, 2, 2, 0,
                       1.0f, NULL, 2, NULL, 1, 0.0f, c0, 2, NULL,
                       FB_ACT_NONE) != FB_STATUS_SUCCESS)
        _exit(5);
    if (c->warm)
        warm_openblas(o->warm_path, sizeof o->warm_path);

    inputs in;
    inputs_make(c, c->m, c->n, c->k, c->h, &in);
    const size_t es = c->dtype == FB_DTYPE_F32 ? 4 : 2;
    const size_t out_bytes = (size_t)(c->m * c->n) * es;
    void *out = zeros(out_bytes);
    memset(out, PATTERN, out_bytes);
    struct rlimit before;
    if (set_limit(margin, &before) != 0)
        _exit(7);
    const fb_status st = call(h, c, c->m, c->n, c->k, c->h, &in, out);
    o->status = (int)st;
    o->untouched = all_pattern(out, out_bytes);
    o->zero = all_zero(out, out_bytes);
    snprintf(o->message, sizeof o->message, "%s", fb_handle_last_message(h));
    snprintf(o->path, sizeof o->path, "%s", fb_handle_last_path(h));
    /* Where the outcome depends on the path: the same call, the limit
     * lifted, says which path it takes here. */
    if (c->kernel != NULL || c->path != NULL) {
        if (setrlimit(RLIMIT_AS, &before) != 0)
            _exit(7);
        o->rerun = 1;
        o->rerun_status = (int)call(h, c, c->m, c->n, c->k, c->h, &in, out);
        snprintf(o->rerun_path, sizeof o->rerun_path, "%s",
                 o->rerun_status == (int)FB_STATUS_SUCCESS
                     ? fb_handle_last_path(h)
                     : fb_handle_last_message(h));
    }
    free(in.a), free(in.b), free(in.u), free(in.d), free(out);
    fb_destroy(h);
}

static int starts_with(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* Fork, run case w in the child, and wait for its answer. Returns 1 with
 * *o filled if it answered, else 0 with why. */
static int in_child(const lcase *c, size_t margin, outcome *o, char *why,
                    size_t len)
{
    int fds[2];
    if (pipe(fds) != 0)
        tap_bail("pipe: %s", strerror(errno));
    fflush(stdout);
    const pid_t pid = fork();
    if (pid < 0)
        tap_bail("fork: %s", strerror(errno));
    if (pid == 0) {
        close(fds[0]);
        outcome mine;
        memset(&mine, 0, sizeof mine);
        run_case(c, margin, &mine);
        const ssize_t put = write(fds[1], &mine, sizeof mine);
        _exit(put == (ssize_t)sizeof mine ? 0 : 8);
    }
    close(fds[1]);
    struct pollfd pf = {fds[0], POLLIN, 0};
    int ready;
    do
        ready = poll(&pf, 1, TIMEOUT_S * 1000);
    while (ready < 0 && errno == EINTR);
    int answered = 0;
    memset(o, 0, sizeof *o);
    if (ready > 0) {
        const ssize_t got = read(fds[0], o, sizeof *o);
        answered = got == (ssize_t)sizeof *o;
    }
    if (ready == 0)
        kill(pid, SIGKILL);
    close(fds[0]);
    int ws = 0;
    waitpid(pid, &ws, 0);
    if (ready == 0)
        snprintf(why, len, "no answer in %d s: the call hangs", TIMEOUT_S);
    else if (!answered)
        snprintf(why, len, "the child ended without an answer (%s %d)",
                 WIFSIGNALED(ws) ? "signal" : "exit status",
                 WIFSIGNALED(ws) ? WTERMSIG(ws) : WEXITSTATUS(ws));
    return answered;
}

/* Whether valgrind runs this program: it preloads its vgpreload_*.so. */
static int under_valgrind(void)
{
    const char *p = getenv("LD_PRELOAD");
    return p != NULL && strstr(p, "vgpreload") != NULL;
}

/* Case c in a child, under a limit of mapped + margin (room: that margin
 * in words), and its test point. fits: the margin leaves room for what
 * the call needs, and it must succeed. */
static void run_and_check(const lcase *c, size_t margin, const char *room,
                          int fits)
{
    outcome o;
    char why[160];
    tcheck chk;
    tcheck_init(&chk);
    const int answered = in_child(c, margin, &o, why, sizeof why);
    /* The path the call takes here, once the limit is lifted. */
    const int ran_ok =
        answered && o.rerun && o.rerun_status == (int)FB_STATUS_SUCCESS;
    const int on_kernel = ran_ok && c->kernel != NULL &&
                          starts_with(o.rerun_path, c->kernel);
    /* Warm cases: the kernel fails cleanly where it runs, OpenBLAS
     * does the call where it does not. */
    const fb_status want = fits || (c->warm && !on_kernel)
                               ? FB_STATUS_SUCCESS
                               : FB_STATUS_ALLOC_FAILED;
    if (!answered) {
        tcheck_fail(&chk, "%s", why);
    } else {
        if (c->warm && !starts_with(o.warm_path, OPENBLAS_PATH))
            tcheck_fail(&chk, "the warming hgemm ran %s, not OpenBLAS",
                        o.warm_path);
        if (o.rerun && !ran_ok)
            tcheck_fail(&chk, "the same call with the limit lifted "
                        "failed: %s", o.rerun_path);
        if (ran_ok && c->path != NULL &&
            !starts_with(o.rerun_path, c->path))
            tcheck_fail(&chk, "the call runs %s here, not %s...",
                        o.rerun_path, c->path);
        if (o.status != (int)want)
            tcheck_fail(&chk, "status %s (%s), expected %s",
                        fb_status_string((fb_status)o.status),
                        o.message[0] ? o.message : o.path,
                        fb_status_string(want));
        if (want != FB_STATUS_SUCCESS && !o.untouched)
            tcheck_fail(&chk, "the output was written");
        if (want == FB_STATUS_SUCCESS && o.status == (int)want &&
            !o.zero)
            tcheck_fail(&chk, "the output is not 0 (path %s)", o.path);
    }
    char kind[200] = "";
    if (c->kernel != NULL)
        snprintf(kind, sizeof kind, " (%s %s here)", c->kernel,
                 on_kernel ? "runs" : "does not run");
    else if (c->path != NULL)
        snprintf(kind, sizeof kind, " (on %s...)", c->path);
    tap_check(&chk, "RLIMIT_AS = mapped + %s%s: %s -> %s%s%s", room,
              c->warm ? ", OpenBLAS warm" : ", OpenBLAS not yet run",
              c->what, fb_status_string(want),
              want == FB_STATUS_SUCCESS ? ", right" : ", output untouched",
              kind);
    if (ran_ok)
        tap_diag("  the call, the limit lifted, runs %s", o.rerun_path);
    if (answered && o.status == (int)want && o.message[0])
        tap_diag("  %s", o.message);
}

/* Phase omp-wide: room for OpenBLAS's buffers for one thread per CPU
 * (what the library makes sure of before OpenBLAS's first call) and a
 * malloc arena for each, and 40 MB more; OMP_NUM_THREADS asks for four
 * times as many threads. */
static void omp_wide(void)
{
    cpu_set_t set;
    long cpus = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set)
                                                            : 1;
    const long online = sysconf(_SC_NPROCESSORS_ONLN);
    if (online > cpus)
        cpus = online;
    char room[96];
    snprintf(room, sizeof room, "%ld x 192 MiB + 40 MB, OMP_NUM_THREADS=%s",
             cpus, getenv("OMP_NUM_THREADS") ? getenv("OMP_NUM_THREADS")
                                             : "?");
    for (int i = 0; i < N_WIDE; i++)
        run_and_check(&wide_cases[i],
                      (size_t)cpus * (BLAS_BUFFER + THREAD_ARENA) + MARGIN,
                      room, 1);
}

int main(int argc, char **argv)
{
    const char *phase = tap_child_init(argc, argv);
    tap_begin("test_alloc_limit");
#if defined(FB_TEST_ASAN)
    tap_skip_all("AddressSanitizer's shadow memory rules out RLIMIT_AS");
#endif
    if (under_valgrind())
        tap_skip_all("valgrind's own memory counts against RLIMIT_AS");
    if (phase != NULL) {
        if (!tap_in_phase("omp-wide"))
            tap_bail("unknown phase %s", phase);
        omp_wide();
        return tap_end();
    }
    for (int i = 0; i < N_CASES; i++)
        run_and_check(&cases[i], MARGIN, "40 MB", 0);
    /* libgomp reads OMP_NUM_THREADS when it is loaded: a new process. */
    cpu_set_t set;
    const int cpus = sched_getaffinity(0, sizeof set, &set) == 0
                         ? CPU_COUNT(&set)
                         : 1;
    char wide[48];
    snprintf(wide, sizeof wide, "OMP_NUM_THREADS=%d",
             4 * (cpus > 2 ? cpus : 2));
    const char *env[] = {wide, "OMP_THREAD_LIMIT", "OMP_DYNAMIC", NULL};
    tap_rerun("omp-wide", env, 2 * TIMEOUT_S + 30);
    return tap_end();
}
