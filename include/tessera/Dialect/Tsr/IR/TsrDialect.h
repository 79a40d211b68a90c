//===- TsrDialect.h - The tsr dialect ---------------------------*- C++ -*-===//
#ifndef TESSERA_DIALECT_TSR_IR_TSRDIALECT_H
#define TESSERA_DIALECT_TSR_IR_TSRDIALECT_H

#include "mlir/IR/Dialect.h"

#include "tessera/Dialect/Tsr/IR/TsrDialect.h.inc"

#endif // TESSERA_DIALECT_TSR_IR_TSRDIALECT_H
