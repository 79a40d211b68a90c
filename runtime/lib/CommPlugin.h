/*===- CommPlugin.h - The interface of a communicator plugin -------*- C
-*-===*\
|*                                                                            *|
|* libtessera_comm_nccl.so exports `tessera_comm_plugin_v1`, which returns a  *|
|* table of these functions. tessera_runtime loads it with dlopen so that it  *|
|* starts on machines without CUDA. Functions return a tsr_status_t value and *|
|* leave their message in `last_error`.                                       *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#ifndef TESSERA_RUNTIME_LIB_COMMPLUGIN_H
#define TESSERA_RUNTIME_LIB_COMMPLUGIN_H

#include "tessera-runtime/Comm.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ABI 2 appended async_error and abort, for the device watchdog
 * (CommNccl.cpp). The entry point keeps its name, so that a plugin of
 * another ABI is refused by its number rather than not found. */
#define TSR_COMM_PLUGIN_ABI 2
#define TSR_COMM_PLUGIN_ENTRY "tessera_comm_plugin_v1"

typedef struct tsr_comm_plugin_t {
  int abi;
  /* Bytes of the unique id rank 0 makes and every rank needs. */
  size_t unique_id_size;
  const char *(*last_error)(void);
  /* Checks that a device is usable (count > 0) and makes the unique id. */
  int (*check_device)(int device);
  int (*make_unique_id)(void *out_id);
  int (*init)(const void *id, int rank, int size, int device, void **out_comm);
  int (*split)(void *comm, int color, int key, void **out_comm);
  void (*destroy)(void *comm);
  int (*rank_and_size)(void *comm, int *out_rank, int *out_size);
  int (*all_reduce)(void *comm, const void *send, void *recv, size_t count,
                    tsr_dtype_t dtype, tsr_reduce_op_t op, void *stream);
  int (*reduce_scatter)(void *comm, const void *send, void *recv,
                        size_t recv_count, tsr_dtype_t dtype,
                        tsr_reduce_op_t op, void *stream);
  int (*all_gather)(void *comm, const void *send, void *recv, size_t send_count,
                    tsr_dtype_t dtype, void *stream);
  int (*all_to_all)(void *comm, const void *send, void *recv, size_t count,
                    tsr_dtype_t dtype, void *stream);
  int (*broadcast)(void *comm, void *buffer, size_t count, tsr_dtype_t dtype,
                   int root, void *stream);
  int (*send)(void *comm, const void *buffer, size_t count, tsr_dtype_t dtype,
              int peer, void *stream);
  int (*recv)(void *comm, void *buffer, size_t count, tsr_dtype_t dtype,
              int peer, void *stream);
  /* Waits for every operation issued on the communicator so far. */
  int (*barrier)(void *comm);
  /* Whether the communicator has failed on the device (a peer gone, a
   * network error): TSR_OK while ncclCommGetAsyncError reports ncclSuccess
   * or ncclInProgress, else an error status whose last_error names NCCL's
   * error. Safe to call from any thread while the communicator is used. */
  int (*async_error)(void *comm);
  /* Cancels the communicator's operations (ncclCommAbort), which unblocks
   * the host waiting on them; destroy then frees the rest without touching
   * the NCCL communicator. Any thread may call it. */
  void (*abort)(void *comm);
} tsr_comm_plugin_t;

typedef const tsr_comm_plugin_t *(*tsr_comm_plugin_entry_t)(void);

#ifdef __cplusplus
}
#endif

#endif /* TESSERA_RUNTIME_LIB_COMMPLUGIN_H */
