/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cpu_runner.c -- one case on the CPU: allocate and fill the input sets,
 * time each implementation on the same sets, check outputs against the
 * unfused baseline, and hand the rows to the report.
 *
 * Timing: warm-up calls (at least one, about 0.1 s worth), then each timed
 * call measured alone with a monotonic clock, cycling through the sets;
 * the median is reported (bench_stats.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "bench_check.h"
#include "bench_memory.h"
#include "bench_random.h"
#include "bench_report.h"
#include "bench_sets.h"
#include "bench_stats.h"
#include "bench_workloads.h"
#include "cpu_impl.h"
#include "cpu_runner.h"

/* The baseline runs first: its output is the reference the others are
 * checked against. */
static const bench_cpu_impl *const impls[] = {
    &bench_cpu_openblas,
    &bench_cpu_openblas_gemm,
    &bench_cpu_onednn,
    &bench_cpu_onednn_reordered,
    &bench_cpu_fusedblas,
    &bench_cpu_fusedblas_plan,
    &bench_cpu_fusedblas_e4m3,
};
#define NIMPL ((int)(sizeof impls / sizeof impls[0]))

/* Host memory the implementations need beyond the sets (an estimate, to
 * keep the whole case inside the budget): the baseline's intermediates,
 * oneDNN's, and the reference output. */
static double scratch_bytes(const bench_case *c)
{
    double es = c->dtype == FB_DTYPE_F32 ? 4 : 2;
    double m = (double)c->m, k = (double)c->k, h = (double)c->h, n = (double)c->n;
    double s = es * m * n + 4 * m * n + 4 * m * k;
    if (c->routine == BENCH_MLP)
        s += 12 * m * h + 2 * es * m * h + 2 * es * m * h /* fusedblas's own */;
    return s;
}

/* Bytes per set, counting the fp32 weight copies of a baseline that
 * computes 16-bit data in fp32. */
static double per_set_bytes(const bench_case *c)
{
    double b = bench_case_bytes(c);
    if (c->dtype != FB_DTYPE_F32) {
        double w = c->routine == BENCH_GEMM
                       ? (double)c->n * c->k
                       : 2.0 * c->h * c->k + (double)c->n * c->h;
        b += 4 * w;
    }
    return b;
}

static void free_sets(bench_set *sets, int nsets, const bench_buffer_spec *bufs,
                      int nbuf)
{
    for (int s = 0; s < nsets; s++)
        for (int b = 0; b < nbuf; b++)
            bench_host_free(*bench_set_slot(&sets[s], &bufs[b]));
}

/* 0, or -1 if out of memory (what was allocated is freed by free_sets). */
static int make_sets(const bench_case *c, bench_set *sets, int nsets,
                     const bench_buffer_spec *bufs, int nbuf, uint64_t seed)
{
    size_t es = c->dtype == FB_DTYPE_F32 ? 4 : 2;
    for (int s = 0; s < nsets; s++)
        for (int b = 0; b < nbuf; b++) {
            void *p = bench_host_alloc((size_t)bufs[b].count * es);
            *bench_set_slot(&sets[s], &bufs[b]) = p;
            if (p == NULL)
                return -1;
            if (bufs[b].scale > 0)
                bench_fill_uniform(c->dtype, p, bufs[b].count,
                                   bench_buffer_seed(seed, s, b), bufs[b].scale);
        }
    return 0;
}

/* Warm up, then time. Returns the first non-zero run() result, or 0. */
static int time_impl(const bench_cpu_impl *impl, void *st, int nsets,
                     const bench_options *opt, bench_stats *out)
{
    double warm_target = opt->quick ? 0.01 : 0.1;
    double start = bench_now(), last = 0;
    int calls = 0, rc;
    do {
        double t0 = bench_now();
        if ((rc = impl->run(st, calls % nsets)) != 0)
            return rc;
        last = bench_now() - t0;
        calls++;
    } while (bench_now() - start < warm_target && calls < 100);
    int reps = bench_reps_for(opt, last);
    double *t = malloc((size_t)reps * sizeof *t);
    if (t == NULL)
        return -1;
    for (int r = 0; r < reps; r++) {
        double t0 = bench_now();
        if ((rc = impl->run(st, (calls + r) % nsets)) != 0) {
            free(t);
            return rc;
        }
        t[r] = bench_now() - t0;
    }
    bench_stats_from(t, reps, out);
    free(t);
    return 0;
}

void bench_run_cpu_case(const bench_options *opt, const bench_ceilings *cl,
                        const bench_case *c, bench_report *rep)
{
    bench_row rows[NIMPL];
    memset(rows, 0, sizeof rows);
    bench_buffer_spec bufs[BENCH_MAX_BUFFERS];
    int nbuf = bench_set_buffers(c, bufs);
    size_t es = c->dtype == FB_DTYPE_F32 ? 4 : 2;
    int64_t ycount = c->m * c->n;
    double budget = opt->mem_budget_mb * 1048576.0;
    int nsets = bench_nsets(per_set_bytes(c), (double)cl->cpu_llc_bytes,
                            scratch_bytes(c), budget);
    bench_set sets[BENCH_MAX_SETS];
    memset(sets, 0, sizeof sets);
    void *ref = NULL;
    int have_ref = 0;
    char skip[160] = "";

    if (nsets == 0)
        snprintf(skip, sizeof skip, "needs %.0f MB, over the %.0f MB budget (--mem-budget)",
                 (per_set_bytes(c) + scratch_bytes(c)) / 1048576.0, opt->mem_budget_mb);
    else if (make_sets(c, sets, nsets, bufs, nbuf, opt->seed) != 0 ||
             !(ref = malloc((size_t)ycount * es)))
        snprintf(skip, sizeof skip, "out of host memory for the input sets");

    for (int i = 0; i < NIMPL; i++) {
        bench_row *w = &rows[i];
        w->c = *c;
        w->device = "cpu";
        snprintf(w->impl, sizeof w->impl, "%s", impls[i]->name);
        w->kind = impls[i]->kind;
        w->nsets = nsets;
        w->err = -1;
        w->check_ok = -1;
        if (skip[0]) {
            w->outcome = BENCH_SKIPPED;
            snprintf(w->note, sizeof w->note, "%s", skip);
            bench_progress(w);
            continue;
        }
        void *st = NULL;
        w->outcome = impls[i]->init(&st, c, sets, nsets, opt, w->note, sizeof w->note);
        if (w->outcome == BENCH_RAN) {
            int rc = time_impl(impls[i], st, nsets, opt, &w->t);
            if (rc != 0) {
                w->outcome = rc > 0 ? BENCH_NOT_SUPPORTED : BENCH_FAILED;
                if (impls[i]->message)
                    snprintf(w->note, sizeof w->note, "%s", impls[i]->message(st));
            } else {
                if (impls[i]->message)
                    snprintf(w->path, sizeof w->path, "%s", impls[i]->message(st));
                /* check: poison set 0's output, run once, compare */
                if (opt->check && w->kind != BENCH_REFERENCE &&
                    impls[i] != &bench_cpu_fusedblas_e4m3) {
                    memset(sets[0].y, BENCH_POISON_BYTE, (size_t)ycount * es);
                    if (impls[i]->run(st, 0) == 0) {
                        if (w->kind == BENCH_BASELINE) {
                            memcpy(ref, sets[0].y, (size_t)ycount * es);
                            have_ref = 1;
                        } else if (have_ref) {
                            w->err = bench_rel_err(c->dtype, sets[0].y, ref, ycount);
                            w->check_ok = w->err <= bench_check_tol(c, 0);
                        }
                    }
                }
            }
        }
        if (impls[i]->fini)
            impls[i]->fini(st);
        bench_progress(w);
    }
    bench_finish_case(rows, NIMPL, cl, 0, 0);
    for (int i = 0; i < NIMPL; i++)
        if (bench_report_add(rep, &rows[i]) != 0)
            fprintf(stderr, "fusedblas-bench: out of memory for the report\n");
    free(ref);
    if (nsets > 0)
        free_sets(sets, nsets, bufs, nbuf);
}
