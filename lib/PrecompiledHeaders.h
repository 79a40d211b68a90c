//===- PrecompiledHeaders.h - Upstream headers most libraries include ---===//
//
// Parsing MLIR's headers is most of the time it takes to compile one of
// Tessera's passes (measured on lib/Conversion/GPU/Map.cpp: 21 of its 25 s
// at -O3 are -fsyntax-only). These upstream headers are precompiled once
// (TesseraPrecompiledHeaders in lib/CMakeLists.txt) and every library's
// sources reuse that header (cmake/TesseraMacros.cmake): Map.cpp then
// compiles in 9 s. Only headers of the installed LLVM/MLIR belong here,
// which change with the toolchain alone: a Tessera header here would
// rebuild every library whenever it changed.
//
//===----------------------------------------------------------------------===//

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Transforms/DialectConversion.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
