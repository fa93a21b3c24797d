/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * nccl_loader.c -- dlopen NCCL the first time a tensor-parallel call
 * needs it.
 *
 * libfusedblas never links NCCL: a build needs no NCCL headers and a
 * process that makes no tensor-parallel call maps no NCCL. The caller made
 * its communicator with some libnccl; the one loaded here must be the
 * same, so the soname comes first: dlopen("libnccl.so.2") returns the
 * copy the process already has (PyTorch's, say), and only in a process
 * without one searches the library path. FUSEDBLAS_NCCL_LIBRARY names a
 * file to use instead (absolute and a regular file, as
 * FUSEDBLAS_CUDA_MODULE; ignored in a secure-execution process, env.c).
 * The outcome is decided once per process; NCCL is never unloaded.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include "env.h"
#include "nccl_loader.h"

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static fb_nccl_api api;
static const fb_nccl_api *loaded;
static char load_error[256];

/* *fn <- the symbol's address; 0 (with load_error set) if it is missing.
 * The copy avoids the object-to-function pointer cast ISO C leaves
 * undefined. */
static int symbol(void *lib, const char *path, const char *name, void *fn,
                  size_t fn_size)
{
    void *sym = dlsym(lib, name);
    if (sym == NULL) {
        snprintf(load_error, sizeof load_error, "%s has no %s", path, name);
        return 0;
    }
    memcpy(fn, &sym, fn_size);
    return 1;
}

#define SYMBOL(name, field) \
    symbol(lib, path, name, &api.field, sizeof api.field)

static const fb_nccl_api *try_load(const char *path)
{
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL) {
        const char *e = dlerror();
        snprintf(load_error, sizeof load_error, "cannot load %s: %s", path,
                 e ? e : "unknown error");
        return NULL;
    }
    fb_nccl_result (*get_version)(int *) = NULL;
    if (!SYMBOL("ncclAllReduce", all_reduce) ||
        !SYMBOL("ncclReduceScatter", reduce_scatter) ||
        !SYMBOL("ncclAllGather", all_gather) ||
        !SYMBOL("ncclCommCount", comm_count) ||
        !SYMBOL("ncclCommCuDevice", comm_cu_device) ||
        !SYMBOL("ncclCommUserRank", comm_user_rank) ||
        !SYMBOL("ncclCommGetAsyncError", comm_get_async_error) ||
        !SYMBOL("ncclGetErrorString", error_string) ||
        !symbol(lib, path, "ncclGetVersion", &get_version,
                sizeof get_version)) {
        dlclose(lib);
        return NULL;
    }
    int version = 0;
    if (get_version(&version) != FB_NCCL_SUCCESS || version < 20000) {
        /* The 2.x ABI is the one nccl_api.h declares. */
        snprintf(load_error, sizeof load_error,
                 "%s is NCCL version %d; 2.x is needed", path, version);
        dlclose(lib);
        return NULL;
    }
    api.version = version;
    load_error[0] = '\0';
    return &api;
}

/* Whether FUSEDBLAS_NCCL_LIBRARY names something dlopen may be given; if
 * not, load_error says why. */
static int path_ok(const fb_env *e)
{
    return fb_env_library_path_ok("FUSEDBLAS_NCCL_LIBRARY", e->nccl_library,
                                  e->nccl_library_too_long, load_error,
                                  sizeof load_error);
}

static void load(void)
{
    const fb_env *e = fb_env_get();
    if (e->nccl_library != NULL || e->nccl_library_too_long)
        loaded = path_ok(e) ? try_load(e->nccl_library) : NULL;
    else
        loaded = try_load("libnccl.so.2");
}

const fb_nccl_api *fb_nccl_get(char *why, size_t len)
{
    pthread_once(&load_once, load);
    if (loaded == NULL && why != NULL && len > 0)
        snprintf(why, len, "%s", load_error);
    return loaded;
}
