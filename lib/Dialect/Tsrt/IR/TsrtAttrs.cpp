//===- TsrtAttrs.cpp - Enum attributes of tsrt ----------------------------===//
#include "tessera/Dialect/Tsrt/IR/TsrtOps.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::tsrt;

#include "tessera/Dialect/Tsrt/IR/TsrtEnums.cpp.inc"
#define GET_ATTRDEF_CLASSES
#include "tessera/Dialect/Tsrt/IR/TsrtAttrs.cpp.inc"

void TsrtDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "tessera/Dialect/Tsrt/IR/TsrtAttrs.cpp.inc"
      >();
}
