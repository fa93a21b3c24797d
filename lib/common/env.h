/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * env.h -- every environment variable the library reads: its name, the
 * values it takes, and the value this process was started with.
 *
 * The variables are read once per process, at the library's first use,
 * through one function that ignores them all in a secure-execution
 * process (setuid, setgid, file capabilities: glibc's secure_getenv). A
 * variable set to a value outside its set makes the whole environment
 * invalid: fb_create() fails and every call on a default handle fails,
 * with a message naming the variable and its value (handle.c).
 */
#ifndef FB_ENV_H
#define FB_ENV_H

#include "fusedblas.h"

/* FUSEDBLAS_CPU_SGEMM: who runs the CPU backend's fp32 GEMMs. */
typedef enum fb_cpu_sgemm_choice {
    FB_CPU_SGEMM_AUTO = 0, /* unset, empty or "auto" */
    FB_CPU_SGEMM_OWN,      /* "own": our AVX-512F kernels, small-k included */
    FB_CPU_SGEMM_PACKED,   /* "packed": our packed kernel, never small-k */
    FB_CPU_SGEMM_OPENBLAS  /* "openblas": OpenBLAS always */
} fb_cpu_sgemm_choice;

typedef struct fb_env {
    /* Non-zero if a variable has a value outside its set; message names
     * the first such variable (in the order below) and its value. */
    int invalid;
    char message[224];
    /* Non-zero in a secure-execution process: every variable below is
     * then read as unset. */
    int secure;

    fb_backend backend;            /* FUSEDBLAS_BACKEND; auto if unset */
    int verbose;                   /* FUSEDBLAS_VERBOSE: 0 or 1 */
    int cpu_no_bf16;               /* FUSEDBLAS_CPU_NO_BF16: 0 or 1 */
    int cpu_no_amx;                /* FUSEDBLAS_CPU_NO_AMX: 0 or 1 */
    fb_cpu_sgemm_choice cpu_sgemm; /* FUSEDBLAS_CPU_SGEMM */
    /* FUSEDBLAS_CUDA_MODULE as given, or NULL if unset or empty. A path,
     * not a fixed set of values: the module loader judges it (absolute,
     * a regular file). cuda_module_too_long: it was set, to a path longer
     * than the copy can hold (cuda_module is then NULL). */
    const char *cuda_module;
    int cuda_module_too_long;
    /* FUSEDBLAS_NCCL_LIBRARY: the NCCL library the tensor-parallel calls
     * load instead of libnccl.so.2, as cuda_module (nccl_loader.c judges
     * it: absolute, a regular file). */
    const char *nccl_library;
    int nccl_library_too_long;
} fb_env;

/* The environment as this process was started with it; read on the first
 * call, from any thread, and never changed afterwards. */
const fb_env *fb_env_get(void);

/* Whether path, the value of the environment variable named variable
 * (too_long: it did not fit fb_env's buffer), may be given to dlopen: an
 * absolute path (a relative one would be searched for along the library
 * path) to a regular file (opening a FIFO blocks; a device file is not a
 * library). If not, why (len bytes) says so, naming the variable. */
int fb_env_library_path_ok(const char *variable, const char *path,
                           int too_long, char *why, size_t len);

/* The name FUSEDBLAS_CPU_SGEMM gives choice c ("auto", "own", ...). */
const char *fb_cpu_sgemm_name(fb_cpu_sgemm_choice c);

#endif /* FB_ENV_H */
