/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * staging.cu -- copies of host operands in device memory (see staging.h).
 */
#include <stdint.h>
#include <string.h>
#include <cuda.h>
#include "result.h"
#include "staging.h"

/* ---- which memory a pointer is in -------------------------------------------
 *
 * cudaPointerGetAttributes costs about a microsecond and takes the
 * runtime's locks; a call on device data would pay it for every operand
 * (8 for an MLP), which launch-bound shapes feel. So:
 *  - the driver's cuPointerGetAttributes (found once through the runtime's
 *    driver entry point, no link to libcuda) answers "device" or "managed"
 *    and gives the allocation's address range in the same query;
 *  - within one call, an operand that lies inside an extent already
 *    classified -- an allocation range the driver reported, or another
 *    operand's own window -- is in that same allocation and needs no
 *    query. The user keeps every operand allocated for the duration of
 *    the call, so the answer cannot change within it;
 *  - nothing is remembered between calls: memory freed and reused by the
 *    host allocator could then change kind under the same address;
 *  - an answer other than device or managed (host memory, an unknown
 *    pointer, a driver that cannot be asked) is confirmed by
 *    cudaPointerGetAttributes, the authority before this change, so the
 *    driver is only ever trusted to say "device". Host data is staged and
 *    synchronous, so that query costs nothing that matters there. */

namespace {

typedef CUresult(CUDAAPI *get_attributes_fn)(unsigned int, CUpointer_attribute *,
                                             void **, CUdeviceptr);

get_attributes_fn find_get_attributes(void)
{
    void *fn = NULL;
    bool found = false;
#if CUDART_VERSION >= 12050
    cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
    cudaError_t e = cudaGetDriverEntryPointByVersion(
        "cuPointerGetAttributes", &fn, CUDART_VERSION, cudaEnableDefault, &q);
    found = q == cudaDriverEntryPointSuccess;
#elif CUDART_VERSION >= 12000
    cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
    cudaError_t e = cudaGetDriverEntryPoint("cuPointerGetAttributes", &fn,
                                            cudaEnableDefault, &q);
    found = q == cudaDriverEntryPointSuccess;
#elif CUDART_VERSION >= 11030
    cudaError_t e = cudaGetDriverEntryPoint("cuPointerGetAttributes", &fn,
                                            cudaEnableDefault);
    found = true;
#else
    cudaError_t e = cudaErrorNotSupported; /* no entry points to ask */
#endif
    if (e != cudaSuccess || !found || fn == NULL) {
        (void)cudaGetLastError();
        return NULL;
    }
    return (get_attributes_fn)fn;
}

/* Looked up once per process (a C++ function-local static is initialised
 * exactly once, thread-safely). */
get_attributes_fn get_attributes(void)
{
    static const get_attributes_fn fn = find_get_attributes();
    return fn;
}

/* What one query learned: whether kernels can read p, and the extent of
 * the allocation it is in ([lo, hi); empty if not known). */
struct memory_kind {
    bool device;
    uintptr_t lo, hi;
};

bool runtime_is_device(const void *p)
{
    cudaPointerAttributes a;
    cudaError_t e = cudaPointerGetAttributes(&a, p);
    if (e != cudaSuccess) {
        /* Older runtimes fail on memory CUDA never saw: that is host
         * memory. Clear the error so that it does not surface later. */
        (void)cudaGetLastError();
        return false;
    }
    return a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged;
}

memory_kind query(const void *p)
{
    memory_kind k = {false, 0, 0};
    const get_attributes_fn fn = get_attributes();
    if (fn != NULL) {
        /* 8 zeroed bytes for each answer, whatever width the driver
         * writes (little-endian). */
        unsigned long long type = 0, managed = 0, start = 0, size = 0;
        CUpointer_attribute attrs[4] = {
            CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_IS_MANAGED,
            CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
            CU_POINTER_ATTRIBUTE_RANGE_SIZE};
        void *data[4] = {&type, &managed, &start, &size};
        if (fn(4, attrs, data, (CUdeviceptr)(uintptr_t)p) == CUDA_SUCCESS &&
            (type == CU_MEMORYTYPE_DEVICE || managed != 0)) {
            k.device = true;
            if (size > 0 && (uintptr_t)p >= start &&
                (uintptr_t)p - start < size) {
                k.lo = (uintptr_t)start;
                k.hi = (uintptr_t)(start + size);
            }
            return k;
        }
    }
    k.device = runtime_is_device(p);
    return k;
}

/* The answers of one call (see above): extents classified so far. */
class memory_kinds {
  public:
    memory_kinds() : n_(0) {}

