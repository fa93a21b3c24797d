/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cpu_plan.c -- plans on the CPU backend: the implementation for every m
 * decided once, the weights packed once into the layout of each
 * implementation chosen, the workspace reserved (in the handle, whose
 * plans share it) for the largest m.
 *
 * At creation the table is walked for each m (plan_segments.h) on the
 * plan's problem without X, where the entries judge by shape and CPU;
 * the entries chosen pack their weights, and are asked again with them
 * (the bf16 entries then read the weights' exponent fields that packing
 * found): one that does not take its weights after all (a denormal,
 * which the bf16 instructions would read as zero) is left out, and the
 * walk done again without it.
 *
 * At execution the chosen entry runs with the packed weights and the
 * reserved workspace. Its applies is asked again, on X: only the bf16
 * entries look at X, and where they do not take it (values the bf16
 * instructions would flush) the call goes down the table as an unplanned
 * call would, reading the weights where they lie.
 */
#define _POSIX_C_SOURCE 200809L
#include "config.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cpu.h"
#include "cpu_impl.h"
#include "plan_segments.h"

#define MAX_IMPLS 8

struct fb_cpu_plan {
    int is_gemm;
    fb_gemm_problem g; /* the plan's problem, m at max_m, no X or C */
    fb_mlp_problem q;
    int forced;        /* the handle forced an implementation */
    int threads;       /* the most a call may use (the handle's at
                          creation): the workspace is sized for them */
    fb_plan_segments segs; /* table index per m; -1 none takes it */
    void *packed[MAX_IMPLS];
};

/* ---- the two tables, seen alike ------------------------------------------ */

static int nimpls(int is_gemm)
{
    int n = 0;
    while (is_gemm ? fb_cpu_gemm_impls[n] != NULL : fb_cpu_mlp_impls[n] != NULL)
        n++;
    return n;
}

static const char *impl_name(int is_gemm, int i)
{
    return is_gemm ? fb_cpu_gemm_impls[i]->name : fb_cpu_mlp_impls[i]->name;
}

static int impl_threading(int is_gemm, int i)
{
    return is_gemm ? fb_cpu_gemm_impls[i]->threading
                   : fb_cpu_mlp_impls[i]->threading;
}

/* The plan's problem with m rows (a gemm's tokens: the caller's m). */
static fb_gemm_problem gemm_at(const fb_gemm_problem *g, int64_t m)
{
    fb_gemm_problem p = *g;
    if (p.weight_is_a)
        p.n = m;
    else
        p.m = m;
    return p;
}

static fb_mlp_problem mlp_at(const fb_mlp_problem *q, int64_t m)
{
    fb_mlp_problem p = *q;
    p.m = m;
    return p;
}

static double flops_at(const fb_cpu_plan *pl, int64_t m)
{
    if (pl->is_gemm) {
        const fb_gemm_problem p = gemm_at(&pl->g, m);
        return fb_cpu_gemm_flops(&p);
    }
    const fb_mlp_problem p = mlp_at(&pl->q, m);
    return fb_cpu_mlp_flops(&p);
}

static int applies_at(const fb_cpu_plan *pl, int i, fb_cpu_call *c,
                      int64_t m)
{
    c->threads = fb_cpu_threads_for(c->h, impl_threading(pl->is_gemm, i),
                                    flops_at(pl, m), pl->threads);
    c->packed = pl->packed[i];
    if (pl->is_gemm) {
        const fb_gemm_problem p = gemm_at(&pl->g, m);
        return fb_cpu_gemm_impls[i]->applies(c, &p);
    }
    const fb_mlp_problem p = mlp_at(&pl->q, m);
    return fb_cpu_mlp_impls[i]->applies(c, &p);
}

/* Whether the shape rule prefers entry i at m (fb_cpu_gemm_impl). */
static int prefers_at(const fb_cpu_plan *pl, int i, int64_t m)
{
    if (pl->is_gemm) {
        const fb_gemm_problem p = gemm_at(&pl->g, m);
        const fb_cpu_gemm_impl *im = fb_cpu_gemm_impls[i];
        return im->prefers == NULL || im->prefers(&p);
    }
    const fb_mlp_problem p = mlp_at(&pl->q, m);
    const fb_cpu_mlp_impl *im = fb_cpu_mlp_impls[i];
    return im->prefers == NULL || im->prefers(&p);
}

static size_t workspace_at(fb_handle h, const fb_cpu_plan *pl, int i,
                           int64_t m)
{
    const int t = fb_cpu_threads_for(h, impl_threading(pl->is_gemm, i),
                                     flops_at(pl, m), pl->threads);
    if (pl->is_gemm) {
        const fb_gemm_problem p = gemm_at(&pl->g, m);
        return fb_cpu_gemm_impls[i]->workspace(&p, t, pl->packed[i] != NULL);
    }
    const fb_mlp_problem p = mlp_at(&pl->q, m);
    return fb_cpu_mlp_impls[i]->workspace(&p, t, pl->packed[i] != NULL);
}

