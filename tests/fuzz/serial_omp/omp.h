/*
 * omp.h -- the OpenMP queries the library makes, answered as a program
 * built without OpenMP would: one thread, never in a parallel region.
 *
 * Only the fuzzer is built against this (with clang, and no -fopenmp), for
 * two reasons: clang's own OpenMP runtime and header come with libomp-dev,
 * which CI does not install, and gcc's omp.h does not compile under clang;
 * and a second OpenMP runtime (libomp) beside OpenBLAS's libgomp would
 * only add threads that the fuzzer's calls never use: its sizes (at most
 * 40) stay far below the CPU backend's threading threshold, so the
 * library's parallel regions run on one thread there anyway.
 */
#ifndef FB_FUZZ_SERIAL_OMP_H
#define FB_FUZZ_SERIAL_OMP_H

static inline int omp_get_thread_num(void) { return 0; }
static inline int omp_get_num_threads(void) { return 1; }
static inline int omp_get_max_threads(void) { return 1; }
static inline int omp_in_parallel(void) { return 0; }

#endif /* FB_FUZZ_SERIAL_OMP_H */
