//===- tessera-compile.cpp - The Tessera compiler driver ------------------===//
//
// tessera-compile MODEL.onnx --mode=infer|grad|train --target=cpu -o ART
//
// Imports the ONNX model, builds the loss-and-gradient function (grad) or
// the whole training step (train) when asked, lowers it for the target and
// writes the artifact directory ART (model.so + manifest.json) that
// tessera-run executes. --emit=tsr|llvm-dialect|ptx stops early and prints the
// IR instead.
//
//===----------------------------------------------------------------------===//
#include "Timeline.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Transforms/Passes.h"
#include "tessera/Conversion/CPU/Passes.h"
#include "tessera/Conversion/GPU/Passes.h"
#include "tessera/Conversion/TsrToLinalg/Passes.h"
#include "tessera/Dialect/Onnx/IR/OnnxDialect.h"
#include "tessera/Dialect/Tsr/IR/TsrDialect.h"
#include "tessera/Dialect/Tsr/IR/TsrOps.h"
#include "tessera/Dialect/Tsr/Transforms/BufferizableOpInterfaceImpl.h"
#include "tessera/Dialect/Tsrt/IR/TsrtDialect.h"
#include "tessera/Dialect/Tsrt/Transforms/BufferizableOpInterfaceImpl.h"
#include "tessera/Import/ONNX/Import.h"
#include "tessera/Pipelines/Target.h"
#include "tessera/Pipelines/Training.h"
#include "tessera/Transforms/Autodiff/GradientRules.h"
#include "tessera/Transforms/Autodiff/TrainingFunction.h"
#include "tessera/Transforms/Parallel/Compression.h"
#include "tessera/Transforms/Parallel/PipelineSchedule.h"
#include "tessera/Transforms/Parallel/ShardingRules.h"
#include "tessera/Transforms/Precision/LossScale.h"
#include "tessera/Version.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/GlobPattern.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/WithColor.h"

#include <cmath>
#include <deque>
#include <limits>
#include <set>

using namespace mlir;
namespace cl = llvm::cl;

static cl::OptionCategory compileCat("Compilation");
static cl::opt<std::string> inputFile(cl::Positional,
                                      cl::desc("<model.onnx | module.mlir>"),
                                      cl::Required, cl::cat(compileCat));
static cl::opt<std::string> onnxModel(
    "onnx", cl::init(""),
    cl::desc("With a .mlir module whose programs have param inputs: the ONNX "
             "model their initial values come from (copied into the "
             "artifact)"),
    cl::value_desc("model.onnx"), cl::cat(compileCat));
static cl::opt<std::string> outputDir("o", cl::init(""),
                                      cl::desc("Artifact directory"),
                                      cl::value_desc("dir"),
                                      cl::cat(compileCat));
static cl::opt<std::string>
    mode("mode",
         cl::desc("What to compile: infer (the model), grad (loss and "
                  "gradients), train (one optimizer step)"),
         cl::init("infer"), cl::cat(compileCat));
static cl::opt<std::string>
    targetName("target", cl::desc("Code generation target: cpu or cuda"),
               cl::init("cpu"), cl::cat(compileCat));
static cl::list<std::string>
    inputShapes("input-shape",
                cl::desc("Static shape of a graph input: NAME=DxDx... "
                         "(repeatable; required for symbolic dimensions)"),
                cl::value_desc("NAME=DxD..."), cl::cat(compileCat));
static cl::opt<std::string>
    emit("emit",
         cl::desc("Stop after a stage and print its IR: tsr, llvm-dialect, "
                  "ptx (--target=cuda: the kernels' PTX)"),
         cl::init(""), cl::cat(compileCat));

static cl::opt<bool> foldLayers(
    "fold-layers",
    cl::desc("Compile each kind of repeated layer once, as a function called "
             "per layer (tsr-layer-plan, tsr-outline-layers); "
             "--fold-layers=false compiles every layer's ops in place"),
    cl::init(true), cl::cat(compileCat));

static cl::opt<int64_t> cpuVectorSize(
    "cpu-vector-size",
    cl::desc("--target=cpu: most elements in one vector of tsr-cpu-vectorize "
             "(0: no vectorization, scalar loops)"),
    cl::init(tessera::CpuTargetOptions().vectorSize), cl::cat(compileCat));

static cl::opt<std::string>
    cpuGemm("cpu-gemm", cl::init(tessera::CpuTargetOptions().gemmLibrary),
            cl::desc("--target=cpu: the library of f32 matrix products: onednn "
                     "(through the runtime) or openblas (cblas_sgemm)"),
            cl::cat(compileCat));

static cl::opt<std::string> gpuMapping(
    "gpu-mapping", cl::init(""),
    cl::desc("--target=cpu: run the CUDA target's kernels on the CPU instead "
             "of the CPU's own code, blocks and threads in this order: "
             "forward, reverse or shuffle (a check of the GPU mapping)"),
    cl::cat(compileCat));
static cl::opt<std::string>
    gpuArch("gpu-arch",
            cl::desc("--target=cuda: the GPU architecture of the kernels' "
                     "SASS (PTX of the same version rides along)"),
            cl::init(tessera::CudaTargetOptions().arch), cl::cat(compileCat));

static cl::OptionCategory trainCat("Training (--mode=grad|train)");
static cl::opt<std::string>
    lossKind("loss", cl::init(""),
             cl::desc("Append a loss: cross_entropy or mse"),
             cl::cat(trainCat));
static cl::opt<std::string>
    logitsName("logits", cl::init(""),
               cl::desc("Model output the appended loss reads"),
               cl::cat(trainCat));
static cl::opt<std::string>
    labelsName("labels", cl::desc("Name of the labels input of the loss"),
               cl::init("labels"), cl::cat(trainCat));
static cl::opt<int64_t> ignoreIndex(
    "ignore-index",
    cl::desc("--loss=cross_entropy: label value that adds nothing to the loss "
             "(e.g. padding)"),
    cl::init(std::numeric_limits<int64_t>::min()), cl::cat(trainCat));
static cl::opt<std::string> batchNormMode(
    "batch-norm",
    cl::desc("--mode=train: BatchNormalization normalizes with batch "
             "statistics and updates the running ones (batch), or keeps the "
             "running statistics fixed (running)"),
    cl::init("batch"), cl::cat(trainCat));
static cl::opt<double> batchNormMomentum(
    "batch-norm-momentum",
    cl::desc("--batch-norm=batch: weight of the old running statistic"),
    cl::init(0.9), cl::cat(trainCat));
static cl::opt<std::string>
    lossOutput("loss-output", cl::init(""),
               cl::desc("Existing scalar model output to use as the loss"),
               cl::cat(trainCat));
static cl::list<std::string>
    frozen("freeze",
           cl::desc("Parameters to keep fixed: glob patterns of initializer "
                    "names (repeatable or comma-separated)"),
           cl::CommaSeparated, cl::cat(trainCat));
static cl::list<std::string> trainable(
    "trainable",
    cl::desc("Parameters to train, all others kept fixed: glob patterns of "
             "initializer names (repeatable or comma-separated; default: "
             "every trainable initializer)"),
    cl::CommaSeparated, cl::cat(trainCat));
static cl::opt<int64_t> batchSize(
    "batch-size",
    cl::desc("Global batch size: replaces dimension 0 of every graph input"),
    cl::init(0), cl::cat(trainCat));
static cl::opt<int64_t>
    microBatches("micro-batches",
                 cl::desc("Gradient accumulation: micro-batches per step"),
                 cl::init(1), cl::cat(trainCat));
static cl::opt<std::string>
    remat("remat",
          cl::desc("Recompute saved activations in the backward pass: none, "
                   "selective (the attention core), full (all but the "
                   "normalizations' inputs) or auto (a solver, under "
                   "--memory-budget)"),
          cl::init("none"), cl::cat(trainCat));
static cl::opt<std::string> memoryBudget(
    "memory-budget", cl::init(""),
    cl::desc("Bytes one rank may use while the step runs (e.g. 6GiB, 512MiB, "
             "1000000): a solver decides, per saved activation, keep or "
             "recompute, at the least added time that fits"),
    cl::cat(trainCat));
static cl::opt<std::string> offloadPolicy(
    "offload", cl::init("auto"),
    cl::desc("Under --memory-budget: auto (copy saved activations to host "
             "memory and back when recomputation alone cannot meet the "
             "budget) or none"),
    cl::cat(trainCat));
static cl::opt<bool> offloadOptimizer(
    "offload-optimizer", cl::init(false),
    cl::desc("With --mode=train: keep the optimizer state and a master copy "
             "of the parameters in host memory and run the update there "
             "(ZeRO-Offload): the device holds parameters, gradients and "
             "activations; a step copies the gradients to the host and the "
             "parameters back (the CPU target only)"),
    cl::cat(trainCat));
static cl::opt<std::string> hostBandwidth(
    "host-bandwidth", cl::init("50GB/s"),
    cl::desc("The host link's bandwidth that offload plans its copies by "
             "(bytes/s, e.g. 50GB/s for PCIe 5 x16, 25GB/s, 16GiB/s)"),
    cl::cat(trainCat));
static cl::opt<std::string> precisionPolicy(
    "precision",
    cl::desc("fp32 (the model's types), bf16 or fp16: matmuls and "
             "convolutions in the low type with f32 accumulation, "
             "softmax, norms, reductions and losses in f32, parameters kept "
             "as f32 master copies (--explain lists every op's choice)"),
    cl::init("fp32"), cl::cat(trainCat));
static cl::opt<std::string> lossScaleOpt(
    "loss-scale", cl::init(""),
    cl::desc("With --mode=train: none, dynamic (start at --loss-scale-init, "
             "halve and skip the step on an overflow, double after "
             "--loss-scale-growth-interval clean steps) or a constant "
             "(default: dynamic with --precision=fp16, else none)"),
    cl::cat(trainCat));
static cl::opt<double>
    lossScaleInit("loss-scale-init",
                  cl::desc("The dynamic loss scale's first value"),
                  cl::init(65536.0), cl::cat(trainCat));
static cl::opt<int64_t> lossScaleInterval(
    "loss-scale-growth-interval",
    cl::desc("Clean steps in a row after which the dynamic scale doubles"),
    cl::init(2000), cl::cat(trainCat));
static cl::opt<double>
    lossScaleGrowth("loss-scale-growth",
                    cl::desc("Factor of the dynamic scale's growth"),
                    cl::init(2.0), cl::cat(trainCat));
static cl::opt<double>
    lossScaleBackoff("loss-scale-backoff",
                     cl::desc("Factor of the dynamic scale on an overflow"),
                     cl::init(0.5), cl::cat(trainCat));
static cl::list<std::string> keepFp32(
    "keep-fp32",
    cl::desc("With --precision: GLOB over ONNX node and parameter names "
             "kept in f32; repeatable"),
    cl::cat(trainCat));
static cl::opt<std::string> rematSolver(
    "remat-solver",
    cl::desc("Under --memory-budget: milp (exact, COIN-OR CBC), beam (a "
             "beam search), or auto (the MILP for graphs of up to 120 ops)"),
    cl::init("auto"), cl::cat(trainCat));
static cl::opt<std::string>
    meshSpec("mesh", cl::init(""),
             cl::desc("Device mesh of the step, e.g. dp=4, dp=2,tp=2 or "
                      "dp=2,pp=2 (the rank layout: row-major, the last axis "
                      "innermost): one program per rank, the global batch "
                      "split across the dp ranks, the model split across "
                      "the tp ranks, its layers into pipeline stages across "
                      "the pp ranks, a mixture of experts' experts across "
                      "the ep ranks (which also split the batch)"),
             cl::cat(trainCat));
