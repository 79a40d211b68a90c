//===- TsrOps.h - Operations of the tsr dialect -----------------*- C++ -*-===//
#ifndef TESSERA_DIALECT_TSR_IR_TSROPS_H
#define TESSERA_DIALECT_TSR_IR_TSROPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "tessera/Dialect/Tsr/IR/TsrAttrNames.h"
#include "tessera/Dialect/Tsr/IR/TsrAttrs.h"
#include "tessera/Dialect/Tsr/IR/TsrDialect.h"
#include "tessera/Dialect/Tsr/IR/TsrInterfaces.h"

namespace mlir::tsr {
/// The runtime's copy queue and host blocks, which the transfer ops
/// (tsr.offload_start and the rest) read and write: they keep their order
/// and are never erased as unused.
struct TransferResource : public SideEffects::Resource::Base<TransferResource> {
  StringRef getName() final { return "tsr::Transfer"; }
};
} // namespace mlir::tsr

#define GET_OP_CLASSES
#include "tessera/Dialect/Tsr/IR/TsrOps.h.inc"

namespace mlir::tsr {
/// The numpy broadcast of two static shapes, or failure if incompatible.
FailureOr<SmallVector<int64_t>> broadcastShapes(ArrayRef<int64_t> a,
                                                ArrayRef<int64_t> b);
/// Output length of a sliding window (convolution or pooling) along one axis.
int64_t windowOutputSize(int64_t in, int64_t kernel, int64_t stride,
                         int64_t padBegin, int64_t padEnd, int64_t dilation,
                         bool ceilMode);
/// Parsed einsum equation: one label string per operand plus the output.
struct EinsumSpec {
  SmallVector<std::string> inputs;
  std::string output;
};
FailureOr<EinsumSpec> parseEinsum(StringRef equation, unsigned numInputs);
/// The bytes of a statically shaped tensor (elements times the element
/// width rounded up to whole bytes); 0 for anything else.
int64_t getStaticTensorBytes(Type type);
/// The mesh declared by the nearest enclosing `tsr.mesh` attribute; emits an
/// error on `op` and fails if there is none.
FailureOr<MeshAttr> getEnclosingMesh(Operation *op);
/// The number of ranks in the group of mesh axes `axes` (the product of
/// their sizes); emits an error on `op` and fails unless every axis is
/// declared by the enclosing mesh, once, in the mesh's order.
FailureOr<int64_t> getMeshGroupSize(Operation *op, ArrayRef<StringRef> axes);
/// The same for a `mesh_axes`-style array of axis names.
FailureOr<int64_t> getMeshGroupSize(Operation *op, ArrayAttr axes);
/// The name of the model node an op comes from: the name of its location
/// (the importer's NameLoc), looking inside fused and call-site locations;
/// empty if it has none.
std::string getNodeName(Location loc);
/// Checks `sharding` against a value of `type` inside `op` (`what` names the
/// value in errors): one entry per dimension, axes of the enclosing mesh,
/// every split dimension divisible into equal blocks.
LogicalResult verifySharding(Operation *op, Type type, ShardingAttr sharding,
                             const Twine &what);
} // namespace mlir::tsr

#endif // TESSERA_DIALECT_TSR_IR_TSROPS_H
