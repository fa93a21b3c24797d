/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * omp.h -- the OpenMP queries the library makes, answered as a program
 * built without OpenMP would: one thread, never in a parallel region
 * (and a thread count set, which there is nothing to set).
 *
 * Only the clang builds of .ci/reliability.sh use it (the fuzzer and the
 * ThreadSanitizer build, both without -fopenmp): clang's own OpenMP
 * runtime and header come with libomp-dev, which CI does not install, and
 * gcc's omp.h does not compile under clang. Nothing is lost: the fuzzer's
 * sizes (at most 40) stay far below the CPU backend's threading
 * threshold, so the library's parallel regions run on one thread there
 * anyway; and TSan could not judge OpenMP teams (it cannot see the
 * barriers of an uninstrumented OpenMP runtime), so its run wants one
 * OpenMP thread per call.
 */
#ifndef FB_FUZZ_SERIAL_OMP_H
#define FB_FUZZ_SERIAL_OMP_H

static inline int omp_get_thread_num(void) { return 0; }
static inline int omp_get_num_threads(void) { return 1; }
static inline int omp_get_max_threads(void) { return 1; }
static inline int omp_in_parallel(void) { return 0; }
static inline int omp_get_thread_limit(void) { return 1; }
static inline void omp_set_num_threads(int n) { (void)n; }

#endif /* FB_FUZZ_SERIAL_OMP_H */
