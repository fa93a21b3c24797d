/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_options.h -- the command line of fusedblas-bench.
 */
#ifndef FB_BENCH_OPTIONS_H
#define FB_BENCH_OPTIONS_H

#include <stdio.h>
#include "bench.h"

void bench_options_default(bench_options *o);
/* 0, or -1 after a message on stderr. --help prints and exits. */
int bench_options_parse(int argc, char **argv, bench_options *o);
void bench_usage(FILE *f);

#endif /* FB_BENCH_OPTIONS_H */
