/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fake_libnccl.c -- a stand-in for NCCL (built as tests/.libs/libnccl.so
 * and named by FUSEDBLAS_NCCL_LIBRARY), so that the tensor-parallel calls'
 * loading, communicator checks and argument checks can be tested on any
 * machine. It has the functions the library looks up; a communicator is a
 * fake_nccl_comm the test makes. The collectives count their calls and
 * fail: a test that reaches one has let a call through that it should
 * have stopped.
 */
#include <stddef.h>

#define FAKE_NCCL_MAGIC 0x6e63636cu
#define INVALID_ARGUMENT 4
#define INVALID_USAGE 5

/* The layout the test uses for its communicators. */
typedef struct fake_nccl_comm {
    unsigned magic; /* FAKE_NCCL_MAGIC, or the comm is refused */
    int nranks, rank, device;
} fake_nccl_comm;

long fake_nccl_collectives; /* read by the test through dlsym */

int ncclGetVersion(int *version);
int ncclCommCount(const fake_nccl_comm *comm, int *count);
int ncclCommUserRank(const fake_nccl_comm *comm, int *rank);
int ncclCommCuDevice(const fake_nccl_comm *comm, int *device);
int ncclCommGetAsyncError(const fake_nccl_comm *comm, int *error);
const char *ncclGetErrorString(int result);
int ncclAllReduce(const void *send, void *recv, size_t count, int datatype,
                  int op, void *comm, void *stream);
int ncclReduceScatter(const void *send, void *recv, size_t count,
                      int datatype, int op, void *comm, void *stream);
int ncclAllGather(const void *send, void *recv, size_t count, int datatype,
                  void *comm, void *stream);

int ncclGetVersion(int *version)
{
    *version = 22105;
    return 0;
}

static int check(const fake_nccl_comm *comm)
{
    return comm != NULL && comm->magic == FAKE_NCCL_MAGIC;
}

int ncclCommCount(const fake_nccl_comm *comm, int *count)
{
    if (!check(comm))
        return INVALID_ARGUMENT;
    *count = comm->nranks;
    return 0;
}

int ncclCommUserRank(const fake_nccl_comm *comm, int *rank)
{
    if (!check(comm))
        return INVALID_ARGUMENT;
    *rank = comm->rank;
    return 0;
}

int ncclCommCuDevice(const fake_nccl_comm *comm, int *device)
{
    if (!check(comm))
        return INVALID_ARGUMENT;
    *device = comm->device;
    return 0;
}

int ncclCommGetAsyncError(const fake_nccl_comm *comm, int *error)
{
    *error = 0;
    return check(comm) ? 0 : INVALID_ARGUMENT;
}

const char *ncclGetErrorString(int result)
{
    return result == 0 ? "no error" : "fake NCCL error";
}

int ncclAllReduce(const void *send, void *recv, size_t count, int datatype,
                  int op, void *comm, void *stream)
{
    fake_nccl_collectives++;
    return INVALID_USAGE;
}

int ncclReduceScatter(const void *send, void *recv, size_t count,
                      int datatype, int op, void *comm, void *stream)
{
    fake_nccl_collectives++;
    return INVALID_USAGE;
}

int ncclAllGather(const void *send, void *recv, size_t count, int datatype,
                  void *comm, void *stream)
{
    fake_nccl_collectives++;
    return INVALID_USAGE;
}
