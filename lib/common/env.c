/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * env.c -- the environment variables, read once per process. See env.h.
 */
#define _GNU_SOURCE /* secure_getenv */
#include "config.h"
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#if defined(HAVE_SYS_AUXV_H)
#include <sys/auxv.h>
#include <sys/stat.h>
#include <errno.h>
#endif
#include "env.h"

#ifndef PATH_MAX
#define PATH_MAX 4096
#endif

static pthread_once_t env_once = PTHREAD_ONCE_INIT;
static fb_env env;
static char cuda_module_copy[PATH_MAX];
static char nccl_library_copy[PATH_MAX];

/* Whether this process runs with privileges its environment's author may
 * not have (setuid, setgid, file capabilities): the kernel's AT_SECURE,
 * which is what glibc's secure_getenv consults. */
static int secure_execution(void)
{
#if defined(HAVE_GETAUXVAL) && defined(AT_SECURE)
    if (getauxval(AT_SECURE) != 0)
        return 1;
#endif
#if defined(HAVE_ISSETUGID)
    if (issetugid())
        return 1;
#endif
    /* Without either, the ids tell the setuid and setgid cases. */
    return getuid() != geteuid() || getgid() != getegid();
}

/* The one place a variable is read: NULL in a secure-execution process,
 * and NULL for the empty string (which means unset for every variable). */
static const char *read_variable(const char *name)
{
    if (env.secure)
        return NULL;
#if defined(HAVE_SECURE_GETENV)
    const char *v = secure_getenv(name);
#else
    const char *v = getenv(name);
#endif
    return v != NULL && *v != '\0' ? v : NULL;
}

/* The first bad variable is the one reported. */
static void refuse(const char *name, const char *value, const char *allowed)
{
    if (env.invalid)
        return;
    env.invalid = 1;
    /* The value as typed, but no longer than a line and with anything
     * unprintable shown as '?'. */
    char shown[48];
    size_t n = 0;
    for (; value[n] != '\0' && n < sizeof shown - 1; n++)
        shown[n] = value[n] >= 0x20 && value[n] < 0x7f ? value[n] : '?';
    shown[n] = '\0';
    snprintf(env.message, sizeof env.message,
             "%s='%s%s' is not one of %s or empty (the library reads its "
             "environment once per process)", name, shown,
             value[n] != '\0' ? "..." : "", allowed);
}

/* Index of value in names (n of them), or -1. */
static int lookup(const char *value, const char *const *names, int n)
{
    for (int i = 0; i < n; i++)
        if (strcmp(value, names[i]) == 0)
            return i;
    return -1;
}

/* A variable that is 0 or 1. */
static int read_switch(const char *name)
{
    static const char *const names[] = {"0", "1"};
    const char *v = read_variable(name);
    if (v == NULL)
        return 0;
    int i = lookup(v, names, 2);
    if (i < 0)
        refuse(name, v, "0, 1");
    return i > 0;
}

static void read_all(void)
{
    env.secure = secure_execution();

    static const char *const backends[] = {"auto", "cpu", "cuda", "cuda-lt",
                                           "cuda-fused"};
    static const fb_backend backend_of[] = {
        FB_BACKEND_AUTO, FB_BACKEND_CPU, FB_BACKEND_CUDA, FB_BACKEND_CUDA_LT,
        FB_BACKEND_CUDA_FUSED};
    env.backend = FB_BACKEND_AUTO;
    const char *v = read_variable("FUSEDBLAS_BACKEND");
    if (v != NULL) {
        int i = lookup(v, backends, 5);
        if (i < 0)
            refuse("FUSEDBLAS_BACKEND", v,
                   "cpu, cuda, cuda-lt, cuda-fused, auto");
        else
            env.backend = backend_of[i];
    }

    env.verbose = read_switch("FUSEDBLAS_VERBOSE");
    env.cpu_no_bf16 = read_switch("FUSEDBLAS_CPU_NO_BF16");
    env.cpu_no_amx = read_switch("FUSEDBLAS_CPU_NO_AMX");

    static const char *const sgemm[] = {"auto", "own", "packed", "openblas"};
    env.cpu_sgemm = FB_CPU_SGEMM_AUTO;
    v = read_variable("FUSEDBLAS_CPU_SGEMM");
    if (v != NULL) {
        int i = lookup(v, sgemm, 4);
        if (i < 0)
            refuse("FUSEDBLAS_CPU_SGEMM", v, "auto, own, packed, openblas");
        else
            env.cpu_sgemm = (fb_cpu_sgemm_choice)i;
    }

    v = read_variable("FUSEDBLAS_CUDA_MODULE");
    if (v != NULL) {
        if (strlen(v) < sizeof cuda_module_copy) {
            memcpy(cuda_module_copy, v, strlen(v) + 1);
            env.cuda_module = cuda_module_copy;
        } else {
            env.cuda_module_too_long = 1;
        }
    }

    v = read_variable("FUSEDBLAS_NCCL_LIBRARY");
    if (v != NULL) {
        if (strlen(v) < sizeof nccl_library_copy) {
            memcpy(nccl_library_copy, v, strlen(v) + 1);
            env.nccl_library = nccl_library_copy;
        } else {
            env.nccl_library_too_long = 1;
        }
    }
}

const fb_env *fb_env_get(void)
{
    pthread_once(&env_once, read_all);
    return &env;
}

const char *fb_cpu_sgemm_name(fb_cpu_sgemm_choice c)
{
    switch (c) {
    case FB_CPU_SGEMM_AUTO: return "auto";
    case FB_CPU_SGEMM_OWN: return "own";
    case FB_CPU_SGEMM_PACKED: return "packed";
    case FB_CPU_SGEMM_OPENBLAS: return "openblas";
    }
    return "?";
}

int fb_env_library_path_ok(const char *variable, const char *path,
                           int too_long, char *why, size_t len)
{
    if (too_long) {
        snprintf(why, len, "%s is longer than a path can be", variable);
        return 0;
    }
    if (path[0] != '/') {
        snprintf(why, len, "%s='%.160s' is not an absolute path", variable,
                 path);
        return 0;
    }
    struct stat st;
    if (stat(path, &st) != 0) {
        snprintf(why, len, "%s='%.160s': %s", variable, path,
                 strerror(errno));
        return 0;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(why, len, "%s='%.160s' is not a regular file", variable,
                 path);
        return 0;
    }
    return 1;
}
