/*
 * log.c -- verbose logging and the environment variables.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "handle.h"
#include "log.h"

int fb_env_verbose(void)
{
    const char *v = getenv("FUSEDBLAS_VERBOSE");
    return v != NULL && *v != '\0' && strcmp(v, "0") != 0;
}

fb_backend fb_env_backend(int *valid)
{
    static const struct {
        const char *name;
        fb_backend backend;
    } names[] = {
        {"auto", FB_BACKEND_AUTO},       {"cpu", FB_BACKEND_CPU},
        {"cuda", FB_BACKEND_CUDA},       {"cuda-lt", FB_BACKEND_CUDA_LT},
        {"cuda-fused", FB_BACKEND_CUDA_FUSED},
    };
    const char *v = getenv("FUSEDBLAS_BACKEND");
    *valid = 1;
    if (v == NULL || *v == '\0')
        return FB_BACKEND_AUTO;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(v, names[i].name) == 0)
            return names[i].backend;
    *valid = 0;
    return FB_BACKEND_AUTO;
}

void fb_log(fb_handle h, const char *fmt, ...)
{
    if (h == NULL || !h->verbose)
        return;
    va_list ap;
    va_start(ap, fmt);
    fputs("fusedblas: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}
