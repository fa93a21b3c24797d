/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * handle.c -- fb_handle: creation, settings, the per-thread default, the
 * registry of live handles, workspaces and the last call's outcome.
 *
 * A registry of live handles (registry.h) lets every call tell a live
 * handle from a destroyed or made-up pointer without reading the memory
 * it points to, so a stale handle is an invalid argument rather than a
 * use-after-free.
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cuda_loader.h"
#include "dispatch.h"
#include "env.h"
#include "handle.h"
#include "log.h"
#include "plan.h"
#include "registry.h"
#include "tensor_parallel.h"

/* ---- public API --------------------------------------------------------- */

static fb_handle handle_new(void);
static void handle_free(fb_handle h);
static fb_registry handles = FB_REGISTRY_INIT;
#define registry_add(h) fb_registry_add(&handles, (h))
#define registry_remove(h) fb_registry_remove(&handles, (h))
#define registry_has(h) fb_registry_has(&handles, (h))
static fb_handle default_handle(void);
static fb_handle resolve_to_read(fb_handle h, fb_status *status);
static fb_status not_live(fb_handle h);

FB_EXPORT fb_status fb_create(fb_handle *handle)
{
    if (handle == NULL) {
        fb_handle d = default_handle();
        if (d != NULL)
            fb_handle_fail(d, FB_STATUS_INVALID_ARGUMENT, 1,
                           "fb_create: handle pointer is NULL");
        return FB_STATUS_INVALID_ARGUMENT;
    }
    const fb_env *e = fb_env_get();
    if (e->invalid) {
        /* No argument is wrong, the environment is: position 0. */
        fb_handle d = default_handle();
        if (d != NULL)
            fb_handle_fail(d, FB_STATUS_INVALID_ARGUMENT, 0, "fb_create: %s",
                           e->message);
        return FB_STATUS_INVALID_ARGUMENT;
    }
    fb_handle h = handle_new();
    if (h == NULL)
        return FB_STATUS_ALLOC_FAILED;
    if (!registry_add(h)) {
        free(h);
        return FB_STATUS_ALLOC_FAILED;
    }
    *handle = h;
    return FB_STATUS_SUCCESS;
}

FB_EXPORT fb_status fb_destroy(fb_handle handle)
{
    if (handle == NULL)
        return FB_STATUS_SUCCESS; /* like free(NULL) */
    if (!registry_remove(handle))
        return not_live(handle);
    handle_free(handle);
    return FB_STATUS_SUCCESS;
}

/* Resolve, validate one setting, record the outcome. */
#define SETTER_BEGIN(handle, status)                                          \
    fb_status status;                                                          \
    fb_handle h = fb_handle_resolve(handle, &status);                          \
    if (h == NULL)                                                             \
        return status;                                                         \
    fb_handle_clear(h)

FB_EXPORT fb_status fb_set_backend(fb_handle handle, fb_backend backend)
{
    SETTER_BEGIN(handle, st);
    if (backend < FB_BACKEND_AUTO || backend > FB_BACKEND_CUDA_FUSED)
        return fb_handle_fail(h, FB_STATUS_INVALID_ARGUMENT, 2,
                              "fb_set_backend: unknown backend %d",
                              (int)backend);
    h->backend = backend;
    return FB_STATUS_SUCCESS;
}

FB_EXPORT fb_status fb_get_backend(fb_handle handle, fb_backend *backend)
{
    SETTER_BEGIN(handle, st);
    if (backend == NULL)
        return fb_handle_fail(h, FB_STATUS_INVALID_ARGUMENT, 2,
                              "fb_get_backend: backend pointer is NULL");
    *backend = h->backend;
    return FB_STATUS_SUCCESS;
}

FB_EXPORT fb_status fb_set_threads(fb_handle handle, int nthreads)
{
    SETTER_BEGIN(handle, st);
    if (nthreads < 0)
        return fb_handle_fail(h, FB_STATUS_INVALID_ARGUMENT, 2,
                              "fb_set_threads: nthreads %d < 0", nthreads);
    h->nthreads = nthreads;
    return FB_STATUS_SUCCESS;
}

FB_EXPORT fb_status fb_set_math_mode(fb_handle handle, fb_math_mode mode)
{
    SETTER_BEGIN(handle, st);
    if (mode != FB_MATH_DEFAULT && mode != FB_MATH_ALLOW_TF32)
        return fb_handle_fail(h, FB_STATUS_INVALID_ARGUMENT, 2,
                              "fb_set_math_mode: unknown mode %d", (int)mode);
    h->math = mode;
    return FB_STATUS_SUCCESS;
}

