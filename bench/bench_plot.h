/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_plot.h -- gnuplot PNGs of the results.
 */
#ifndef FB_BENCH_PLOT_H
#define FB_BENCH_PLOT_H

#include "bench_report.h"

/* Write the plots into dir with gnuplot (NULL: "gnuplot" from PATH; "":
 * configure found none). 0 when plotted or nothing to plot, 1 when there is
 * no gnuplot (a note is printed), -1 on failure. */
int bench_plot(const bench_report *r, const char *dir, const char *gnuplot);

#endif /* FB_BENCH_PLOT_H */
