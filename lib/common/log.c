/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * log.c -- verbose logging.
 */
#include <stdarg.h>
#include <stdio.h>
#include "handle.h"
#include "log.h"

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
