/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lt_plan.cu -- the bounded, locked cache of cuBLASLt heuristic results.
 *
 * A linear scan: 128 keys of 136 bytes compare in well under a microsecond,
 * which is small beside a kernel launch, and needs no hashing to get right.
 */
#include <string.h>
#include "lt_plan.h"

int fb_lt_plan_cache_init(fb_lt_plan_cache *c)
{
    memset(c->slot, 0, sizeof c->slot);
    c->clock = 0;
    return pthread_mutex_init(&c->lock, NULL);
}

void fb_lt_plan_cache_fini(fb_lt_plan_cache *c)
{
    pthread_mutex_destroy(&c->lock);
}

int fb_lt_plan_find(fb_lt_plan_cache *c, const fb_lt_plan_key *key,
                    fb_lt_plan *plan)
{
    int found = 0;
    pthread_mutex_lock(&c->lock);
    for (int i = 0; i < FB_LT_PLAN_SLOTS; i++) {
        fb_lt_plan *s = &c->slot[i];
        if (s->last_use != 0 && memcmp(&s->key, key, sizeof *key) == 0) {
            s->last_use = ++c->clock;
            *plan = *s;
            found = 1;
            break;
        }
    }
    pthread_mutex_unlock(&c->lock);
    return found;
}

void fb_lt_plan_store(fb_lt_plan_cache *c, const fb_lt_plan *plan)
{
    pthread_mutex_lock(&c->lock);
    int victim = 0;
    for (int i = 0; i < FB_LT_PLAN_SLOTS; i++) {
        fb_lt_plan *s = &c->slot[i];
        /* Another thread may have stored the same key meanwhile. */
        if (s->last_use != 0 &&
            memcmp(&s->key, &plan->key, sizeof plan->key) == 0) {
            victim = i;
            break;
        }
        if (s->last_use < c->slot[victim].last_use)
            victim = i;
    }
    c->slot[victim] = *plan;
    c->slot[victim].last_use = ++c->clock;
    pthread_mutex_unlock(&c->lock);
}
