/* A stand-in for a compiled training step: one step of SGD with learning
 * rate lr on a linear model, prediction = x . w + b, with the mean squared
 * error as the loss, over a batch of 4 samples of 2 features. Its
 * temporaries come from the runtime's allocation functions, as in compiled
 * code: 16 + 12 bytes live at once. Built with TSR_TEST_OFFLOAD, it also
 * offloads its residuals between the forward and backward loops, as
 * tsr-offload's code does (the train-offload artifact). */
#include <stddef.h>
#include <stdint.h>

void *_mlir_memref_to_llvm_alloc(size_t size);
void *_mlir_memref_to_llvm_aligned_alloc(size_t alignment, size_t size);
void _mlir_memref_to_llvm_free(void *ptr);
#ifdef TSR_TEST_OFFLOAD
void tsrt_offload_start(int64_t transfer, const void *device, int64_t bytes,
                        void *stream);
void tsrt_offload_wait(int64_t transfer, const void *device, void *stream);
void tsrt_prefetch_start(int64_t transfer, void *device, int64_t bytes,
                         void *stream);
void tsrt_prefetch_wait(int64_t transfer, void *device, void *stream);
#endif

enum { kBatch = 4, kFeatures = 2 };

void tessera_entry(void **args) {
  const float *w = (const float *)args[0];
  const float *b = (const float *)args[1];
  const float *lr = (const float *)args[2];
  const int64_t *step = (const int64_t *)args[3];
  const float *x = (const float *)args[4];
  const float *y = (const float *)args[5];
  float *loss = (float *)args[6];
  float *wNext = (float *)args[7];
  float *bNext = (float *)args[8];
  int64_t *stepNext = (int64_t *)args[9];
  float *prediction = (float *)args[10];

  float *residual =
      (float *)_mlir_memref_to_llvm_aligned_alloc(64, kBatch * sizeof(float));
  float *grad =
      (float *)_mlir_memref_to_llvm_alloc((kFeatures + 1) * sizeof(float));
  float sum = 0;
  for (int f = 0; f <= kFeatures; ++f)
    grad[f] = 0;
  for (int i = 0; i < kBatch; ++i) {
    float p = *b;
    for (int f = 0; f < kFeatures; ++f)
      p += w[f] * x[i * kFeatures + f];
    prediction[i] = p;
    residual[i] = p - y[i];
    sum += residual[i] * residual[i];
  }
  *loss = sum / kBatch;
#ifdef TSR_TEST_OFFLOAD
  /* The residuals go to host memory, their buffer is freed, and they come
   * back into a new one before the backward loop reads them. */
  tsrt_offload_start(0, residual, kBatch * sizeof(float), NULL);
  tsrt_offload_wait(0, residual, NULL);
  _mlir_memref_to_llvm_free(residual);
  residual =
      (float *)_mlir_memref_to_llvm_aligned_alloc(64, kBatch * sizeof(float));
  tsrt_prefetch_start(0, residual, kBatch * sizeof(float), NULL);
  tsrt_prefetch_wait(0, residual, NULL);
#endif
  for (int i = 0; i < kBatch; ++i) {
    float scale = 2 * residual[i] / kBatch;
    for (int f = 0; f < kFeatures; ++f)
      grad[f] += scale * x[i * kFeatures + f];
    grad[kFeatures] += scale;
  }
  for (int f = 0; f < kFeatures; ++f)
    wNext[f] = w[f] - *lr * grad[f];
  *bNext = *b - *lr * grad[kFeatures];
  *stepNext = *step + 1;
  _mlir_memref_to_llvm_free(grad);
  _mlir_memref_to_llvm_free(residual);
}
