//===- TsrDialect.cpp - The tsr dialect -----------------------------------===//
#include "tessera/Dialect/Tsr/IR/TsrDialect.h"
#include "tessera/Dialect/Tsr/IR/TsrOps.h"

using namespace mlir;
using namespace mlir::tsr;

#include "tessera/Dialect/Tsr/IR/TsrDialect.cpp.inc"
#include "tessera/Dialect/Tsr/IR/TsrInterfaces.cpp.inc"

void TsrDialect::initialize() {
  registerAttributes();
  addOperations<
#define GET_OP_LIST
#include "tessera/Dialect/Tsr/IR/TsrOps.cpp.inc"
      >();
}

Operation *TsrDialect::materializeConstant(OpBuilder &builder, Attribute value,
                                           Type type, Location loc) {
  auto elements = dyn_cast<ElementsAttr>(value);
  if (!elements || elements.getType() != type)
    return nullptr;
  return ConstantOp::create(builder, loc, elements);
}

int64_t mlir::tsr::getStaticTensorBytes(Type type) {
  auto shaped = dyn_cast<ShapedType>(type);
  if (!shaped || !shaped.hasStaticShape())
    return 0;
  int64_t bits = shaped.getElementTypeBitWidth();
  return shaped.getNumElements() * ((bits + 7) / 8);
}

int64_t mlir::tsr::detail::defaultFlops(Operation *op) {
  int64_t flops = 0;
  for (Type t : op->getResultTypes())
    if (auto shaped = dyn_cast<ShapedType>(t);
        shaped && shaped.hasStaticShape())
      flops += shaped.getNumElements();
  return flops;
}

int64_t mlir::tsr::detail::defaultBytesAccessed(Operation *op) {
  int64_t bytes = 0;
  for (Type t : op->getOperandTypes())
    bytes += getStaticTensorBytes(t);
  for (Type t : op->getResultTypes())
    bytes += getStaticTensorBytes(t);
  return bytes;
}
