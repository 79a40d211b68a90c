//===- Fatbin.cpp - PTX objects into one fatbin: SASS plus portable PTX ---===//
#include "tessera/Conversion/GPU/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"

namespace mlir::tessera {
#define GEN_PASS_DEF_TSRGPUFATBIN
#include "tessera/Conversion/GPU/Passes.h.inc"
} // namespace mlir::tessera

using namespace mlir;

namespace {

/// A temporary file, removed when this goes out of scope.
struct TempFile {
  SmallString<128> path;
  std::optional<llvm::FileRemover> remover;

  LogicalResult create(StringRef prefix, StringRef suffix) {
    if (llvm::sys::fs::createTemporaryFile(prefix, suffix, path))
      return failure();
    remover.emplace(path);
    return success();
  }
};

struct TsrGpuFatbinPass : tessera::impl::TsrGpuFatbinBase<TsrGpuFatbinPass> {
  using Base::Base;

  void runOnOperation() override {
    SmallVector<gpu::BinaryOp> binaries(getOperation().getOps<gpu::BinaryOp>());
    for (gpu::BinaryOp binary : binaries)
      if (failed(bundle(binary)))
        return signalPassFailure();
  }

  /// The chip of an object's #nvvm.target, or an error.
  FailureOr<StringRef> chipOf(gpu::BinaryOp binary, gpu::ObjectAttr object) {
    auto target = dyn_cast<NVVM::NVVMTargetAttr>(object.getTarget());
    if (!target || object.getFormat() != gpu::CompilationTarget::Assembly) {
      binary.emitError("tsr-gpu-fatbin: expected PTX objects of NVVM "
                       "targets (gpu-module-to-binary format=isa), not ")
          << object;
      return failure();
    }
    return target.getChip();
  }

  /// Runs `program` on `args`, its output to `log`; an error with the log
  /// on failure.
  LogicalResult runTool(gpu::BinaryOp binary, StringRef program,
                        ArrayRef<StringRef> args) {
    TempFile log;
    if (failed(log.create("tessera-gpu-tool", "log")))
      return binary.emitError("tsr-gpu-fatbin: cannot create a temporary "
                              "file");
    std::optional<StringRef> redirects[] = {std::nullopt, log.path.str(),
                                            log.path.str()};
    std::string message;
    int status = llvm::sys::ExecuteAndWait(program, args, std::nullopt,
                                           redirects, 0, 0, &message);
    if (status == 0)
      return success();
    std::string output;
    if (auto text = llvm::MemoryBuffer::getFile(log.path))
      output = (*text)->getBuffer().trim().str();
    return binary.emitError("tsr-gpu-fatbin: ")
           << program << " failed"
           << (message.empty() ? "" : " (" + message + ")")
           << (output.empty() ? "" : ":\n" + output);
  }

  /// Replaces the PTX objects of `binary` by one fatbin: SASS of the first
  /// object's chip (ptxas) and the PTX of the last object, for the driver to
  /// compile on a GPU that the SASS does not run on.
  LogicalResult bundle(gpu::BinaryOp binary) {
    ArrayRef<Attribute> objects = binary.getObjects().getValue();
    auto sass = cast<gpu::ObjectAttr>(objects.front());
    auto ptx = cast<gpu::ObjectAttr>(objects.back());
    FailureOr<StringRef> sassChip = chipOf(binary, sass);
    FailureOr<StringRef> ptxChip = chipOf(binary, ptx);
    if (failed(sassChip) || failed(ptxChip))
      return failure();
    TempFile sassPtx, portablePtx, cubin, fatbin;
    if (failed(sassPtx.create("tessera-kernels", "ptx")) ||
        failed(portablePtx.create("tessera-kernels-portable", "ptx")) ||
        failed(cubin.create("tessera-kernels", "cubin")) ||
        failed(fatbin.create("tessera-kernels", "fatbin")))
      return binary.emitError("tsr-gpu-fatbin: cannot create a temporary "
                              "file");
    for (auto [file, object] :
         {std::pair{&sassPtx, sass}, std::pair{&portablePtx, ptx}}) {
      std::error_code ec;
      llvm::raw_fd_ostream out(file->path, ec);
      if (ec)
        return binary.emitError("tsr-gpu-fatbin: cannot write ")
               << file->path << ": " << ec.message();
      out << object.getObject().getValue();
    }
    std::string ptxas = toolkit + "/bin/ptxas";
    std::string fatbinary = toolkit + "/bin/fatbinary";
    std::string arch = ("-arch=" + *sassChip).str();
    if (failed(runTool(binary, ptxas,
                       {ptxas, arch, "-O3", sassPtx.path, "-o", cubin.path})))
      return failure();
    auto smOf = [](StringRef chip) {
      chip.consume_front("sm_");
      chip.consume_front("compute_");
      return chip;
    };
    std::string elfImage =
        ("--image3=kind=elf,sm=" + smOf(*sassChip) + ",file=" + cubin.path)
            .str();
    std::string ptxImage =
        ("--image3=kind=ptx,sm=" + smOf(*ptxChip) + ",file=" + portablePtx.path)
            .str();
    std::string create = ("--create=" + fatbin.path).str();
    if (failed(runTool(binary, fatbinary,
                       {fatbinary, "-64", create, elfImage, ptxImage})))
      return failure();
    auto data = llvm::MemoryBuffer::getFile(fatbin.path, /*IsText=*/false);
    if (!data)
      return binary.emitError("tsr-gpu-fatbin: cannot read ")
             << fatbin.path << ": " << data.getError().message();
    Builder b(&getContext());
    auto object = gpu::ObjectAttr::get(&getContext(), sass.getTarget(),
                                       gpu::CompilationTarget::Fatbin,
                                       b.getStringAttr((*data)->getBuffer()),
                                       sass.getProperties(), sass.getKernels());
    binary.setObjectsAttr(b.getArrayAttr({object}));
    return success();
  }
};

} // namespace
