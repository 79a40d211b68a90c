//===- Version.h - What --version prints ------------------------*- C++ -*-===//
//
// Tessera's version (the CMake project's, passed to each tool as
// TESSERA_VERSION) and the LLVM/MLIR it was built against.
//
//===----------------------------------------------------------------------===//
#ifndef TESSERA_VERSION_H
#define TESSERA_VERSION_H

#include "llvm/Config/llvm-config.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"

namespace mlir::tessera {

/// Makes `--version` print "TOOL (Tessera VERSION)" and the LLVM/MLIR
/// version, in place of LLVM's own banner.
inline void setVersionPrinter(const char *tool) {
  llvm::cl::SetVersionPrinter([tool](llvm::raw_ostream &os) {
    os << tool << " (Tessera " TESSERA_VERSION ")\n  built with LLVM/MLIR "
       << LLVM_VERSION_STRING << "\n";
  });
}

} // namespace mlir::tessera

#endif // TESSERA_VERSION_H
