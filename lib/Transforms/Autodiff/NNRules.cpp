//===- NNRules.cpp - Gradients of convolution, pooling and the rest -------===//
#include "tessera/Transforms/Autodiff/GradientRules.h"

#include "tessera/Dialect/Tsr/IR/TsrDialect.h"

using namespace mlir;
using namespace mlir::tessera;

void mlir::tessera::registerNNGradientRules(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *, tsr::TsrDialect *) {});
}
