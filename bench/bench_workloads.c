/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_workloads.c -- the catalogue of workloads.
 *
 * Every workload runs on the GPU. The CPU (2 cores on the development
 * machine) runs a subset by default: the big prefill and tiny-MLP shapes
 * take minutes there, so only their smallest m is in the subset; --all
 * runs everything, and a memory budget still skips what does not fit.
 */
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include "bench_workloads.h"

#define DT_F32 (1 << FB_DTYPE_F32)
#define DT_F16 (1 << FB_DTYPE_F16)
#define DT_BF16 (1 << FB_DTYPE_BF16)
#define DT_ALL (DT_F32 | DT_F16 | DT_BF16)

/* A family of cases: one shape over several m and data types. */
typedef struct bench_spec {
    const char *group;
    bench_routine routine;
    int64_t k, h, n;
    int bias;
    const int64_t *ms;
    int nms;
    int dtypes;     /* data types the family runs in */
    int cpu_dtypes; /* ... of which the CPU's default subset */
    int64_t cpu_m_max;
} bench_spec;

#define NELEM(a) ((int)(sizeof(a) / sizeof((a)[0])))

static const int64_t m_seed_mlp[] = {8192};
static const int64_t m_seed_linear[] = {1024};
static const int64_t m_decode[] = {1, 4, 16, 32};
static const int64_t m_prefill[] = {1024, 2048, 4096, 8192};
static const int64_t m_tiny[] = {65536, 262144, 1048576};
static const int64_t m_1024[] = {1024};
static const int64_t m_16[] = {16};
static const int64_t m_512[] = {512};
static const int64_t m_8192[] = {8192};
static const int64_t m_4096[] = {4096};

/* docs/DESIGN.md's workloads; "cpu-gemm" are the shapes of the CPU issue (#8).
 * Listed in the order they run, most telling first, so that a --budget cut
 * drops the least.
 * The decode and prefill widths are LLaMA-7B's; the seed is GeGLU BERT-size
 * with no biases; nn.Linear-style gemms and the tiny MLPs carry biases. */
static const bench_spec catalogue[] = {
    {"seed-mlp", BENCH_MLP, 768, 3072, 768, 0, m_seed_mlp, 1, DT_ALL, DT_ALL, 8192},
    {"seed-linear", BENCH_GEMM, 32, 0, 64, 1, m_seed_linear, 1, DT_ALL, DT_ALL, 1024},
    {"decode-mlp", BENCH_MLP, 4096, 11008, 4096, 0, m_decode, 4, DT_ALL, DT_ALL, 32},
    {"decode-gemm", BENCH_GEMM, 4096, 0, 11008, 1, m_decode, 4, DT_ALL, DT_ALL, 32},
    {"decode-mlp-768", BENCH_MLP, 768, 3072, 768, 1, m_decode, 4, DT_ALL, DT_ALL, 32},
    {"tiny-mlp", BENCH_MLP, 64, 64, 64, 1, m_tiny, 3, DT_ALL, DT_F32 | DT_BF16, 65536},
    {"tiny-mlp", BENCH_MLP, 64, 256, 64, 1, m_tiny, 3, DT_ALL, DT_F32 | DT_BF16, 65536},
    {"tiny-mlp", BENCH_MLP, 128, 128, 128, 1, m_tiny, 3, DT_ALL, DT_F32 | DT_BF16, 65536},
    {"tiny-mlp", BENCH_MLP, 256, 256, 256, 1, m_tiny, 3, DT_ALL, DT_F32 | DT_BF16, 65536},
    {"prefill-mlp", BENCH_MLP, 4096, 11008, 4096, 0, m_prefill, 4, DT_ALL,
     DT_F32 | DT_BF16, 1024},
    {"prefill-gemm", BENCH_GEMM, 4096, 0, 11008, 1, m_prefill, 4, DT_ALL,
     DT_F32 | DT_BF16, 1024},
    {"cpu-gemm", BENCH_GEMM, 32, 0, 64, 1, m_1024, 1, DT_ALL, DT_ALL, 1024},
    {"cpu-gemm", BENCH_GEMM, 768, 0, 3072, 1, m_16, 1, DT_ALL, DT_ALL, 16},
    {"cpu-gemm", BENCH_GEMM, 4096, 0, 11008, 1, m_16, 1, DT_ALL, DT_ALL, 16},
    {"cpu-gemm", BENCH_GEMM, 1024, 0, 4096, 1, m_512, 1, DT_ALL, DT_ALL, 512},
    {"cpu-gemm", BENCH_GEMM, 768, 0, 3072, 1, m_8192, 1, DT_ALL, DT_ALL, 8192},
};

