/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * plan.h -- what the handle needs of plans (plan.c).
 */
#ifndef FB_PLAN_H
#define FB_PLAN_H

#include "fusedblas.h"

/* Destroy every plan of h (h is being destroyed). */
void fb_plans_release(fb_handle h);

#endif /* FB_PLAN_H */