static cl::opt<std::string> pipelineSchedule(
    "schedule",
    cl::desc("With --mesh pp=N: the pipeline schedule: gpipe, 1f1b "
             "(default), interleaved, zb-h1, zb-v, v-half, dualpipev or "
             "pipedream"),
    cl::init("1f1b"), cl::cat(trainCat));
static cl::opt<int64_t> virtualStages(
    "virtual-stages",
    cl::desc("With --schedule=interleaved: the model chunks per pipeline "
             "rank (default 2; zb-v, v-half and dualpipev run 2, the "
             "others 1)"),
    cl::init(0), cl::cat(trainCat));
static cl::list<std::string> pipelineSplit(
    "pipeline-split",
    cl::desc("With --mesh pp=N: the ONNX nodes that start stages 1 to N-1 "
             "(model chunks 1 to N x V - 1 with --virtual-stages=V) "
             "(comma-separated; default: the cost model balances the "
             "stages)"),
    cl::CommaSeparated, cl::cat(trainCat));
static cl::opt<bool> sequenceParallel(
    "sequence-parallel",
    cl::desc("With --mesh tp=N: also split the activations between the "
             "tensor-parallel blocks along the sequence (dimension 1 of the "
             "data and label inputs)"),
    cl::init(false), cl::cat(trainCat));
static cl::opt<double> moeCapacityFactor(
    "moe-capacity-factor",
    cl::desc("com.microsoft MoE layers: each expert takes at most "
             "ceil(F * tokens per sequence * k / experts) tokens of a "
             "sequence, the later choices are dropped (GShard, Switch); "
             "default: dropless, as onnxruntime computes the op"),
    cl::init(0.0), cl::cat(trainCat));
static cl::opt<double> moeAuxLoss(
    "moe-aux-loss",
    cl::desc("With --mode=train or grad: add COEF times every com.microsoft "
             "MoE layer's Switch load-balancing loss to the training loss"),
    cl::value_desc("COEF"), cl::init(0.0), cl::cat(trainCat));
static cl::opt<bool>
    explain("explain",
            cl::desc("Print every collective of the compiled step (its "
                     "group, the bytes one rank sends, the model node and "
                     "why it is there) and, with --precision, every op's "
                     "compute type and the rule that chose it"),
            cl::init(false), cl::cat(compileCat));
static cl::list<std::string> shardPins(
    "shard",
    cl::desc("With --mesh tp=N: GLOB=SPEC pins the layout of the parameters "
             "whose name matches GLOB: one entry per dimension separated by "
             "':', '-' for whole or tp (e.g. 'blocks.*.fc1.weight=-:tp'); "
             "repeatable"),
    cl::cat(trainCat));
static cl::opt<int64_t>
    zeroStage("zero",
              cl::desc("ZeRO stage with --mesh dp=N: 0 replicates, 1 shards "
                       "optimizer state, 2 also gradients, 3 also parameters"),
              cl::init(0), cl::cat(trainCat));
static cl::opt<double>
    bucketMiB("bucket-mb",
              cl::desc("Most gradient MiB per all-reduce/reduce-scatter "
                       "bucket with --mesh"),
              cl::init(25.0), cl::cat(trainCat));
static cl::opt<std::string> gradCompression(
    "grad-compression",
    cl::desc("With --mesh dp=N: how matrix gradients travel: none (all-reduce "
             "in buckets), topk:R (the fraction R of largest magnitude as "
             "(index, value) pairs, the rest carried to the next step) or "
             "qsgd:BITS[:BUCKET] (unbiased stochastic quantization, a norm "
             "per BUCKET elements, default 512) or powersgd:RANK (a rank-RANK "
             "approximation, the rest carried to the next step)"),
    cl::init("none"), cl::cat(trainCat));
static cl::opt<int64_t> localSteps(
    "local-steps",
    cl::desc("With --mesh dp=N: local SGD, every rank updates its own "
             "parameters and the ranks average parameters and optimizer "
             "state every H steps instead of all-reducing gradients every "
             "step (0: off)"),
    cl::value_desc("H"), cl::init(0), cl::cat(trainCat));
static cl::opt<int64_t> parameterServers(
    "ps",
    cl::desc("With --mesh dp=N: S parameter servers, ranks N..N+S-1, hold "
             "the parameters and optimizer state (each parameter whole on "
             "one server) and apply the updates; the N workers send "
             "gradients and receive parameters (0: off)"),
    cl::value_desc("S"), cl::init(0), cl::cat(trainCat));
static cl::opt<bool> psSync(
    "ps-sync", cl::init(false),
    cl::desc("With --ps: bulk-synchronous, the servers average every "
             "worker's gradient of a step into one update (the default)"),
    cl::cat(trainCat));
static cl::opt<bool>
    psAsync("ps-async", cl::init(false),
            cl::desc("With --ps: asynchronous, the servers apply each "
                     "worker's gradient as it arrives, and a worker runs at "
                     "most --staleness steps ahead of the slowest"),
            cl::cat(trainCat));
static cl::opt<int64_t> staleness(
    "staleness",
    cl::desc("With --ps-async: how many steps a worker may run ahead of the "
             "slowest (0: in lockstep)"),
    cl::value_desc("K"), cl::init(2), cl::cat(trainCat));
static cl::opt<bool> compileEval(
    "eval", cl::init(false),
    cl::desc("With --mode=train: also compile the program \"eval\", the "
             "loss and metrics of the model on one rank's batch without an "
             "update (dropout off), for tessera-run --eval-data"),
    cl::cat(trainCat));
static cl::opt<std::string>
    optimizerName("optimizer",
                  cl::desc("sgd, adam, adamw, lamb, lars or adafactor"),
                  cl::init("sgd"), cl::cat(trainCat));
static cl::opt<bool> reduceInFp32(
    "reduce-in-fp32", cl::init(false),
    cl::desc("With --precision=bf16|fp16 and --mesh dp=N: all-reduce (or "
             "reduce-scatter) the gradients in f32 rather than in the 16-bit "
             "type"),
    cl::cat(trainCat));
static cl::opt<std::string> optimizerState(
    "optimizer-state",
    cl::desc("Storage of the optimizer's moments: fp32, bf16 or int8 "
             "(8-bit block-wise quantized, as in 8-bit Adam)"),
    cl::init("fp32"), cl::cat(trainCat));
static cl::opt<int64_t> optimizerStateMinElements(
    "optimizer-state-min-elements",
    cl::desc("With --optimizer-state=int8: parameters with fewer elements "
             "keep f32 moments"),
    cl::init(4096), cl::cat(trainCat));
static cl::opt<double> lr("lr", cl::desc("Learning rate"), cl::init(0.01),
                          cl::cat(trainCat));
static cl::opt<double> momentum("momentum", cl::desc("sgd, lars: momentum"),
                                cl::init(0.0), cl::cat(trainCat));
static cl::opt<bool> nesterov("nesterov", cl::init(false),
                              cl::desc("sgd: Nesterov momentum"),
                              cl::cat(trainCat));
static cl::opt<double> weightDecay("weight-decay", cl::desc("Weight decay"),
                                   cl::init(0.0), cl::cat(trainCat));
static cl::opt<double> beta1("beta1", cl::desc("adam, adamw, lamb: beta1"),
                             cl::init(0.9), cl::cat(trainCat));
static cl::opt<double> beta2("beta2", cl::desc("adam, adamw, lamb: beta2"),
                             cl::init(0.999), cl::cat(trainCat));
static cl::opt<double>
    eps("eps", cl::desc("adam, adamw, lamb: epsilon; adafactor: eps1"),
        cl::init(1e-8), cl::cat(trainCat));
static cl::opt<double> larsEta("lars-eta", cl::desc("lars: trust coefficient"),
                               cl::init(0.001), cl::cat(trainCat));
static cl::opt<double>
    decayRate("adafactor-decay-rate",
              cl::desc("adafactor: second-moment decay 1 - t^rate"),
              cl::init(-0.8), cl::cat(trainCat));
static cl::opt<double>
    clipThreshold("adafactor-clip-threshold",
                  cl::desc("adafactor: update clipping threshold"),
                  cl::init(1.0), cl::cat(trainCat));
static cl::opt<std::string> schedule("lr-schedule",
                                     cl::desc("constant, warmup or cosine"),
                                     cl::init("constant"), cl::cat(trainCat));
static cl::opt<int64_t> warmupSteps("warmup-steps",
                                    cl::desc("Linear warm-up steps"),
                                    cl::init(0), cl::cat(trainCat));
static cl::opt<int64_t> totalSteps("total-steps",
                                   cl::desc("cosine: steps to the minimum"),
                                   cl::init(0), cl::cat(trainCat));
static cl::opt<double> minLrRatio("min-lr-ratio",
                                  cl::desc("cosine: final lr / lr"),
                                  cl::init(0.0), cl::cat(trainCat));
static cl::opt<int64_t> baseBatchSize(
    "base-batch-size",
    cl::desc("Linear scaling rule: lr is scaled by batch-size / this"),
    cl::init(0), cl::cat(trainCat));
static cl::opt<double>
    clipGradNorm("clip-grad-norm",
                 cl::desc("Global-norm gradient clipping (0: off)"),
                 cl::init(0.0), cl::cat(trainCat));

static cl::opt<std::string> timeline(
    "timeline", cl::init(""),
    cl::desc("With --mesh pp=N: draw the pipeline schedule the cost model "
             "predicts (one row per stage) into FILE.svg"),
    cl::value_desc("FILE.svg"), cl::cat(compileCat));

static cl::opt<std::string> memoryTimeline(
    "memory-timeline", cl::init(""),
    cl::desc("Draw each program's predicted live bytes over one call, by "
             "phase (parameter copies, forward, backward, update), into "
             "FILE.svg"),
    cl::value_desc("FILE.svg"), cl::cat(compileCat));

static cl::opt<bool> timingReport(
    "timing", cl::init(false),
    cl::desc("Print the wall and CPU time of each compile stage and pass to "
             "stderr, as a tree (MLIR's timing report), after the compile"),
    cl::cat(compileCat));
static cl::opt<bool>
    report("report", cl::init(false),
           cl::desc("Print the static memory footprint of the compiled "
                    "function: parameters, gradients, optimizer state, batch "
                    "and peak activations, in bytes; and the estimated time "
                    "of one step, compute and communication"),
           cl::cat(compileCat));

static cl::opt<std::string> clusterFile(
    "cluster", cl::init(""),
    cl::desc("Cluster file (JSON): the figures of a device and of the link "
             "of each mesh axis that --report's estimated time uses, in "
             "place of the target's (docs/analysis.md)"),
    cl::value_desc("cluster.json"), cl::cat(compileCat));

/// The figures of --cluster; none (all the target's) without it.
static llvm::Expected<tessera::ClusterSpec> readCluster() {
  if (clusterFile.empty())
    return tessera::ClusterSpec();
  return tessera::readClusterSpec(clusterFile);
}

static int fail(const Twine &message) {
  llvm::WithColor::error(llvm::errs(), "tessera-compile") << message << "\n";
  return 1;
}

