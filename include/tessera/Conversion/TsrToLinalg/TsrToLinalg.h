//===- TsrToLinalg.h - tsr to linalg conversion patterns --------*- C++ -*-===//
//
// Patterns lowering the tsr dialect to linalg, tensor, arith, math and scf on
// tensors, and the type converter they expect (unsigned `uiN` tensors become
// signless `iN`; everything else is unchanged).
//
//===----------------------------------------------------------------------===//
#ifndef TESSERA_CONVERSION_TSRTOLINALG_TSRTOLINALG_H
#define TESSERA_CONVERSION_TSRTOLINALG_TSRTOLINALG_H

#include "mlir/Transforms/DialectConversion.h"

namespace mlir::tessera {

/// Maps tensors of unsigned integers to tensors of signless integers of the
/// same width and leaves every other type alone.
class TsrToLinalgTypeConverter : public TypeConverter {
public:
  TsrToLinalgTypeConverter();
};

/// Adds the patterns lowering every tsr op; `converter` must map types as
/// TsrToLinalgTypeConverter does.
void populateTsrToLinalgConversionPatterns(TypeConverter &converter,
                                           RewritePatternSet &patterns);

} // namespace mlir::tessera

#endif // TESSERA_CONVERSION_TSRTOLINALG_TSRTOLINALG_H
