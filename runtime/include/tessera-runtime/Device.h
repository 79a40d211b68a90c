/*===- tessera-runtime/Device.h - CUDA devices, memory, streams ----------===*\
|*                                                                            *|
|* The GPU side of the runtime: device count and selection, device and        *|
|* pinned host memory and tensors there, copies, streams and events.          *|
|* libcudart is loaded on first use (dlopen of libcudart.so.13, .12 or .so,   *|
|* then $CUDA_HOME/lib64), so the runtime starts on machines without CUDA:    *|
|* there tsr_device_count() is 0 and the other calls fail with                *|
|* TSR_ERROR_UNSUPPORTED and a message saying why.                            *|
|*                                                                            *|
|* Status conventions are those of Runtime.h. Streams and events are opaque   *|
|* (cudaStream_t, cudaEvent_t); a null stream is the default stream.          *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#ifndef TESSERA_RUNTIME_DEVICE_H
#define TESSERA_RUNTIME_DEVICE_H

#include "tessera-runtime/Runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The number of CUDA devices; 0 without libcudart, a driver or a device. */
TSR_API int tsr_device_count(void);

/* Makes `device` current for this thread. */
TSR_API tsr_status_t tsr_device_set(int device);

TSR_API tsr_status_t tsr_device_alloc(size_t bytes, void **out_ptr);
/* Null is allowed. */
TSR_API void tsr_device_free(void *ptr);

/* Page-locked host memory, for asynchronous copies. */
TSR_API tsr_status_t tsr_host_alloc_pinned(size_t bytes, void **out_ptr);
TSR_API void tsr_host_free_pinned(void *ptr);

/* Copies between any host and device pointers (cudaMemcpyDefault). Null
 * `stream`: synchronous; else queued on `stream`. */
TSR_API tsr_status_t tsr_device_memcpy(void *dst, const void *src, size_t bytes,
                                       void *stream);

/* Creates a zero-filled tensor whose buffer lives in `placement`: host memory
 * (as tsr_tensor_create), memory of the current device (tsr_device_alloc)
 * or pinned host memory (tsr_host_alloc_pinned). tsr_tensor_destroy frees
 * it where it lives. */
TSR_API tsr_status_t tsr_tensor_create_placed(tsr_placement_t placement,
                                              tsr_dtype_t dtype, size_t rank,
                                              const int64_t *shape,
                                              tsr_tensor_t **out_tensor);

/* Copies `src`'s elements into `dst`, of the same dtype and shape, wherever
 * each lives: between host tensors with memcpy (no CUDA needed), else with
 * tsr_device_memcpy on `stream` (null: synchronous). */
TSR_API tsr_status_t tsr_tensor_copy(tsr_tensor_t *dst, const tsr_tensor_t *src,
                                     void *stream);

TSR_API tsr_status_t tsr_stream_create(void **out_stream);
TSR_API tsr_status_t tsr_stream_destroy(void *stream);
TSR_API tsr_status_t tsr_stream_synchronize(void *stream);

TSR_API tsr_status_t tsr_event_create(void **out_event);
TSR_API tsr_status_t tsr_event_destroy(void *event);
TSR_API tsr_status_t tsr_event_record(void *event, void *stream);
TSR_API tsr_status_t tsr_event_synchronize(void *event);
/* Milliseconds between two recorded, completed events. */
TSR_API tsr_status_t tsr_event_elapsed_ms(void *start, void *end,
                                          float *out_ms);

/* What cuBLASLt's epilogue applies to a compiled program's matrix product
 * before it is written (tsrt.gpu_gemm's `epilogue`, tsrt_gpu_gemm's
 * argument): nothing, max(x, 0), a bias per column of the row-major
 * result, or the bias then max(x, 0). */
typedef enum {
  TSR_GEMM_EPILOGUE_NONE = 0,
  TSR_GEMM_EPILOGUE_RELU = 1,
  TSR_GEMM_EPILOGUE_BIAS = 2,
  TSR_GEMM_EPILOGUE_RELU_BIAS = 3,
} tsr_gemm_epilogue_t;

#ifdef __cplusplus
}
#endif

#endif /* TESSERA_RUNTIME_DEVICE_H */
