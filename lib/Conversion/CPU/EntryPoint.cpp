//===- EntryPoint.cpp - The artifact's C entry point ----------------------===//
#include "tessera/Conversion/CPU/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Builders.h"

namespace mlir::tessera {
#define GEN_PASS_DEF_TSRCPUENTRYPOINT
#include "tessera/Conversion/CPU/Passes.h.inc"
} // namespace mlir::tessera

using namespace mlir;

namespace {
struct TsrCpuEntryPointPass
    : tessera::impl::TsrCpuEntryPointBase<TsrCpuEntryPointPass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<LLVM::LLVMFuncOp> programs;
    for (auto f : module.getOps<LLVM::LLVMFuncOp>())
      if (!f.isExternal() && f.isPublic() &&
          f.getLinkage() == LLVM::Linkage::External)
        programs.push_back(f);
    if (programs.empty()) {
      module.emitError("no lowered public function to wrap");
      return signalPassFailure();
    }
    for (LLVM::LLVMFuncOp program : programs)
      if (failed(addEntry(module, program)))
        return signalPassFailure();
  }

  /// Makes `program` `tessera_entry_<name>(void **args)`: a new entry
  /// block loads each buffer pointer from the array and branches to the
  /// program's own. (A wrapper calling the program passed a 24-layer
  /// GPT-2-shaped step 2300 arguments, whose call and prologue took a
  /// tenth of the machine code's time.)
  LogicalResult addEntry(ModuleOp module, LLVM::LLVMFuncOp program) {
    auto ptr = LLVM::LLVMPointerType::get(&getContext());
    LLVM::LLVMFunctionType type = program.getFunctionType();
    if (!isa<LLVM::LLVMVoidType>(type.getReturnType()) ||
        llvm::any_of(type.getParams(), [&](Type t) { return t != ptr; }))
      return program.emitError("expected the bare-pointer convention: "
                               "pointer arguments and no results, got ")
             << type;

    OpBuilder b(module.getBodyRegion());
    b.setInsertionPointToEnd(module.getBody());
    Location loc = program.getLoc();
    auto entry = LLVM::LLVMFuncOp::create(
        b, loc, ("tessera_entry_" + program.getName()).str(),
        LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(&getContext()),
                                    {ptr}));
    Region &body = entry.getBody();
    body.takeBody(program.getBody());
    Block *first = &body.front();
    Block *start = b.createBlock(&body, body.begin(), {ptr}, {loc});
    Value argv = start->getArgument(0);
    SmallVector<Value> args;
    for (unsigned i = 0, e = type.getNumParams(); i < e; ++i) {
      Value slot = argv;
      if (i > 0)
        slot = LLVM::GEPOp::create(b, loc, ptr, ptr, argv,
                                   ArrayRef<LLVM::GEPArg>{(int32_t)i});
      args.push_back(LLVM::LoadOp::create(b, loc, ptr, slot));
    }
    LLVM::BrOp::create(b, loc, args, first);
    // The program stays as a declaration that keeps what the pipeline
    // noted on it (tsr.in_place, its peak) for the artifact to read.
    program.setLinkage(LLVM::Linkage::External);
    return success();
  }
};
} // namespace
