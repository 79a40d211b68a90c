//===- OnnxDialect.h - Generic ONNX nodes -----------------------*- C++ -*-===//
#ifndef TESSERA_DIALECT_ONNX_IR_ONNXDIALECT_H
#define TESSERA_DIALECT_ONNX_IR_ONNXDIALECT_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "tessera/Dialect/Onnx/IR/OnnxDialect.h.inc"

#define GET_OP_CLASSES
#include "tessera/Dialect/Onnx/IR/OnnxOps.h.inc"

#endif // TESSERA_DIALECT_ONNX_IR_ONNXDIALECT_H
