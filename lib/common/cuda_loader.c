/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cuda_loader.c -- dlopen the CUDA backend at first use.
 *
 * libfusedblas never links the CUDA runtime itself: the module does, so
 * that the library loads on machines without CUDA and reports "backend
 * unavailable" there. The outcome (table or reason) is decided once per
 * process and never changes; the module is never unloaded.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include "cuda_loader.h"
#include "env.h"

#ifndef FB_PKGLIBDIR
#define FB_PKGLIBDIR "/usr/local/lib/fusedblas"
#endif

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static const fb_cuda_module *loaded;
static char load_error[256];

static const fb_cuda_module *try_load(const char *path)
{
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL) {
        const char *e = dlerror();
        snprintf(load_error, sizeof load_error, "cannot load %s: %s", path,
                 e ? e : "unknown error");
        return NULL;
    }
    fb_cuda_module_entry entry;
    /* dlsym returns void *; the copy avoids the object-to-function cast
     * that ISO C does not define. */
    void *sym = dlsym(lib, FB_CUDA_MODULE_SYMBOL);
    if (sym == NULL) {
        snprintf(load_error, sizeof load_error, "%s has no %s", path,
                 FB_CUDA_MODULE_SYMBOL);
        dlclose(lib);
        return NULL;
    }
    memcpy(&entry, &sym, sizeof entry);
    const fb_cuda_module *m = entry();
    if (m == NULL || m->abi != FB_CUDA_MODULE_ABI) {
        snprintf(load_error, sizeof load_error,
                 "%s speaks module ABI %d, the library %d", path,
                 m ? m->abi : -1, FB_CUDA_MODULE_ABI);
        dlclose(lib);
        return NULL;
    }
    if (m->probe(load_error, sizeof load_error) != FB_STATUS_SUCCESS) {
        /* No device or driver: keep the module's own reason. The library
         * stays loaded, since the CUDA runtime does not always unload
         * cleanly. */
        return NULL;
    }
    load_error[0] = '\0';
    return m;
}

/* Whether FUSEDBLAS_CUDA_MODULE names something dlopen may be given; if
 * not, load_error says why. */
static int module_path_ok(const fb_env *e)
{
    return fb_env_library_path_ok("FUSEDBLAS_CUDA_MODULE", e->cuda_module,
                                  e->cuda_module_too_long, load_error,
                                  sizeof load_error);
}

static void load(void)
{
    /* FUSEDBLAS_CUDA_MODULE names the module to use instead of the
     * installed one, and then only it: the tests of a build tree load that
     * tree's module (or none, in a build without CUDA), never a different
     * module that happens to be installed; a path it refuses leaves the
     * CUDA backends unavailable. In a secure-execution process the
     * variable reads as unset (env.c). */
    const fb_env *e = fb_env_get();
    if (e->cuda_module != NULL || e->cuda_module_too_long)
        loaded = module_path_ok(e) ? try_load(e->cuda_module) : NULL;
    else
        loaded = try_load(FB_PKGLIBDIR "/fusedblas_cuda.so");
}

const fb_cuda_module *fb_cuda_get(char *why, size_t len)
{
    pthread_once(&load_once, load);
    if (loaded == NULL && why != NULL && len > 0)
        snprintf(why, len, "%s", load_error);
    return loaded;
}
