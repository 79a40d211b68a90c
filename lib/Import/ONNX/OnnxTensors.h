//===- OnnxTensors.h - ONNX TensorProto to MLIR attributes ------*- C++ -*-===//
//
// Private to the ONNX-facing (exception-enabled) part of the importer.
//
//===----------------------------------------------------------------------===//
#ifndef TESSERA_LIB_IMPORT_ONNX_ONNXTENSORS_H
#define TESSERA_LIB_IMPORT_ONNX_ONNXTENSORS_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "onnx/onnx_pb.h"
#include <string>

namespace mlir::tessera::onnx_import {

/// The MLIR element type of an ONNX TensorProto::DataType, or null for the
/// unsupported ones (string, complex, float8, ...).
Type getElementType(MLIRContext *ctx, int32_t dataType);

/// The name of an ONNX TensorProto::DataType for diagnostics.
std::string getDataTypeName(int32_t dataType);

/// Converts a TensorProto (raw_data, typed fields or external data relative
/// to `modelDir`) to dense elements; on failure returns null and sets
/// `error`.
DenseElementsAttr convertTensor(MLIRContext *ctx,
                                const onnx::TensorProto &tensor,
                                const std::string &modelDir,
                                std::string &error);

} // namespace mlir::tessera::onnx_import

#endif // TESSERA_LIB_IMPORT_ONNX_ONNXTENSORS_H