/* Entry i's packed weights, made the first time it is asked; 0 if they
 * cannot be had (memory). */
static int pack_entry(fb_cpu_plan *pl, int i)
{
    if (pl->packed[i] != NULL)
        return 1;
    size_t bytes = 0;
    if (pl->is_gemm) {
        const fb_cpu_gemm_impl *im = fb_cpu_gemm_impls[i];
        bytes = im->pack_bytes != NULL ? im->pack_bytes(&pl->g) : 0;
    } else {
        const fb_cpu_mlp_impl *im = fb_cpu_mlp_impls[i];
        bytes = im->pack_bytes != NULL ? im->pack_bytes(&pl->q) : 0;
    }
    if (bytes == 0)
        return 1; /* reads its weights in place */
    void *dst = NULL;
    if (posix_memalign(&dst, 64, bytes) != 0)
        return 0;
    if (pl->is_gemm)
        fb_cpu_gemm_impls[i]->pack(&pl->g, pl->threads, dst);
    else
        fb_cpu_mlp_impls[i]->pack(&pl->q, pl->threads, dst);
    pl->packed[i] = dst;
    return 1;
}

typedef struct walk {
    fb_cpu_plan *pl;
    fb_handle h;
    const char *forced;
    unsigned left_out; /* bit i: entry i does not take the weights */
} walk;

static int choose_at(void *ctx, int64_t m)
{
    walk *w = ctx;
    fb_cpu_plan *pl = w->pl;
    for (int i = 0; i < nimpls(pl->is_gemm); i++) {
        if ((w->forced != NULL && strcmp(w->forced, impl_name(pl->is_gemm, i))) ||
            (w->left_out >> i & 1u))
            continue;
        fb_cpu_call c = {w->h, 1, NULL, NULL};
        if (applies_at(pl, i, &c, m) &&
            (w->forced != NULL || prefers_at(pl, i, m)))
            return i;
    }
    return -1;
}

/* ---- creation ----------------------------------------------------------- */

void fb_cpu_plan_destroy(fb_cpu_plan *pl)
{
    if (pl == NULL)
        return;
    for (int i = 0; i < MAX_IMPLS; i++)
        free(pl->packed[i]);
    free(pl);
}

fb_status fb_cpu_plan_create(fb_handle h, const fb_gemm_problem *g,
                             const fb_mlp_problem *q, const char *forced,
                             fb_cpu_plan **out, char *msg, size_t len)
{
    fb_cpu_plan *pl = calloc(1, sizeof *pl);
    if (pl == NULL) {
        snprintf(msg, len, "cannot allocate the plan");
        return FB_STATUS_ALLOC_FAILED;
    }
    pl->is_gemm = g != NULL;
    if (g != NULL)
        pl->g = *g;
    else
        pl->q = *q;
    pl->forced = forced != NULL;
    const int64_t max_m = g != NULL ? fb_gemm_tokens(g) : q->m;
    /* The handle's threads for the largest call. */
    pl->threads = fb_cpu_own_threads(h, flops_at(pl, max_m));
    walk w = {pl, h, forced, 0};
    for (;;) {
        fb_plan_segments_build(&pl->segs, max_m, choose_at, &w);
        /* Pack what the walk chose, and ask each chosen entry again with
         * its packed weights, at the end of one of its segments. */
        unsigned bad = 0;
        for (int s = 0; s < pl->segs.n; s++) {
            const int i = pl->segs.choice[s];
            if (i < 0)
                continue;
            if (!pack_entry(pl, i)) {
                fb_cpu_plan_destroy(pl);
                snprintf(msg, len, "cannot allocate the packed weights");
                return FB_STATUS_ALLOC_FAILED;
            }
            fb_cpu_call c = {h, 1, NULL, NULL};
            if (pl->packed[i] != NULL && !applies_at(pl, i, &c, pl->segs.hi[s]))
                bad |= 1u << i;
        }
        if (bad == 0)
            break;
        w.left_out |= bad;
        for (int i = 0; i < MAX_IMPLS; i++)
            if (bad >> i & 1u) {
                free(pl->packed[i]);
                pl->packed[i] = NULL;
            }
    }
    int any = 0;
    for (int s = 0; s < pl->segs.n; s++)
        any |= pl->segs.choice[s] >= 0;
    if (!any) {
        fb_cpu_plan_destroy(pl);
        if (forced != NULL)
            snprintf(msg, len, "%s takes no m of the plan", forced);
        else
            snprintf(msg, len, "no implementation takes the plan (a "
                     "dimension beyond OpenBLAS's integer)");
        return FB_STATUS_NOT_SUPPORTED;
    }
    /* Keep what some m uses; size the workspace for every m. */
    int used[MAX_IMPLS] = {0};
    size_t ws = 0;
    for (int s = 0; s < pl->segs.n; s++) {
        const int i = pl->segs.choice[s];
        if (i < 0)
            continue;
        used[i] = 1;
        const int64_t lo = s > 0 ? pl->segs.hi[s - 1] + 1 : 1;
        const int64_t hi = pl->segs.hi[s];
        /* Every m of a segment's first 1024, where sizes move with m
         * and not always up (the decode kernels' geometry, the MLPs'
         * hidden-split forms up to 256 rows), then its last two. */
        for (int64_t m = lo; m <= hi; m = m < lo + 1024 || m == hi - 1
                                              ? m + 1
                                              : hi - 1) {
            const size_t b = workspace_at(h, pl, i, m);
            ws = b > ws ? b : ws;
            if (m == hi)
                break;
        }
    }
    for (int i = 0; i < MAX_IMPLS; i++)
        if (!used[i]) {
            free(pl->packed[i]);
            pl->packed[i] = NULL;
        }
    /* The workspace is reserved in the handle, which only grows it: the
     * handle's plans share one buffer (the sum of their sizes would be
     * mostly cold), and reserved means mapped: the pages are touched now,
     * so that no execution pays for their first use (a page fault per 4
     * KiB, dear in a virtual machine). */
    void *wsp = ws > 0 ? fb_handle_workspace(h, ws) : NULL;
    if (ws > 0 && wsp == NULL) {
        fb_cpu_plan_destroy(pl);
        snprintf(msg, len, "cannot allocate %zu bytes of workspace", ws);
        return FB_STATUS_ALLOC_FAILED;
    }
    if (ws > 0)
        memset(wsp, 0, ws);
    *out = pl;
    return FB_STATUS_SUCCESS;
}

