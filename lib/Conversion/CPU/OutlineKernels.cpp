//===- OutlineKernels.cpp - One function per distinct loop kernel ---------===//
//
// Moves every linalg op of a program into a private function that takes its
// buffers as arguments, one function per structurally distinct op: the
// layers of a model repeat the same kernels on other buffers, so everything
// after this pass (vectorization, the lowering to LLVM, -O3, machine code)
// sees each kernel once, however deep the model is.
//
//===----------------------------------------------------------------------===//
#include "tessera/Conversion/CPU/Passes.h"
#include "tessera/Dialect/Tsr/IR/TsrAttrNames.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/StringMap.h"

namespace mlir::tessera {
#define GEN_PASS_DEF_TSRCPUOUTLINEKERNELS
#include "tessera/Conversion/CPU/Passes.h.inc"
} // namespace mlir::tessera

using namespace mlir;

namespace {

/// Whether a kernel argument of `type` lowers to a bare pointer (the
/// calling convention the CPU target lowers functions with): a statically
/// shaped memref whose strides and offset are static too, or a scalar.
bool isPassable(Type type) {
  if (type.isIntOrIndexOrFloat())
    return true;
  auto memref = dyn_cast<MemRefType>(type);
  if (!memref || !memref.hasStaticShape() || memref.getMemorySpace())
    return false;
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(memref.getStridesAndOffset(strides, offset)))
    return false;
  return ShapedType::isStatic(offset) &&
         llvm::all_of(strides, ShapedType::isStatic);
}

struct TsrCpuOutlineKernelsPass
    : tessera::impl::TsrCpuOutlineKernelsBase<TsrCpuOutlineKernelsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    // A kernel's printed form (its name a placeholder) -> the function.
    llvm::StringMap<func::FuncOp> kernels;
    SmallVector<func::FuncOp> programs;
    for (auto func : module.getOps<func::FuncOp>())
      if (!func.isDeclaration())
        programs.push_back(func);
    for (func::FuncOp program : programs) {
      SmallVector<linalg::LinalgOp> ops;
      program.walk<WalkOrder::PreOrder>([&](linalg::LinalgOp op) {
        ops.push_back(op);
        return WalkResult::skip();
      });
      for (linalg::LinalgOp op : ops)
        outline(op, program, symbols, kernels);
    }
  }

  /// Replaces `op` by a call of the kernel that computes it, creating the
  /// kernel unless an identical one exists. Operands and values the op's
  /// region uses from above become arguments (each value once, in order of
  /// first use), constants are cloned into the kernel; an op with a value
  /// that does not lower to a bare pointer (a dynamic shape) stays.
  void outline(linalg::LinalgOp op, func::FuncOp program, SymbolTable &symbols,
               llvm::StringMap<func::FuncOp> &kernels) {
    if (!op.hasPureBufferSemantics() || op->getNumResults() != 0)
      return;
    SetVector<Value> used(op->getOperands().begin(), op->getOperands().end());
    getUsedValuesDefinedAbove(op->getRegions(), used);
    SmallVector<Value> arguments;
    SmallVector<Operation *> constants;
    for (Value value : used) {
      Operation *def = value.getDefiningOp();
      if (def && def->getNumOperands() == 0 && def->getNumRegions() == 0 &&
          matchPattern(def, m_Constant()))
        constants.push_back(def);
      else if (isPassable(value.getType()))
        arguments.push_back(value);
      else
        return;
    }

    OpBuilder builder(op->getContext());
    auto type = builder.getFunctionType(ValueRange(arguments).getTypes(), {});
    auto kernel = func::FuncOp::create(op.getLoc(), "kernel", type);
    Block *body = kernel.addEntryBlock();
    builder.setInsertionPointToStart(body);
    IRMapping mapping;
    for (auto [value, argument] : llvm::zip(arguments, body->getArguments()))
      mapping.map(value, argument);
    for (Operation *constant : constants)
      builder.clone(*constant, mapping);
    builder.clone(*op, mapping);
    func::ReturnOp::create(builder, op.getLoc());

    std::string key;
    {
      llvm::raw_string_ostream os(key);
      kernel->print(os, OpPrintingFlags().printGenericOpForm());
    }
    func::FuncOp &existing = kernels[key];
    if (existing) {
      kernel.erase();
    } else {
      // Internal and never inlined: the call stays, so LLVM compiles the
      // kernel once (func-to-llvm turns these into LLVM attributes).
      kernel.setPrivate();
      kernel->setAttr("llvm.linkage",
                      LLVM::LinkageAttr::get(builder.getContext(),
                                             LLVM::linkage::Linkage::Internal));
      kernel->setAttr("passthrough",
                      builder.getArrayAttr(builder.getStringAttr("noinline")));
      kernel->setAttr(tsr::attr::kKernel, builder.getUnitAttr());
      kernel.setSymName((program.getSymName() + "_kernel").str());
      symbols.insert(kernel); // renames it if the name is taken
      existing = kernel;
    }
    builder.setInsertionPoint(op);
    func::CallOp::create(builder, op.getLoc(), existing, arguments);
    op->erase();
  }
};

} // namespace