    /* Whether kernels can read [p, p + bytes), bytes > 0. */
    bool is_device(const void *p, size_t bytes)
    {
        const uintptr_t lo = (uintptr_t)p, hi = lo + bytes;
        for (int i = 0; i < n_; i++)
            if (known_[i].lo <= lo && hi <= known_[i].hi)
                return known_[i].device;
        const memory_kind k = query(p);
        remember(lo, hi, k.device);
        if (k.hi > k.lo)
            remember(k.lo, k.hi, k.device);
        return k.device;
    }

  private:
    struct extent {
        uintptr_t lo, hi;
        bool device;
    };
    enum { kMax = 16 }; /* two per operand of the largest call (8) */
    extent known_[kMax];
    int n_;

    void remember(uintptr_t lo, uintptr_t hi, bool device)
    {
        if (n_ < kMax && hi > lo) {
            known_[n_].lo = lo;
            known_[n_].hi = hi;
            known_[n_].device = device;
            n_++;
        }
    }
};

} /* namespace */

int fb_is_device_pointer(const void *p)
{
    if (p == NULL)
        return 0;
    return query(p).device ? 1 : 0;
}

namespace {

/* One operand: a column-major rows x cols window with leading dimension
 * ld, and where its device pointer goes in the problem handed on. */
struct operand {
    const void *host;
    const void **slot;
    int64_t rows, cols, ld;
    bool read;   /* its contents are needed on the device */
    bool output; /* the call writes it */
    size_t offset;
};

/* Bytes from the first element of the window to one past its last. */
size_t footprint(const operand &o, int64_t elem)
{
    if (o.rows <= 0 || o.cols <= 0)
        return 0;
    return (size_t)(((o.cols - 1) * o.ld + o.rows) * elem);
}

/* Copy a window between host and device, column by column if the pitch is
 * more than cudaMemcpy2D takes. */
cudaError_t copy_window(void *dst, int64_t dld, const void *src,
                        int64_t sld, int64_t rows, int64_t cols,
                        int64_t elem, cudaMemcpyKind kind,
                        cudaStream_t stream)
{
    const size_t width = (size_t)(rows * elem);
    if (dld == rows && sld == rows)
        return cudaMemcpyAsync(dst, src, width * (size_t)cols, kind, stream);
    cudaError_t e = cudaMemcpy2DAsync(dst, (size_t)(dld * elem), src,
                                      (size_t)(sld * elem), width,
                                      (size_t)cols, kind, stream);
    if (e != cudaErrorInvalidPitchValue && e != cudaErrorInvalidValue)
        return e;
    (void)cudaGetLastError();
    for (int64_t j = 0; j < cols; j++) {
        e = cudaMemcpyAsync((char *)dst + j * dld * elem,
                            (const char *)src + j * sld * elem, width, kind,
                            stream);
        if (e != cudaSuccess)
            return e;
    }
    return cudaSuccess;
}

/* Stage the host operands among ops[0..n) (the last may be the output). */
fb_status stage(fb_cuda_ctx *ctx, operand *ops, int n, int64_t elem,
                int *staged, fb_cuda_result *r)
{
    size_t total = 0;
    *staged = 0;
    memory_kinds kinds;
    for (int i = 0; i < n; i++) {
        operand &o = ops[i];
        const size_t bytes = footprint(o, elem);
        if (o.host == NULL || bytes == 0 || kinds.is_device(o.host, bytes)) {
            o.host = NULL; /* nothing to do for this one */
            continue;
        }
        if (!o.read && !o.output) {
            /* Host memory the call never reads is not handed on. */
            *o.slot = NULL;
            o.host = NULL;
            continue;
        }
        o.offset = total;
        total = fb_round_up(total + bytes, 256);
        *staged = 1;
    }
    if (!*staged)
        return FB_STATUS_SUCCESS;
    fb_status st = fb_ctx_reserve(ctx, &ctx->staging, total, r);
    if (st != FB_STATUS_SUCCESS)
        return st;
    char *base = (char *)ctx->staging.ptr;
    for (int i = 0; i < n; i++) {
        operand &o = ops[i];
        if (o.host == NULL)
            continue;
        *o.slot = base + o.offset;
        if (!o.read)
            continue;
        /* The whole footprint in one copy: pageable memory is copied
         * through the driver's pinned buffer either way. */
        cudaError_t e = cudaMemcpyAsync(base + o.offset, o.host,
                                        footprint(o, elem),
                                        cudaMemcpyHostToDevice, ctx->stream);
        if (e != cudaSuccess)
            return fb_result_cuda(r, e, "staging a host operand");
    }
    return FB_STATUS_SUCCESS;
}

operand make(const void *host, const void **slot, int64_t rows,
             int64_t cols, int64_t ld, bool read, bool output = false)
{
    operand o;
    o.host = host;
    o.slot = slot;
    o.rows = rows;
    o.cols = cols;
    o.ld = ld;
    o.read = read;
    o.output = output;
    o.offset = 0;
    return o;
}

} /* namespace */