const char *fb_cpu_plan_impl(const fb_cpu_plan *pl, int64_t m)
{
    const int i = fb_plan_segments_find(&pl->segs, m);
    return i < 0 ? "" : impl_name(pl->is_gemm, i);
}

/* ---- execution ---------------------------------------------------------- */

/* The call's workspace: the handle's, which creation grew to the plan's
 * needs (only an entry the plan did not size for, a fallback or thread
 * counts beyond the plan's, may have it grow now). */
static void *workspace_for(fb_handle h, size_t bytes)
{
    return fb_handle_workspace(h, bytes);
}

fb_status fb_cpu_plan_gemm(fb_handle h, const fb_cpu_plan *pl,
                           const fb_gemm_problem *p, char *path, size_t len)
{
    const int i = fb_plan_segments_find(&pl->segs, fb_gemm_tokens(p));
    if (i < 0) {
        snprintf(path, len, "no implementation of the plan takes m = %lld",
                 (long long)fb_gemm_tokens(p));
        return FB_STATUS_NOT_SUPPORTED;
    }
    const fb_cpu_gemm_impl *im = fb_cpu_gemm_impls[i];
    fb_cpu_call c = {h, 1, NULL, pl->packed[i]};
    c.threads = fb_cpu_threads_for(h, im->threading, fb_cpu_gemm_flops(p),
                                   pl->threads);
    if (!im->applies(&c, p)) {
        if (pl->forced) {
            snprintf(path, len, "%s does not apply to this call", im->name);
            return FB_STATUS_NOT_SUPPORTED;
        }
        return fb_cpu_gemm(h, p, NULL, path, len);
    }
    const size_t bytes = im->workspace(p, c.threads, c.packed != NULL);
    if (bytes > 0 && (c.ws = workspace_for(h, bytes)) == NULL) {
        snprintf(path, len, "%s: cannot allocate %zu bytes of workspace",
                 im->name, bytes);
        return FB_STATUS_ALLOC_FAILED;
    }
    return im->run(&c, p, path, len);
}

fb_status fb_cpu_plan_mlp(fb_handle h, const fb_cpu_plan *pl,
                          const fb_mlp_problem *p, char *path, size_t len)
{
    const int i = fb_plan_segments_find(&pl->segs, p->m);
    if (i < 0) {
        snprintf(path, len, "no implementation of the plan takes m = %lld",
                 (long long)p->m);
        return FB_STATUS_NOT_SUPPORTED;
    }
    const fb_cpu_mlp_impl *im = fb_cpu_mlp_impls[i];
    fb_cpu_call c = {h, 1, NULL, pl->packed[i]};
    c.threads = fb_cpu_threads_for(h, im->threading, fb_cpu_mlp_flops(p),
                                   pl->threads);
    if (!im->applies(&c, p)) {
        if (pl->forced) {
            snprintf(path, len, "%s does not apply to this call", im->name);
            return FB_STATUS_NOT_SUPPORTED;
        }
        return fb_cpu_mlp(h, p, NULL, path, len);
    }
    const size_t bytes = im->workspace(p, c.threads, c.packed != NULL);
    if (bytes > 0 && (c.ws = workspace_for(h, bytes)) == NULL) {
        snprintf(path, len, "%s: cannot allocate %zu bytes of workspace",
                 im->name, bytes);
        return FB_STATUS_ALLOC_FAILED;
    }
    return im->run(&c, p, path, len);
}
