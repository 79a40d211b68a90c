/* A stand-in for cuBLASLt, built as libcublasLt.so.13, for testing the
 * runtime's GEMM plans (runtime/lib/GpuGemm.cpp) on machines without a GPU.
 * It defines the entry points GpuGemm.cpp resolves, with their C
 * signatures, records every descriptor and call, and computes the product
 * on the host, in column-major order as cuBLASLt does: with FakeCudart.c,
 * whose "device" memory is host memory, a test can check both the call plan
 * (layouts, batch strides, beta, workspace) and that it multiplies the
 * row-major matrices the compiled program meant. Only what GpuGemm.cpp sets
 * is supported; anything else fails with CUBLAS_STATUS_NOT_SUPPORTED (15).
 *
 * The ReLU mask of the AUX epilogues is cuBLASLt's private format, which
 * only cuBLASLt reads back (DRELU): here bit i % 8 of byte
 * (j * ld + i) / 8 says whether element (i, j) of D was positive before the
 * ReLU, ld (in bits) a multiple of 128 no less than D's rows, as cuBLASLt
 * requires of CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD. GELU's input (GELU_AUX,
 * GELU_AUX_BIAS, read by DGELU) is D's type: element (i, j) at j * ld + i,
 * ld (in elements) a multiple of 8 no less than D's rows. */
#include "FakeCublasLt.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { kSuccess = 0, kInvalidValue = 7, kNotSupported = 15 };
enum { kF32 = 0, kF16 = 2, kBf16 = 14 };

typedef FakeLayout Layout;

typedef struct {
  int compute, scale;
  int32_t transA, transB;
  uint32_t epilogue;
  float *bias;
  void *aux;
  int64_t auxLd;
} Desc;

/* What the last cublasLtMatmul saw, for the tests (fakeCublasLtLast). */
typedef FakeRecord Record;

static Record last;
static int handles, heuristics, destroyed;
static uint64_t maxWorkspace;

/* When set, the heuristic finds no algorithm with a BGRAD epilogue, as
 * cuBLASLt may for some shapes and types. */
static int refuseBiasGradients;

const Record *fakeCublasLtLast(void) { return &last; }
void fakeCublasLtRefuseBiasGradients(int refuse) {
  refuseBiasGradients = refuse;
}
int fakeCublasLtHeuristics(void) { return heuristics; }
int fakeCublasLtDestroyed(void) { return destroyed; }

int cublasLtCreate(void **handle) {
  *handle = &handles;
  ++handles;
  return kSuccess;
}

const char *cublasLtGetStatusString(int status) {
  return status == kNotSupported ? "CUBLAS_STATUS_NOT_SUPPORTED"
                                 : "CUBLAS_STATUS_INVALID_VALUE";
}

int cublasLtMatmulDescCreate(void **desc, int compute, int scale) {
  Desc *d = calloc(1, sizeof(Desc));
  d->compute = compute;
  d->scale = scale;
  d->epilogue = 1; /* CUBLASLT_EPILOGUE_DEFAULT */
  *desc = d;
  return kSuccess;
}

int cublasLtMatmulDescDestroy(void *desc) {
  free(desc);
  ++destroyed;
  return kSuccess;
}

/* CUBLASLT_MATMUL_DESC_TRANSA (3), TRANSB (4), EPILOGUE (7: DEFAULT 1,
 * RELU 2, BIAS 4, RELU_BIAS 6, GELU 32, GELU_BIAS 36, RELU_AUX 130,
 * RELU_AUX_BIAS 134, DRELU 136,
 * BGRADA 256, BGRADB 512), BIAS_POINTER (8), EPILOGUE_AUX_POINTER (11)
 * and EPILOGUE_AUX_LD (12) only. */
int cublasLtMatmulDescSetAttribute(void *desc, int attr, const void *buf,
                                   size_t size) {
  Desc *d = desc;
  if ((attr == 3 || attr == 4) && size == sizeof(int32_t)) {
    memcpy(attr == 3 ? &d->transA : &d->transB, buf, size);
    return kSuccess;
  }
  if (attr == 7 && size == sizeof(uint32_t)) {
    uint32_t mode;
    memcpy(&mode, buf, size);
    if (mode != 1 && mode != 2 && mode != 4 && mode != 6 && mode != 32 &&
        mode != 36 && mode != 130 && mode != 134 && mode != 136 &&
        mode != 160 && mode != 164 && mode != 192 && mode != 256 && mode != 512)
      return kNotSupported;
    d->epilogue = mode;
    return kSuccess;
  }
  if (attr == 8 && size == sizeof(void *)) {
    memcpy(&d->bias, buf, size);
    return kSuccess;
  }
  if (attr == 11 && size == sizeof(void *)) {
    memcpy(&d->aux, buf, size);
    return kSuccess;
  }
  if (attr == 12 && size == sizeof(int64_t)) {
    memcpy(&d->auxLd, buf, size);
    return kSuccess;
  }
  return kNotSupported;
}

