/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * device_memory.c -- tells CUDA device memory from host memory without
 * loading anything of CUDA. See device_memory.h.
 *
 * CUDA device and managed memory can only exist in a process that has
 * loaded the CUDA driver (libcuda: the CUDA runtime loads it too) and
 * initialised it. So:
 *  - while the dynamic linker lists no libcuda among the process's loaded
 *    objects (dl_iterate_phdr: no file is opened), every pointer is host
 *    memory; the list is walked again only when objects were added;
 *  - once libcuda is there, its cuDeviceGetCount says whether someone
 *    initialised it (CUDA_ERROR_NOT_INITIALIZED: not yet, so no device
 *    memory yet) and whether there is a device;
 *  - with a device, that libcuda's cuPointerGetAttributes answers for
 *    each pointer: device memory, or managed memory, is the device's.
 *    The query needs no current context and makes none.
 * The library never loads libcuda itself and never calls cuInit for this,
 * so a call on host data starts nothing of CUDA. The CUDA module is
 * loaded only when a pointer is device memory or a CUDA backend is named
 * (dispatch.c). The driver API's few types and values are declared here,
 * so that this file builds without the CUDA toolkit.
 */
#define _GNU_SOURCE /* dl_iterate_phdr, RTLD_NOLOAD */
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "device_memory.h"

/* From the CUDA driver API (cuda.h), whose values are part of its ABI. */
typedef int cu_result;
typedef unsigned long long cu_deviceptr;
#define CU_SUCCESS 0
#define CU_ERROR_NOT_INITIALIZED 3
#define CU_POINTER_ATTRIBUTE_MEMORY_TYPE 2
#define CU_POINTER_ATTRIBUTE_IS_MANAGED 8
#define CU_MEMORYTYPE_DEVICE 2

typedef cu_result (*device_get_count_fn)(int *count);
typedef cu_result (*pointer_get_attributes_fn)(unsigned int n,
                                               int *attributes,
                                               void **data,
                                               cu_deviceptr ptr);

/* What is known of the process's CUDA driver; only ever moves down the
 * list, under the lock, and is read without it (acquire/release). */
enum driver_state {
    DRIVER_ABSENT = 0, /* no libcuda among the loaded objects (yet) */
    DRIVER_LOADED,     /* libcuda loaded, not initialised (yet) */
    DRIVER_READY,      /* initialised, with a device: ask it */
    DRIVER_NONE        /* initialised without a device, or unusable */
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int state = DRIVER_ABSENT;
static unsigned long long adds_seen = ~0ull; /* dlpi_adds at the last look */
static device_get_count_fn device_get_count;
static pointer_get_attributes_fn pointer_get_attributes;

/* What one walk of the loaded objects found. */
struct walk {
    int first;            /* still at the first object */
    unsigned long long adds;
    char path[512];       /* libcuda's path, or "" */
};

static int visit(struct dl_phdr_info *info, size_t size, void *data)
{
    struct walk *w = data;
    if (w->first) {
        w->first = 0;
        if (size >= offsetof(struct dl_phdr_info, dlpi_adds) +
                        sizeof info->dlpi_adds) {
            w->adds = info->dlpi_adds;
            if (w->adds == adds_seen)
                return 1; /* nothing added since the last walk */
        }
    }
    const char *name = info->dlpi_name ? info->dlpi_name : "";
    const char *base = strrchr(name, '/');
    base = base ? base + 1 : name;
    /* libcuda.so, libcuda.so.1, libcuda.so.<driver version>; not
     * libcudart or libcudadebugger. */
    if (strncmp(base, "libcuda.so", 10) == 0 &&
        strlen(name) < sizeof w->path) {
        memcpy(w->path, name, strlen(name) + 1);
        return 1;
    }
    return 0;
}

/* Moves the state on as far as it goes now. Call with the lock held. */
static void advance(void)
{
    if (state == DRIVER_ABSENT) {
        struct walk w = {1, ~0ull, ""};
        dl_iterate_phdr(visit, &w);
        adds_seen = w.adds;
        if (w.path[0] == '\0')
            return;
        /* A reference to the loaded libcuda (RTLD_NOLOAD: never a load),
         * kept for the life of the process so that the functions below
         * stay valid. */
        void *lib = dlopen(w.path, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
        if (lib == NULL)
            return;
        void *count = dlsym(lib, "cuDeviceGetCount");
        void *attrs = dlsym(lib, "cuPointerGetAttributes");
        if (count == NULL || attrs == NULL) {
            __atomic_store_n(&state, DRIVER_NONE, __ATOMIC_RELEASE);
            return;
        }
        /* dlsym returns void *; the copies avoid the object-to-function
         * cast that ISO C does not define. */
        memcpy(&device_get_count, &count, sizeof count);
        memcpy(&pointer_get_attributes, &attrs, sizeof attrs);
        __atomic_store_n(&state, DRIVER_LOADED, __ATOMIC_RELEASE);
    }
    if (state == DRIVER_LOADED) {
        int n = 0;
        cu_result r = device_get_count(&n);
        if (r == CU_ERROR_NOT_INITIALIZED)
            return;
        __atomic_store_n(&state,
                         r == CU_SUCCESS && n > 0 ? DRIVER_READY
                                                  : DRIVER_NONE,
                         __ATOMIC_RELEASE);
    }
}

int fb_is_device_memory(const void *p)
{
    if (p == NULL)
        return 0;
    int s = __atomic_load_n(&state, __ATOMIC_ACQUIRE);
    if (s == DRIVER_ABSENT || s == DRIVER_LOADED) {
        pthread_mutex_lock(&lock);
        advance();
        s = state;
        pthread_mutex_unlock(&lock);
    }
    if (s != DRIVER_READY)
        return 0;
    /* 8 zeroed bytes for each answer, whatever width the driver writes
     * (little-endian). */
    unsigned long long type = 0, managed = 0;
    int attributes[2] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                         CU_POINTER_ATTRIBUTE_IS_MANAGED};
    void *data[2] = {&type, &managed};
    if (pointer_get_attributes(2, attributes, data,
                               (cu_deviceptr)(uintptr_t)p) != CU_SUCCESS)
        return 0;
    return type == CU_MEMORYTYPE_DEVICE || managed != 0;
}
