/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * registry.c -- the live-object sets of registry.h.
 *
 * Open addressing on the pointer's bits, tombstones on removal, rebuilt
 * when 3/4 full (live + tombstones), at a size set by the live objects. A
 * slot holds a live object, NULL (never used) or TOMBSTONE (removed). The
 * two markers are values a caller can pass, so a lookup refuses them
 * before it compares any slot.
 */
#include <stdint.h>
#include <stdlib.h>
#include "registry.h"

#define TOMBSTONE ((const void *)(uintptr_t)1)

static int is_marker(const void *p)
{
    return p == NULL || p == TOMBSTONE;
}

static size_t slot_of(const void *p, size_t n)
{
    uintptr_t x = (uintptr_t)p;
    x ^= x >> 17;
    x *= (uintptr_t)0x9E3779B97F4A7C15ull;
    return (size_t)(x >> 7) & (n - 1);
}

static int rebuild(fb_registry *r)
{
    /* Sized for the live objects alone (at most a quarter full after the
     * rebuild), so that tombstones left by many create/destroy cycles are
     * dropped, not carried into an ever larger table. */
    size_t n = 64;
    while (n < (r->nlive + 1) * 4)
        n *= 2;
    const void **s = calloc(n, sizeof *s);
    if (s == NULL)
        return 0;
    for (size_t i = 0; i < r->nslots; i++) {
        const void *p = r->slots[i];
        if (is_marker(p))
            continue;
        size_t j = slot_of(p, n);
        while (s[j] != NULL)
            j = (j + 1) & (n - 1);
        s[j] = p;
    }
    free(r->slots);
    r->slots = s;
    r->nslots = n;
    r->nused = r->nlive;
    return 1;
}

/* Slot holding the live object p, or nslots if p is not one. Call with
 * the lock held. */
static size_t find(const fb_registry *r, const void *p)
{
    if (r->nslots == 0 || is_marker(p))
        return r->nslots;
    for (size_t j = slot_of(p, r->nslots);; j = (j + 1) & (r->nslots - 1)) {
        if (r->slots[j] == p)
            return j;
        if (r->slots[j] == NULL)
            return r->nslots;
    }
}

int fb_registry_add(fb_registry *r, const void *p)
{
    pthread_mutex_lock(&r->lock);
    int ok = 1;
    if ((r->nused + 1) * 4 > r->nslots * 3)
        ok = rebuild(r);
    if (ok) {
        size_t j = slot_of(p, r->nslots);
        while (r->slots[j] != NULL && r->slots[j] != TOMBSTONE)
            j = (j + 1) & (r->nslots - 1);
        if (r->slots[j] == NULL)
            r->nused++;
        r->slots[j] = p;
        r->nlive++;
    }
    pthread_mutex_unlock(&r->lock);
    return ok;
}

int fb_registry_remove(fb_registry *r, const void *p)
{
    pthread_mutex_lock(&r->lock);
    size_t j = find(r, p);
    int found = j < r->nslots;
    if (found) {
        /* Only a live object's slot is found, so nlive counts live
         * objects. */
        r->slots[j] = TOMBSTONE;
        r->nlive--;
    }
    pthread_mutex_unlock(&r->lock);
    return found;
}

int fb_registry_has(fb_registry *r, const void *p)
{
    pthread_mutex_lock(&r->lock);
    int found = find(r, p) < r->nslots;
    pthread_mutex_unlock(&r->lock);
    return found;
}
