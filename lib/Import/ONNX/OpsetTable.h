//===- OpsetTable.h - ONNX op versions beyond libonnx 1.12 ------*- C++ -*-===//
#ifndef TESSERA_LIB_IMPORT_ONNX_OPSETTABLE_H
#define TESSERA_LIB_IMPORT_ONNX_OPSETTABLE_H

#include <cstdint>
#include <optional>
#include <string>

namespace mlir::tessera::onnx_import {

/// The newest opset of the default domain whose schemas libonnx knows.
constexpr int64_t kLibOnnxMaxOpset = 17;

/// The since_version of `opType` (default domain) in effect at `opset`,
/// from libonnx's schemas up to kLibOnnxMaxOpset and from a table of the
/// ops that changed or appeared in opsets 18 to 21 above it. Empty when the
/// op does not exist at that opset; `firstOpset` is then set to the opset
/// that introduced it, or 0 if it is unknown altogether.
std::optional<int64_t> lookupSinceVersion(const std::string &opType,
                                          int64_t opset, int64_t &firstOpset);

/// The contrib domain of onnxruntime, whose `MoE` op Tessera imports.
inline constexpr const char *kMicrosoftDomain = "com.microsoft";

/// Registers with libonnx the schemas of the contrib ops Tessera imports
/// (com.microsoft MoE, as onnxruntime 1.23 defines it), so that the checker
/// and shape inference see them like default-domain ops. Idempotent.
void registerContribSchemas();

/// The since_version of a contrib op (`domain` not the default one) at
/// `opset` of its domain, or empty when Tessera does not know the op.
std::optional<int64_t> lookupContribSinceVersion(const std::string &domain,
                                                 const std::string &opType,
                                                 int64_t opset);

} // namespace mlir::tessera::onnx_import

#endif // TESSERA_LIB_IMPORT_ONNX_OPSETTABLE_H
