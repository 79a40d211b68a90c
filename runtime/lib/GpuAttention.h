//===- GpuAttention.h - The parts of cuDNN's ABI the runtime uses -*- C++ -*-=//
//
// cuDNN's backend enumerators and attribute names as cudnn_graph.h (cuDNN
// 9) declares them, so that GpuAttention.cpp builds without cuDNN;
// runtime/test/CudnnAbiCheck.cpp checks every one against the header where
// cuDNN is installed.
//
//===----------------------------------------------------------------------===//
#ifndef TESSERA_RUNTIME_LIB_GPUATTENTION_H
#define TESSERA_RUNTIME_LIB_GPUATTENTION_H

#include <cstdint>

namespace tsr::cudnn {

/// cudnnStatus_t.
enum : int {
  kSuccess = 0, // CUDNN_STATUS_SUCCESS
};

/// cudnnDataType_t.
enum : int {
  kFloat = 0,    // CUDNN_DATA_FLOAT
  kHalf = 2,     // CUDNN_DATA_HALF
  kInt32 = 4,    // CUDNN_DATA_INT32
  kBfloat16 = 9, // CUDNN_DATA_BFLOAT16
  kBoolean = 11, // CUDNN_DATA_BOOLEAN
};

/// cudnnPointwiseMode_t.
enum : int {
  kAdd = 0,            // CUDNN_POINTWISE_ADD
  kMul = 1,            // CUDNN_POINTWISE_MUL
  kDiv = 6,            // CUDNN_POINTWISE_DIV
  kSub = 9,            // CUDNN_POINTWISE_SUB
  kExp = 13,           // CUDNN_POINTWISE_EXP
  kLog = 15,           // CUDNN_POINTWISE_LOG
  kIdentity = 21,      // CUDNN_POINTWISE_IDENTITY
  kCmpGe = 303,        // CUDNN_POINTWISE_CMP_GE
  kGenIndex = 501,     // CUDNN_POINTWISE_GEN_INDEX
  kBinarySelect = 601, // CUDNN_POINTWISE_BINARY_SELECT
};

/// cudnnReduceTensorOp_t, cudnnBackendHeurMode_t.
enum : int {
  kReduceAdd = 0, // CUDNN_REDUCE_TENSOR_ADD
  kReduceMax = 3, // CUDNN_REDUCE_TENSOR_MAX
  kHeurModeA = 3, // CUDNN_HEUR_MODE_A
};

/// cudnnBackendAttributeType_t.
enum : int {
  kTypeHandle = 0,             // CUDNN_TYPE_HANDLE
  kTypeDataType = 1,           // CUDNN_TYPE_DATA_TYPE
  kTypeBoolean = 2,            // CUDNN_TYPE_BOOLEAN
  kTypeInt64 = 3,              // CUDNN_TYPE_INT64
  kTypeFloat = 4,              // CUDNN_TYPE_FLOAT
  kTypeVoidPtr = 6,            // CUDNN_TYPE_VOID_PTR
  kTypeHeurMode = 8,           // CUDNN_TYPE_HEUR_MODE
  kTypePointwiseMode = 14,     // CUDNN_TYPE_POINTWISE_MODE
  kTypeDescriptor = 15,        // CUDNN_TYPE_BACKEND_DESCRIPTOR
  kTypeReductionOperator = 18, // CUDNN_TYPE_REDUCTION_OPERATOR_TYPE
};

/// cudnnBackendDescriptorType_t.
enum : int {
  kPointwiseDescriptor = 0,           // CUDNN_BACKEND_POINTWISE_DESCRIPTOR
  kEngineConfigDescriptor = 3,        // CUDNN_BACKEND_ENGINECFG_DESCRIPTOR
  kEngineHeurDescriptor = 4,          // CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR
  kExecutionPlanDescriptor = 5,       // CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR
  kOperationPointwiseDescriptor = 13, // ..._OPERATION_POINTWISE_DESCRIPTOR
  kOperationGraphDescriptor = 15,     // CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR
  kVariantPackDescriptor = 16,        // CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR
  kTensorDescriptor = 17,             // CUDNN_BACKEND_TENSOR_DESCRIPTOR
  kMatmulDescriptor = 18,             // CUDNN_BACKEND_MATMUL_DESCRIPTOR
  kOperationMatmulDescriptor = 19,    // ..._OPERATION_MATMUL_DESCRIPTOR
  kReductionDescriptor = 21,          // CUDNN_BACKEND_REDUCTION_DESCRIPTOR
  kOperationReductionDescriptor = 22, // ..._OPERATION_REDUCTION_DESCRIPTOR
  kOperationReshapeDescriptor = 31,   // ..._OPERATION_RESHAPE_DESCRIPTOR
};

/// cudnnBackendAttributeName_t.
enum : int {
  kPointwiseMode = 0,              // CUDNN_ATTR_POINTWISE_MODE
  kPointwiseMathPrec = 1,          // CUDNN_ATTR_POINTWISE_MATH_PREC
  kPointwiseAxis = 9,              // CUDNN_ATTR_POINTWISE_AXIS
  kEngineHeurMode = 200,           // CUDNN_ATTR_ENGINEHEUR_MODE
  kEngineHeurOperationGraph = 201, // CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH
  kEngineHeurResults = 202,        // CUDNN_ATTR_ENGINEHEUR_RESULTS
  kPlanHandle = 400,               // CUDNN_ATTR_EXECUTION_PLAN_HANDLE
  kPlanEngineConfig = 401,         // CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG
  kPlanWorkspaceSize = 402,        // CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE
  kPointwiseOpDescriptor = 750, // CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR
  kPointwiseOpX = 751,          // CUDNN_ATTR_OPERATION_POINTWISE_XDESC
  kPointwiseOpB = 752,          // CUDNN_ATTR_OPERATION_POINTWISE_BDESC
  kPointwiseOpY = 753,          // CUDNN_ATTR_OPERATION_POINTWISE_YDESC
  kPointwiseOpT = 758,          // CUDNN_ATTR_OPERATION_POINTWISE_TDESC
  kGraphHandle = 800,           // CUDNN_ATTR_OPERATIONGRAPH_HANDLE
  kGraphOps = 801,              // CUDNN_ATTR_OPERATIONGRAPH_OPS
  kTensorByteAlignment = 900,   // CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT
  kTensorDataType = 901,        // CUDNN_ATTR_TENSOR_DATA_TYPE
  kTensorDimensions = 902,      // CUDNN_ATTR_TENSOR_DIMENSIONS
  kTensorStrides = 903,         // CUDNN_ATTR_TENSOR_STRIDES
  kTensorUniqueId = 906,        // CUDNN_ATTR_TENSOR_UNIQUE_ID
  kTensorIsVirtual = 907,       // CUDNN_ATTR_TENSOR_IS_VIRTUAL
  kTensorIsByValue = 908,       // CUDNN_ATTR_TENSOR_IS_BY_VALUE
  kVariantPackUniqueIds = 1000, // CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS
  kVariantPackDataPointers = 1001, // CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS
  kVariantPackWorkspace = 1003,    // CUDNN_ATTR_VARIANT_PACK_WORKSPACE
  kMatmulCompType = 1500,          // CUDNN_ATTR_MATMUL_COMP_TYPE
  kMatmulOpA = 1520,               // CUDNN_ATTR_OPERATION_MATMUL_ADESC
  kMatmulOpB = 1521,               // CUDNN_ATTR_OPERATION_MATMUL_BDESC
  kMatmulOpC = 1522,               // CUDNN_ATTR_OPERATION_MATMUL_CDESC
  kMatmulOpDescriptor = 1523,      // CUDNN_ATTR_OPERATION_MATMUL_DESC
  kReductionOperator = 1600,       // CUDNN_ATTR_REDUCTION_OPERATOR
  kReductionCompType = 1601,       // CUDNN_ATTR_REDUCTION_COMP_TYPE
  kReductionOpX = 1610,            // CUDNN_ATTR_OPERATION_REDUCTION_XDESC
  kReductionOpY = 1611,            // CUDNN_ATTR_OPERATION_REDUCTION_YDESC
  kReductionOpDescriptor = 1612,   // CUDNN_ATTR_OPERATION_REDUCTION_DESC
  kReshapeOpX = 2200,              // CUDNN_ATTR_OPERATION_RESHAPE_XDESC
  kReshapeOpY = 2201,              // CUDNN_ATTR_OPERATION_RESHAPE_YDESC
};

/// The uids of the graphs' non-virtual tensors (the variant pack's keys);
/// virtual tensors are numbered from kFirstVirtual.
enum : int64_t {
  kUidQ = 1,
  kUidK = 2,
  kUidV = 3,
  kUidO = 4,
  kUidStats = 5,
  kUidScale = 6,
  kUidBias = 7,
  kUidNegativeInfinity = 8,
  kUidDO = 9,
  kUidDQ = 10,
  kUidDK = 11,
  kUidDV = 12,
  kUidSoftmaxSum = 13,
  kUidDQAccumulator = 14,
  kUidOne = 15,
  kFirstVirtual = 100,
};

} // namespace tsr::cudnn

#endif // TESSERA_RUNTIME_LIB_GPUATTENTION_H
