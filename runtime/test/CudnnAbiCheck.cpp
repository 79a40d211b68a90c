//===- CudnnAbiCheck.cpp - GpuAttention.h against cuDNN's cudnn_graph.h ---===//
//
// Compiled (never run) where cuDNN is installed: the build fails if an
// enumerator that runtime/lib/GpuAttention.h writes out differs from
// cuDNN's own header.
//
//===----------------------------------------------------------------------===//
#include "GpuAttention.h"

#include <cudnn_graph.h>

using namespace tsr::cudnn;

static_assert(CUDNN_MAJOR == 9, "GpuAttention.cpp binds cuDNN 9");
static_assert(kSuccess == CUDNN_STATUS_SUCCESS);
static_assert(kFloat == CUDNN_DATA_FLOAT && kHalf == CUDNN_DATA_HALF &&
              kInt32 == CUDNN_DATA_INT32 && kBfloat16 == CUDNN_DATA_BFLOAT16 &&
              kBoolean == CUDNN_DATA_BOOLEAN);
static_assert(kAdd == CUDNN_POINTWISE_ADD && kMul == CUDNN_POINTWISE_MUL &&
              kDiv == CUDNN_POINTWISE_DIV && kSub == CUDNN_POINTWISE_SUB &&
              kExp == CUDNN_POINTWISE_EXP && kLog == CUDNN_POINTWISE_LOG &&
              kIdentity == CUDNN_POINTWISE_IDENTITY &&
              kCmpGe == CUDNN_POINTWISE_CMP_GE &&
              kGenIndex == CUDNN_POINTWISE_GEN_INDEX &&
              kBinarySelect == CUDNN_POINTWISE_BINARY_SELECT);
static_assert(kReduceAdd == CUDNN_REDUCE_TENSOR_ADD &&
              kReduceMax == CUDNN_REDUCE_TENSOR_MAX);
static_assert(kHeurModeA == CUDNN_HEUR_MODE_A);
static_assert(kTypeHandle == CUDNN_TYPE_HANDLE &&
              kTypeDataType == CUDNN_TYPE_DATA_TYPE &&
              kTypeBoolean == CUDNN_TYPE_BOOLEAN &&
              kTypeInt64 == CUDNN_TYPE_INT64 &&
              kTypeFloat == CUDNN_TYPE_FLOAT &&
              kTypeVoidPtr == CUDNN_TYPE_VOID_PTR &&
              kTypeHeurMode == CUDNN_TYPE_HEUR_MODE &&
              kTypePointwiseMode == CUDNN_TYPE_POINTWISE_MODE &&
              kTypeDescriptor == CUDNN_TYPE_BACKEND_DESCRIPTOR &&
              kTypeReductionOperator == CUDNN_TYPE_REDUCTION_OPERATOR_TYPE);
static_assert(
    kPointwiseDescriptor == CUDNN_BACKEND_POINTWISE_DESCRIPTOR &&
    kEngineConfigDescriptor == CUDNN_BACKEND_ENGINECFG_DESCRIPTOR &&
    kEngineHeurDescriptor == CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR &&
    kExecutionPlanDescriptor == CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR &&
    kOperationPointwiseDescriptor ==
        CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR &&
    kOperationGraphDescriptor == CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR &&
    kVariantPackDescriptor == CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR &&
    kTensorDescriptor == CUDNN_BACKEND_TENSOR_DESCRIPTOR &&
    kMatmulDescriptor == CUDNN_BACKEND_MATMUL_DESCRIPTOR &&
    kOperationMatmulDescriptor == CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR &&
    kReductionDescriptor == CUDNN_BACKEND_REDUCTION_DESCRIPTOR &&
    kOperationReductionDescriptor ==
        CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR &&
    kOperationReshapeDescriptor == CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR);
static_assert(kPointwiseMode == CUDNN_ATTR_POINTWISE_MODE &&
              kPointwiseMathPrec == CUDNN_ATTR_POINTWISE_MATH_PREC &&
              kPointwiseAxis == CUDNN_ATTR_POINTWISE_AXIS);
