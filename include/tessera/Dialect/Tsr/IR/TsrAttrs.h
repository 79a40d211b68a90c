//===- TsrAttrs.h - Attributes and enums of tsr -----------------*- C++ -*-===//
#ifndef TESSERA_DIALECT_TSR_IR_TSRATTRS_H
#define TESSERA_DIALECT_TSR_IR_TSRATTRS_H

#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectImplementation.h"

#include "tessera/Dialect/Tsr/IR/TsrEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "tessera/Dialect/Tsr/IR/TsrAttrs.h.inc"

#endif // TESSERA_DIALECT_TSR_IR_TSRATTRS_H