int cublasLtMatrixLayoutCreate(void **layout, int type, uint64_t rows,
                               uint64_t cols, int64_t ld) {
  Layout *l = calloc(1, sizeof(Layout));
  l->type = type;
  l->rows = rows;
  l->cols = cols;
  l->ld = ld;
  l->batch = 1;
  *layout = l;
  return kSuccess;
}

int cublasLtMatrixLayoutDestroy(void *layout) {
  free(layout);
  ++destroyed;
  return kSuccess;
}

int cublasLtMatrixLayoutSetAttribute(void *layout, int attr, const void *buf,
                                     size_t size) {
  Layout *l = layout;
  if (attr == 5 && size == sizeof(int32_t))
    return memcpy(&l->batch, buf, size), kSuccess;
  if (attr == 6 && size == sizeof(int64_t))
    return memcpy(&l->stride, buf, size), kSuccess;
  return kInvalidValue;
}

int cublasLtMatmulPreferenceCreate(void **pref) {
  *pref = &maxWorkspace;
  return kSuccess;
}

int cublasLtMatmulPreferenceSetAttribute(void *pref, int attr, const void *buf,
                                         size_t size) {
  if (attr != 1 || size != sizeof(uint64_t))
    return kInvalidValue;
  memcpy(pref, buf, size);
  return kSuccess;
}

typedef struct {
  uint64_t data[8];
  size_t workspaceSize;
  int state;
  float wavesCount;
  int reserved[4];
} Heuristic;

/* One algorithm for every supported plan; none for a 7 x 7 x 7 product, so
 * that the tests can see the runtime report it. */
int cublasLtMatmulAlgoGetHeuristic(void *handle, void *desc, void *a, void *b,
                                   void *c, void *d, void *pref, int requested,
                                   Heuristic *results, int *returned) {
  (void)handle, (void)b, (void)c, (void)d, (void)pref;
  ++heuristics;
  Layout *la = a;
  const Desc *dd = desc;
  if (requested < 1)
    return kInvalidValue;
  memset(results, 0, sizeof(Heuristic));
  *returned = (la->rows == 7 && la->cols == 7) ||
                      (refuseBiasGradients && dd->epilogue >= 256)
                  ? 0
                  : 1;
  results[0].data[0] = 42;
  results[0].workspaceSize = 1 << 20;
  return kSuccess;
}

static float load(int type, const void *base, int64_t i) {
  if (type == kF32)
    return ((const float *)base)[i];
  uint16_t bits = ((const uint16_t *)base)[i];
  if (type == kBf16) {
    uint32_t wide = (uint32_t)bits << 16;
    float f;
    memcpy(&f, &wide, 4);
    return f;
  }
  return 0.0f; /* f16 is not exercised by the tests */
}

