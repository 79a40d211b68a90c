//===- GpuGemm.h - The parts of cuBLASLt's ABI the runtime uses -*- C++ -*-===//
//
// cuBLASLt's types and enumerators as cublasLt.h (CUDA 12 and 13) declares
// them, so that GpuGemm.cpp builds without the toolkit;
// runtime/test/CublasLtAbiCheck.cpp checks every one against the header
// where the toolkit is installed.
//
//===----------------------------------------------------------------------===//
#ifndef TESSERA_RUNTIME_LIB_GPUGEMM_H
#define TESSERA_RUNTIME_LIB_GPUGEMM_H

#include <cstddef>
#include <cstdint>

namespace tsr::cublaslt {

/// cublasLtMatmulAlgo_t.
struct Algo {
  uint64_t data[8];
};

/// cublasLtMatmulHeuristicResult_t.
struct HeuristicResult {
  Algo algo;
  size_t workspaceSize;
  int state;
  float wavesCount;
  int reserved[4];
};

enum : int {
  kSuccess = 0,                  // CUBLAS_STATUS_SUCCESS
  kF32 = 0,                      // CUDA_R_32F
  kF16 = 2,                      // CUDA_R_16F
  kBf16 = 14,                    // CUDA_R_16BF
  kComputeF32 = 68,              // CUBLAS_COMPUTE_32F
  kLayoutBatchCount = 5,         // CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT
  kLayoutStridedBatchOffset = 6, // CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET
  kPrefMaxWorkspaceBytes = 1,    // CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES
  kDescTransA = 3,               // CUBLASLT_MATMUL_DESC_TRANSA
  kDescTransB = 4,               // CUBLASLT_MATMUL_DESC_TRANSB
  kDescEpilogue = 7,             // CUBLASLT_MATMUL_DESC_EPILOGUE
  kDescBiasPointer = 8,          // CUBLASLT_MATMUL_DESC_BIAS_POINTER
  kDescAuxPointer = 11,          // CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER
  kDescAuxLd = 12,               // CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD
  kOpT = 1,                      // CUBLAS_OP_T
  kEpilogueDefault = 1,          // CUBLASLT_EPILOGUE_DEFAULT
  kEpilogueRelu = 2,             // CUBLASLT_EPILOGUE_RELU
  kEpilogueBias = 4,             // CUBLASLT_EPILOGUE_BIAS
  kEpilogueReluBias = 6,         // CUBLASLT_EPILOGUE_RELU_BIAS
  kEpilogueReluAux = 130,        // CUBLASLT_EPILOGUE_RELU_AUX
  kEpilogueReluAuxBias = 134,    // CUBLASLT_EPILOGUE_RELU_AUX_BIAS
  kEpilogueDrelu = 136,          // CUBLASLT_EPILOGUE_DRELU
  kEpilogueGelu = 32,            // CUBLASLT_EPILOGUE_GELU
  kEpilogueGeluBias = 36,        // CUBLASLT_EPILOGUE_GELU_BIAS
  kEpilogueGeluAux = 160,        // CUBLASLT_EPILOGUE_GELU_AUX
  kEpilogueGeluAuxBias = 164,    // CUBLASLT_EPILOGUE_GELU_AUX_BIAS
  kEpilogueDgelu = 192,          // CUBLASLT_EPILOGUE_DGELU
  kEpilogueBgradA = 256,         // CUBLASLT_EPILOGUE_BGRADA
  kEpilogueBgradB = 512,         // CUBLASLT_EPILOGUE_BGRADB
};

/// The workspace offered to cuBLASLt's kernels: 32 MiB, what NVIDIA's
/// cuBLAS documentation recommends for Hopper.
constexpr size_t kWorkspaceBytes = size_t(32) << 20;

} // namespace tsr::cublaslt

#endif // TESSERA_RUNTIME_LIB_GPUGEMM_H