fb_status fb_stage_gemm(fb_cuda_ctx *ctx, const fb_gemm_problem *p,
                        fb_gemm_problem *dev, fb_staged_output *out,
                        int *staged, fb_cuda_result *r)
{
    *dev = *p;
    memset(out, 0, sizeof *out);
    const int64_t elem = fb_dtype_size(p->dtype);
    const bool multiply = p->multiply != 0;
    const void *c_slot = p->c;
    operand ops[4] = {
        make(p->a, &dev->a, p->transa ? p->k : p->m, p->transa ? p->m : p->k,
             p->lda, multiply),
        make(p->b, &dev->b, p->transb ? p->n : p->k, p->transb ? p->k : p->n,
             p->ldb, multiply),
        make(p->ep.bias, &dev->ep.bias, p->ep.bias_per_row ? p->m : p->n, 1,
             p->ep.bias_per_row ? p->m : p->n, true),
        make(p->c, &c_slot, p->m, p->n, p->ldc, p->beta != 0.0f, true),
    };
    fb_status st = stage(ctx, ops, 4, elem, staged, r);
    if (st != FB_STATUS_SUCCESS || !*staged)
        return st;
    dev->c = (void *)c_slot;
    if (ops[3].host != NULL) {
        out->host = p->c;
        out->device = c_slot;
        out->rows = p->m;
        out->cols = p->n;
        out->ld = p->ldc;
        out->elem = elem;
    }
    return FB_STATUS_SUCCESS;
}

fb_status fb_stage_mlp(fb_cuda_ctx *ctx, const fb_mlp_problem *p,
                       fb_mlp_problem *dev, fb_staged_output *out,
                       int *staged, fb_cuda_result *r)
{
    *dev = *p;
    memset(out, 0, sizeof *out);
    const int64_t elem = fb_dtype_size(p->dtype);
    const void *y_slot = p->y;
    /* Row-major matrices as column-major windows: X is k x m (ldx), the
     * weights in x out, Y is n x m (ldy). */
    operand ops[8] = {
        make(p->x, &dev->x, p->k, p->m, p->ldx, true),
        make(p->wg, &dev->wg, p->k, p->h, p->k, true),
        make(p->bg, &dev->bg, p->h, 1, p->h, true),
        make(p->wu, &dev->wu, p->k, p->h, p->k, true),
        make(p->bu, &dev->bu, p->h, 1, p->h, true),
        make(p->wd, &dev->wd, p->h, p->n, p->h, true),
        make(p->bd, &dev->bd, p->n, 1, p->n, true),
        make(p->y, &y_slot, p->n, p->m, p->ldy, false, true),
    };
    fb_status st = stage(ctx, ops, 8, elem, staged, r);
    if (st != FB_STATUS_SUCCESS || !*staged)
        return st;
    dev->y = (void *)y_slot;
    if (ops[7].host != NULL) {
        out->host = p->y;
        out->device = y_slot;
        out->rows = p->n;
        out->cols = p->m;
        out->ld = p->ldy;
        out->elem = elem;
    }
    return FB_STATUS_SUCCESS;
}

fb_status fb_stage_copy_out(fb_cuda_ctx *ctx, const fb_staged_output *out,
                            fb_cuda_result *r)
{
    if (out->host == NULL || out->rows <= 0 || out->cols <= 0)
        return FB_STATUS_SUCCESS;
    cudaError_t e = copy_window(out->host, out->ld, out->device, out->ld,
                                out->rows, out->cols, out->elem,
                                cudaMemcpyDeviceToHost, ctx->stream);
    if (e != cudaSuccess)
        return fb_result_cuda(r, e, "copying the result back to the host");
    return FB_STATUS_SUCCESS;
}
