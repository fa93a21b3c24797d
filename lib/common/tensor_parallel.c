/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tensor_parallel.c -- fb_set_nccl_comm, mlp_geglu_forward_tp and
 * gemm_bias_act_tp: check, make sure the ranks agree on the call's shape,
 * then the CUDA module's tensor-parallel entries (lib/cuda/tp/tp.cu).
 *
 * Everything a rank can check alone is checked before any collective:
 * the arguments (by position, as every routine), the communicator (one
 * attached, on the handle's device), the backend, the module, and that
 * every operand is device memory. What a rank cannot check alone is that
 * the other ranks make the same call: dtype, activation, m, k and n (for
 * the gemm m, n, layout, alpha, beta, activation) and whether a bias is
 * given must agree, or the all-reduce would mix different layers -- or,
 * with a different m * n, never complete; for the MLP, so must whether
 * Y's rows are contiguous (ldy == n), which picks its collectives. So the
 * first time a handle makes a call of a given shape, the ranks exchange
 * the shape (one small ncclAllGather and one host synchronisation,
 * tp_agree) and every rank returns INVALID_ARGUMENT naming the first
 * field that differs, before the all-reduce; a shape they agreed on is
 * remembered (the last FB_TP_AGREED shapes), and later calls of it make
 * no extra collective and no host synchronisation, so they can be
 * captured in a CUDA graph, as every GPU path once the handle has run its
 * shape (docs/DESIGN.md).
 * The shard widths (h_local, the gemm's k) may differ from rank to rank,
 * and so may ldy, as long as every rank's Y is contiguous or none is.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "check.h"
#include "cuda_loader.h"
#include "device_memory.h"
#include "handle.h"
#include "log.h"
#include "nccl_loader.h"
#include "tensor_parallel.h"
#include "tp_problem.h"

#define FB_TP_AGREED 8
/* A call's shape as the ranks compare it: DESC_SHARED fields that must be
 * equal on every rank, then this rank's shard width. */
enum { DESC_SHARED = 9, DESC_LEN = DESC_SHARED + 1 };

struct fb_tp_state {
    fb_tp_comm comm;
    int64_t agreed[FB_TP_AGREED][DESC_LEN + 1]; /* and the total width */
    int nagreed, next;
};

void fb_tp_state_free(struct fb_tp_state *s)
{
    free(s);
}

/* A field of the shape: its value, its argument position and name. */
typedef struct desc_field {
    int pos;
    const char *name;
} desc_field;

FB_EXPORT fb_status fb_set_nccl_comm(fb_handle handle, void *nccl_comm)
{
    fb_status st;
    fb_handle h = fb_handle_resolve(handle, &st);
    if (h == NULL)
        return st;
    fb_handle_clear(h);
    if (nccl_comm == NULL) {
        fb_tp_state_free(h->tp);
        h->tp = NULL;
        return FB_STATUS_SUCCESS;
    }
    char why[256];
    const fb_nccl_api *nccl = fb_nccl_get(why, sizeof why);
    if (nccl == NULL)
        return fb_handle_fail(h, FB_STATUS_BACKEND_UNAVAILABLE, 0,
                              "fb_set_nccl_comm: NCCL is unavailable: %s",
                              why);
    fb_tp_comm c = {nccl, nccl_comm, 0, -1, -1};
    fb_nccl_result e;
    if ((e = nccl->comm_count(nccl_comm, &c.nranks)) != FB_NCCL_SUCCESS ||
        (e = nccl->comm_user_rank(nccl_comm, &c.rank)) != FB_NCCL_SUCCESS ||
        (e = nccl->comm_cu_device(nccl_comm, &c.device)) != FB_NCCL_SUCCESS)
        return fb_handle_fail(h, FB_STATUS_INVALID_ARGUMENT, 2,
                              "fb_set_nccl_comm: not a usable communicator: "
                              "NCCL error %d (%s)", e, nccl->error_string(e));
    if (c.nranks < 1 || c.rank < 0 || c.rank >= c.nranks || c.device < 0)
        return fb_handle_fail(h, FB_STATUS_INVALID_ARGUMENT, 2,
                              "fb_set_nccl_comm: the communicator reports "
                              "rank %d of %d on device %d", c.rank, c.nranks,
                              c.device);
    struct fb_tp_state *s = h->tp;
    if (s == NULL && (s = calloc(1, sizeof *s)) == NULL)
        return fb_handle_fail(h, FB_STATUS_ALLOC_FAILED, 0,
                              "fb_set_nccl_comm: out of host memory");
    memset(s, 0, sizeof *s);
    s->comm = c;
    h->tp = s;
    fb_log(h, "fb_set_nccl_comm: rank %d of %d on CUDA device %d, NCCL %d",
           c.rank, c.nranks, c.device, nccl->version);
    return FB_STATUS_SUCCESS;
}

/* The handle's CUDA context, made on its first GPU call (as dispatch.c
 * makes it for the other routines). */
static fb_status cuda_ctx(fb_handle h, const fb_cuda_module *m)
{
    if (h->cuda != NULL)
        return FB_STATUS_SUCCESS;
    char msg[256] = "";
    fb_status st = m->ctx_create(&h->cuda, h->cuda_device, msg, sizeof msg);
    if (st != FB_STATUS_SUCCESS) {
        h->cuda = NULL;
        return fb_handle_fail(h, st, 0, "CUDA context on device %d: %s",
                              h->cuda_device, msg);
    }
    m->ctx_set_stream(h->cuda, h->cuda_stream);
    return FB_STATUS_SUCCESS;
}

/* What every tensor-parallel call needs after its arguments passed: a
 * communicator on the handle's device, a CUDA backend, the module and a
 * context, and every operand in device memory. *m on success. */
static fb_status prepare(fb_handle h, const char *routine,
                         const void *const *ptrs, const int *pos, int nptrs,
                         const fb_cuda_module **m)
{
    if (h->tp == NULL)
        return fb_handle_fail(h, FB_STATUS_INVALID_ARGUMENT, 1,
                              "%s: no NCCL communicator is attached to the "
                              "handle (fb_set_nccl_comm)", routine);
    if (h->tp->comm.device != h->cuda_device)
        return fb_handle_fail(h, FB_STATUS_INVALID_ARGUMENT, 1,
                              "%s: the communicator's rank %d is on CUDA "
                              "device %d, the handle on device %d "
                              "(fb_set_cuda_device)", routine,
                              h->tp->comm.rank, h->tp->comm.device,
                              h->cuda_device);
    if (h->backend == FB_BACKEND_CPU || h->backend == FB_BACKEND_CUDA_FUSED)
        return fb_handle_fail(h, FB_STATUS_NOT_SUPPORTED, 0,
                              "%s: backend %s has no tensor-parallel path "
                              "(auto, cuda and cuda-lt have)", routine,
                              fb_backend_name(h->backend));
    char why[256];
    *m = fb_cuda_get(why, sizeof why);
    if (*m == NULL)
        return fb_handle_fail(h, FB_STATUS_BACKEND_UNAVAILABLE, 0,
                              "%s: the CUDA backend is unavailable: %s",
                              routine, why);
    /* The module's probe has initialised the driver: the pointer query
     * now sees device memory (device_memory.h). */
    for (int i = 0; i < nptrs; i++)
        if (ptrs[i] != NULL && !fb_is_device_memory(ptrs[i]))
            return fb_handle_fail(h, FB_STATUS_INVALID_ARGUMENT, pos[i],
                                  "%s: argument %d is not device memory; "
                                  "tensor-parallel calls take device "
                                  "memory only", routine, pos[i]);
    return cuda_ctx(h, *m);
}

/* The ranks agree on desc[0 .. DESC_SHARED), once per shape (see the
 * top). fields names desc[1 ..] for the message. *total: the shard widths
 * desc[DESC_SHARED] summed over the ranks. */
static fb_status agree(fb_handle h, const fb_cuda_module *m,
                       const char *routine, const int64_t *desc,
                       const desc_field *fields, int64_t *total_out)
{
    struct fb_tp_state *s = h->tp;
    for (int i = 0; i < s->nagreed; i++)
        if (memcmp(s->agreed[i], desc, DESC_LEN * sizeof *desc) == 0) {
            *total_out = s->agreed[i][DESC_LEN];
            return FB_STATUS_SUCCESS;
        }

    const int ranks = s->comm.nranks;
    int64_t *all = malloc((size_t)ranks * DESC_LEN * sizeof *all);
    if (all == NULL)
        return fb_handle_fail(h, FB_STATUS_ALLOC_FAILED, 0,
                              "%s: out of host memory", routine);
    fb_cuda_result res;
    memset(&res, 0, sizeof res);
    fb_status st = m->tp_agree(h->cuda, &s->comm, desc, all, DESC_LEN, &res);
    if (st != FB_STATUS_SUCCESS) {
        free(all);
        return fb_handle_fail(h, st, 0, "%s: %s", routine, res.message);
    }
    int64_t total = 0;
    for (int r = 0; r < ranks; r++) {
        const int64_t *other = all + (size_t)r * DESC_LEN;
        total += other[DESC_SHARED];
        for (int f = 0; f < DESC_SHARED; f++) {
            if (other[f] == desc[f])
                continue;
            /* f == 0 is the routine itself: another rank is in another
             * tensor-parallel routine. */
            const int pos = f == 0 ? 0 : fields[f - 1].pos;
            const char *name = f == 0 ? "routine" : fields[f - 1].name;
            const long long theirs = (long long)other[f]; /* other is in all */
            free(all);
            return fb_handle_fail(h, FB_STATUS_INVALID_ARGUMENT, pos,
                                  "%s: rank %d has %s = %lld, this rank "
                                  "(%d) %lld: every rank must make the "
                                  "same call", routine, r, name, theirs,
                                  s->comm.rank, (long long)desc[f]);
        }
    }
    free(all);
    memcpy(s->agreed[s->next], desc, DESC_LEN * sizeof *desc);
    s->agreed[s->next][DESC_LEN] = total;
    *total_out = total;
    s->next = (s->next + 1) % FB_TP_AGREED;
    if (s->nagreed < FB_TP_AGREED)
        s->nagreed++;
    fb_log(h, "%s: the %d ranks agree on the shape; shard widths add up "
              "to %lld", routine, ranks, (long long)total);
    return FB_STATUS_SUCCESS;
}

static fb_status finish(fb_handle h, const char *routine, fb_status st,
                        const fb_cuda_result *res)
{
    if (st != FB_STATUS_SUCCESS)
        return fb_handle_fail(h, st, 0, "%s: %s", routine, res->message);
    fb_handle_ran(h, res->ran, res->path);
    fb_log(h, "%s: ran %s", routine, res->path);
    return FB_STATUS_SUCCESS;
}

/* Positions of mlp_geglu_forward_tp's arguments (fusedblas.h). */
enum { T_DTYPE = 2, T_ACT, T_M, T_K, T_H, T_N, T_X, T_LDX, T_WG, T_BG,
       T_WU, T_BU, T_WD, T_LDWD, T_BD, T_Y, T_LDY };

/* mlp_geglu_forward's checks, with Wd's rows ldwd apart: 0 or the lowest
 * bad position, in mlp_geglu_forward_tp's numbering. */
static int check_mlp_tp(const fb_tp_mlp_problem *tp, char *msg, size_t len)
{
    const fb_mlp_problem *p = &tp->mlp;
    int arg = fb_check_mlp(p, msg, len);
    if (arg >= T_LDWD) /* bd, Y, ldy come one later here */
        arg++;
    if (arg != 0 && arg <= T_LDWD)
        return arg;
    const int64_t h = p->h, n = p->n;
    if (h >= 0 && n >= 0 && tp->ldwd < (h > 1 ? h : 1)) {
        snprintf(msg, len, "ldwd = %lld < max(1, h_local = %lld)",
                 (long long)tp->ldwd, (long long)h);
        return T_LDWD;
    }
    if (arg != 0 || p->dtype < FB_DTYPE_F32 || p->dtype > FB_DTYPE_BF16)
        return arg;
    /* Wd's whole extent, which mlp_geglu_forward's checks take as
     * contiguous: no overflow, and Y does not overlap it. */
    const int64_t es = fb_dtype_size(p->dtype);
    if (h > 0 && n > 0 && p->m > 0) {
        const int64_t max_elems = PTRDIFF_MAX / es;
        if (n > 1 && tp->ldwd > (max_elems - h) / (n - 1)) {
            snprintf(msg, len, "Wd's %lld rows, ldwd = %lld apart, do not "
                     "fit the address space", (long long)n,
                     (long long)tp->ldwd);
            return T_LDWD;
        }
        const char *wd = p->wd, *y = p->y;
        const char *wd_end = wd + ((n - 1) * tp->ldwd + h) * es;
        const char *y_end = y + ((p->m - 1) * p->ldy + n) * es;
        if (y < wd_end && wd < y_end) {
            snprintf(msg, len, "Y overlaps Wd");
            return T_Y;
        }
    }
    return 0;
}

FB_EXPORT fb_status mlp_geglu_forward_tp(
    fb_handle handle, fb_dtype dtype, fb_activation gate_act, int64_t m,
    int64_t k, int64_t h_local, int64_t n, const void *X, int64_t ldx,
    const void *Wg, const void *bg, const void *Wu, const void *bu,
    const void *Wd, int64_t ldwd, const void *bd, void *Y, int64_t ldy)
{
    static const char routine[] = "mlp_geglu_forward_tp";
    fb_status st;
    fb_handle h = fb_handle_resolve(handle, &st);
    if (h == NULL)
        return st;
    fb_handle_clear(h);

    const fb_tp_mlp_problem p = {
        {dtype, gate_act, m, k, h_local, n, X, ldx, Wg, bg, Wu, bu, Wd, bd,
         Y, ldy},
        ldwd};
    char msg[192];
    int arg = check_mlp_tp(&p, msg, sizeof msg);
    if (arg != 0)
        return fb_handle_fail(h, FB_STATUS_INVALID_ARGUMENT, arg, "%s: %s",
                              routine, msg);
    /* The operands the call reads or writes (as the checks above): a
     * pointer it does not reference is not asked about. */
    const int run = m > 0 && n > 0, hk = run && h_local > 0 && k > 0;
    const void *const ptrs[] = {
        hk ? X : NULL,  hk ? Wg : NULL, run && h_local > 0 ? bg : NULL,
        hk ? Wu : NULL, run && h_local > 0 ? bu : NULL,
        run && h_local > 0 ? Wd : NULL, run ? bd : NULL, run ? Y : NULL};
    const int pos[] = {T_X, T_WG, T_BG, T_WU, T_BU, T_WD, T_BD, T_Y};
    const fb_cuda_module *mod;
    st = prepare(h, routine, ptrs, pos, 8, &mod);
    if (st != FB_STATUS_SUCCESS)
        return st;

    /* Whether Y's rows are contiguous (ldy == n) is agreed too, though
     * ldy itself is each rank's: the module's choice between an all-reduce
     * and a reduce-scatter and all-gather depends on it, and every rank
     * must make the same choice. */
    static const desc_field fields[DESC_SHARED - 1] = {
        {T_DTYPE, "dtype"}, {T_ACT, "gate_act"},  {T_M, "m"}, {T_K, "k"},
        {T_N, "n"},         {T_BD, "bd given"},   {T_LDY, "ldy == n"},
        {0, "-"}};
    const int64_t desc[DESC_LEN] = {
        1, dtype, gate_act, m, k, n, bd != NULL, ldy == n, 0, h_local};
    int64_t h_total = 0;
    st = agree(h, mod, routine, desc, fields, &h_total);
    if (st != FB_STATUS_SUCCESS)
        return st;
    /* Decided from what the ranks agreed on, so that every rank decides
     * the same: a rank that returned alone would leave the others in the
     * all-reduce. */
    if (k == 0 && h_total > 0 && m > 0 && n > 0)
        return fb_handle_fail(h, FB_STATUS_NOT_SUPPORTED, 0,
                              "%s: k = 0 with h = %lld (no GEMM to "
                              "split)", routine, (long long)h_total);

    fb_cuda_result res;
    memset(&res, 0, sizeof res);
    st = mod->tp_mlp(h->cuda, &h->tp->comm, &p, h->math, &res);
    return finish(h, routine, st, &res);
}

FB_EXPORT fb_status gemm_bias_act_tp(
    fb_handle handle, fb_dtype dtype, fb_layout layout, fb_transpose transa,
    fb_transpose transb, int64_t m, int64_t n, int64_t k, float alpha,
    const void *A, int64_t lda, const void *B, int64_t ldb, float beta,
    void *C, int64_t ldc, const void *bias, fb_activation act)
{
    static const char routine[] = "gemm_bias_act_tp";
    fb_status st;
    fb_handle h = fb_handle_resolve(handle, &st);
    if (h == NULL)
        return st;
    fb_handle_clear(h);

    if (dtype != FB_DTYPE_F32 && dtype != FB_DTYPE_F16 &&
        dtype != FB_DTYPE_BF16)
        return fb_handle_fail(h, FB_STATUS_INVALID_ARGUMENT, 2,
                              "%s: unknown dtype %d", routine, (int)dtype);
    const fb_gemm_call call = {dtype, layout, transa, transb, m,   n,
                               k,     alpha,  A,      lda,    B,   ldb,
                               beta,  C,      ldc,    bias,   act};
    char msg[192];
    int arg = fb_check_gemm(&call, msg, sizeof msg);
    if (arg != 0) /* gemm_bias_act's positions, dtype inserted at 2 */
        return fb_handle_fail(h, FB_STATUS_INVALID_ARGUMENT,
                              arg >= 2 ? arg + 1 : arg, "%s: %s", routine,
                              msg);
    const int run = m > 0 && n > 0, product = run && k > 0 && alpha != 0;
    const void *const ptrs[] = {product ? A : NULL, product ? B : NULL,
                                run ? C : NULL, run ? bias : NULL};
    const int pos[] = {10, 12, 15, 17};
    const fb_cuda_module *mod;
    st = prepare(h, routine, ptrs, pos, 4, &mod);
    if (st != FB_STATUS_SUCCESS)
        return st;

    uint32_t alpha_bits, beta_bits;
    memcpy(&alpha_bits, &alpha, sizeof alpha_bits);
    memcpy(&beta_bits, &beta, sizeof beta_bits);
    static const desc_field fields[DESC_SHARED - 1] = {
        {2, "dtype"}, {3, "layout"}, {6, "m"},       {7, "n"},
        {9, "alpha"}, {14, "beta"},  {17, "bias given"}, {18, "act"}};
    const int64_t desc[DESC_LEN] = {
        2, dtype, layout, m, n, alpha_bits, beta_bits, bias != NULL, act, k};
    int64_t k_total = 0;
    st = agree(h, mod, routine, desc, fields, &k_total);
    if (st != FB_STATUS_SUCCESS)
        return st;

    fb_gemm_problem p;
    fb_gemm_normalise(&call, &p);
    fb_cuda_result res;
    memset(&res, 0, sizeof res);
    st = mod->tp_gemm(h->cuda, &h->tp->comm, &p, h->math, &res);
    return finish(h, routine, st, &res);
}