/// LLVM's --print-options and --print-all-options print nothing unless a tool
/// asks, and then list LLVM's own --help variants too. Here they print the
/// driver's options, to stdout before the compile: the ones given on the
/// command line (--print-options) or every one (--print-all-options), each
/// with its value and default.
static void printDriverOptions() {
  auto &registered = cl::getRegisteredOptions();
  auto given = [&](StringRef name) {
    auto it = registered.find(name);
    return it != registered.end() && it->second->getNumOccurrences() > 0;
  };
  bool all = given("print-all-options");
  if (!all && !given("print-options"))
    return;
  SmallVector<cl::Option *> options;
  for (cl::Option *option : llvm::make_second_range(registered))
    if (llvm::any_of(option->Categories,
                     [](cl::OptionCategory *category) {
                       return category == &compileCat || category == &trainCat;
                     }) &&
        (all || option->getNumOccurrences() > 0))
      options.push_back(option);
  llvm::sort(options, [](cl::Option *a, cl::Option *b) {
    return a->ArgStr < b->ArgStr;
  });
  size_t width = 0;
  for (cl::Option *option : options)
    width = std::max(width, option->getOptionWidth());
  llvm::outs() << (all ? "options:\n" : "options given:\n");
  for (cl::Option *option : options)
    option->printOptionValue(width, /*Force=*/true);
}

/// The axes of --mesh in the order given (the rank layout: row-major, the
/// last axis innermost), and the sizes of dp and tp (0 without them).
static SmallVector<std::pair<std::string, int64_t>> meshAxes;
static int64_t dataParallel = 0;
static int64_t tensorParallel = 0;
static int64_t pipelineParallel = 0;
static int64_t expertParallel = 0;

/// Parses --mesh: comma-separated AXIS=N with AXIS dp (data parallelism),
/// tp (tensor parallelism), pp (pipeline parallelism) or ep (expert
/// parallelism), each at most once.
static LogicalResult parseMesh(StringRef spec) {
  SmallVector<StringRef> parts;
  spec.split(parts, ',');
  for (StringRef part : parts) {
    auto [axis, sizeText] = part.split('=');
    int64_t size;
    if (sizeText.getAsInteger(10, size) || size < 1)
      return failure();
    int64_t *slot = axis == "dp"   ? &dataParallel
                    : axis == "tp" ? &tensorParallel
                    : axis == "pp" ? &pipelineParallel
                    : axis == "ep" ? &expertParallel
                                   : nullptr;
    if (!slot || *slot != 0)
      return failure();
    *slot = size;
    meshAxes.emplace_back(axis.str(), size);
  }
  return success();
}

/// The data and label arguments of `step`, and the batch size: dimension 0
/// of the last of them (left unchanged if there is none).
static void collectBatchInputs(func::FuncOp step, SmallVector<unsigned> &data,
                               SmallVector<unsigned> &labels,
                               int64_t &batchSize) {
  for (unsigned i = 0, e = step.getNumArguments(); i < e; ++i) {
    tsr::Role role = tessera::getArgRole(step, i);
    if (role == tsr::Role::data)
      data.push_back(i);
    else if (role == tsr::Role::label)
      labels.push_back(i);
  }
  for (unsigned i : llvm::concat<unsigned>(data, labels)) {
    auto type = dyn_cast<RankedTensorType>(step.getArgumentTypes()[i]);
    if (type && type.getRank() >= 1)
      batchSize = type.getDimSize(0);
  }
}

/// Describes the training step of a module already in tsr form (a .mlir
/// input): the batch from its programs' data and label inputs, the global
/// batch from its mesh, the params' initial values from --onnx.
static FailureOr<tessera::TrainingManifest>
describeTrainingModule(ModuleOp module) {
  tessera::TrainingManifest train;
  bool hasParams = false;
  for (auto f : module.getOps<func::FuncOp>()) {
    if (!f.isPublic() || f.isExternal())
      continue;
    SmallVector<unsigned> data, labels;
    collectBatchInputs(f, data, labels, train.batchSize);
    for (unsigned i = 0, e = f.getNumArguments(); i < e; ++i)
      hasParams |= tessera::getArgRole(f, i) == tsr::Role::param;
  }
  if (auto mesh = module->getAttrOfType<tsr::MeshAttr>(tsr::attr::kMesh))
    for (auto [name, size] : llvm::zip(mesh.getNames(), mesh.getSizes()))
      if (name == "dp")
        train.dataParallel = size;
  if (hasParams && onnxModel.empty())
    return module.emitError("the module's programs have param inputs: give "
                            "--onnx=MODEL.onnx, the model their initial "
                            "values come from");
  train.onnxPath = onnxModel;
  return train;
}

/// "6GiB", "512MiB", "1.5GB", "1000000": a positive number of bytes.
static std::optional<int64_t> parseBytes(StringRef text) {
  static const std::pair<StringRef, double> units[] = {
      {"KiB", 1024.0},
      {"MiB", 1024.0 * 1024},
      {"GiB", 1024.0 * 1024 * 1024},
      {"KB", 1e3},
      {"MB", 1e6},
      {"GB", 1e9},
      {"B", 1.0}};
  double scale = 1;
  for (auto [suffix, factor] : units)
    if (text.consume_back(suffix)) {
      scale = factor;
      break;
    }
  double value;
  if (text.empty() || text.getAsDouble(value) || !(value > 0) ||
      value * scale > 9e18)
    return std::nullopt;
  return static_cast<int64_t>(value * scale);
}

/// "50GB/s", "16GiB/s", "25e9": a positive number of bytes per second.
static std::optional<double> parseRate(StringRef text) {
  text.consume_back("/s");
  std::optional<int64_t> bytes = parseBytes(text);
  if (!bytes)
    return std::nullopt;
  return static_cast<double>(*bytes);
}

/// --loss-scale, or its default: dynamic for fp16 training, else none.
static std::string effectiveLossScale() {
  if (lossScaleOpt.getNumOccurrences())
    return lossScaleOpt;
  return precisionPolicy == "fp16" && mode == "train" ? "dynamic" : "none";
}

/// The shortest decimal spelling of `v` that reads back as `v`.
static std::string shortestDecimal(double v) {
  for (int digits = 1; digits < 17; ++digits) {
    std::string text = llvm::formatv("{0}", llvm::format("%.*g", digits, v));
    if (std::strtod(text.c_str(), nullptr) == v)
      return text;
  }
  return llvm::formatv("{0}", llvm::format("%.17g", v));
}

/// --grad-compression as the plan pass takes it: 1-bit Adam's spec spells
/// out its warm-up and --beta1 (the decay its momentum copy follows).
static std::string compressionSpec() {
  std::optional<tessera::GradientCompression> c =
      tessera::GradientCompression::parse(gradCompression);
  if (!c || c->kind != tessera::GradientCompression::Kind::OneBit)
    return gradCompression;
  return "onebit:" + std::to_string(c->warmup) + ":" + shortestDecimal(beta1);
}

/// The hyperparameters that shape the training step, each as the flag
/// spells it (only those the chosen optimizer and schedule read; a gradient
/// program's only those of its loss and exchange).
static std::vector<std::pair<std::string, std::string>> describeHparams() {
  std::vector<std::pair<std::string, std::string>> hp;
  auto add = [&](StringRef name, const std::string &value) {
    hp.push_back({name.str(), value});
  };
  if (!lossKind.empty())
    add("loss", lossKind);
  add("loss_scale", effectiveLossScale());
  add("grad_compression", compressionSpec());
  // A gradient program (--mode=grad) has no optimizer.
  if (mode != "train") {
    llvm::sort(hp);
    return hp;
  }
  add("local_steps", std::to_string(localSteps));
  if (parameterServers > 0) {
    add("parameter_servers", std::to_string(parameterServers));
    add("staleness", psAsync ? std::to_string(staleness) : "sync");
  }
  StringRef opt = optimizerName;
  add("optimizer", optimizerName);
  add("lr", shortestDecimal(lr));
  add("weight_decay", shortestDecimal(weightDecay));
  if (opt == "sgd" || opt == "lars")
    add("momentum", shortestDecimal(momentum));
  if (opt == "sgd")
    add("nesterov", nesterov ? "true" : "false");
  if (opt == "lars")
    add("lars_eta", shortestDecimal(larsEta));
  if (opt == "adam" || opt == "adamw" || opt == "lamb") {
    add("beta1", shortestDecimal(beta1));
    add("beta2", shortestDecimal(beta2));
  }
  if (opt == "adam" || opt == "adamw" || opt == "lamb" || opt == "adafactor")
    add("eps", shortestDecimal(eps));
  if (opt == "adafactor") {
    add("adafactor_decay_rate", shortestDecimal(decayRate));
    add("adafactor_clip_threshold", shortestDecimal(clipThreshold));
  }
  add("lr_schedule", schedule);
  if (schedule != "constant")
    add("warmup_steps", std::to_string(warmupSteps));
  if (schedule == "cosine") {
    add("total_steps", std::to_string(totalSteps));
    add("min_lr_ratio", shortestDecimal(minLrRatio));
  }
  if (baseBatchSize > 0)
    add("base_batch_size", std::to_string(baseBatchSize));
  add("clip_grad_norm", shortestDecimal(clipGradNorm));
  add("optimizer_state", optimizerState);
  llvm::sort(hp);
  return hp;
}

/// Why the options do not let the optimizer's update run on the host
/// (tsr-offload-optimizer), completing "--offload-optimizer ...", or "".
static std::string offloadOptimizerRefusal() {
  if (mode != "train")
    return "needs --mode=train: it moves the optimizer's update to the host";
  if (targetName != "cpu")
    return "needs --target=cpu (the CUDA target cannot run a host program "
           "beside its kernels yet)";
  if (parameterServers > 0 || localSteps > 0 || pipelineParallel > 0 ||
      tensorParallel > 1 || expertParallel > 1)
    return "goes with one rank or --mesh dp=N alone so far (not with --ps, "
           "--local-steps, tp, pp or ep)";
  if (effectiveLossScale() != "none")
    return "does not go with loss scaling yet (--precision=fp16 or "
           "--loss-scale): the update unscales the loss on the device's side";
  return "";
}

/// Runs the training pipeline on the imported module and describes the
/// step for the manifest.
/// The training step of a module the training pipeline built: its last
/// public function that is no parameter server's update.
static func::FuncOp findStep(ModuleOp module) {
  func::FuncOp step;
  for (auto f : module.getOps<func::FuncOp>())
    if (f.isPublic() && !f->hasAttr(tsr::attr::kServer) &&
        !f->hasAttr(tsr::attr::kOnHost))
      step = f;
  return step;
}

