//===- ProfileRegions.cpp - Time each kernel, library call and copy -------===//
//
// Brackets every kernel call, library call (BLAS, collectives) and buffer
// copy of a program with calls of the runtime's tsr_profile_begin and
// tsr_profile_end, passing the id of the op's region: its kind, its callee
// and the model node it comes from. The region table goes on the module; the
// artifact's manifest carries it to `tessera-run --profile`, which sums time
// per region and groups it by node. The runtime's calls return at once when
// no profile was asked for.
//
//===----------------------------------------------------------------------===//
#include "tessera/Conversion/CPU/Passes.h"
#include "tessera/Dialect/Tsr/IR/TsrAttrNames.h"
#include "tessera/Dialect/Tsr/IR/TsrOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/MapVector.h"

namespace mlir::tessera {
#define GEN_PASS_DEF_TSRCPUPROFILEREGIONS
#include "tessera/Conversion/CPU/Passes.h.inc"
} // namespace mlir::tessera

using namespace mlir;

namespace {

constexpr StringLiteral kBegin = "tsr_profile_begin", kEnd = "tsr_profile_end";

/// Where an op comes from: the first model node named in its location, and
/// whether that name sits inside autodiff's `tsr.grad` fused location (the
/// op is part of that node's gradient).
bool findNode(Location loc, bool backward, std::string &node, bool &isGrad) {
  if (auto name = dyn_cast<NameLoc>(loc)) {
    node = name.getName().str();
    isGrad = backward;
    return true;
  }
  if (auto fused = dyn_cast<FusedLoc>(loc)) {
    auto tag = dyn_cast_or_null<StringAttr>(fused.getMetadata());
    bool grad = backward || (tag && tag.getValue() == "tsr.grad");
    for (Location inner : fused.getLocations())
      if (findNode(inner, grad, node, isGrad))
        return true;
    return false;
  }
  if (auto site = dyn_cast<CallSiteLoc>(loc))
    return findNode(site.getCallee(), backward, node, isGrad);
  return false;
}

/// What a region does: "gemm" for a BLAS matrix product, "call" for any
/// other library call, "kernel" for generated loops, "copy".
StringRef libraryKind(StringRef callee) {
  return callee.starts_with("cblas_") || callee.starts_with("tsr_gemm")
             ? "gemm"
             : "call";
}

struct TsrCpuProfileRegionsPass
    : tessera::impl::TsrCpuProfileRegionsBase<TsrCpuProfileRegionsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (module->hasAttr(tsr::attr::kProfileRegions))
      return; // Already instrumented.
    SymbolTable symbols(module);
    MLIRContext *ctx = module.getContext();
    OpBuilder b(ctx);

    // The ops to time, in program order.
    struct Site {
      Operation *op;
      StringRef kind, callee;
    };
    SmallVector<Site> sites;
    for (auto program : module.getOps<func::FuncOp>()) {
      if (program.isDeclaration() || program->hasAttr(tsr::attr::kKernel))
        continue;
      program.walk<WalkOrder::PreOrder>([&](Operation *op) {
        if (auto call = dyn_cast<func::CallOp>(op)) {
          auto callee = symbols.lookup<func::FuncOp>(call.getCallee());
          // A call of another program is timed inside that program; a
          // pipeline cell's call (an action of the schedule, named by its
          // location) also as a whole, around its own regions.
          if (callee && callee->hasAttr(tsr::attr::kKernel))
            sites.push_back({op, "kernel", call.getCallee()});
          else if (callee && callee->hasAttr(tsr::attr::kPipelineCell))
            sites.push_back({op, "action", call.getCallee()});
          else if (callee && callee.isDeclaration())
            sites.push_back(
                {op, libraryKind(call.getCallee()), call.getCallee()});
          return WalkResult::advance();
        }
        if (isa<memref::CopyOp>(op)) {
          sites.push_back({op, "copy", ""});
          return WalkResult::advance();
        }
        if (isa<linalg::LinalgOp>(op)) { // Left in place: dynamic shapes.
          sites.push_back({op, "kernel", op->getName().getStringRef()});
          return WalkResult::skip();
        }
        return WalkResult::advance();
      });
    }
    if (sites.empty())
      return;

    auto hookType = b.getFunctionType({b.getI32Type()}, {});
    for (StringRef name : {kBegin, kEnd}) {
      if (symbols.lookup(name))
        continue;
      b.setInsertionPointToEnd(module.getBody());
      auto hook = func::FuncOp::create(b, module.getLoc(), name, hookType);
      hook.setPrivate();
      symbols.insert(hook);
    }

    // One region per (kind, callee, node, direction): the calls of one
    // kernel for one node share it.
    llvm::MapVector<DictionaryAttr, int32_t> regions;
    for (const Site &site : sites) {
      std::string node;
      bool backward = false;
      findNode(site.op->getLoc(), false, node, backward);
      auto region = b.getDictionaryAttr(
          {b.getNamedAttr("kind", b.getStringAttr(site.kind)),
           b.getNamedAttr("callee", b.getStringAttr(site.callee)),
           b.getNamedAttr("node", b.getStringAttr(node)),
           b.getNamedAttr("backward", b.getBoolAttr(backward))});
      int32_t id = regions.insert({region, regions.size()}).first->second;
      Location loc = site.op->getLoc();
      b.setInsertionPoint(site.op);
      Value idValue = arith::ConstantIntOp::create(b, loc, id, 32);
      func::CallOp::create(b, loc, kBegin, TypeRange(), idValue);
      b.setInsertionPointAfter(site.op);
      func::CallOp::create(b, loc, kEnd, TypeRange(), idValue);
    }
    SmallVector<Attribute> table;
    for (auto &entry : regions)
      table.push_back(entry.first);
    module->setAttr(tsr::attr::kProfileRegions, b.getArrayAttr(table));
  }
};

} // namespace
