//===- OnnxDialect.cpp - Generic ONNX nodes -------------------------------===//
#include "tessera/Dialect/Onnx/IR/OnnxDialect.h"

using namespace mlir;
using namespace mlir::onnx_generic;

#include "tessera/Dialect/Onnx/IR/OnnxDialect.cpp.inc"

void OnnxDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "tessera/Dialect/Onnx/IR/OnnxOps.cpp.inc"
      >();
}

#define GET_OP_CLASSES
#include "tessera/Dialect/Onnx/IR/OnnxOps.cpp.inc"