FB_EXPORT fb_status fb_set_verbose(fb_handle handle, int verbose)
{
    SETTER_BEGIN(handle, st);
    h->verbose = verbose != 0;
    return FB_STATUS_SUCCESS;
}

FB_EXPORT fb_status fb_set_cuda_device(fb_handle handle, int device)
{
    SETTER_BEGIN(handle, st);
    if (device < 0)
        return fb_handle_fail(h, FB_STATUS_INVALID_ARGUMENT, 2,
                              "fb_set_cuda_device: device %d < 0", device);
    if (device != h->cuda_device && h->cuda != NULL) {
        /* The context belongs to the old device: drop it, the next GPU call
         * makes one on the new device. */
        const fb_cuda_module *m = fb_cuda_get(NULL, 0);
        if (m != NULL)
            m->ctx_destroy(h->cuda);
        h->cuda = NULL;
    }
    h->cuda_device = device;
    return FB_STATUS_SUCCESS;
}

FB_EXPORT fb_status fb_set_cuda_stream(fb_handle handle, void *stream)
{
    SETTER_BEGIN(handle, st);
    h->cuda_stream = stream;
    if (h->cuda != NULL) {
        const fb_cuda_module *m = fb_cuda_get(NULL, 0);
        if (m != NULL)
            m->ctx_set_stream(h->cuda, stream);
    }
    return FB_STATUS_SUCCESS;
}

FB_EXPORT fb_status fb_set_implementation(fb_handle handle,
                                          const char *name)
{
    SETTER_BEGIN(handle, st);
    if (name == NULL) {
        h->implementation[0] = '\0';
        return FB_STATUS_SUCCESS;
    }
    if (!fb_implementation_known(name))
        return fb_handle_fail(h, FB_STATUS_INVALID_ARGUMENT, 2,
                              "fb_set_implementation: no implementation is "
                              "named \"%.64s\"", name);
    snprintf(h->implementation, sizeof h->implementation, "%s", name);
    return FB_STATUS_SUCCESS;
}

/* The getters below do not record an outcome: they read the last one,
 * also on a default handle that an invalid environment keeps failing. */

FB_EXPORT fb_status fb_handle_last_status(fb_handle handle)
{
    fb_status st;
    fb_handle h = resolve_to_read(handle, &st);
    return h ? h->last_status : st;
}

FB_EXPORT int fb_handle_last_arg(fb_handle handle)
{
    fb_status st;
    fb_handle h = resolve_to_read(handle, &st);
    return h ? h->last_arg : 1;
}

FB_EXPORT const char *fb_handle_last_message(fb_handle handle)
{
    fb_status st;
    fb_handle h = resolve_to_read(handle, &st);
    return h ? h->last_message : "not a live fb_handle";
}

FB_EXPORT fb_backend fb_handle_last_backend(fb_handle handle)
{
    fb_status st;
    fb_handle h = resolve_to_read(handle, &st);
    return h ? h->last_backend : FB_BACKEND_AUTO;
}

FB_EXPORT const char *fb_handle_last_path(fb_handle handle)
{
    fb_status st;
    fb_handle h = resolve_to_read(handle, &st);
    return h ? h->last_path : "";
}

/* ---- for the library's own files ---------------------------------------- */

fb_handle fb_handle_resolve(fb_handle h, fb_status *status)
{
    if (h == NULL) {
        h = default_handle();
        if (h == NULL) {
            *status = FB_STATUS_ALLOC_FAILED;
            return NULL;
        }
        const fb_env *e = fb_env_get();
        if (e->invalid) {
            /* Nothing runs in an invalid environment: the default handle
             * exists only to say why. */
            *status = fb_handle_fail(h, FB_STATUS_INVALID_ARGUMENT, 0, "%s",
                                     e->message);
            return NULL;
        }
        *status = FB_STATUS_SUCCESS;
        return h;
    }
    return resolve_to_read(h, status);
}

/* fb_handle_resolve, except that the calling thread's default handle is
 * returned in an invalid environment too: for reading its record. */