/* --quick: small shapes of the same kinds, seconds on two CPU cores. */
static const bench_spec quick_catalogue[] = {
    {"seed-linear", BENCH_GEMM, 32, 0, 64, 1, m_seed_linear, 1, DT_ALL, DT_ALL, 1024},
    {"cpu-gemm", BENCH_GEMM, 768, 0, 3072, 1, m_16, 1, DT_F32 | DT_BF16,
     DT_F32 | DT_BF16, 16},
    {"decode-mlp-768", BENCH_MLP, 768, 3072, 768, 1, m_16, 1, DT_F32 | DT_BF16,
     DT_F32 | DT_BF16, 16},
    {"tiny-mlp", BENCH_MLP, 64, 256, 64, 1, m_4096, 1, DT_F32 | DT_BF16,
     DT_F32 | DT_BF16, 4096},
};

static int push(bench_case_list *l, const bench_case *c)
{
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 64;
        bench_case *v = realloc(l->v, (size_t)cap * sizeof *v);
        if (v == NULL)
            return -1;
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = *c;
    return 0;
}

/* Whether name is one of the comma-separated words of list. */
static int in_list(const char *list, const char *name)
{
    size_t len = strlen(name);
    for (const char *p = list; *p;) {
        const char *e = strchr(p, ',');
        size_t wl = e ? (size_t)(e - p) : strlen(p);
        if (wl == len && strncmp(p, name, len) == 0)
            return 1;
        if (!e)
            break;
        p = e + 1;
    }
    return 0;
}

static int add_shape_cases(const bench_options *opt, bench_case_list *out)
{
    int mask = opt->dtype_mask ? opt->dtype_mask : DT_F32;
    for (int t = 0; t < 3; t++) {
        if (!(mask & (1 << t)))
            continue;
        bench_case c = {0};
        c.routine = opt->shape_len == 4 ? BENCH_MLP : BENCH_GEMM;
        c.group = opt->weights_kn && c.routine == BENCH_GEMM ? "custom-kn"
                                                             : "custom";
        c.dtype = (fb_dtype)t;
        c.act = opt->act_given ? opt->act : FB_ACT_GELU_TANH;
        c.m = opt->shape[0];
        c.k = opt->shape[1];
        c.h = opt->shape_len == 4 ? opt->shape[2] : 0;
        c.n = opt->shape[opt->shape_len - 1];
        c.bias = opt->bias >= 0 ? opt->bias : c.routine == BENCH_GEMM;
        c.weights_kn = opt->weights_kn && c.routine == BENCH_GEMM;
        c.on_cpu = c.on_gpu = c.quick = 1;
        if (push(out, &c) != 0)
            return -1;
    }
    return 0;
}

int bench_cases_build(const bench_options *opt, bench_case_list *out)
{
    memset(out, 0, sizeof *out);
    if (opt->have_shape)
        return add_shape_cases(opt, out);
    const bench_spec *cat = opt->quick ? quick_catalogue : catalogue;
    int ncat = opt->quick ? NELEM(quick_catalogue) : NELEM(catalogue);
    for (int s = 0; s < ncat; s++) {
        const bench_spec *sp = &cat[s];
        if (!(opt->routine_mask & (1 << sp->routine)))
            continue;
        if (opt->groups && !in_list(opt->groups, sp->group))
            continue;
        for (int t = 0; t < 3; t++) {
            int bit = 1 << t;
            if (!(sp->dtypes & bit) || (opt->dtype_mask && !(opt->dtype_mask & bit)))
                continue;
            for (int i = 0; i < sp->nms; i++) {
                bench_case c = {0};
                c.group = sp->group;
                c.routine = sp->routine;
                c.dtype = (fb_dtype)t;
                c.act = opt->act_given ? opt->act : FB_ACT_GELU_TANH;
                c.m = sp->ms[i];
                c.k = sp->k;
                c.h = sp->h;
                c.n = sp->n;
                c.bias = sp->bias;
                c.weights_kn = opt->weights_kn && c.routine == BENCH_GEMM;
                c.on_cpu = (sp->cpu_dtypes & bit) && c.m <= sp->cpu_m_max;
                c.on_gpu = 1;
                c.quick = opt->quick;
                if (push(out, &c) != 0)
                    return -1;
            }
        }
    }
    return 0;
}

