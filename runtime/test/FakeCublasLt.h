/* What FakeCublasLt.c records, shared with the tests that read it
 * (GpuGemmTest.cpp): a matrix layout as cublasLtMatrixLayoutCreate and
 * its attributes set it, and what the last cublasLtMatmul saw. */
#ifndef TESSERA_RUNTIME_TEST_FAKECUBLASLT_H
#define TESSERA_RUNTIME_TEST_FAKECUBLASLT_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
  int type;
  uint64_t rows, cols;
  int64_t ld, stride;
  int32_t batch;
} FakeLayout;

typedef struct {
  int calls;
  FakeLayout a, b, c, d;
  float alpha, beta;
  size_t workspaceBytes;
  uint64_t maxWorkspace;
  int compute, scale;
  void *stream;
  int32_t transA, transB;
  uint32_t epilogue; /* CUBLASLT_EPILOGUE_*, 1 (default) when never set */
  float *bias;
  /* CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER and _AUX_LD (in bits for a
   * ReLU mask). */
  void *aux;
  int64_t auxLd;
} FakeRecord;

#endif /* TESSERA_RUNTIME_TEST_FAKECUBLASLT_H */
