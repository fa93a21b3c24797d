/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * marker_module.c -- a stand-in for a hostile FUSEDBLAS_CUDA_MODULE: a
 * shared object whose constructor creates the file $FB_TEST_MARKER, so
 * that a test can tell whether the library loaded it. It is no CUDA
 * module (it has no fb_cuda_module_v1), so a library that loads it then
 * reports the CUDA backends unavailable.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

void fb_test_marker_loaded(void) __attribute__((constructor));

void fb_test_marker_loaded(void)
{
    const char *path = getenv("FB_TEST_MARKER");
    if (path == NULL || *path == '\0')
        return;
    int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0666);
    if (fd >= 0)
        close(fd);
}
