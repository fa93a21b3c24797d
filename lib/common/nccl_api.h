/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * nccl_api.h -- the few NCCL functions fusedblas calls, as a table of
 * pointers filled by dlopen of libnccl.so.2 (nccl_loader.c).
 *
 * NCCL's headers are not needed to build fusedblas: the types below are
 * NCCL's documented C ABI, unchanged across NCCL 2.x. ncclComm_t is an
 * opaque pointer (void * here), ncclResult_t, ncclDataType_t and
 * ncclRedOp_t are C enums (int-sized), cudaStream_t is a pointer. The
 * library hands this table to the CUDA module, which never links NCCL
 * either. This header is plain C and shared with the module.
 */
#ifndef FB_NCCL_API_H
#define FB_NCCL_API_H

#include <stddef.h>

/* ncclResult_t values */
#define FB_NCCL_SUCCESS 0
#define FB_NCCL_IN_PROGRESS 7
/* ncclDataType_t values */
#define FB_NCCL_INT64 4
#define FB_NCCL_FLOAT16 6
#define FB_NCCL_FLOAT32 7
#define FB_NCCL_BFLOAT16 9 /* NCCL 2.10 on */
/* ncclRedOp_t values */
#define FB_NCCL_SUM 0

typedef int fb_nccl_result; /* ncclResult_t */

typedef struct fb_nccl_api {
    int version; /* ncclGetVersion()'s, e.g. 22105 for 2.21.5 */
    /* ncclAllReduce(sendbuff, recvbuff, count, datatype, op, comm, stream) */
    fb_nccl_result (*all_reduce)(const void *send, void *recv, size_t count,
                                 int datatype, int op, void *comm,
                                 void *stream);
    /* ncclReduceScatter(sendbuff, recvbuff, recvcount, datatype, op, comm,
     * stream) */
    fb_nccl_result (*reduce_scatter)(const void *send, void *recv,
                                     size_t recvcount, int datatype, int op,
                                     void *comm, void *stream);
    /* ncclAllGather(sendbuff, recvbuff, sendcount, datatype, comm, stream) */
    fb_nccl_result (*all_gather)(const void *send, void *recv,
                                 size_t sendcount, int datatype, void *comm,
                                 void *stream);
    fb_nccl_result (*comm_count)(void *comm, int *count);
    fb_nccl_result (*comm_cu_device)(void *comm, int *device);
    fb_nccl_result (*comm_user_rank)(void *comm, int *rank);
    fb_nccl_result (*comm_get_async_error)(void *comm,
                                           fb_nccl_result *error);
    const char *(*error_string)(fb_nccl_result result);
} fb_nccl_api;

#endif /* FB_NCCL_API_H */
