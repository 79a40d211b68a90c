//===- HandlerUtils.h - Shorthands shared by the handler files --*- C++ -*-===//
#ifndef TESSERA_LIB_IMPORT_ONNX_HANDLERUTILS_H
#define TESSERA_LIB_IMPORT_ONNX_HANDLERUTILS_H

#include "tessera/Dialect/Tsr/IR/TsrOps.h"
#include "tessera/Import/ONNX/Legalize.h"

/// Binds `var` to the value of a FailureOr expression or returns failure.
#define TRY(var, expr)                                                         \
  auto var##OrFail = (expr);                                                   \
  if (failed(var##OrFail))                                                     \
    return failure();                                                          \
  auto var = *var##OrFail;

namespace mlir::tessera::onnx_import {

inline RankedTensorType tensorType(Value v) {
  return llvm::cast<RankedTensorType>(v.getType());
}

/// A scalar constant of `like`'s element type.
inline Value scalarLike(NodeContext &n, Value like, double v) {
  return n.scalar(tensorType(like).getElementType(), v);
}

} // namespace mlir::tessera::onnx_import

#endif // TESSERA_LIB_IMPORT_ONNX_HANDLERUTILS_H
