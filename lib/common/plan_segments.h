/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * plan_segments.h -- a plan's choice of implementation for every m from 1
 * to its max_m, decided once at creation and looked up at execution.
 *
 * The implementations' rules (applies, the shape rule) bound m at a few
 * values (32 tokens, 512 and 1024 rows, ...), so the choice is a step
 * function of m: it is asked at every m up to 64, where the decode rules
 * draw their lines, and above that at the class boundaries, bisecting
 * between two m whose choices differ to find where the step is. Plain C,
 * shared with the CUDA module.
 */
#ifndef FB_PLAN_SEGMENTS_H
#define FB_PLAN_SEGMENTS_H

#include <stdint.h>

#define FB_PLAN_SEGMENTS 96

/* Segment i covers m from hi[i - 1] + 1 (1 for i = 0) to hi[i], and its
 * choice is choice[i] (an index into the caller's table, or -1: none). */
typedef struct fb_plan_segments {
    int n;
    int64_t hi[FB_PLAN_SEGMENTS];
    int choice[FB_PLAN_SEGMENTS];
} fb_plan_segments;

typedef int (*fb_plan_choose_fn)(void *ctx, int64_t m);

static inline void fb_plan_segments_push(fb_plan_segments *s, int64_t m,
                                         int choice)
{
    if (s->n > 0 && s->choice[s->n - 1] == choice) {
        s->hi[s->n - 1] = m;
    } else if (s->n < FB_PLAN_SEGMENTS) {
        s->hi[s->n] = m;
        s->choice[s->n] = choice;
        s->n++;
    } else {
        /* Out of segments (a rule with many steps): the last one takes
         * the rest, with its own choice, which its m then re-asks. */
        s->hi[s->n - 1] = m;
    }
}

/* Push [lo + 1, hi], knowing choose(lo) = clo and choose(hi) = chi. */
static inline void fb_plan_segments_fill(fb_plan_segments *s, int64_t lo,
                                         int clo, int64_t hi, int chi,
                                         fb_plan_choose_fn choose, void *ctx)
{
    while (clo != chi && hi - lo > 1) {
        const int64_t mid = lo + (hi - lo) / 2;
        const int cmid = choose(ctx, mid);
        if (cmid == clo) {
            fb_plan_segments_push(s, mid, clo);
            lo = mid;
        } else {
            fb_plan_segments_fill(s, lo, clo, mid, cmid, choose, ctx);
            lo = mid, clo = cmid;
        }
    }
    fb_plan_segments_push(s, hi, chi);
}

static inline void fb_plan_segments_build(fb_plan_segments *s,
                                          int64_t max_m,
                                          fb_plan_choose_fn choose,
                                          void *ctx)
{
    static const int64_t marks[] = {128, 256, 512, 1024, 2048, 4096, 8192};
    s->n = 0;
    int64_t m = 1;
    int c = -1;
    for (; m <= max_m && m <= 64; m++)
        fb_plan_segments_push(s, m, c = choose(ctx, m));
    int64_t lo = m - 1;
    for (size_t i = 0; i <= sizeof marks / sizeof marks[0]; i++) {
        const int64_t hi =
            i < sizeof marks / sizeof marks[0] && marks[i] < max_m ? marks[i]
                                                                   : max_m;
        if (hi <= lo)
            continue;
        const int ch = choose(ctx, hi);
        fb_plan_segments_fill(s, lo, c, hi, ch, choose, ctx);
        lo = hi, c = ch;
        if (hi == max_m)
            break;
    }
}

/* The choice for m (1 <= m <= the max_m built for). */
static inline int fb_plan_segments_find(const fb_plan_segments *s, int64_t m)
{
    int lo = 0, hi = s->n - 1;
    while (lo < hi) {
        const int mid = (lo + hi) / 2;
        if (s->hi[mid] < m)
            lo = mid + 1;
        else
            hi = mid;
    }
    return s->n > 0 ? s->choice[lo] : -1;
}

#endif /* FB_PLAN_SEGMENTS_H */
