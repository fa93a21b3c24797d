/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * registry.h -- a set of live objects (handles, plans) that every call
 * asks before it reads an object, so that a destroyed or made-up pointer
 * is an invalid argument rather than a use-after-free or a crash.
 */
#ifndef FB_REGISTRY_H
#define FB_REGISTRY_H

#include <pthread.h>
#include <stddef.h>

/* Open addressing on the pointer's bits under a mutex. */
typedef struct fb_registry {
    pthread_mutex_t lock;
    const void **slots;
    size_t nslots, nused, nlive;
} fb_registry;

#define FB_REGISTRY_INIT {PTHREAD_MUTEX_INITIALIZER, NULL, 0, 0, 0}

/* 1 if p was added; 0 if memory ran out. */
int fb_registry_add(fb_registry *r, const void *p);
/* 1 if p was live and is now removed; 0 if it was not live. */
int fb_registry_remove(fb_registry *r, const void *p);
/* 1 if p is live. Never reads the memory p points to. */
int fb_registry_has(fb_registry *r, const void *p);

#endif /* FB_REGISTRY_H */
