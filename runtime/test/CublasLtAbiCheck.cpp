//===- CublasLtAbiCheck.cpp - GpuGemm.h against the toolkit's cublasLt.h --===//
//
// Compiled (never run) where the CUDA toolkit is installed: the build fails
// if a type or enumerator that runtime/lib/GpuGemm.h writes out differs
// from cuBLASLt's own header.
//
//===----------------------------------------------------------------------===//
#include "GpuGemm.h"

#include <cublasLt.h>

#include <cstddef>

using namespace tsr::cublaslt;

static_assert(sizeof(Algo) == sizeof(cublasLtMatmulAlgo_t));
static_assert(sizeof(HeuristicResult) ==
              sizeof(cublasLtMatmulHeuristicResult_t));
static_assert(offsetof(HeuristicResult, workspaceSize) ==
              offsetof(cublasLtMatmulHeuristicResult_t, workspaceSize));
static_assert(offsetof(HeuristicResult, state) ==
              offsetof(cublasLtMatmulHeuristicResult_t, state));
static_assert(kSuccess == CUBLAS_STATUS_SUCCESS);
static_assert(kF32 == CUDA_R_32F && kF16 == CUDA_R_16F && kBf16 == CUDA_R_16BF);
static_assert(kComputeF32 == CUBLAS_COMPUTE_32F);
static_assert(kLayoutBatchCount == CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT);
static_assert(kLayoutStridedBatchOffset ==
              CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET);
static_assert(kPrefMaxWorkspaceBytes ==
              CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES);
static_assert(kDescTransA == CUBLASLT_MATMUL_DESC_TRANSA &&
              kDescTransB == CUBLASLT_MATMUL_DESC_TRANSB);
static_assert(kOpT == CUBLAS_OP_T);
static_assert(kDescEpilogue == CUBLASLT_MATMUL_DESC_EPILOGUE &&
              kDescBiasPointer == CUBLASLT_MATMUL_DESC_BIAS_POINTER &&
              kDescAuxPointer == CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER &&
              kDescAuxLd == CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD);
static_assert(kEpilogueDefault == CUBLASLT_EPILOGUE_DEFAULT &&
              kEpilogueRelu == CUBLASLT_EPILOGUE_RELU &&
              kEpilogueBias == CUBLASLT_EPILOGUE_BIAS &&
              kEpilogueReluBias == CUBLASLT_EPILOGUE_RELU_BIAS &&
              kEpilogueReluAux == CUBLASLT_EPILOGUE_RELU_AUX &&
              kEpilogueReluAuxBias == CUBLASLT_EPILOGUE_RELU_AUX_BIAS &&
              kEpilogueDrelu == CUBLASLT_EPILOGUE_DRELU &&
              kEpilogueGelu == CUBLASLT_EPILOGUE_GELU &&
              kEpilogueGeluBias == CUBLASLT_EPILOGUE_GELU_BIAS &&
              kEpilogueGeluAux == CUBLASLT_EPILOGUE_GELU_AUX &&
              kEpilogueGeluAuxBias == CUBLASLT_EPILOGUE_GELU_AUX_BIAS &&
              kEpilogueDgelu == CUBLASLT_EPILOGUE_DGELU &&
              kEpilogueBgradA == CUBLASLT_EPILOGUE_BGRADA &&
              kEpilogueBgradB == CUBLASLT_EPILOGUE_BGRADB);
