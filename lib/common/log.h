/*
 * log.h -- the library's only output: a line on stderr per backend choice
 * or error, when FUSEDBLAS_VERBOSE or fb_set_verbose() asks for it.
 */
#ifndef FB_LOG_H
#define FB_LOG_H

#include "fusedblas.h"

/* Non-zero if FUSEDBLAS_VERBOSE is set to something other than "0". */
int fb_env_verbose(void);

/* The backend FUSEDBLAS_BACKEND names, FB_BACKEND_AUTO if unset; *valid is
 * zero if it is set to something unknown. */
fb_backend fb_env_backend(int *valid);

void fb_log(fb_handle h, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

#endif /* FB_LOG_H */
