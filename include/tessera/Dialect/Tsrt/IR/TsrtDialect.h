//===- TsrtDialect.h - The tsrt dialect -------------------------*- C++ -*-===//
#ifndef TESSERA_DIALECT_TSRT_IR_TSRTDIALECT_H
#define TESSERA_DIALECT_TSRT_IR_TSRTDIALECT_H

#include "mlir/IR/Dialect.h"

#include "tessera/Dialect/Tsrt/IR/TsrtDialect.h.inc"

#endif // TESSERA_DIALECT_TSRT_IR_TSRTDIALECT_H