void bench_cases_free(bench_case_list *l)
{
    free(l->v);
    memset(l, 0, sizeof *l);
}

int bench_case_runs_on(const bench_options *opt, const bench_case *c, int gpu)
{
    if (gpu)
        return c->on_gpu;
    /* --group and --dtype narrow the default subset; --all widens it. */
    return c->on_cpu || opt->all || opt->have_shape;
}

double bench_case_flops(const bench_case *c)
{
    double m = (double)c->m, k = (double)c->k, h = (double)c->h, n = (double)c->n;
    if (c->routine == BENCH_GEMM)
        return 2 * m * k * n;
    return 2 * m * k * h * 2 + 2 * m * h * n;
}

double bench_case_bytes(const bench_case *c)
{
    double es = c->dtype == FB_DTYPE_F32 ? 4 : 2;
    double m = (double)c->m, k = (double)c->k, h = (double)c->h, n = (double)c->n;
    if (c->routine == BENCH_GEMM)
        return es * (m * k + n * k + m * n + (c->bias ? n : 0));
    return es * (m * k + 2 * h * k + n * h + m * n + (c->bias ? 2 * h + n : 0));
}

double bench_case_bytes_e4m3(const bench_case *c)
{
    double es = c->dtype == FB_DTYPE_F32 ? 4 : 2;
    double m = (double)c->m, k = (double)c->k, h = (double)c->h, n = (double)c->n;
    if (c->routine == BENCH_GEMM)
        return es * (m * k + m * n + (c->bias ? n : 0)) + n * k + 4 * n;
    return es * (m * k + m * n + (c->bias ? 2 * h + n : 0)) +
           (2 * h * k + n * h) + 4 * (2 * h + n);
}

const char *bench_dtype_name(fb_dtype t)
{
    switch (t) {
    case FB_DTYPE_F32: return "f32";
    case FB_DTYPE_F16: return "f16";
    case FB_DTYPE_BF16: return "bf16";
    }
    return "?";
}

const char *bench_act_name(fb_activation a)
{
    switch (a) {
    case FB_ACT_NONE: return "none";
    case FB_ACT_RELU: return "relu";
    case FB_ACT_GELU_TANH: return "gelu_tanh";
    case FB_ACT_GELU_ERF: return "gelu_erf";
    case FB_ACT_SILU: return "silu";
    }
    return "?";
}

const char *bench_routine_name(bench_routine r)
{
    return r == BENCH_GEMM ? "gemm" : "mlp";
}

int bench_parse_dtype(const char *s, fb_dtype *t)
{
    if (!strcmp(s, "f32") || !strcmp(s, "fp32") || !strcmp(s, "float"))
        *t = FB_DTYPE_F32;
    else if (!strcmp(s, "f16") || !strcmp(s, "fp16") || !strcmp(s, "half"))
        *t = FB_DTYPE_F16;
    else if (!strcmp(s, "bf16") || !strcmp(s, "bfloat16"))
        *t = FB_DTYPE_BF16;
    else
        return -1;
    return 0;
}

int bench_parse_act(const char *s, fb_activation *a)
{
    static const fb_activation all[] = {FB_ACT_NONE, FB_ACT_RELU, FB_ACT_GELU_TANH,
                                        FB_ACT_GELU_ERF, FB_ACT_SILU};
    for (int i = 0; i < NELEM(all); i++)
        if (!strcmp(s, bench_act_name(all[i]))) {
            *a = all[i];
            return 0;
        }
    return -1;
}

void bench_case_shape(const bench_case *c, char *buf, size_t len)
{
    if (c->routine == BENCH_GEMM)
        snprintf(buf, len, "%lld,%lld,%lld", (long long)c->m, (long long)c->k,
                 (long long)c->n);
    else
        snprintf(buf, len, "%lld,%lld,%lld,%lld", (long long)c->m,
                 (long long)c->k, (long long)c->h, (long long)c->n);
}