/* D = alpha * op(A) * op(B) + beta * C, column-major. */
int cublasLtMatmul(void *handle, void *desc, const float *alpha, const void *A,
                   const Layout *la, const void *B, const Layout *lb,
                   const float *beta, const void *C, const Layout *lc, void *D,
                   const Layout *ld, const Heuristic *algo, void *workspace,
                   size_t workspaceBytes, void *stream) {
  (void)handle, (void)workspace;
  const Desc *dd = desc;
  uint64_t rows = dd->transA ? la->cols : la->rows,
           inner = dd->transA ? la->rows : la->cols,
           innerB = dd->transB ? lb->cols : lb->rows,
           cols = dd->transB ? lb->rows : lb->cols;
  int gradA = dd->epilogue == 256, gradB = dd->epilogue == 512;
  int drelu = dd->epilogue == 136;
  int biased = !gradA && !gradB && !drelu && (dd->epilogue & 4) != 0,
      relu = !gradA && !gradB && !drelu && (dd->epilogue & 2) != 0;
  int masks = dd->epilogue == 130 || dd->epilogue == 134;
  int geluAux = dd->epilogue == 160 || dd->epilogue == 164;
  int dgelu = dd->epilogue == 192;
  int gelu = dd->epilogue == 32 || dd->epilogue == 36 || geluAux;
  if (algo->data[0] != 42 || inner != innerB || rows != lc->rows ||
      cols != lc->cols || lc->type != kF32 || C != D ||
      ((biased || gradA || gradB) && !dd->bias) ||
      ((gradA || gradB || masks || drelu) && lc->batch != 1) ||
      ((masks || drelu) &&
       (!dd->aux || dd->auxLd % 128 != 0 || dd->auxLd < (int64_t)lc->rows)) ||
      ((geluAux || dgelu) &&
       (!dd->aux || lc->batch != 1 || dd->auxLd % 8 != 0 ||
        dd->auxLd < (int64_t)lc->rows)))
    return kInvalidValue;
  ++last.calls;
  last.a = *la, last.b = *lb, last.c = *lc, last.d = *ld;
  last.alpha = *alpha, last.beta = *beta;
  last.workspaceBytes = workspaceBytes;
  last.maxWorkspace = maxWorkspace;
  last.compute = dd->compute, last.scale = dd->scale;
  last.stream = stream;
  last.transA = dd->transA, last.transB = dd->transB;
  last.epilogue = dd->epilogue, last.bias = dd->bias;
  last.aux = dd->aux, last.auxLd = dd->auxLd;
  unsigned char *mask = dd->aux;
  float *out = D;
  for (int32_t batch = 0; batch < lc->batch; ++batch)
    for (uint64_t j = 0; j < lc->cols; ++j)
      for (uint64_t i = 0; i < lc->rows; ++i) {
        float sum = 0.0f;
        for (uint64_t p = 0; p < inner; ++p) {
          int64_t ia = dd->transA ? p + i * la->ld : i + p * la->ld;
          int64_t ib = dd->transB ? j + p * lb->ld : p + j * lb->ld;
          sum += load(la->type, A, batch * la->stride + ia) *
                 load(lb->type, B, batch * lb->stride + ib);
        }
        float *slot = &out[batch * lc->stride + j * lc->ld + i];
        float value = *alpha * sum + (*beta != 0.0f ? *beta * *slot : 0.0f);
        /* The bias of D's row i (broadcast over its columns), then ReLU. */
        if (biased)
          value += dd->bias[i];
        int64_t bit = (int64_t)j * dd->auxLd + (int64_t)i;
        if (masks) {
          if (value > 0.0f)
            mask[bit / 8] |= (unsigned char)(1u << bit % 8);
          else
            mask[bit / 8] &= (unsigned char)~(1u << bit % 8);
        }
        if (drelu && !(mask[bit / 8] >> bit % 8 & 1))
          value = 0.0f;
        float *input = geluAux || dgelu ? (float *)dd->aux + bit : NULL;
        if (geluAux)
          *input = value;
        /* GELU's derivative at the input GELU_AUX wrote. */
        if (dgelu) {
          float x = *input, x2 = x * x;
          float t = tanhf(0.7978845608f * (x + 0.044715f * x2 * x));
          value *= 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) *
                                           0.7978845608f *
                                           (1.0f + 3.0f * 0.044715f * x2);
        }
        if (relu && !(value > 0.0f))
          value = 0.0f;
        /* GELU's tanh approximation, cuBLASLt's documented GELU. */
        if (gelu)
          value = 0.5f * value *
                  (1.0f + tanhf(0.7978845608f *
                                (value + 0.044715f * value * value * value)));
        *slot = value;
      }
  /* A bias gradient: the sum over k of op(A)'s rows (BGRADA, one value per
   * row of D) or of op(B)'s columns (BGRADB, one per column), in f32. */
  if (gradA)
    for (uint64_t i = 0; i < rows; ++i) {
      float sum = 0.0f;
      for (uint64_t p = 0; p < inner; ++p)
        sum += load(la->type, A, dd->transA ? p + i * la->ld : i + p * la->ld);
      dd->bias[i] = sum;
    }
  if (gradB)
    for (uint64_t j = 0; j < cols; ++j) {
      float sum = 0.0f;
      for (uint64_t p = 0; p < inner; ++p)
        sum += load(lb->type, B, dd->transB ? j + p * lb->ld : p + j * lb->ld);
      dd->bias[j] = sum;
    }
  return kSuccess;
}
