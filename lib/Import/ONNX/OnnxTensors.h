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
#include "llvm/Support/MemoryBuffer.h"
#include <memory>
#include <optional>
#include <string>

namespace mlir::tessera::onnx_import {

/// The MLIR element type of an ONNX TensorProto::DataType, or null for the
/// unsupported ones (string, complex, float8, ...).
Type getElementType(MLIRContext *ctx, int32_t dataType);

/// The name of an ONNX TensorProto::DataType for diagnostics.
std::string getDataTypeName(int32_t dataType);

/// A TensorProto's type and payload as little-endian storage. `bytes`
/// views the protobuf's raw_data or float/double field, or an external
/// file, where the payload is stored that way; otherwise `owned`.
struct TensorData {
  RankedTensorType type;
  ArrayRef<char> bytes;
  std::vector<char> owned;
  std::unique_ptr<llvm::MemoryBuffer> external;
};

/// Reads a TensorProto's payload (see convertTensor) without copying it
/// where it can, checking its size against the shape; on failure returns
/// nullopt and sets `error`. The views live as long as `tensor`.
std::optional<TensorData> readTensor(MLIRContext *ctx,
                                     const onnx::TensorProto &tensor,
                                     const std::string &modelDir,
                                     std::string &error);

/// Whether floating-point storage `data` holds an infinity or a NaN.
bool holdsNonFinite(const TensorData &data);

/// Converts a TensorProto (raw_data, typed fields or external data relative
/// to `modelDir`) to dense elements; on failure returns null and sets
/// `error`.
DenseElementsAttr convertTensor(MLIRContext *ctx,
                                const onnx::TensorProto &tensor,
                                const std::string &modelDir,
                                std::string &error);

/// The dense elements of data that readTensor read.
DenseElementsAttr toElementsAttr(const TensorData &data);

} // namespace mlir::tessera::onnx_import

#endif // TESSERA_LIB_IMPORT_ONNX_ONNXTENSORS_H