static FailureOr<tessera::TrainingManifest>
buildTraining(ModuleOp module, tessera::CostParameters costs,
              TimingScope &timing) {
  tessera::TrainingPipelineOptions options;
  options.loss.loss = lossKind;
  options.loss.logits = logitsName;
  options.loss.labels = labelsName;
  options.loss.output = lossOutput;
  options.loss.ignoreIndex = ignoreIndex;
  options.autodiff.frozen.assign(frozen.begin(), frozen.end());
  options.autodiff.trainable.assign(trainable.begin(), trainable.end());
  options.autodiff.wrtInputs = mode == "grad";
  options.microBatches = microBatches;
  options.precision.precision = precisionPolicy;
  options.precision.keepFp32.assign(keepFp32.begin(), keepFp32.end());
  options.lossScale.scale = effectiveLossScale();
  options.lossScale.init = lossScaleInit;
  options.remat.policy = remat;
  options.offloadOptimizer = offloadOptimizer;
  // The CUDA target's decision, also where the CPU emulates its program.
  options.fuseAttention = targetName == "cuda" || !gpuMapping.empty();
  if (!memoryBudget.empty()) {
    options.remat.policy = "auto";
    options.remat.budget = *parseBytes(memoryBudget);
    options.remat.solver = rematSolver;
    options.remat.peakFlops = costs.peakFlops;
    options.remat.bandwidth = costs.memoryBandwidth;
    // On the CPU the runtime's transfer thread copies; on the GPU its
    // transfer stream, ordered after the program's stream by events.
    options.remat.offload = offloadPolicy == "auto";
    options.remat.hostBandwidth = *parseRate(hostBandwidth);
  }
  // Experts first: tensor parallelism then splits inside each expert block.
  if (expertParallel > 1) {
    tessera::TsrShardingPropagationOptions ep;
    ep.axis = "ep";
    ep.expertParallel = true;
    options.sharding.push_back(ep);
  }
  if (tensorParallel > 1) {
    tessera::TsrShardingPropagationOptions tp;
    tp.axis = "tp";
    tp.sequenceParallel = sequenceParallel;
    tp.shard.assign(shardPins.begin(), shardPins.end());
    options.sharding.push_back(tp);
  }
  if (pipelineParallel > 0) {
    tessera::TsrPipelinePlanOptions plan;
    plan.axis = "pp";
    plan.stages = pipelineParallel;
    plan.virtualStages = virtualStages;
    plan.split.assign(pipelineSplit.begin(), pipelineSplit.end());
    plan.peakFlops = costs.peakFlops;
    plan.bandwidth = costs.memoryBandwidth;
    options.pipelinePlan = plan;
    options.pipeline.schedule = pipelineSchedule;
    options.pipeline.peakFlops = costs.peakFlops;
    options.pipeline.bandwidth = costs.memoryBandwidth;
  }
  // A memory budget's plan (recomputation, offload) is of the step with
  // every layer in place, which the calls of folded layers would change.
  if (foldLayers && memoryBudget.empty())
    options.layerPlan = tessera::TsrLayerPlanOptions{};
  if (dataParallel > 0)
    options.dataParallel = tessera::TsrDataParallelPlanOptions{
        "dp",
        dataParallel,
        zeroStage,
        std::max<int64_t>(1, int64_t(bucketMiB * 1024 * 1024)),
        compressionSpec(),
        localSteps,
        parameterServers,
        parameterServers > 0 && psAsync ? staleness.getValue() : -1};
  // Gradients are reduced in the step's 16-bit type unless asked otherwise.
  if (precisionPolicy != "fp32" && !reduceInFp32)
    options.dataParallelApply.reduceType =
        precisionPolicy == "bf16" ? "bf16" : "f16";
  if (batchNormMode != "batch" && batchNormMode != "running")
    return module.emitError("--batch-norm=")
           << batchNormMode.getValue() << " is not one of: batch, running";
  if (mode == "train" && batchNormMode == "batch")
    options.batchNorm =
        tessera::TsrBatchNormStatisticsOptions{batchNormMomentum.getValue()};
  if (mode == "train") {
    tessera::TsrOptimizerOptions opt;
    opt.optimizer = optimizerName;
    opt.lr = lr;
    opt.momentum = momentum;
    opt.nesterov = nesterov;
    opt.weightDecay = weightDecay;
    opt.beta1 = beta1;
    opt.beta2 = beta2;
    opt.eps = eps;
    opt.larsEta = larsEta;
    opt.decayRate = decayRate;
    opt.clipThreshold = clipThreshold;
    opt.schedule = schedule;
    opt.warmupSteps = warmupSteps;
    opt.totalSteps = totalSteps;
    opt.minLrRatio = minLrRatio;
    opt.batchSize = baseBatchSize > 0 ? batchSize.getValue() : 0;
    opt.baseBatchSize = baseBatchSize;
    opt.clipNorm = clipGradNorm;
    opt.lossScale = options.lossScale.scale;
    opt.lossScaleGrowthInterval = lossScaleInterval;
    opt.lossScaleGrowth = lossScaleGrowth;
    opt.lossScaleBackoff = lossScaleBackoff;
    opt.stateType = optimizerState;
    opt.int8MinElements = optimizerStateMinElements;
    // 1-bit Adam freezes the variance after its warm-up.
    if (std::optional<tessera::GradientCompression> c =
            tessera::GradientCompression::parse(compressionSpec());
        c && c->kind == tessera::GradientCompression::Kind::OneBit)
      opt.freezeVarianceAfter = c->warmup;
    // The step reports its learning rate and gradient norm; a pipeline's
    // stage programs do not yet (each would report its own copy).
    opt.metrics = pipelineParallel == 0;
    if (baseBatchSize > 0 && batchSize == 0)
      return module.emitError("--base-batch-size needs --batch-size");
    options.optimizer = opt;
  }
  TimingScope passTiming = timing.nest("build the training step");
  auto runPipeline = [&](ModuleOp m) {
    PassManager pm(m.getContext());
    pm.enableTiming(passTiming);
    tessera::buildTrainingPipeline(pm, options);
    return pm.run(m);
  };
  // Under a budget that recomputing and offloading activations cannot
  // meet, --offload=auto also moves the optimizer's update and state to
  // the host, and plans the activations again on top of that.
  bool mayOffloadOptimizer = !memoryBudget.empty() && offloadPolicy == "auto" &&
                             !offloadOptimizer &&
                             offloadOptimizerRefusal().empty();
  if (!mayOffloadOptimizer) {
    if (failed(runPipeline(module)))
      return failure();
  } else {
    OwningOpRef<ModuleOp> copy(module.clone());
    // Each attempt's diagnostics, held back, and the smallest budget its
    // error names (none: it failed otherwise, or not at all).
    struct Attempt {
      std::vector<Diagnostic> held;
      std::optional<int64_t> smallest;
      LogicalResult result = failure();
    };
    auto attempt = [&](Attempt &a) {
      ScopedDiagnosticHandler hold(module.getContext(), [&](Diagnostic &d) {
        std::string message = d.str();
        StringRef text = message;
        int64_t bytes;
        if (d.getSeverity() == DiagnosticSeverity::Error &&
            text.consume_front("the step needs at least ") &&
            !text.consumeInteger(10, bytes))
          a.smallest = bytes;
        a.held.push_back(std::move(d));
        return success();
      });
      a.result = runPipeline(module);
    };
    auto release = [&](Attempt &a) {
      for (Diagnostic &d : a.held)
        module.getContext()->getDiagEngine().emit(std::move(d));
      return a.result;
    };
    Attempt devices;
    attempt(devices);
    if (succeeded(devices.result) || !devices.smallest) {
      if (failed(release(devices)))
        return failure();
    } else {
      Attempt host;
      options.offloadOptimizer = true;
      module.getBody()->getOperations().clear();
      module.getBody()->getOperations().splice(
          module.getBody()->end(), copy->getBody()->getOperations());
      module->setAttrs((*copy)->getAttrDictionary());
      attempt(host);
      if (failed(host.result)) {
        // The error that names the smaller budget.
        if (!host.smallest || *host.smallest >= *devices.smallest) {
          (void)release(devices);
          return failure();
        }
        for (Diagnostic &d : host.held)
          if (d.getSeverity() == DiagnosticSeverity::Error)
            d.attachNote() << "with the optimizer's update and state on the "
                              "host (ZeRO-Offload; "
                           << *devices.smallest << " bytes without)";
        (void)release(host);
        return failure();
      }
      (void)release(host);
      llvm::errs() << "tessera-compile: --memory-budget: recomputing and "
                      "offloading activations cannot meet it; the "
                      "optimizer's update and state move to the host "
                      "(ZeRO-Offload)\n";
    }
  }

  tessera::TrainingManifest train;
  train.onnxPath = inputFile;
  train.microBatches = microBatches;
  train.hparams = describeHparams();
  train.dataParallel = std::max<int64_t>(dataParallel, 1);
  func::FuncOp step = findStep(module);
  SmallVector<unsigned> data, labels;
  collectBatchInputs(step, data, labels, train.batchSize);
  if (lossKind == "cross_entropy" && labels.size() == 1) {
    // The classes are the last dimension of the logits, which the loss
    // moved to dimension 1; the label's shape drops it.
    module.walk([&](tsr::SoftmaxCrossEntropyLossOp sce) {
      train.numClasses =
          cast<RankedTensorType>(sce.getScores().getType()).getDimSize(1);
      if (auto ignore = sce.getIgnoreIndex())
        train.ignoreIndex = *ignore;
    });
    auto nameOf = [&](unsigned i) {
      return step.getArgAttrOfType<StringAttr>(i, tsr::attr::kName).str();
    };
    auto labelType = cast<RankedTensorType>(step.getArgumentTypes()[labels[0]]);
    if (data.size() == 1 && labelType.getRank() == 2) {
      auto dataType = cast<RankedTensorType>(step.getArgumentTypes()[data[0]]);
      if (isa<IntegerType>(dataType.getElementType()) &&
          dataType.getShape() == labelType.getShape()) {
        train.tokensInput = nameOf(data[0]);
        train.tokensLabel = nameOf(labels[0]);
      }
    }
  }
  return train;
}

/// Adds the program "eval" to `module` for --eval: `model` imported again
/// with this rank's whole batch (`batch`), the loss appended as the step's
/// was, dropout turned off and BatchNormalization on its running statistics
/// (PyTorch's model.eval()). Every input it takes is an input of the step
/// `step` of the same name and type, which the runtime binds it to.
static LogicalResult addEvalProgram(ModuleOp module, func::FuncOp step,
                                    const tessera::OnnxImportOptions &import,
                                    int64_t batch, TimingScope &timing) {
  TimingScope evalTiming = timing.nest("build the evaluation program");
  MLIRContext *context = module.getContext();
  tessera::OnnxImportOptions options = import;
  options.batchSize = batch;
  options.moeStatistics = false;
  options.updateStatistics = false;
  options.runningBatchNorm = true;
  OwningOpRef<ModuleOp> evalModule =
      tessera::importOnnxModel(*context, inputFile, options);
  if (!evalModule)
    return failure();
  PassManager pm(context);
  pm.enableTiming(evalTiming);
  pm.addPass(tessera::createTsrAppendLoss(tessera::TsrAppendLossOptions{
      lossKind, logitsName, labelsName, lossOutput, ignoreIndex}));
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  if (failed(pm.run(*evalModule)))
    return failure();
  func::FuncOp eval;
  for (auto f : evalModule->getOps<func::FuncOp>())
    if (f.isPublic())
      eval = f;
  // Evaluation sees every unit: an inference-mode dropout.
  eval.walk([](tsr::DropoutOp op) {
    if (op.getMask().use_empty()) {
      op.getResult().replaceAllUsesWith(op.getX());
      op.erase();
    }
  });
  if (!eval.getOps<tsr::DropoutOp>().empty())
    return eval.emitError("--eval: a dropout's mask is used; the evaluation "
                          "program cannot turn it off");
  for (unsigned i = 0, e = eval.getNumArguments(); i < e; ++i) {
    StringRef name = tessera::getArgString(eval, i, tsr::attr::kName);
    bool found = false;
    for (unsigned j = 0, n = step.getNumArguments(); j < n && !found; ++j)
      found = tessera::getArgString(step, j, tsr::attr::kName) == name &&
              step.getArgument(j).getType() == eval.getArgument(i).getType();
    if (!found)
      return eval.emitError("--eval: the evaluation program takes '")
             << name << "' (" << eval.getArgument(i).getType()
             << "), which the training step does not take as it is (with "
                "--mesh tp/pp/ep or --zero=3 the step holds parts of the "
                "parameters)";
  }
  func::FuncOp clone = eval.clone();
  clone.setSymName("eval");
  if (SymbolTable(module).lookup("eval"))
    return step.emitError("--eval: the module already has a function @eval");
  module.push_back(clone);
  if (!module->hasAttr(tsr::attr::kSchedule))
    module->setAttr(tsr::attr::kSchedule,
                    ArrayAttr::get(context, {FlatSymbolRefAttr::get(
                                                step.getSymNameAttr())}));
  return success();
}

static int64_t tensorBytes(const tessera::ArtifactTensor &t) {
  int64_t elements = 1;
  for (int64_t d : t.shape)
    elements *= d;
  int64_t width = t.dtype == "bool" || t.dtype.find("8") != std::string::npos
                      ? 1
                  : t.dtype.find("16") != std::string::npos ? 2
                  : t.dtype.find("64") != std::string::npos ? 8
                                                            : 4;
  return elements * width;
}

