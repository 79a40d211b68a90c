//===- TsrtOps.h - Operations of the tsrt dialect ---------------*- C++ -*-===//
#ifndef TESSERA_DIALECT_TSRT_IR_TSRTOPS_H
#define TESSERA_DIALECT_TSRT_IR_TSRTOPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/DestinationStyleOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "tessera/Dialect/Tsrt/IR/TsrtDialect.h"

#include "tessera/Dialect/Tsrt/IR/TsrtEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "tessera/Dialect/Tsrt/IR/TsrtAttrs.h.inc"

namespace mlir::tsrt {
/// The communication every collective takes part in: each collective writes
/// it, so that no pass removes, merges or reorders collectives, which every
/// rank must issue in the same order.
struct CommunicatorResource
    : public SideEffects::Resource::Base<CommunicatorResource> {
  StringRef getName() final { return "tsrt::Communicator"; }
};

/// Whether `dtype` can describe buffers of `elementType`: the same kind
/// (float or integer) and width; an integer dtype fits a signless integer
/// of its width or one of its own signedness.
bool isCompatibleDType(DType dtype, Type elementType);
} // namespace mlir::tsrt

MLIR_DECLARE_EXPLICIT_TYPE_ID(mlir::tsrt::CommunicatorResource)

#define GET_OP_CLASSES
#include "tessera/Dialect/Tsrt/IR/TsrtOps.h.inc"

#endif // TESSERA_DIALECT_TSRT_IR_TSRTOPS_H
