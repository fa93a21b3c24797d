/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_stats.h -- the clock, how many runs to time, and the statistics of
 * a set of timed runs (median and spread).
 */
#ifndef FB_BENCH_STATS_H
#define FB_BENCH_STATS_H

#include "bench.h"

/* Seconds on a monotonic clock. */
double bench_now(void);

/* How many timed runs to take of something that took one_run_s once:
 * enough to fill opt->target_s, at least opt->min_reps, at most opt->reps. */
int bench_reps_for(const bench_options *opt, double one_run_s);

/* Median, extremes and 10th/90th percentiles of n samples (seconds).
 * Sorts the samples in place. */
void bench_stats_from(double *samples, int n, bench_stats *out);

#endif /* FB_BENCH_STATS_H */