/// Whether output `t` of `program` is a parameter trained by gradient (or
/// the gradient itself, in grad mode).
static bool isTrained(const tessera::ArtifactProgram &program,
                      const tessera::ArtifactTensor &t) {
  return t.role == "grad" || (t.role == "param" && t.updates &&
                              !program.inputs[*t.updates].statistics);
}

/// The parameters a training step updates by gradient: their count and
/// their number of values.
static std::pair<int64_t, int64_t>
countTrained(const tessera::ArtifactSignature &sig) {
  int64_t count = 0, values = 0;
  // With the update on the host, the step's gradients are that update's
  // inputs: its parameter outputs count each parameter once.
  bool hostUpdate = llvm::any_of(
      sig.programs, [](const tessera::ArtifactProgram &p) { return p.onHost; });
  for (const auto &program : sig.programs) {
    for (const auto &t : program.outputs) {
      if (!isTrained(program, t) || (hostUpdate && t.role == "grad"))
        continue;
      ++count;
      int64_t n = 1;
      for (int64_t d : t.globalShape.empty() ? ArrayRef<int64_t>(t.shape)
                                             : ArrayRef<int64_t>(t.globalShape))
        n *= d;
      values += n;
    }
  }
  return {count, values};
}

/// What training updates and what it leaves frozen, in one line (at most
/// `named` frozen initializers named; all of them with a negative value).
static void printTrainedSummary(const tessera::ArtifactSignature &sig,
                                int64_t named) {
  auto [count, values] = countTrained(sig);
  llvm::errs() << "tessera-compile: training " << count << " parameter"
               << (count == 1 ? "" : "s") << " (" << values << " values)";
  if (!sig.frozen.empty())
    llvm::errs() << "; " << sig.frozen.size() << " initializer"
                 << (sig.frozen.size() == 1 ? "" : "s") << " frozen: ";
  for (auto [i, entry] : llvm::enumerate(sig.frozen)) {
    if (named >= 0 && int64_t(i) == named) {
      llvm::errs() << " and " << sig.frozen.size() - i
                   << " more (--report lists them)";
      break;
    }
    llvm::errs() << (i ? ", " : "") << entry.first << " (" << entry.second
                 << ")";
  }
  llvm::errs() << "\n";
}

/// The rest of the compile summary, after printTrainedSummary's line: the
/// batch inputs, the hyperparameters the manifest records, the mesh and
/// the predicted peak.
static void printStepSummary(const tessera::ArtifactSignature &sig,
                             const tessera::TrainingManifest &train) {
  llvm::raw_ostream &os = llvm::errs();
  SmallVector<std::string> batch;
  // Inputs that an earlier call produces (a multi-program step's
  // activations) are bound by the schedule, not fed from the data.
  std::set<std::string> seen;
  for (const auto &program : sig.programs)
    for (const auto &t : program.outputs)
      seen.insert(t.name);
  int64_t peak = 0;
  for (const auto &program : sig.programs) {
    // A host program's allocations are in host memory.
    if (!program.onHost)
      peak = std::max(peak, program.predictedPeakBytes);
    for (const auto &t : program.inputs) {
      bool fed = t.role.empty() || t.role == "data" || t.role == "label";
      if (!fed || !seen.insert(t.name).second)
        continue;
      std::string shape;
      for (auto [i, d] : llvm::enumerate(t.shape))
        shape += (i ? ", " : "") + std::to_string(d);
      batch.push_back(t.name + " " + t.dtype + "[" + shape + "]" +
                      (t.role == "label" ? " (label)" : ""));
    }
  }
  os << "  batch (one rank): " << llvm::join(batch, ", ") << "\n";
  SmallVector<std::string> hparams;
  for (const auto &[name, value] : train.hparams)
    hparams.push_back(name + "=" + value);
  if (!hparams.empty())
    os << "  hyperparameters: " << llvm::join(hparams, " ") << "\n";
  if (!sig.mesh.empty()) {
    SmallVector<std::string> axes;
    for (const auto &[name, size] : sig.mesh)
      axes.push_back(name + "=" + std::to_string(size));
    os << "  mesh: " << llvm::join(axes, ",");
    if (sig.zero)
      os << ", ZeRO-" << *sig.zero;
    if (const auto &ps = sig.parameterServer) {
      os << "; " << ps->servers << " parameter server"
         << (ps->servers == 1 ? "" : "s") << " (ranks after the workers), "
         << (ps->staleness < 0
                 ? "bulk-synchronous"
                 : "asynchronous, staleness " + std::to_string(ps->staleness))
         << ", holding "
         << llvm::join(
                llvm::map_range(ps->heldBytes,
                                [](int64_t b) { return std::to_string(b); }),
                " + ")
         << " bytes";
    }
    os << "\n";
  }
  for (const auto &program : sig.programs) {
    if (!program.onHost)
      continue;
    int64_t state = 0, grads = 0, params = 0;
    for (const auto &t : program.inputs)
      (t.role == "state"  ? state
       : t.role == "grad" ? grads
                          : params) += tensorBytes(t);
    os << llvm::formatv(
        "  optimizer on the host (ZeRO-Offload): @{0} keeps {1} bytes of "
        "parameters and {2} bytes of optimizer state in host memory, and "
        "peaks at {3} bytes there; a step copies {4} bytes of gradients to "
        "it and {1} bytes of parameters back\n",
        program.name, params, state, program.predictedPeakBytes, grads);
  }
  os << llvm::formatv("  predicted peak per rank: {0} bytes ({1:f1} MiB); "
                      "--explain has the collectives, --report every "
                      "decision\n",
                      peak, double(peak) / (1024.0 * 1024.0));
}

/// Every collective of the step, in program order, with why it is there.
/// The pipeline's stages: what each holds, its schedule and what the cost
/// model predicts for it.
static void printPipeline(const tessera::ArtifactSignature &sig) {
  for (const auto &program : sig.programs) {
    if (!program.pipeline)
      continue;
    const tessera::ArtifactPipelineStage &s = *program.pipeline;
    if (s.stage == 0)
      llvm::outs() << llvm::formatv(
          "pipeline, --schedule={0} with {1} micro-batches{2} (cost model: "
          "step {3:f2} us):\n",
          s.schedule, s.microBatches,
          s.virtualStages > 1
              ? llvm::formatv(", {0} model chunks per stage", s.virtualStages)
                    .str()
              : std::string(),
          s.stepSeconds * 1e6);
    int64_t params = 0, values = 0;
    for (const auto &t : program.inputs)
      if (t.role == "param") {
        ++params;
        int64_t n = 1;
        if (t.globalShape.empty())
          for (int64_t d : t.shape)
            n *= d;
        else
          for (int64_t d : t.globalShape)
            n *= d;
        values += n;
      }
    llvm::outs() << llvm::formatv(
        "  stage {0} (@{1}): {2} parameters ({3} values); per micro-batch "
        "forward {4:f2} us, backward {5:f2} us; bubble {6:f1}%, {7} "
        "in flight at most {8} ({9} bytes of activations)\n    {10}\n",
        s.stage, program.name, params, values, s.forwardSeconds * 1e6,
        s.backwardSeconds * 1e6, s.bubble * 100,
        s.virtualStages > 1 ? "chunk-micro-batches" : "micro-batches",
        s.peakInFlight, s.peakActivationBytes, llvm::join(s.actions, " "));
  }
}

static void printExplanation(const tessera::ArtifactSignature &sig) {
  if (!sig.precision.empty()) {
    llvm::outs() << "precision " << sig.precision << ", each op's compute "
                 << "type (" << sig.precisionDecisions.size() << "):\n";
    for (const auto &d : sig.precisionDecisions) {
      llvm::outs() << "  " << d.type << " " << d.op;
      if (!d.node.empty())
        llvm::outs() << ", node '" << d.node << "'";
      llvm::outs() << ": " << d.reason << "\n";
    }
  }
  // The optimizer's moments, when --optimizer-state stores them in another
  // type than the parameters'.
  if (optimizerState != "fp32")
    for (const auto &program : sig.programs) {
      SmallVector<const tessera::ArtifactTensor *> states;
      for (const auto &t : program.inputs)
        if (t.role == "state" && t.dtype != "int64")
          states.push_back(&t);
      llvm::outs() << "optimizer state, --optimizer-state=" << optimizerState
                   << " (" << states.size() << "):\n";
      for (const auto *t : states)
        llvm::outs() << "  " << t->dtype << " " << t->name
                     << (t->reason.empty() ? "" : ": " + t->reason) << "\n";
    }
  printPipeline(sig);
  if (sig.compression)
    llvm::outs() << llvm::formatv(
        "gradient compression {0}: the compressed gradients cost {1} bytes "
        "per rank and step, against {2} for all-reducing them ({3:f1}x "
        "fewer)\n",
        sig.compression->method, int64_t(sig.compression->sentBytes),
        int64_t(sig.compression->denseBytes),
        sig.compression->denseBytes /
            std::max(1.0, sig.compression->sentBytes));
  if (sig.localSGD) {
    const tessera::ArtifactLocalSGD &local = *sig.localSGD;
    double perStep = local.averageBytes / double(local.steps);
    llvm::outs() << llvm::formatv(
        "local SGD every {0} steps: one average of the parameters and "
        "optimizer state costs {1} bytes per rank, {2} per step, against {3} "
        "per step for all-reducing the gradients ({4:f1}x fewer)\n",
        local.steps, int64_t(local.averageBytes), int64_t(perStep),
        int64_t(local.gradientBytes),
        local.gradientBytes / std::max(1.0, perStep));
  }
  llvm::outs() << "collectives of one step, in program order ("
               << sig.collectives.size() << "):\n";
  for (auto [i, c] : llvm::enumerate(sig.collectives)) {
    llvm::outs() << llvm::formatv("  #{0} {1} over {2}, {3} bytes per rank, "
                                  "{4}",
                                  i, c.kind, llvm::join(c.axes, ","),
                                  int64_t(c.bytes),
                                  c.backward ? "backward" : "forward");
    if (!c.node.empty())
      llvm::outs() << ", node '" << c.node << "'";
    llvm::outs() << ": ";
    if (!c.reason.empty())
      llvm::outs() << c.reason;
    else if (c.bucket)
      llvm::outs() << "data-parallel gradient bucket " << *c.bucket << " ("
                   << llvm::join(c.serves, ", ") << ")";
    else
      llvm::outs() << "serves " << llvm::join(c.serves, ", ");
    llvm::outs() << "\n";
  }
}

