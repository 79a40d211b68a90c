//===- TsrInterfaces.h - Interfaces of tsr ops ------------------*- C++ -*-===//
#ifndef TESSERA_DIALECT_TSR_IR_TSRINTERFACES_H
#define TESSERA_DIALECT_TSR_IR_TSRINTERFACES_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/TypeUtilities.h"

namespace mlir::tsr::detail {
/// One operation per result element.
int64_t defaultFlops(Operation *op);
/// Every operand read once, every result written once.
int64_t defaultBytesAccessed(Operation *op);
} // namespace mlir::tsr::detail

#include "tessera/Dialect/Tsr/IR/TsrInterfaces.h.inc"

#endif // TESSERA_DIALECT_TSR_IR_TSRINTERFACES_H
