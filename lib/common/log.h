/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * log.h -- the library's only output: a line on stderr per backend choice
 * or error, when FUSEDBLAS_VERBOSE or fb_set_verbose() asks for it.
 */
#ifndef FB_LOG_H
#define FB_LOG_H

#include "fusedblas.h"

void fb_log(fb_handle h, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

#endif /* FB_LOG_H */