/// The static footprint of one call of each program, from the manifest's
/// roles and the memory plan of the lowered function.
static void printReport(const tessera::ArtifactSignature &sig) {
  for (const auto &program : sig.programs) {
    int64_t params = 0, state = 0, batch = 0, grads = 0, outputs = 0;
    // A parameter server's or a host program's update takes gradients.
    int64_t gradInputs = 0;
    for (const auto &t : program.inputs) {
      if (t.role == "param")
        params += tensorBytes(t);
      else if (t.role == "state")
        state += tensorBytes(t);
      else if (t.role == "grad")
        gradInputs += tensorBytes(t);
      else
        batch += tensorBytes(t);
    }
    for (const auto &t : program.outputs) {
      // An in-place output is its input's buffer.
      if (!t.inPlace)
        outputs += tensorBytes(t);
      // Every updated parameter but running statistics had a gradient; grad
      // mode returns them.
      if (isTrained(program, t))
        grads += tensorBytes(t);
    }
    int64_t peak = program.peakAllocBytes.value_or(0);
    auto row = [](const char *what, int64_t bytes, const char *note) {
      llvm::outs() << llvm::formatv("  {0,-18}{1,14}  {2}\n", what, bytes,
                                    note);
    };
    llvm::outs() << "memory footprint of one call of the " << sig.mode
                 << " function";
    if (sig.programs.size() > 1)
      llvm::outs() << " " << program.name;
    llvm::outs() << (program.onHost ? " (bytes, in host memory):\n"
                                    : " (bytes):\n");
    row("parameters", params, "inputs with role param");
    if (gradInputs)
      row("gradients", gradInputs, "inputs with role grad (the step's)");
    else
      row("gradients", grads, "one per trained parameter (inside the step)");
    row("optimizer state", state, "inputs with role state");
    row("batch", batch, "data and label inputs");
    row("outputs", outputs,
        "loss, metrics, updates not written over their input");
    row("peak activations", peak,
        "most bytes the function itself holds at once (gradients included)");
    row("predicted peak", program.predictedPeakBytes,
        "the same, predicted on tsr before lowering (lib/Analysis)");
    int64_t total = params + state + gradInputs + batch + outputs + peak;
    row("total", total, "caller's buffers plus the peak");
    // The same bytes by element type and, for the peak, by phase.
    std::map<std::string, int64_t> callers;
    for (const auto *list : {&program.inputs, &program.outputs})
      for (const auto &t : *list)
        if (!t.inPlace)
          callers[t.dtype] += tensorBytes(t);
    auto split = [](const char *what,
                    const std::map<std::string, int64_t> &bytes) {
      if (bytes.empty())
        return;
      llvm::outs() << "  " << what << ":";
      for (auto [i, entry] : llvm::enumerate(bytes))
        llvm::outs() << (i ? ", " : " ") << entry.first << " " << entry.second;
      llvm::outs() << "\n";
    };
    split("caller's buffers by type", callers);
    split("predicted peak by type", program.predictedPeakByType);
    split("predicted peak by phase", program.predictedPeakByPhase);
    // The budget is the device's; a host program's memory is the host's.
    if (!memoryBudget.empty() && !program.onHost) {
      int64_t budget = *parseBytes(memoryBudget);
      std::string note = total <= budget
                             ? llvm::formatv("--memory-budget, {0} bytes "
                                             "above the total",
                                             budget - total)
                                   .str()
                             : llvm::formatv("--memory-budget, {0} bytes "
                                             "below the total",
                                             total - budget)
                                   .str();
      row("budget", budget, note.c_str());
    }
    if (!program.remat.empty())
      llvm::outs() << "  rematerialization: " << program.remat
                   << (memoryBudget.empty()
                           ? std::string(" (--remat)")
                           : " (keep or recompute per activation, solver " +
                                 rematSolver + ", under --memory-budget=" +
                                 memoryBudget + ")")
                   << ": " << program.recomputedOps << " ops recomputed, "
                   << llvm::format("%.3f", program.recomputeFlops * 1e-9)
                   << " GFLOP, "
                   << llvm::format("%.3f", program.recomputeSeconds * 1e3)
                   << " ms by the cost model\n";
    if (program.offloadedValues)
      llvm::outs() << "  offload: " << program.offloadedValues
                   << " saved activations, " << program.offloadedBytes
                   << " bytes to host memory and back at " << hostBandwidth
                   << ": copies "
                   << llvm::format("%.3f", program.transferSeconds * 1e3)
                   << " ms, "
                   << llvm::format("%.3f", program.exposedTransferSeconds * 1e3)
                   << " ms of them not overlapped by compute (cost model)\n";
  }
  // One step calls the programs of the schedule in order.
  double compute = 0, communication = 0;
  for (const std::string &call : sig.schedule)
    for (const auto &program : sig.programs)
      if (program.name == call) {
        compute += program.computeSeconds;
        communication += program.communicationSeconds;
      }
  llvm::outs() << llvm::formatv(
      "estimated time of one step: {0:e3} s (compute {1:e3} s, "
      "communication {2:e3} s; the tsr cost model with {3})\n",
      compute + communication, compute, communication,
      clusterFile.empty() ? "the target's figures"
                          : "the figures of " + clusterFile +
                                ", the target's where it gives none");
  if (sig.mode == "infer")
    return;
  auto [count, values] = countTrained(sig);
  llvm::outs() << "trained parameters: " << count << " (" << values
               << " values)\n";
  llvm::outs() << "frozen initializers: " << sig.frozen.size() << "\n";
  for (const auto &[name, reason] : sig.frozen)
    llvm::outs() << "  " << name << ": " << reason << "\n";
}

/// The descriptions --help shows, with " (default: VALUE)" added where an
/// option has a non-empty default its description does not state.
static std::deque<std::string> helpTexts;

static void showDefault(cl::Option &option, const std::string &value) {
  if (value.empty() || option.HelpStr.contains("default"))
    return;
  helpTexts.push_back(option.HelpStr.str() + " (default: " + value + ")");
  option.setDescription(helpTexts.back());
}
static void showDefault(cl::opt<double> &o) {
  showDefault(o, shortestDecimal(o.getDefault().getValue()));
}
static void showDefault(cl::opt<int64_t> &o) {
  showDefault(o, std::to_string(o.getDefault().getValue()));
}
static void showDefault(cl::opt<std::string> &o) {
  showDefault(o, o.getDefault().hasValue() ? o.getDefault().getValue() : "");
}
template <typename... Opts> static void showDefaults(Opts &...opts) {
  (showDefault(opts), ...);
}

static cl::extrahelp examples(R"(
Examples:
  tessera-compile model.onnx -o art                                 inference on the CPU
  tessera-compile lm.onnx --mode=train --loss=cross_entropy --logits=logits \
      --batch-size=16 --optimizer=adam --lr=3e-3 --eval -o step     a training step, with validation
  tessera-compile lm.onnx --mode=train --loss=cross_entropy --logits=logits \
      --batch-size=64 --mesh dp=4 --zero=2 -o step4                 one rank of 4, ZeRO-2
  tessera-compile model.onnx --target=cuda -o gpu_art               GPU kernels (runs where a GPU is)
docs/cli.md has every option with a real example.
)");