static_assert(kEngineHeurMode == CUDNN_ATTR_ENGINEHEUR_MODE &&
              kEngineHeurOperationGraph ==
                  CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH &&
              kEngineHeurResults == CUDNN_ATTR_ENGINEHEUR_RESULTS);
static_assert(kPlanHandle == CUDNN_ATTR_EXECUTION_PLAN_HANDLE &&
              kPlanEngineConfig == CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG &&
              kPlanWorkspaceSize == CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE);
static_assert(kPointwiseOpDescriptor ==
                  CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR &&
              kPointwiseOpX == CUDNN_ATTR_OPERATION_POINTWISE_XDESC &&
              kPointwiseOpB == CUDNN_ATTR_OPERATION_POINTWISE_BDESC &&
              kPointwiseOpY == CUDNN_ATTR_OPERATION_POINTWISE_YDESC &&
              kPointwiseOpT == CUDNN_ATTR_OPERATION_POINTWISE_TDESC);
static_assert(kGraphHandle == CUDNN_ATTR_OPERATIONGRAPH_HANDLE &&
              kGraphOps == CUDNN_ATTR_OPERATIONGRAPH_OPS);
static_assert(kTensorByteAlignment == CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT &&
              kTensorDataType == CUDNN_ATTR_TENSOR_DATA_TYPE &&
              kTensorDimensions == CUDNN_ATTR_TENSOR_DIMENSIONS &&
              kTensorStrides == CUDNN_ATTR_TENSOR_STRIDES &&
              kTensorUniqueId == CUDNN_ATTR_TENSOR_UNIQUE_ID &&
              kTensorIsVirtual == CUDNN_ATTR_TENSOR_IS_VIRTUAL &&
              kTensorIsByValue == CUDNN_ATTR_TENSOR_IS_BY_VALUE);
static_assert(kVariantPackUniqueIds == CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS &&
              kVariantPackDataPointers ==
                  CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS &&
              kVariantPackWorkspace == CUDNN_ATTR_VARIANT_PACK_WORKSPACE);
static_assert(kMatmulCompType == CUDNN_ATTR_MATMUL_COMP_TYPE &&
              kMatmulOpA == CUDNN_ATTR_OPERATION_MATMUL_ADESC &&
              kMatmulOpB == CUDNN_ATTR_OPERATION_MATMUL_BDESC &&
              kMatmulOpC == CUDNN_ATTR_OPERATION_MATMUL_CDESC &&
              kMatmulOpDescriptor == CUDNN_ATTR_OPERATION_MATMUL_DESC);
static_assert(kReductionOperator == CUDNN_ATTR_REDUCTION_OPERATOR &&
              kReductionCompType == CUDNN_ATTR_REDUCTION_COMP_TYPE &&
              kReductionOpX == CUDNN_ATTR_OPERATION_REDUCTION_XDESC &&
              kReductionOpY == CUDNN_ATTR_OPERATION_REDUCTION_YDESC &&
              kReductionOpDescriptor == CUDNN_ATTR_OPERATION_REDUCTION_DESC);
static_assert(kReshapeOpX == CUDNN_ATTR_OPERATION_RESHAPE_XDESC &&
              kReshapeOpY == CUDNN_ATTR_OPERATION_RESHAPE_YDESC);
// The backend's C types the bound entry points use.
static_assert(sizeof(cudnnBackendDescriptor_t) == sizeof(void *) &&
              sizeof(cudnnHandle_t) == sizeof(void *));
static_assert(sizeof(cudnnStatus_t) == sizeof(int) &&
              sizeof(cudnnBackendAttributeName_t) == sizeof(int) &&
              sizeof(cudnnBackendAttributeType_t) == sizeof(int) &&
              sizeof(cudnnBackendDescriptorType_t) == sizeof(int));
static_assert(sizeof(cudnnDataType_t) == sizeof(int) &&
              sizeof(cudnnPointwiseMode_t) == sizeof(int) &&
              sizeof(cudnnReduceTensorOp_t) == sizeof(int) &&
              sizeof(cudnnBackendHeurMode_t) == sizeof(int));
static_assert(sizeof(bool) == 1, "CUDNN_TYPE_BOOLEAN is a C bool");
