//===- LossScale.h - The loss-scale setting ----------------------*- C++
//-*-===//
//
// `tsr-loss-scale`, `tsr-optimizer` and `tessera-compile --loss-scale` read
// the same setting: none, dynamic, or a constant scale.
//
//===----------------------------------------------------------------------===//
#ifndef TESSERA_TRANSFORMS_PRECISION_LOSSSCALE_H
#define TESSERA_TRANSFORMS_PRECISION_LOSSSCALE_H

#include "llvm/ADT/StringRef.h"

#include <cmath>
#include <optional>

namespace mlir::tessera {

/// The name of the dynamic scale's state (a float32 scalar), which
/// tsr-loss-scale adds and tsr-optimizer updates; the runtime finds it by
/// this name too.
inline constexpr llvm::StringLiteral kLossScaleState = "loss_scale";

/// The constant scale `setting` names (a positive, finite number), or
/// nullopt for anything else ("none", "dynamic" or a malformed value).
inline std::optional<double> parseConstantLossScale(llvm::StringRef setting) {
  double value = 0;
  if (setting.getAsDouble(value) || !(value > 0) || !std::isfinite(value))
    return std::nullopt;
  return value;
}

/// Whether `setting` is none, dynamic or a constant scale.
inline bool isLossScaleSetting(llvm::StringRef setting) {
  return setting == "none" || setting == "dynamic" ||
         parseConstantLossScale(setting).has_value();
}

} // namespace mlir::tessera

#endif // TESSERA_TRANSFORMS_PRECISION_LOSSSCALE_H