static fb_handle resolve_to_read(fb_handle h, fb_status *status)
{
    if (h == NULL) {
        h = default_handle();
        *status = h ? FB_STATUS_SUCCESS : FB_STATUS_ALLOC_FAILED;
        return h;
    }
    if (!registry_has(h)) {
        *status = not_live(h);
        return NULL;
    }
    *status = FB_STATUS_SUCCESS;
    return h;
}

/* h is not a live handle: say so on the thread's default handle, the only
 * one we can trust. */
static fb_status not_live(fb_handle h)
{
    fb_handle d = default_handle();
    if (d != NULL)
        fb_handle_fail(d, FB_STATUS_INVALID_ARGUMENT, 1,
                       "handle %p is not a live fb_handle", (void *)h);
    return FB_STATUS_INVALID_ARGUMENT;
}

void *fb_handle_workspace(fb_handle h, size_t bytes)
{
    if (bytes <= h->ws_bytes)
        return h->ws;
    /* Grow by at least half again, so that a sequence of slightly larger
     * calls does not reallocate every time. */
    size_t want = bytes + bytes / 2;
    void *p = NULL;
    if (posix_memalign(&p, 64, want) != 0) {
        want = bytes;
        if (posix_memalign(&p, 64, want) != 0)
            return NULL;
    }
    free(h->ws);
    h->ws = p;
    h->ws_bytes = want;
    return p;
}

void fb_handle_clear(fb_handle h)
{
    h->last_status = FB_STATUS_SUCCESS;
    h->last_arg = 0;
    h->last_message[0] = '\0';
}

fb_status fb_handle_fail(fb_handle h, fb_status status, int arg,
                         const char *fmt, ...)
{
    h->last_status = status;
    h->last_arg = arg;
    h->last_backend = FB_BACKEND_AUTO;
    h->last_path[0] = '\0';
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(h->last_message, sizeof h->last_message, fmt, ap);
    va_end(ap);
    if (arg > 0)
        fb_log(h, "%s (argument %d): %s", fb_status_string(status), arg,
               h->last_message);
    else
        fb_log(h, "%s: %s", fb_status_string(status), h->last_message);
    return status;
}

void fb_handle_ran(fb_handle h, fb_backend backend, const char *path)
{
    h->last_status = FB_STATUS_SUCCESS;
    h->last_arg = 0;
    h->last_message[0] = '\0';
    h->last_backend = backend;
    snprintf(h->last_path, sizeof h->last_path, "%s", path);
}

/* ---- helpers ------------------------------------------------------------ */

static fb_handle handle_new(void)
{
    fb_handle h = calloc(1, sizeof *h);
    if (h == NULL)
        return NULL;
    h->magic = FB_HANDLE_MAGIC;
    const fb_env *e = fb_env_get();
    h->verbose = e->verbose;
    h->backend = e->backend;
    h->math = FB_MATH_DEFAULT;
    h->last_status = FB_STATUS_SUCCESS;
    h->last_backend = FB_BACKEND_AUTO;
    return h;
}

static void handle_free(fb_handle h)
{
    fb_plans_release(h);
    if (h->cuda != NULL) {
        const fb_cuda_module *m = fb_cuda_get(NULL, 0);
        if (m != NULL)
            m->ctx_destroy(h->cuda);
    }
    free(h->ws);
    fb_tp_state_free(h->tp);
    h->magic = 0;
    free(h);
}

/* The calling thread's default handle, destroyed when the thread exits. */
static pthread_key_t default_key;
static pthread_once_t default_once = PTHREAD_ONCE_INIT;
static int default_key_ok;

static void default_destroy(void *p)
{
    if (registry_remove(p))
        handle_free(p);
}

static void default_key_make(void)
{
    default_key_ok = pthread_key_create(&default_key, default_destroy) == 0;
}

static fb_handle default_handle(void)
{
    pthread_once(&default_once, default_key_make);
    if (!default_key_ok)
        return NULL;
    fb_handle h = pthread_getspecific(default_key);
    if (h != NULL)
        return h;
    h = handle_new();
    if (h == NULL)
        return NULL;
    if (!registry_add(h)) {
        free(h);
        return NULL;
    }
    if (pthread_setspecific(default_key, h) != 0) {
        registry_remove(h);
        handle_free(h);
        return NULL;
    }
    const fb_env *e = fb_env_get();
    if (e->invalid)
        fb_handle_fail(h, FB_STATUS_INVALID_ARGUMENT, 0, "%s", e->message);
    return h;
}
