//===- NcclPlugin.cpp - The NCCL communicator plugin ----------------------===//
//
// libtessera_comm_nccl.so: NCCL and the CUDA runtime behind the table of
// CommPlugin.h. tessera_runtime loads it with dlopen, so only this library
// needs libnccl and libcudart at load time.
//
//===----------------------------------------------------------------------===//

#include "CommPlugin.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <cstring>
#include <string>

namespace {

thread_local std::string lastError;

int failWith(tsr_status_t status, std::string message) {
  lastError = std::move(message);
  return status;
}

int check(ncclResult_t result, const char *what) {
  if (result == ncclSuccess)
    return TSR_OK;
  return failWith(TSR_ERROR_IO, std::string(what) + ": " +
                                    ncclGetErrorString(result) + " (" +
                                    ncclGetLastError(nullptr) + ")");
}

int checkCuda(cudaError_t result, const char *what) {
  if (result == cudaSuccess)
    return TSR_OK;
  return failWith(TSR_ERROR_IO,
                  std::string(what) + ": " + cudaGetErrorString(result));
}

struct Comm {
  ncclComm_t nccl = nullptr;
  int device = 0;
  cudaStream_t stream = nullptr;
  int *scratch = nullptr;
};

bool ncclType(tsr_dtype_t dtype, ncclDataType_t &out) {
  switch (dtype) {
  case TSR_DTYPE_FLOAT32:
    out = ncclFloat32;
    return true;
  case TSR_DTYPE_FLOAT64:
    out = ncclFloat64;
    return true;
  case TSR_DTYPE_FLOAT16:
    out = ncclFloat16;
    return true;
  case TSR_DTYPE_BFLOAT16:
    out = ncclBfloat16;
    return true;
  case TSR_DTYPE_INT8:
    out = ncclInt8;
    return true;
  case TSR_DTYPE_UINT8:
  case TSR_DTYPE_BOOL:
    out = ncclUint8;
    return true;
  case TSR_DTYPE_INT32:
    out = ncclInt32;
    return true;
  case TSR_DTYPE_UINT32:
    out = ncclUint32;
    return true;
  case TSR_DTYPE_INT64:
    out = ncclInt64;
    return true;
  case TSR_DTYPE_UINT64:
    out = ncclUint64;
    return true;
  default:
    return false;
  }
}

int typeOf(tsr_dtype_t dtype, ncclDataType_t &out) {
  if (ncclType(dtype, out))
    return TSR_OK;
  return failWith(TSR_ERROR_UNSUPPORTED,
                  "NCCL has no " + std::string(tsr_dtype_name(dtype)) +
                      " (int16 and uint16 are MPI only)");
}

ncclRedOp_t ncclOp(tsr_reduce_op_t op) {
  switch (op) {
  case TSR_REDUCE_MEAN:
    return ncclAvg;
  case TSR_REDUCE_MAX:
    return ncclMax;
  case TSR_REDUCE_MIN:
    return ncclMin;
  default:
    return ncclSum;
  }
}

cudaStream_t streamOf(Comm *comm, void *stream) {
  return stream ? static_cast<cudaStream_t>(stream) : comm->stream;
}

const char *lastErrorText() { return lastError.c_str(); }

int checkDevice(int device) {
  int count = 0;
  cudaError_t result = cudaGetDeviceCount(&count);
  if (result != cudaSuccess)
    return failWith(TSR_ERROR_UNSUPPORTED,
                    std::string("no usable CUDA device (cudaGetDeviceCount: ") +
                        cudaGetErrorString(result) + ")");
  if (device < 0 || device >= count)
    return failWith(TSR_ERROR_INVALID_ARGUMENT,
                    "CUDA device " + std::to_string(device) +
                        " does not exist (" + std::to_string(count) +
                        " devices)");
  return TSR_OK;
}

int makeUniqueId(void *out) {
  return check(ncclGetUniqueId(static_cast<ncclUniqueId *>(out)),
               "ncclGetUniqueId");
}

int finishInit(Comm *comm, void **out) {
  if (int s = checkCuda(
          cudaStreamCreateWithFlags(&comm->stream, cudaStreamNonBlocking),
          "cudaStreamCreate"))
    return s;
  if (int s = checkCuda(cudaMalloc(&comm->scratch, sizeof(int)), "cudaMalloc"))
    return s;
  *out = comm;
  return TSR_OK;
}

void destroy(void *handle) {
  Comm *comm = static_cast<Comm *>(handle);
  if (!comm)
    return;
  cudaSetDevice(comm->device);
  if (comm->nccl)
    ncclCommDestroy(comm->nccl);
  if (comm->scratch)
    cudaFree(comm->scratch);
  if (comm->stream)
    cudaStreamDestroy(comm->stream);
  delete comm;
}

int init(const void *id, int rank, int size, int device, void **out) {
  if (int s = checkCuda(cudaSetDevice(device), "cudaSetDevice"))
    return s;
  Comm *comm = new Comm;
  comm->device = device;
  ncclUniqueId unique;
  std::memcpy(&unique, id, sizeof(unique));
  int s = check(ncclCommInitRank(&comm->nccl, size, unique, rank),
                "ncclCommInitRank");
  if (s == TSR_OK)
    s = finishInit(comm, out);
  if (s != TSR_OK)
    destroy(comm);
  return s;
}

int split(void *handle, int color, int key, void **out) {
  Comm *parent = static_cast<Comm *>(handle);
  Comm *comm = new Comm;
  comm->device = parent->device;
  int s = check(ncclCommSplit(parent->nccl, color, key, &comm->nccl, nullptr),
                "ncclCommSplit");
  if (s == TSR_OK)
    s = finishInit(comm, out);
  if (s != TSR_OK)
    destroy(comm);
  return s;
}

int rankAndSize(void *handle, int *rank, int *size) {
  Comm *comm = static_cast<Comm *>(handle);
  if (int s = check(ncclCommUserRank(comm->nccl, rank), "ncclCommUserRank"))
    return s;
  return check(ncclCommCount(comm->nccl, size), "ncclCommCount");
}

int allReduce(void *handle, const void *send, void *recv, size_t count,
              tsr_dtype_t dtype, tsr_reduce_op_t op, void *stream) {
  Comm *comm = static_cast<Comm *>(handle);
  ncclDataType_t type;
  if (int s = typeOf(dtype, type))
    return s;
  return check(ncclAllReduce(send, recv, count, type, ncclOp(op), comm->nccl,
                             streamOf(comm, stream)),
               "ncclAllReduce");
}

int reduceScatter(void *handle, const void *send, void *recv, size_t count,
                  tsr_dtype_t dtype, tsr_reduce_op_t op, void *stream) {
  Comm *comm = static_cast<Comm *>(handle);
  ncclDataType_t type;
  if (int s = typeOf(dtype, type))
    return s;
  return check(ncclReduceScatter(send, recv, count, type, ncclOp(op),
                                 comm->nccl, streamOf(comm, stream)),
               "ncclReduceScatter");
}

int allGather(void *handle, const void *send, void *recv, size_t count,
              tsr_dtype_t dtype, void *stream) {
  Comm *comm = static_cast<Comm *>(handle);
  ncclDataType_t type;
  if (int s = typeOf(dtype, type))
    return s;
  return check(ncclAllGather(send, recv, count, type, comm->nccl,
                             streamOf(comm, stream)),
               "ncclAllGather");
}

int allToAll(void *handle, const void *send, void *recv, size_t count,
             tsr_dtype_t dtype, void *stream) {
  Comm *comm = static_cast<Comm *>(handle);
  ncclDataType_t type;
  if (int s = typeOf(dtype, type))
    return s;
  int size = 0;
  if (int s = check(ncclCommCount(comm->nccl, &size), "ncclCommCount"))
    return s;
  size_t bytes = count * tsr_dtype_size(dtype);
  cudaStream_t on = streamOf(comm, stream);
  if (int s = check(ncclGroupStart(), "ncclGroupStart"))
    return s;
  for (int p = 0; p < size; ++p) {
    ncclSend(static_cast<const char *>(send) + p * bytes, count, type, p,
             comm->nccl, on);
    ncclRecv(static_cast<char *>(recv) + p * bytes, count, type, p, comm->nccl,
             on);
  }
  return check(ncclGroupEnd(), "ncclGroupEnd");
}

int broadcast(void *handle, void *buffer, size_t count, tsr_dtype_t dtype,
              int root, void *stream) {
  Comm *comm = static_cast<Comm *>(handle);
  ncclDataType_t type;
  if (int s = typeOf(dtype, type))
    return s;
  return check(ncclBroadcast(buffer, buffer, count, type, root, comm->nccl,
                             streamOf(comm, stream)),
               "ncclBroadcast");
}

int send(void *handle, const void *buffer, size_t count, tsr_dtype_t dtype,
         int peer, void *stream) {
  Comm *comm = static_cast<Comm *>(handle);
  ncclDataType_t type;
  if (int s = typeOf(dtype, type))
    return s;
  return check(
      ncclSend(buffer, count, type, peer, comm->nccl, streamOf(comm, stream)),
      "ncclSend");
}

int recv(void *handle, void *buffer, size_t count, tsr_dtype_t dtype, int peer,
         void *stream) {
  Comm *comm = static_cast<Comm *>(handle);
  ncclDataType_t type;
  if (int s = typeOf(dtype, type))
    return s;
  return check(
      ncclRecv(buffer, count, type, peer, comm->nccl, streamOf(comm, stream)),
      "ncclRecv");
}

int barrier(void *handle) {
  Comm *comm = static_cast<Comm *>(handle);
  if (int s = check(ncclAllReduce(comm->scratch, comm->scratch, 1, ncclInt32,
                                  ncclSum, comm->nccl, comm->stream),
                    "ncclAllReduce"))
    return s;
  return checkCuda(cudaStreamSynchronize(comm->stream),
                   "cudaStreamSynchronize");
}

int asyncError(void *handle) {
  Comm *comm = static_cast<Comm *>(handle);
  if (!comm->nccl)
    return failWith(TSR_ERROR_IO, "the NCCL communicator was aborted");
  ncclResult_t state = ncclSuccess;
  if (int s = check(ncclCommGetAsyncError(comm->nccl, &state),
                    "ncclCommGetAsyncError"))
    return s;
  // ncclInProgress: a nonblocking communicator still initializing or
  // splitting, which is no failure.
  if (state == ncclInProgress)
    return TSR_OK;
  return check(state, "ncclCommGetAsyncError");
}

void abortComm(void *handle) {
  Comm *comm = static_cast<Comm *>(handle);
  if (!comm || !comm->nccl)
    return;
  cudaSetDevice(comm->device);
  ncclCommAbort(comm->nccl);
  // ncclCommAbort frees the communicator: destroy must not see it again.
  comm->nccl = nullptr;
}

const tsr_comm_plugin_t kTable = {
    TSR_COMM_PLUGIN_ABI,
    sizeof(ncclUniqueId),
    lastErrorText,
    checkDevice,
    makeUniqueId,
    init,
    split,
    destroy,
    rankAndSize,
    allReduce,
    reduceScatter,
    allGather,
    allToAll,
    broadcast,
    send,
    recv,
    barrier,
    asyncError,
    abortComm,
};

} // namespace

extern "C" __attribute__((visibility("default"))) const tsr_comm_plugin_t *
tessera_comm_plugin_v1(void) {
  return &kTable;
}
