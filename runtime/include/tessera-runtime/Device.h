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
/* Asks, without blocking, whether the work queued before the latest
 * tsr_event_record of `event` has completed (cudaEventQuery): *out_done is
 * 1 when it has (or the event was never recorded), 0 when not yet. Any
 * other answer of CUDA fails with its message. */
TSR_API tsr_status_t tsr_event_query(void *event, int *out_done);
/* Makes the work queued on `stream` after this call wait until the work
 * before the latest tsr_event_record of `event` is done
 * (cudaStreamWaitEvent); the host does not block. The wait is on that
 * record only: `event` may be recorded again, or destroyed, right away. An
 * event never recorded is no wait. This is how one stream's work is
 * ordered after another's. */
TSR_API tsr_status_t tsr_stream_wait_event(void *stream, void *event);
/* Milliseconds between two recorded, completed events. */
TSR_API tsr_status_t tsr_event_elapsed_ms(void *start, void *end,
                                          float *out_ms);

/* What cuBLASLt's epilogue applies to a compiled program's matrix product
 * before it is written (tsrt.gpu_gemm's `epilogue`, tsrt_gpu_gemm's
 * argument): nothing, max(x, 0), a bias per column of the row-major
 * result, or the bias then max(x, 0); or, besides the product, the sum of
 * an operand over k written to the bias buffer (a bias gradient): of
 * op(a), one f32 per row of the result (BIAS_GRAD_A), or of op(b), one per
 * column (BIAS_GRAD_B). RELU_AUX and RELU_AUX_BIAS are RELU and RELU_BIAS
 * that also write which elements were positive before the ReLU to `aux`,
 * cuBLASLt's bit mask (a row of the result per row, padded to a multiple
 * of 128 bits: ceil(n / 128) * 16 bytes per row); DRELU multiplies the
 * product by such a mask, ReLU's backward form. GELU and GELU_BIAS apply
 * GELU's tanh approximation, 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))),
 * to the product (after the bias); GELU_AUX and GELU_AUX_BIAS also write
 * GELU's input to `aux`, an f32 matrix of the result's shape whose rows
 * are padded to a multiple of 8 elements (ceil(n / 8) * 8 per row), and
 * DGELU multiplies the product by GELU's derivative at such an input,
 * GELU's backward form. */
typedef enum {
  TSR_GEMM_EPILOGUE_NONE = 0,
  TSR_GEMM_EPILOGUE_RELU = 1,
  TSR_GEMM_EPILOGUE_BIAS = 2,
  TSR_GEMM_EPILOGUE_RELU_BIAS = 3,
  TSR_GEMM_EPILOGUE_BIAS_GRAD_A = 4,
  TSR_GEMM_EPILOGUE_BIAS_GRAD_B = 5,
  TSR_GEMM_EPILOGUE_RELU_AUX = 6,
  TSR_GEMM_EPILOGUE_RELU_AUX_BIAS = 7,
  TSR_GEMM_EPILOGUE_DRELU = 8,
  TSR_GEMM_EPILOGUE_GELU = 9,
  TSR_GEMM_EPILOGUE_GELU_BIAS = 10,
  TSR_GEMM_EPILOGUE_GELU_AUX = 11,
  TSR_GEMM_EPILOGUE_GELU_AUX_BIAS = 12,
  TSR_GEMM_EPILOGUE_DGELU = 13,
} tsr_gemm_epilogue_t;

/* tsrt_gpu_attention's flags. */
typedef enum { TSR_ATTENTION_CAUSAL = 1 } tsr_attention_flag_t;

/* O = softmax(scale * Q·Kᵀ + bias, masked causally with
 * TSR_ATTENTION_CAUSAL) · V for b batches of h heads: Q [sq, d], K and V
 * [skv, d] per head, O [sq, d]. Each operand is a dense buffer of dtype
 * (TSR_DTYPE_BFLOAT16 or TSR_DTYPE_FLOAT16) whose four logical dimensions
 * (0 batch, 1 head, 2 sequence, 3 head dim) are stored in the order its
 * layout code gives, outermost first, one hex digit each: 0x0123 is
 * [b, h, s, d] (BHSD), 0x0213 is [b, s, h, d] (BSHD), 0x0132 is
 * [b, h, d, s] (a K held transposed). Strides follow from the layout and
 * the sizes. stats (f32, [b, h, sq] contiguous: max + log(sum of exp) of
 * each row of the scaled scores) is written when not null (training), for
 * the backward. scale points to one f32 in device memory. bias is null or
 * a dense dtype buffer [b or 1, h or 1, sq, skv]: bit 0 of bias_broadcast
 * set means its batch dim is 1, bit 1 its head dim is 1. Queued on
 * `stream`.
 *
 * By cuDNN's fused attention (runtime/lib/GpuAttention.cpp), loaded on first
 * use: d is a multiple of 8 and at most 256, every pointer 16-byte aligned.
 * A failure (no cuDNN, arguments it does not take, cuDNN's own error) makes
 * the tsr_artifact_invoke that ran it fail with the reason; nothing is
 * computed. */
TSR_API void tsrt_gpu_attention(void *stream, int64_t b, int64_t h, int64_t sq,
                                int64_t skv, int64_t d, int32_t dtype,
                                const void *q, int32_t q_layout, const void *k,
                                int32_t k_layout, const void *v,
                                int32_t v_layout, void *o, int32_t o_layout,
                                float *stats, const float *scale,
                                const void *bias, int32_t bias_broadcast,
                                int32_t flags);

/* The gradients dQ, dK, dV (dtype, each with its layout) of
 * tsrt_gpu_attention's O given dO, from the forward's Q, K, V, O and stats
 * (same shapes, scale, bias, flags).
 *
 * d is a multiple of 8 and at most 128 (cuDNN's limit for the backward
 * before Hopper); stats is required; cuDNN 9.6 or later. Failures as for
 * tsrt_gpu_attention. */
TSR_API void tsrt_gpu_attention_backward(
    void *stream, int64_t b, int64_t h, int64_t sq, int64_t skv, int64_t d,
    int32_t dtype, const void *q, int32_t q_layout, const void *k,
    int32_t k_layout, const void *v, int32_t v_layout, const void *o,
    int32_t o_layout, const void *d_o, int32_t d_o_layout, const float *stats,
    void *d_q, int32_t d_q_layout, void *d_k, int32_t d_k_layout, void *d_v,
    int32_t d_v_layout, const float *scale, const void *bias,
    int32_t bias_broadcast, int32_t flags);

#ifdef __cplusplus
}
#endif

#endif /* TESSERA_RUNTIME_DEVICE_H */