int main(int argc, char **argv) {
  mlir::tessera::setVersionPrinter("tessera-compile");
  llvm::InitLLVM init(argc, argv);
  registerAllPasses();
  tessera::registerTesseraCPUPasses();
  tessera::registerTesseraGPUPasses();
  tessera::registerTsrToLinalgPasses();
  showDefaults(
      onnxModel, mode, targetName, emit, cpuVectorSize, cpuGemm, gpuMapping,
      gpuArch, lossKind, logitsName, labelsName, batchNormMode,
      batchNormMomentum, lossOutput, microBatches, remat, memoryBudget,
      offloadPolicy, hostBandwidth, precisionPolicy, lossScaleOpt,
      lossScaleInit, lossScaleInterval, lossScaleGrowth, lossScaleBackoff,
      rematSolver, meshSpec, pipelineSchedule, moeCapacityFactor, moeAuxLoss,
      zeroStage, bucketMiB, gradCompression, localSteps, parameterServers,
      staleness, optimizerName, optimizerState, optimizerStateMinElements, lr,
      momentum, weightDecay, beta1, beta2, eps, larsEta, decayRate,
      clipThreshold, schedule, warmupSteps, totalSteps, minLrRatio,
      baseBatchSize, clipGradNorm, timeline, memoryTimeline, clusterFile);
  // --help lists Tessera's options only; LLVM's and MLIR's stay settable.
  cl::HideUnrelatedOptions({&compileCat, &trainCat});
  cl::ParseCommandLineOptions(argc, argv, "Tessera compiler driver\n");
  printDriverOptions();

  if (mode != "infer" && mode != "grad" && mode != "train")
    return fail("--mode=" + mode +
                " is not supported (supported: infer, grad, train)");
  bool training = mode != "infer";
  if (batchSize < 0 || microBatches < 1)
    return fail("--batch-size must be positive and --micro-batches at least "
                "1");
  if (batchSize > 0 && batchSize % microBatches != 0)
    return fail("--batch-size=" + Twine(batchSize.getValue()) +
                " is not divisible by --micro-batches=" +
                Twine(microBatches.getValue()));
  if (microBatches > 1 && batchSize == 0)
    return fail("--micro-batches needs --batch-size (the global batch)");
  if (!meshSpec.empty()) {
    if (failed(parseMesh(meshSpec)))
      return fail("malformed --mesh '" + meshSpec +
                  "' (expected AXIS=N[,AXIS=N] with AXIS dp, tp, pp or ep, "
                  "each at most once, N >= 1; e.g. dp=2,tp=2)");
    if (expertParallel > 1 && pipelineParallel > 0)
      return fail("--mesh ep=" + Twine(expertParallel) +
                  " goes with dp and tp only so far (not with pp)");
    if (expertParallel > 1 && sequenceParallel)
      return fail("--sequence-parallel does not go with --mesh ep=" +
                  Twine(expertParallel) +
                  " yet (both split the tokens of the dense layers)");
    if (expertParallel > 1 && mode == "infer")
      return fail("--mesh ep=" + Twine(expertParallel) +
                  " needs --mode=grad or --mode=train");
    if (pipelineParallel > 0 && mode != "train")
      return fail("--mesh pp=" + Twine(pipelineParallel) +
                  " needs --mode=train");
    if (pipelineParallel > 0 && batchSize == 0)
      return fail("--mesh pp=" + Twine(pipelineParallel) +
                  " needs --batch-size (the global batch, split into "
                  "--micro-batches)");
    if (pipelineParallel > 0 && remat != "none")
      return fail("--remat does not go with --mesh pp yet (each stage's "
                  "backward pass keeps its activations)");
    if (pipelineParallel > 0 && zeroStage > 1)
      return fail("--zero=" + Twine(zeroStage.getValue()) +
                  " does not go with --mesh pp: ZeRO-2 and 3 would reduce "
                  "or gather every micro-batch's gradients and parameters "
                  "(use --zero=0 or 1)");
    if (tensorParallel > 1 && mode == "infer")
      return fail("--mesh tp=" + Twine(tensorParallel) +
                  " needs --mode=grad or --mode=train");
    if (dataParallel > 0 && mode != "train")
      return fail("--mesh dp=" + Twine(dataParallel) + " needs --mode=train");
    if (dataParallel > 0 && batchSize == 0)
      return fail("--mesh needs --batch-size (the global batch, split "
                  "across the dp ranks)");
    if (dataParallel > 0 && batchSize % (dataParallel * microBatches) != 0)
      return fail("--batch-size=" + Twine(batchSize.getValue()) +
                  " is not divisible by dp (" + Twine(dataParallel) +
                  ") times --micro-batches (" + Twine(microBatches.getValue()) +
                  ")");
  }
  if (pipelineParallel == 0 && (pipelineSchedule.getNumOccurrences() ||
                                virtualStages.getNumOccurrences() ||
                                !pipelineSplit.empty() || !timeline.empty()))
    return fail("--schedule, --virtual-stages, --pipeline-split and "
                "--timeline need --mesh pp=N");
  if (pipelineParallel > 0) {
    tessera::pipeline::Shape shape;
    std::string problem = tessera::pipeline::getScheduleShape(
        pipelineSchedule, pipelineParallel, virtualStages, microBatches, shape);
    if (!problem.empty())
      return fail("--schedule: " + problem);
    virtualStages = shape.virtualStages;
    if (shape.asynchronous && (dataParallel > 0 || tensorParallel > 1))
      return fail("--schedule=pipedream goes with --mesh pp=N alone so far "
                  "(its stages carry micro-batches in flight from one step "
                  "to the next as state, which dp and tp do not split yet)");
  }
  if (pipelineParallel > 0 && !memoryBudget.empty())
    return fail("--memory-budget does not go with --mesh pp yet (each "
                "stage's backward pass keeps its activations)");
  if (!memoryBudget.empty()) {
    if (!parseBytes(memoryBudget))
      return fail("malformed --memory-budget '" + memoryBudget +
                  "' (expected a positive number of bytes, optionally with "
                  "a unit: KiB, MiB, GiB, KB, MB or GB; e.g. 6GiB)");
    if (remat.getNumOccurrences() && remat != "auto")
      return fail("--memory-budget has a solver choose what to recompute; "
                  "it does not go with --remat=" +
                  remat);
    if (!training)
      return fail("--memory-budget needs --mode=grad or --mode=train");
  }
  if (remat != "none" && remat != "selective" && remat != "full" &&
      remat != "auto")
    return fail("--remat=" + remat +
                " is not a policy (none, selective, full or auto)");
  if (offloadPolicy != "auto" && offloadPolicy != "none")
    return fail("--offload=" + offloadPolicy +
                " is not an offload policy (auto or none)");
  if (!parseRate(hostBandwidth))
    return fail("malformed --host-bandwidth '" + hostBandwidth +
                "' (expected a positive number of bytes per second, "
                "optionally with a unit: KB/s, MB/s, GB/s, KiB/s, MiB/s or "
                "GiB/s; e.g. 50GB/s)");
  if ((offloadPolicy.getNumOccurrences() ||
       hostBandwidth.getNumOccurrences()) &&
      memoryBudget.empty())
    return fail("--offload and --host-bandwidth need --memory-budget");
  if (offloadOptimizer)
    if (std::string why = offloadOptimizerRefusal(); !why.empty())
      return fail("--offload-optimizer " + why);
  if (remat == "auto" && memoryBudget.empty())
    return fail("--remat=auto needs --memory-budget");
  if (rematSolver != "auto" && rematSolver != "milp" && rematSolver != "beam")
    return fail("--remat-solver=" + rematSolver +
                " is not a solver (auto, milp or beam)");
  if (rematSolver.getNumOccurrences() && memoryBudget.empty())
    return fail("--remat-solver needs --memory-budget");
  if (remat != "none" && !training)
    return fail("--remat needs --mode=grad or --mode=train");
  if (precisionPolicy != "fp32" && precisionPolicy != "bf16" &&
      precisionPolicy != "fp16")
    return fail("--precision=" + precisionPolicy +
                " is not a precision (fp32, bf16 or fp16)");
  if (!keepFp32.empty() && precisionPolicy == "fp32")
    return fail("--keep-fp32 needs --precision=bf16 or fp16");
  for (const std::string &glob : keepFp32)
    if (llvm::Error e = llvm::GlobPattern::create(glob).takeError())
      return fail("--keep-fp32 '" + glob + "': " + toString(std::move(e)));
  if (lossScaleOpt.getNumOccurrences()) {
    if (!tessera::isLossScaleSetting(lossScaleOpt))
      return fail("--loss-scale=" + lossScaleOpt +
                  " is not none, dynamic or a positive number");
    if (mode != "train")
      return fail("--loss-scale needs --mode=train (the optimizer unscales "
                  "the gradients)");
  }
  bool dynamicScale = effectiveLossScale() == "dynamic";
  for (auto *opt : {static_cast<cl::Option *>(&lossScaleInit),
                    static_cast<cl::Option *>(&lossScaleInterval),
                    static_cast<cl::Option *>(&lossScaleGrowth),
                    static_cast<cl::Option *>(&lossScaleBackoff)})
    if (opt->getNumOccurrences() && !dynamicScale)
      return fail("--" + opt->ArgStr.str() +
                  " needs dynamic loss scaling (--loss-scale=dynamic, the "
                  "default with --precision=fp16 --mode=train)");
  if (!(lossScaleInit > 0) || !std::isfinite(lossScaleInit))
    return fail("--loss-scale-init must be a positive number");
  if (lossScaleInterval < 1)
    return fail("--loss-scale-growth-interval must be at least 1");
  if (!(lossScaleGrowth >= 1))
    return fail("--loss-scale-growth must be at least 1");
  if (!(lossScaleBackoff > 0 && lossScaleBackoff < 1))
    return fail("--loss-scale-backoff must lie in (0, 1)");
  if (reduceInFp32 && (precisionPolicy == "fp32" || dataParallel == 0))
    return fail("--reduce-in-fp32 needs --precision=bf16 or fp16 and --mesh "
                "dp=N (f32 gradients are reduced in f32 already)");
  if (optimizerState != "fp32" && optimizerState != "bf16" &&
      optimizerState != "int8")
    return fail("--optimizer-state=" + optimizerState +
                " is not fp32, bf16 or int8");
  // A hyperparameter the chosen optimizer does not read would be ignored.
  {
    const std::pair<cl::Option *, std::vector<StringRef>> uses[] = {
        {&momentum, {"sgd", "lars"}},
        {&nesterov, {"sgd"}},
        {&beta1, {"adam", "adamw", "lamb"}},
        {&beta2, {"adam", "adamw", "lamb"}},
        {&eps, {"adam", "adamw", "lamb", "adafactor"}},
        {&larsEta, {"lars"}},
        {&decayRate, {"adafactor"}},
        {&clipThreshold, {"adafactor"}}};
    for (const auto &[opt, users] : uses)
      if (opt->getNumOccurrences() && mode == "train" &&
          !llvm::is_contained(users, StringRef(optimizerName)))
        return fail("--" + opt->ArgStr.str() +
                    " does not apply to --optimizer=" + optimizerName +
                    " (it is read by " + llvm::join(users, ", ") + " only)");
  }
  for (auto *opt : {static_cast<cl::Option *>(&optimizerState),
                    static_cast<cl::Option *>(&optimizerStateMinElements)})
    if (opt->getNumOccurrences() && mode != "train")
      return fail("--" + opt->ArgStr.str() +
                  " needs --mode=train (only a training step has an "
                  "optimizer)");
  if (optimizerStateMinElements.getNumOccurrences() && optimizerState != "int8")
    return fail("--optimizer-state-min-elements needs --optimizer-state=int8");
  if (optimizerStateMinElements < 0)
    return fail("--optimizer-state-min-elements must not be negative");
  if (moeCapacityFactor.getNumOccurrences() && !(moeCapacityFactor > 0))
    return fail("--moe-capacity-factor must be positive");
  if (moeAuxLoss.getNumOccurrences() && !(moeAuxLoss > 0))
    return fail("--moe-aux-loss must be positive");
  if (moeAuxLoss.getNumOccurrences() && mode == "infer")
    return fail("--moe-aux-loss needs --mode=train or --mode=grad (it adds "
                "to the training loss)");
  if (sequenceParallel && tensorParallel < 2)
    return fail("--sequence-parallel needs --mesh tp=N with N >= 2");
  if (!shardPins.empty() && tensorParallel < 2)
    return fail("--shard needs --mesh tp=N with N >= 2");
  if (zeroStage < 0 || zeroStage > 3)
    return fail("--zero=" + Twine(zeroStage.getValue()) +
                " is not a ZeRO stage (0, 1, 2 or 3)");
  if (zeroStage > 0 && dataParallel == 0)
    return fail("--zero needs --mesh dp=N");
  if (!(bucketMiB > 0))
    return fail("--bucket-mb must be positive");
  if (std::optional<tessera::GradientCompression> compression =
          tessera::GradientCompression::parse(gradCompression);
      !compression) {
    return fail("--grad-compression=" + gradCompression +
                " is not none, topk:R (0 < R <= 1, e.g. topk:0.01), "
                "qsgd:BITS[:BUCKET] (2 <= BITS <= 8, e.g. qsgd:8), "
                "powersgd:RANK (RANK >= 1, e.g. powersgd:4) or "
                "onebit[:WARMUP] (WARMUP >= 1 steps of full-precision Adam, "
                "default 100)");
  } else if (!compression->isNone()) {
    if (dataParallel == 0)
      return fail("--grad-compression needs --mesh dp=N");
    if (tensorParallel > 1 || pipelineParallel > 0 || expertParallel > 1)
      return fail("--grad-compression goes with --mesh dp=N alone so far "
                  "(not with tp, pp or ep)");
    if (compression->hasResidual() && effectiveLossScale() == "dynamic")
      return fail("--grad-compression=" + gradCompression +
                  " does not go with dynamic loss scaling "
                  "(--precision=fp16): a skipped step would still move the "
                  "error-feedback residuals; use --precision=bf16 or "
                  "--loss-scale=N");
    if (compression->kind == tessera::GradientCompression::Kind::OneBit) {
      std::string spec = "--grad-compression=" + gradCompression;
      if (StringRef(gradCompression).count(':') == 2)
        return fail(spec + ": 1-bit Adam's beta1 is --beta1's (drop the "
                           "third field)");
      if (optimizerName != "adam" && optimizerName != "adamw")
        return fail(spec +
                    " compresses Adam's momentum: it needs "
                    "--optimizer=adam or adamw, not '" +
                    optimizerName + "'");
      if (optimizerName == "adam" && weightDecay > 0)
        return fail(spec + " exchanges the momentum of the gradient alone, "
                           "and adam's weight decay adds to the gradient "
                           "before the momentum: use --optimizer=adamw");
      if (zeroStage > 0)
        return fail(spec + " exchanges the whole momentum: it needs "
                           "--zero=0");
      if (clipGradNorm > 0)
        return fail(spec + " does not go with --clip-grad-norm: clipping "
                           "would scale the update but not the exchanged "
                           "momentum");
      if (targetName == "cuda")
        return fail(spec + " is not supported with --target=cuda yet: "
                           "whether a step is in the warm-up is a branch "
                           "the host takes on a step counter in device "
                           "memory");
    }
  }
  if (localSteps < 0)
    return fail("--local-steps=" + Twine(localSteps.getValue()) +
                " is negative (0 turns local SGD off)");
  if (localSteps > 0) {
    if (dataParallel == 0)
      return fail("--local-steps needs --mesh dp=N");
    if (mode != "train")
      return fail("--local-steps needs --mode=train: it averages what the "
                  "optimizer updates");
    if (tensorParallel > 1 || pipelineParallel > 0 || expertParallel > 1)
      return fail("--local-steps goes with --mesh dp=N alone so far "
                  "(not with tp, pp or ep)");
    if (zeroStage > 0)
      return fail("--local-steps needs --zero=0: ZeRO shards the state of "
                  "an update that every rank applies alike");
    if (gradCompression != "none")
      return fail("--local-steps reduces no gradient: it does not go with "
                  "--grad-compression");
    if (targetName == "cuda")
      return fail("--local-steps is not supported with --target=cuda yet: "
                  "whether a step averages is a branch the host takes on "
                  "the step counter, which lives in device memory");
    if (effectiveLossScale() == "dynamic")
      return fail("--local-steps does not go with dynamic loss scaling "
                  "(--precision=fp16): ranks that skip steps on their own "
                  "would disagree on when to average; use --precision=bf16 "
                  "or --loss-scale=N");
  }
  if (compileEval && mode != "train")
    return fail("--eval needs --mode=train (it adds an evaluation program "
                "beside the training step)");
  if (compileEval && (tensorParallel > 1 || pipelineParallel > 0 ||
                      expertParallel > 1 || zeroStage == 3))
    return fail("--eval takes the whole parameters: it does not go with "
                "--mesh tp, pp or ep or with --zero=3 yet");
  if (psSync && psAsync)
    return fail("--ps-sync and --ps-async contradict each other: choose one");
  if ((psSync || psAsync || staleness.getNumOccurrences()) &&
      parameterServers == 0)
    return fail(Twine(psAsync  ? "--ps-async"
                      : psSync ? "--ps-sync"
                               : "--staleness") +
                " needs --ps=S (the number of parameter servers)");
  if (staleness.getNumOccurrences() && !psAsync)
    return fail("--staleness bounds asynchronous workers: it needs "
                "--ps-async (--ps-sync keeps them in lockstep)");
  if (staleness < 0)
    return fail("--staleness=" + Twine(staleness.getValue()) +
                " is negative (0 keeps the workers in lockstep)");
  if (parameterServers < 0)
    return fail("--ps=" + Twine(parameterServers.getValue()) +
                " is negative (0 turns parameter servers off)");
  if (parameterServers > 0) {
    if (dataParallel == 0)
      return fail("--ps needs --mesh dp=N (the number of workers)");
    if (mode != "train")
      return fail("--ps needs --mode=train: the servers apply the optimizer");
    if (tensorParallel > 1 || pipelineParallel > 0 || expertParallel > 1)
      return fail("--ps goes with --mesh dp=N alone so far (not with tp, pp "
                  "or ep)");
    if (zeroStage > 0)
      return fail("--ps holds the optimizer state on the servers: it does "
                  "not go with --zero");
    if (gradCompression != "none")
      return fail("--ps does not go with --grad-compression yet");
    if (localSteps > 0)
      return fail("--ps and --local-steps are two ways to train apart: "
                  "choose one");
    if (clipGradNorm > 0)
      return fail("--clip-grad-norm needs the norm over every parameter, "
                  "which --ps servers hold in parts: not supported with --ps");
    if (targetName != "cpu")
      return fail("--ps runs on --target=cpu only so far: its workers and "
                  "servers talk over MPI");
    if (effectiveLossScale() == "dynamic")
      return fail("--ps does not go with dynamic loss scaling "
                  "(--precision=fp16): a server cannot skip a step that "
                  "another applies; use --precision=bf16 or --loss-scale=N");
  }
  if (cpuVectorSize < 0)
    return fail("--cpu-vector-size=" + Twine(cpuVectorSize.getValue()) +
                " is negative (0 turns vectorization off)");
  std::unique_ptr<tessera::TargetBackend> target;
  if (gpuArch.getNumOccurrences() && targetName != "cuda")
    return fail("--gpu-arch needs --target=cuda");
  if (gpuMapping.getNumOccurrences() && targetName != "cpu")
    return fail("--gpu-mapping needs --target=cpu");
  if (gpuMapping.getNumOccurrences() && gpuMapping != "forward" &&
      gpuMapping != "reverse" && gpuMapping != "shuffle")
    return fail("--gpu-mapping=" + gpuMapping +
                " is not an order (forward, reverse or shuffle)");
  if (cpuGemm.getNumOccurrences() && targetName != "cpu")
    return fail("--cpu-gemm needs --target=cpu");
  if (cpuGemm != "onednn" && cpuGemm != "openblas")
    return fail("--cpu-gemm=" + cpuGemm +
                " is not a GEMM library (onednn or openblas)");
  if (targetName == "cpu") {
    target = tessera::createCpuTarget({cpuVectorSize, gpuMapping, cpuGemm});
  } else if (targetName == "cuda") {
    if (!tessera::isKnownGpuArch(gpuArch))
      return fail("--gpu-arch=" + gpuArch +
                  " is not a GPU architecture LLVM knows (e.g. sm_90a, "
                  "sm_80)");
    tessera::CudaTargetOptions cuda;
    cuda.arch = gpuArch;
    if (emit == "ptx")
      cuda.binaryFormat = "isa";
    target = tessera::createCudaTarget(cuda);
  } else {
    return fail("--target=" + targetName +
                " is not supported (supported: cpu, cuda)");
  }
  if (emit != "" && emit != "tsr" && emit != "llvm-dialect" && emit != "ptx")
    return fail("--emit=" + emit + " is not one of: tsr, llvm-dialect, ptx");
  if (emit == "ptx" && targetName != "cuda")
    return fail("--emit=ptx needs --target=cuda");
  if (emit.empty() && outputDir.empty())
    return fail("no output directory: give -o ART");
  llvm::Expected<tessera::ClusterSpec> cluster = readCluster();
  if (!cluster)
    return fail(llvm::toString(cluster.takeError()));

  tessera::OnnxImportOptions importOptions;
  importOptions.initializersAsParams = training;
  importOptions.moeCapacityFactor = moeCapacityFactor;
  importOptions.moeAuxLoss = moeAuxLoss;
  importOptions.moeStatistics = mode == "train";
  importOptions.updateStatistics = mode == "train" && batchNormMode == "batch";
  importOptions.runningBatchNorm =
      mode == "train" && batchNormMode == "running";
  if (training)
    importOptions.batchSize =
        batchSize / (microBatches * std::max<int64_t>(dataParallel, 1));
  for (const std::string &spec : inputShapes)
    if (failed(tessera::addInputShapeSpec(spec, importOptions)))
      return fail("malformed --input-shape '" + spec +
                  "' (expected NAME=DxDx..., e.g. x=1x3x224x224)");

  DialectRegistry registry;
  registerAllDialects(registry);
  registerAllExtensions(registry);
  // The CUDA target's kernels go through LLVM IR inside the pipeline.
  registerAllToLLVMIRTranslations(registry);
  registry
      .insert<tsr::TsrDialect, tsrt::TsrtDialect, onnx_generic::OnnxDialect>();
  tessera::registerGradientRules(registry);
  mlir::tessera::registerShardingRules(registry);
  tsrt::registerBufferizableOpInterfaceExternalModels(registry);
  tsr::registerBufferizableOpInterfaceExternalModels(registry);
  MLIRContext context(registry);
  // Diagnostics name the model and the node; a dump of the IR is noise.
  context.printOpOnDiagnostic(false);
  context.loadAllAvailableDialects();
  // One `error:` line per diagnostic, notes indented under it.
  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);

  // A .mlir module is already in tsr form: compiled as it is, its roles
  // deciding the mode.
  bool tsrModule = StringRef(inputFile).ends_with(".mlir");
  if (tsrModule && mode.getNumOccurrences())
    return fail("--mode applies to ONNX models; " + inputFile +
                " is compiled as it is (its roles decide the mode)");
  if (!tsrModule && !onnxModel.empty())
    return fail("--onnx applies to .mlir modules only");
  // --timing: wall and CPU time of each stage and pass, printed at exit.
  DefaultTimingManager timingManager;
  timingManager.setEnabled(timingReport);
  timingManager.setDisplayMode(DefaultTimingManager::DisplayMode::Tree);
  TimingScope timing = timingManager.getRootScope();
  TimingScope importTiming =
      timing.nest(tsrModule ? "parse the module" : "import ONNX");
  OwningOpRef<ModuleOp> module =
      tsrModule ? parseSourceFile<ModuleOp>(inputFile, sourceMgr, &context)
                : tessera::importOnnxModel(context, inputFile, importOptions);
  if (!module)
    return 1;
  importTiming.stop();
  if ((moeCapacityFactor.getNumOccurrences() ||
       moeAuxLoss.getNumOccurrences()) &&
      !tsrModule) {
    bool hasMoe = false;
    module->walk([&](tsr::MoeAssignOp) { hasMoe = true; });
    if (!hasMoe)
      return fail(Twine("--") +
                  (moeAuxLoss.getNumOccurrences() ? "moe-aux-loss"
                                                  : "moe-capacity-factor") +
                  ": " + inputFile + " has no com.microsoft MoE node");
  }
  if (!meshAxes.empty() && !tsrModule) {
    SmallVector<StringAttr> names;
    SmallVector<int64_t> sizes;
    for (const auto &[name, size] : meshAxes) {
      names.push_back(StringAttr::get(&context, name));
      sizes.push_back(size);
    }
    (*module)->setAttr(tsr::attr::kMesh,
                       tsr::MeshAttr::get(&context, names, sizes));
  }
  std::optional<tessera::TrainingManifest> train;
  bool updates = false;
  if (tsrModule)
    module->walk([&](func::FuncOp f) {
      for (unsigned i = 0, e = f.getNumResults(); i < e; ++i)
        updates |= bool(f.getResultAttr(i, tsr::attr::kUpdates));
    });
  if (updates) {
    FailureOr<tessera::TrainingManifest> described =
        describeTrainingModule(*module);
    if (failed(described))
      return 1;
    train = *described;
  } else if (training) {
    FailureOr<tessera::TrainingManifest> built = buildTraining(
        *module, cluster->getCostParameters(target->getCostParameters()),
        timing);
    if (failed(built))
      return 1;
    train = *built;
    if (compileEval) {
      if (failed(addEvalProgram(*module, findStep(*module), importOptions,
                                batchSize / std::max<int64_t>(dataParallel, 1),
                                timing)))
        return 1;
      train->evalProgram = "eval";
    }
  } else if (precisionPolicy != "fp32") {
    if (tsrModule)
      return fail("--precision applies to ONNX models; " + inputFile +
                  " is compiled as it is");
    PassManager pm(&context);
    TimingScope passTiming = timing.nest("lower precision");
    pm.enableTiming(passTiming);
    tessera::TsrPrecisionPlanOptions precision;
    precision.precision = precisionPolicy;
    precision.keepFp32.assign(keepFp32.begin(), keepFp32.end());
    tessera::buildPrecisionPipeline(pm, precision);
    if (failed(pm.run(*module)))
      return 1;
  }
  // An inference program's repeated layers (a training step's were found
  // before autodiff and outlined with the step).
  if (foldLayers && !training && !tsrModule) {
    PassManager pm(&context);
    TimingScope passTiming = timing.nest("fold repeated layers");
    pm.enableTiming(passTiming);
    pm.addPass(tessera::createTsrLayerPlan());
    pm.addPass(tessera::createTsrOutlineLayers());
    if (failed(pm.run(*module)))
      return 1;
  }
  if (emit == "tsr") {
    module->print(llvm::outs());
    return 0;
  }
  if (emit == "llvm-dialect") {
    if (failed(tessera::lowerModel(*module, *target, *cluster)))
      return 1;
    module->print(llvm::outs());
    return 0;
  }
  if (emit == "ptx") {
    if (failed(tessera::lowerModel(*module, *target, *cluster)))
      return 1;
    // The PTX for --gpu-arch (the first object; a second is the family's).
    module->walk([](gpu::BinaryOp binary) {
      llvm::outs() << cast<gpu::ObjectAttr>(binary.getObjects()[0])
                          .getObject()
                          .getValue();
    });
    return 0;
  }
  tessera::ArtifactSignature sig;
  if (failed(tessera::compileToArtifact(*module, *target, outputDir,
                                        train ? &*train : nullptr, &sig,
                                        *cluster, &timing)))
    return 1;
  if (!timeline.empty()) {
    std::error_code ec;
    llvm::raw_fd_ostream file(timeline, ec);
    if (ec)
      return fail(timeline + ": cannot write: " + ec.message());
    file << tessera_compile::renderTimelineSvg(sig);
  }
  if (!memoryTimeline.empty()) {
    std::error_code ec;
    llvm::raw_fd_ostream file(memoryTimeline, ec);
    if (ec)
      return fail(memoryTimeline + ": cannot write: " + ec.message());
    file << tessera_compile::renderMemoryTimelineSvg(
        sig, memoryBudget.empty() ? 0 : *parseBytes(memoryBudget));
  }
  if (train) {
    printTrainedSummary(sig, /*named=*/report ? -1 : 8);
    printStepSummary(sig, *train);
  }
  if (report)
    printReport(sig);
  if (explain)
    printExplanation(sig);
  return 0;
}
