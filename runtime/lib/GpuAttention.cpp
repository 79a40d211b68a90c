//===- GpuAttention.cpp - Fused attention of CUDA programs, by cuDNN ------===//
//
// tsrt_gpu_attention and tsrt_gpu_attention_backward run scaled dot-product
// attention (SDPA) on the stream of the program's kernels through cuDNN's
// backend API. cuDNN is loaded with dlopen on first use (tessera_runtime
// has no link-time dependency on CUDA); a plan per shape, layout and flags
// (the operation graph, the first engine config of cuDNN's heuristics
// (mode A) whose execution plan finalizes, and a workspace from the device
// pool) is made once and kept. Calls of one plan share its workspace, so
// they must not overlap on different streams (a program queues its kernels
// and library calls on one).
//
// The graphs are the composite SDPA graphs of NVIDIA's cudnn-frontend (its
// CompositeSDPANode and CompositeSDPABackwardNode with the composite
// softmax it builds before cuDNN 9.21), as it emits them for cuDNN 9.19:
// matmuls, pointwise and reduction operations that cuDNN's runtime fusion
// engine recognizes as flash attention in every cuDNN 9 release. cuDNN's
// own SDPA_FWD and SDPA_BWD operations would be one node each, but they
// exist from 9.13.1 on only and have no causal mask attribute (9.19 has a
// block mask, no more). The forward, with S the [b, h, sq, skv] scores:
//
//   S0 = matmul(Q, Kᵀ)              S1 = S0 · scale    S2 = S1 + bias?
//   causal: r = gen_index(S2, 2), c = gen_index(S2, 3), t = (r >= c),
//           S3 = binary_select(S2, -inf, t)
//   M = max(S3) over skv            E = exp(S3 - M)   Z = sum(E) over skv
//   stats? = M + log(Z)             P = E / Z         O = matmul(P, V)
//
// and the backward, recomputing P from the forward's stats:
//
//   D = sum(dO · O) over d · 1      (softmax_sum, f32 in the workspace)
//   S = matmul(Q, Kᵀ) · scale + bias? - stats, masked as above
//   P = exp(S)                      dV = matmul(Pᵀ, dO)
//   dP = matmul(dO, Vᵀ)             dS = (dP - D) · P · scale
//   dK = matmul(dSᵀ, Q)             dQ = identity(matmul(dS, K)) (through an
//                                   f32 accumulator in the workspace)
//
// Kᵀ and Vᵀ are the buffers' own strides with the last two dimensions
// swapped; Pᵀ, dSᵀ and K (for dQ) are reshape operations. Compute is f32;
// intermediates are virtual f32 tensors, but for P, Pᵀ and dSᵀ, the matmul
// operands of the I/O type, as the fusion engine requires. The mask value
// is -inf from cuDNN 9.10 on, the lowest float before (what cudnn-frontend
// gives each). The backward's dQ accumulator needs zeroing by the caller
// before cuDNN 9.6, which the runtime cannot queue: the backward refuses
// older releases.
//
// The enumerators and attribute names are cuDNN's (cudnn_graph.h), written
// out in GpuAttention.h so that the runtime builds without cuDNN;
// runtime/test/CudnnAbiCheck.cpp checks them against the header where it
// is installed.
//
//===----------------------------------------------------------------------===//

#include "GpuAttention.h"
#include "RuntimeInternal.h"
#include "tessera-runtime/Device.h"

#include <array>
#include <cstdio>
#include <limits>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

using namespace tsr::cudnn;

namespace {

using Desc = void *;
using Dims = std::array<int64_t, 4>;

struct Library {
  int (*create)(void **);
  int (*setStream)(void *, void *);
  const char *(*getErrorString)(int);
  size_t (*getVersion)();
  int (*createDescriptor)(int, Desc *);
  int (*destroyDescriptor)(Desc);
  int (*finalize)(Desc);
  int (*setAttribute)(Desc, int, int, int64_t, const void *);
  int (*getAttribute)(Desc, int, int, int64_t, int64_t *, void *);
  int (*execute)(void *, Desc, Desc);
};

/// The most head dims cuDNN's fused attention takes (forward; backward
/// before Hopper), and the alignment the tensors promise.
constexpr int64_t kMaxHeadDim = 256, kMaxBackwardHeadDim = 128;
constexpr int64_t kAlignment = 16;

/// Everything a plan depends on: the direction, b, h, sq, skv, d, the
/// dtype, the layouts (q, k, v, o, then the backward's d_o, d_q, d_k, d_v),
/// whether stats and a bias are given, the bias's broadcast bits, the flags.
using Key =
    std::tuple<bool, int64_t, int64_t, int64_t, int64_t, int64_t, int32_t,
               std::array<int32_t, 8>, bool, bool, int32_t, int32_t>;

/// One call's arguments, checked.
struct Problem {
  bool backward = false;
  int64_t b = 0, h = 0, sq = 0, skv = 0, d = 0;
  int32_t dtype = 0;
  std::array<int32_t, 8> layouts{};
  bool stats = false, bias = false;
  int32_t biasBroadcast = 0, flags = 0;

  Key key() const {
    return {backward, b,       h,     sq,   skv,           d,
            dtype,    layouts, stats, bias, biasBroadcast, flags};
  }
  bool causal() const { return flags & TSR_ATTENTION_CAUSAL; }
  int ioType() const { return dtype == TSR_DTYPE_BFLOAT16 ? kBfloat16 : kHalf; }
};

/// One plan: every descriptor made for it (kept alive with it), the
/// execution plan, its workspace (cuDNN's, then the backward's softmax sum
/// and dQ accumulator) and the values of its by-value tensors.
struct Plan {
  std::vector<Desc> descriptors;
  Desc plan = nullptr;
  void *workspace = nullptr;
  size_t softmaxSumOffset = 0, accumulatorOffset = 0;
  float negativeInfinity = 0.0f, one = 1.0f;
};

/// The library, its handle and the plans. Never destroyed: compiled
/// programs may run during static destruction.
struct State {
  std::mutex mutex;
  std::once_flag once;
  Library lib{};
  std::string loadError;
  void *handle = nullptr;
  size_t version = 0;
  std::map<Key, Plan> plans;
};

State &state() {
  static State *instance = new State();
  return *instance;
}

void load(State &s) {
  std::string tried;
  void *dl = tsr::dlopenCudaLibrary({"libcudnn.so.9"}, "libcudnn.so.9", tried);
  if (!dl) {
    s.loadError = "no cuDNN (libcudnn):" + tried;
    return;
  }
  Library &l = s.lib;
  auto bind = [&](auto &slot, const char *name) {
    return tsr::bindSymbol(dl, "libcudnn", name, slot, s.loadError);
  };
  bool ok = bind(l.create, "cudnnCreate") &&
            bind(l.setStream, "cudnnSetStream") &&
            bind(l.getErrorString, "cudnnGetErrorString") &&
            bind(l.getVersion, "cudnnGetVersion") &&
            bind(l.createDescriptor, "cudnnBackendCreateDescriptor") &&
            bind(l.destroyDescriptor, "cudnnBackendDestroyDescriptor") &&
            bind(l.finalize, "cudnnBackendFinalize") &&
            bind(l.setAttribute, "cudnnBackendSetAttribute") &&
            bind(l.getAttribute, "cudnnBackendGetAttribute") &&
            bind(l.execute, "cudnnBackendExecute");
  if (!ok)
    return;
  s.version = l.getVersion();
  if (int status = l.create(&s.handle))
    s.loadError = std::string("cudnnCreate: ") + l.getErrorString(status);
}

/// "9.19.0" for cuDNN's version number 91900.
std::string versionName(size_t version) {
  return std::to_string(version / 10000) + "." +
         std::to_string(version / 100 % 100) + "." +
         std::to_string(version % 100);
}

/// The descriptor kinds, for messages.
const char *kindName(int kind) {
  switch (kind) {
  case kTensorDescriptor:
    return "tensor";
  case kPointwiseDescriptor:
    return "pointwise";
  case kOperationPointwiseDescriptor:
    return "pointwise operation";
  case kMatmulDescriptor:
    return "matmul";
  case kOperationMatmulDescriptor:
    return "matmul operation";
  case kReductionDescriptor:
    return "reduction";
  case kOperationReductionDescriptor:
    return "reduction operation";
  case kOperationReshapeDescriptor:
    return "reshape operation";
  case kOperationGraphDescriptor:
    return "operation graph";
  case kEngineHeurDescriptor:
    return "engine heuristics";
  case kEngineConfigDescriptor:
    return "engine config";
  case kExecutionPlanDescriptor:
    return "execution plan";
  default:
    return "variant pack";
  }
}

/// Makes the backend descriptors of one plan and keeps each in it, so that
/// a failed plan can destroy them. The first failure is kept in `error` as
/// "<call> (<descriptor kind>): <cuDNN's status>"; after it every call does
/// nothing.
class Builder {
public:
  Builder(const Library &l, Plan &plan) : l(l), plan(plan) {}

  std::string error;
  /// The graph's operations, in the order they were made.
  std::vector<Desc> ops;

  const Library &library() const { return l; }

  /// A descriptor of `kind`, kept in the plan.
  Desc make(int kind) {
    Desc d = nullptr;
    if (error.empty() && check(l.createDescriptor(kind, &d),
                               "cudnnBackendCreateDescriptor", kind)) {
      plan.descriptors.push_back(d);
      kinds[d] = kind;
    }
    return d;
  }

  void set(Desc d, int name, int type, int64_t count, const void *value) {
    if (error.empty())
      check(l.setAttribute(d, name, type, count, value),
            "cudnnBackendSetAttribute", kinds[d]);
  }

  void get(Desc d, int name, int type, int64_t capacity, int64_t *count,
           void *values) {
    if (error.empty())
      check(l.getAttribute(d, name, type, capacity, count, values),
            "cudnnBackendGetAttribute", kinds[d]);
  }

  bool finalize(Desc d) {
    return error.empty() &&
           check(l.finalize(d), "cudnnBackendFinalize", kinds[d]);
  }

  /// A finalized tensor; the non-virtual ones are the variant pack's.
  Desc tensor(int64_t uid, int type, const Dims &dims, const Dims &strides,
              bool isVirtual, bool byValue = false) {
    Desc t = make(kTensorDescriptor);
    int64_t alignment = kAlignment;
    set(t, kTensorUniqueId, kTypeInt64, 1, &uid);
    set(t, kTensorDataType, kTypeDataType, 1, &type);
    set(t, kTensorDimensions, kTypeInt64, 4, dims.data());
    set(t, kTensorStrides, kTypeInt64, 4, strides.data());
    set(t, kTensorByteAlignment, kTypeInt64, 1, &alignment);
    set(t, kTensorIsVirtual, kTypeBoolean, 1, &isVirtual);
    if (byValue)
      set(t, kTensorIsByValue, kTypeBoolean, 1, &byValue);
    finalize(t);
    return t;
  }

  /// A virtual tensor with `strides`, else dense row-major ones.
  Desc intermediate(int type, const Dims &dims, const Dims *strides = nullptr) {
    Dims dense = {dims[1] * dims[2] * dims[3], dims[2] * dims[3], dims[3], 1};
    return tensor(nextVirtual++, type, dims, strides ? *strides : dense, true);
  }

  /// A one-element f32 tensor: in device memory, or by value (the variant
  /// pack points at a host copy).
  Desc scalar(int64_t uid, bool byValue) {
    return tensor(uid, kFloat, {1, 1, 1, 1}, {1, 1, 1, 1}, false, byValue);
  }

  /// y = mode(x, b, t), computed in `precision`; `axis` for gen_index.
  void pointwise(int mode, Desc x, Desc b, Desc y, Desc t = nullptr,
                 int precision = kFloat, int64_t axis = 0) {
    Desc pw = make(kPointwiseDescriptor);
    set(pw, kPointwiseMode, kTypePointwiseMode, 1, &mode);
    set(pw, kPointwiseMathPrec, kTypeDataType, 1, &precision);
    if (mode == kGenIndex)
      set(pw, kPointwiseAxis, kTypeInt64, 1, &axis);
    finalize(pw);
    Desc op = make(kOperationPointwiseDescriptor);
    set(op, kPointwiseOpDescriptor, kTypeDescriptor, 1, &pw);
    set(op, kPointwiseOpX, kTypeDescriptor, 1, &x);
    if (b)
      set(op, kPointwiseOpB, kTypeDescriptor, 1, &b);
    if (t)
      set(op, kPointwiseOpT, kTypeDescriptor, 1, &t);
    set(op, kPointwiseOpY, kTypeDescriptor, 1, &y);
    addOp(op);
  }

  /// c = a·b over the last two dimensions, in f32.
  void matmul(Desc a, Desc b, Desc c) {
    Desc mm = make(kMatmulDescriptor);
    int compute = kFloat;
    set(mm, kMatmulCompType, kTypeDataType, 1, &compute);
    finalize(mm);
    Desc op = make(kOperationMatmulDescriptor);
    set(op, kMatmulOpDescriptor, kTypeDescriptor, 1, &mm);
    set(op, kMatmulOpA, kTypeDescriptor, 1, &a);
    set(op, kMatmulOpB, kTypeDescriptor, 1, &b);
    set(op, kMatmulOpC, kTypeDescriptor, 1, &c);
    addOp(op);
  }

  /// y = `reduction` of x over the dimensions where y has size 1, in f32.
  void reduction(int reduction, Desc x, Desc y) {
    Desc red = make(kReductionDescriptor);
    int compute = kFloat;
    set(red, kReductionOperator, kTypeReductionOperator, 1, &reduction);
    set(red, kReductionCompType, kTypeDataType, 1, &compute);
    finalize(red);
    Desc op = make(kOperationReductionDescriptor);
    set(op, kReductionOpDescriptor, kTypeDescriptor, 1, &red);
    set(op, kReductionOpX, kTypeDescriptor, 1, &x);
    set(op, kReductionOpY, kTypeDescriptor, 1, &y);
    addOp(op);
  }

  /// y = x seen with y's dimensions and strides.
  void reshape(Desc x, Desc y) {
    Desc op = make(kOperationReshapeDescriptor);
    set(op, kReshapeOpX, kTypeDescriptor, 1, &x);
    set(op, kReshapeOpY, kTypeDescriptor, 1, &y);
    addOp(op);
  }

  /// Keeps a failed call as `error`, unless one already is.
  bool check(int status, const char *call, int kind) {
    if (status != kSuccess && error.empty())
      error = std::string(call) + " (" + kindName(kind) +
              "): " + l.getErrorString(status);
    return status == kSuccess;
  }

private:
  const Library &l;
  Plan &plan;
  std::map<Desc, int> kinds;
  int64_t nextVirtual = kFirstVirtual;

  void addOp(Desc op) {
    if (finalize(op))
      ops.push_back(op);
  }
};

/// The strides of the logical dimensions (b, h, s, d), of `sizes`, of a
/// dense buffer stored in `layout`'s order (outermost digit first).
Dims layoutStrides(int32_t layout, const Dims &sizes) {
  Dims strides{};
  int64_t stride = 1;
  for (int position = 3; position >= 0; --position) {
    int dim = (layout >> (4 * (3 - position))) & 0xf;
    strides[dim] = stride;
    stride *= sizes[dim];
  }
  return strides;
}

/// `dims` with the last two swapped: Kᵀ and Vᵀ of K's and V's buffers.
Dims swapLast(Dims dims) {
  std::swap(dims[2], dims[3]);
  return dims;
}

/// The tensors of the operands both graphs share: Q, Kᵀ, V (Vᵀ in the
/// backward), O, the scale, the bias (or null); and K's strides.
struct Operands {
  Desc q, kt, v, o, scale, bias;
  Dims kStrides;
};

Operands makeOperands(Builder &g, const Problem &p) {
  Operands t{};
  Dims qSizes = {p.b, p.h, p.sq, p.d}, kvSizes = {p.b, p.h, p.skv, p.d};
  int io = p.ioType();
  t.kStrides = layoutStrides(p.layouts[1], kvSizes);
  Dims vStrides = layoutStrides(p.layouts[2], kvSizes);
  t.q = g.tensor(kUidQ, io, qSizes, layoutStrides(p.layouts[0], qSizes), false);
  t.kt = g.tensor(kUidK, io, swapLast(kvSizes), swapLast(t.kStrides), false);
  t.v = p.backward
            ? g.tensor(kUidV, io, swapLast(kvSizes), swapLast(vStrides), false)
            : g.tensor(kUidV, io, kvSizes, vStrides, false);
  t.o = g.tensor(kUidO, io, qSizes, layoutStrides(p.layouts[3], qSizes), false);
  t.scale = g.scalar(kUidScale, false);
  if (p.bias) {
    Dims dims = {p.biasBroadcast & 1 ? 1 : p.b, p.biasBroadcast & 2 ? 1 : p.h,
                 p.sq, p.skv};
    Dims strides = {dims[1] * p.sq * p.skv, p.sq * p.skv, p.skv, 1};
    t.bias = g.tensor(kUidBias, io, dims, strides, false);
  }
  return t;
}

/// scale · Q·Kᵀ (+ bias): the scores both graphs start from.
Desc scaledScores(Builder &g, const Problem &p, const Operands &t) {
  Dims scores = {p.b, p.h, p.sq, p.skv};
  Desc product = g.intermediate(kFloat, scores);
  g.matmul(t.q, t.kt, product);
  Desc scaled = g.intermediate(kFloat, scores);
  g.pointwise(kMul, product, t.scale, scaled);
  if (!t.bias)
    return scaled;
  Desc biased = g.intermediate(kFloat, scores);
  g.pointwise(kAdd, scaled, t.bias, biased);
  return biased;
}

/// `scores` with -inf where the column is past the row (top-left causal).
Desc causalMask(Builder &g, const Problem &p, Desc scores) {
  Dims dims = {p.b, p.h, p.sq, p.skv};
  Desc row = g.intermediate(kInt32, dims);
  g.pointwise(kGenIndex, scores, nullptr, row, nullptr, kInt32, 2);
  Desc column = g.intermediate(kInt32, dims);
  g.pointwise(kGenIndex, scores, nullptr, column, nullptr, kInt32, 3);
  Desc keep = g.intermediate(kBoolean, dims);
  g.pointwise(kCmpGe, row, column, keep, nullptr, kBoolean);
  Desc masked = g.intermediate(kFloat, dims);
  g.pointwise(kBinarySelect, scores, g.scalar(kUidNegativeInfinity, true),
              masked, keep);
  return masked;
}

/// The forward graph (see the file comment).
void buildForward(Builder &g, const Problem &p) {
  Operands t = makeOperands(g, p);
  Desc scores = scaledScores(g, p, t);
  if (p.causal())
    scores = causalMask(g, p, scores);
  Dims dims = {p.b, p.h, p.sq, p.skv}, rows = {p.b, p.h, p.sq, 1};
  Desc max = g.intermediate(kFloat, rows);
  g.reduction(kReduceMax, scores, max);
  Desc shifted = g.intermediate(kFloat, dims);
  g.pointwise(kSub, scores, max, shifted);
  Desc exp = g.intermediate(kFloat, dims);
  g.pointwise(kExp, shifted, nullptr, exp);
  Desc sum = g.intermediate(kFloat, rows);
  g.reduction(kReduceAdd, exp, sum);
  if (p.stats) {
    Desc log = g.intermediate(kFloat, rows);
    g.pointwise(kLog, sum, nullptr, log);
    Desc stats =
        g.tensor(kUidStats, kFloat, rows, {p.h * p.sq, p.sq, 1, 1}, false);
    g.pointwise(kAdd, max, log, stats);
  }
  Desc probabilities = g.intermediate(p.ioType(), dims);
  g.pointwise(kDiv, exp, sum, probabilities);
  g.matmul(probabilities, t.v, t.o);
}

/// The backward graph (see the file comment).
void buildBackward(Builder &g, const Problem &p) {
  Operands t = makeOperands(g, p);
  int io = p.ioType();
  Dims qSizes = {p.b, p.h, p.sq, p.d}, kvSizes = {p.b, p.h, p.skv, p.d};
  Dims dims = {p.b, p.h, p.sq, p.skv}, rows = {p.b, p.h, p.sq, 1};
  Dims rowStrides = {p.h * p.sq, p.sq, 1, 1};
  auto operand = [&](int64_t uid, const Dims &sizes, int32_t layout) {
    return g.tensor(uid, io, sizes, layoutStrides(layout, sizes), false);
  };
  Desc dO = operand(kUidDO, qSizes, p.layouts[4]);
  Desc dQ = operand(kUidDQ, qSizes, p.layouts[5]);
  Desc dK = operand(kUidDK, kvSizes, p.layouts[6]);
  Desc dV = operand(kUidDV, kvSizes, p.layouts[7]);
  Desc stats = g.tensor(kUidStats, kFloat, rows, rowStrides, false);

  // D = rowsum(dO · O) · 1, the softmax sum, kept in the workspace.
  Desc products = g.intermediate(kFloat, qSizes);
  g.pointwise(kMul, dO, t.o, products);
  Desc rowSums = g.intermediate(kFloat, rows);
  g.reduction(kReduceAdd, products, rowSums);
  Desc softmaxSum = g.tensor(kUidSoftmaxSum, kFloat, rows, rowStrides, false);
  g.pointwise(kMul, rowSums, g.scalar(kUidOne, true), softmaxSum);

  // P = exp(scores - stats), masked; dV = Pᵀ·dO.
  Desc scores = g.intermediate(kFloat, dims);
  g.pointwise(kSub, scaledScores(g, p, t), stats, scores);
  if (p.causal())
    scores = causalMask(g, p, scores);
  Desc probabilities = g.intermediate(kFloat, dims);
  g.pointwise(kExp, scores, nullptr, probabilities);
  Dims transposed = {p.b, p.h, p.skv, p.sq};
  Dims transposedStrides = {p.h * p.sq * p.skv, p.sq * p.skv, 1, p.skv};
  Desc probabilitiesT = g.intermediate(io, transposed, &transposedStrides);
  g.reshape(probabilities, probabilitiesT);
  g.matmul(probabilitiesT, dO, dV);

  // dS = (dO·Vᵀ - D) · P · scale; dK = dSᵀ·Q.
  Desc dP = g.intermediate(kFloat, dims);
  g.matmul(dO, t.v, dP);
  Desc centered = g.intermediate(kFloat, dims);
  g.pointwise(kSub, dP, softmaxSum, centered);
  Desc unscaled = g.intermediate(kFloat, dims);
  g.pointwise(kMul, centered, probabilities, unscaled);
  Desc dS = g.intermediate(kFloat, dims);
  g.pointwise(kMul, unscaled, t.scale, dS);
  Desc dST = g.intermediate(io, transposed, &transposedStrides);
  g.reshape(dS, dST);
  g.matmul(dST, t.q, dK);

  // dQ = dS·K, accumulated in f32 in the workspace.
  Desc k = g.intermediate(io, kvSizes, &t.kStrides);
  g.reshape(t.kt, k);
  Desc accumulator = g.tensor(kUidDQAccumulator, kFloat, qSizes,
                              {p.h * p.sq * p.d, p.sq * p.d, p.d, 1}, false);
  g.matmul(dS, k, accumulator);
  g.pointwise(kIdentity, accumulator, nullptr, dQ);
}

/// Finalizes the graph of `g`'s operations, asks cuDNN's heuristics (mode
/// A) for engine configs and keeps the first whose execution plan
/// finalizes in `plan`.
void makeExecutionPlan(Builder &g, void *handle, Plan &plan) {
  Desc graph = g.make(kOperationGraphDescriptor);
  g.set(graph, kGraphHandle, kTypeHandle, 1, &handle);
  g.set(graph, kGraphOps, kTypeDescriptor, static_cast<int64_t>(g.ops.size()),
        g.ops.data());
  g.finalize(graph);
  Desc heuristics = g.make(kEngineHeurDescriptor);
  int mode = kHeurModeA;
  g.set(heuristics, kEngineHeurOperationGraph, kTypeDescriptor, 1, &graph);
  g.set(heuristics, kEngineHeurMode, kTypeHeurMode, 1, &mode);
  g.finalize(heuristics);
  int64_t count = 0;
  g.get(heuristics, kEngineHeurResults, kTypeDescriptor, 0, &count, nullptr);
  if (g.error.empty() && count <= 0)
    g.error = "cuDNN has no engine for it";
  std::vector<Desc> configs;
  for (int64_t i = 0; i < count && g.error.empty(); ++i)
    configs.push_back(g.make(kEngineConfigDescriptor));
  g.get(heuristics, kEngineHeurResults, kTypeDescriptor, count, &count,
        configs.data());
  int refusal = kSuccess;
  for (int64_t i = 0; i < count && g.error.empty(); ++i) {
    Desc candidate = g.make(kExecutionPlanDescriptor);
    g.set(candidate, kPlanHandle, kTypeHandle, 1, &handle);
    g.set(candidate, kPlanEngineConfig, kTypeDescriptor, 1, &configs[i]);
    if (!g.error.empty())
      return;
    // An engine the heuristics suggest may still refuse this graph.
    refusal = g.library().finalize(candidate);
    if (refusal == kSuccess) {
      plan.plan = candidate;
      return;
    }
  }
  if (g.error.empty())
    g.error = "no engine config of cuDNN's heuristics finalizes (the last: " +
              std::string(g.library().getErrorString(refusal)) + ")";
}

size_t roundUp(size_t bytes) { return (bytes + 255) / 256 * 256; }

/// Allocates the plan's workspace: `cudnnBytes`, then for the backward the
/// softmax sum and the dQ accumulator; "" or what failed.
std::string allocateWorkspace(const Problem &p, int64_t cudnnBytes,
                              Plan &plan) {
  size_t bytes = roundUp(static_cast<size_t>(cudnnBytes));
  if (p.backward) {
    plan.softmaxSumOffset = bytes;
    bytes += roundUp(static_cast<size_t>(p.b * p.h * p.sq) * sizeof(float));
    plan.accumulatorOffset = bytes;
    bytes +=
        roundUp(static_cast<size_t>(p.b * p.h * p.sq * p.d) * sizeof(float));
  }
  if (bytes == 0 || tsr_device_alloc(bytes, &plan.workspace) == TSR_OK)
    return "";
  return "cuDNN workspace of " + std::to_string(bytes) +
         " bytes: " + tsr_last_error();
}

/// Makes the plan of `p`; "" or what failed.
std::string makePlan(State &s, const Problem &p, Plan &plan) {
  plan.negativeInfinity = s.version < 91000
                              ? std::numeric_limits<float>::lowest()
                              : -std::numeric_limits<float>::infinity();
  Builder g(s.lib, plan);
  if (p.backward)
    buildBackward(g, p);
  else
    buildForward(g, p);
  makeExecutionPlan(g, s.handle, plan);
  int64_t bytes = 0, count = 0;
  g.get(plan.plan, kPlanWorkspaceSize, kTypeInt64, 1, &count, &bytes);
  if (!g.error.empty())
    return g.error;
  return allocateWorkspace(p, bytes, plan);
}

/// Destroys the descriptors and the workspace of a plan that failed.
void destroyPlan(const Library &l, Plan &plan) {
  for (auto it = plan.descriptors.rbegin(); it != plan.descriptors.rend(); ++it)
    l.destroyDescriptor(*it);
  tsr_device_free(plan.workspace);
  plan = Plan();
}

/// One call's data pointers, by tensor uid.
struct Pointers {
  std::vector<int64_t> uids;
  std::vector<void *> data;

  void add(int64_t uid, const void *pointer) {
    uids.push_back(uid);
    data.push_back(const_cast<void *>(pointer));
  }
};

/// Queues `plan` on `stream` with `pointers`; "" or what failed.
std::string execute(State &s, const Plan &plan, const Pointers &pointers,
                    void *stream) {
  const Library &l = s.lib;
  auto failed = [&](const char *what, int status) {
    return std::string(what) + ": " + l.getErrorString(status);
  };
  if (int status = l.setStream(s.handle, stream))
    return failed("cudnnSetStream", status);
  Desc pack = nullptr;
  if (int status = l.createDescriptor(kVariantPackDescriptor, &pack))
    return failed("cudnnBackendCreateDescriptor (variant pack)", status);
  auto count = static_cast<int64_t>(pointers.uids.size());
  const char *what = "cudnnBackendSetAttribute (variant pack)";
  int status = l.setAttribute(pack, kVariantPackUniqueIds, kTypeInt64, count,
                              pointers.uids.data());
  if (status == kSuccess)
    status = l.setAttribute(pack, kVariantPackDataPointers, kTypeVoidPtr, count,
                            pointers.data.data());
  if (status == kSuccess)
    status = l.setAttribute(pack, kVariantPackWorkspace, kTypeVoidPtr, 1,
                            &plan.workspace);
  if (status == kSuccess) {
    what = "cudnnBackendFinalize (variant pack)";
    status = l.finalize(pack);
  }
  if (status == kSuccess) {
    what = "cudnnBackendExecute";
    status = l.execute(s.handle, plan.plan, pack);
  }
  l.destroyDescriptor(pack);
  return status == kSuccess ? "" : failed(what, status);
}

/// "bfloat16 GPU attention[ backward] 2x4x16x16 (d 16)": b x h x sq x skv.
std::string describe(const Problem &p) {
  return std::string(tsr_dtype_name(static_cast<tsr_dtype_t>(p.dtype))) +
         " GPU attention " + (p.backward ? "backward " : "") +
         std::to_string(p.b) + "x" + std::to_string(p.h) + "x" +
         std::to_string(p.sq) + "x" + std::to_string(p.skv) + " (d " +
         std::to_string(p.d) + ")";
}

/// "0x0213".
std::string hex(int32_t value) {
  char text[16];
  std::snprintf(text, sizeof(text), "0x%04x", static_cast<uint32_t>(value));
  return text;
}

/// Whether `layout` is four hex digits, a permutation of 0, 1, 2, 3.
bool isLayout(int32_t layout) {
  if (layout < 0 || layout > 0xffff)
    return false;
  int seen = 0;
  for (int shift = 0; shift < 16; shift += 4)
    seen |= 1 << ((layout >> shift) & 0xf);
  return seen == 0xf;
}

/// Why cuDNN's fused attention does not take `p`, or "".
std::string checkProblem(const Problem &p) {
  if (p.dtype != TSR_DTYPE_BFLOAT16 && p.dtype != TSR_DTYPE_FLOAT16)
    return std::string("dtype ") +
           tsr_dtype_name(static_cast<tsr_dtype_t>(p.dtype)) +
           " is not one cuDNN's fused attention takes (bfloat16, float16)";
  if (p.b <= 0 || p.h <= 0 || p.sq <= 0 || p.skv <= 0 || p.d <= 0)
    return "every size must be positive";
  int64_t most = p.backward ? kMaxBackwardHeadDim : kMaxHeadDim;
  if (p.d > most || p.d % 8 != 0)
    return "head dim " + std::to_string(p.d) +
           " is not a multiple of 8 up to " + std::to_string(most) +
           ", what cuDNN's fused attention" + (p.backward ? " backward" : "") +
           " takes";
  static const char *const names[] = {"q_layout",   "k_layout",   "v_layout",
                                      "o_layout",   "d_o_layout", "d_q_layout",
                                      "d_k_layout", "d_v_layout"};
  for (size_t i = 0; i < (p.backward ? 8 : 4); ++i)
    if (!isLayout(p.layouts[i]))
      return std::string(names[i]) + " " + hex(p.layouts[i]) +
             " is not a layout code (a permutation of the hex digits 0123)";
  if (p.flags & ~TSR_ATTENTION_CAUSAL)
    return "flags " + hex(p.flags) +
           " has bits other than TSR_ATTENTION_CAUSAL";
  if (p.biasBroadcast & ~3)
    return "bias_broadcast " + hex(p.biasBroadcast) +
           " has bits other than 1 (batch) and 2 (head)";
  return "";
}

/// An operand's name, pointer and whether it may be null.
struct Operand {
  const char *name;
  const void *data;
  bool optional;
};

/// Why the operands cannot be cuDNN's (null, misaligned), or "".
std::string checkOperands(std::initializer_list<Operand> operands) {
  for (const Operand &operand : operands) {
    if (!operand.data && !operand.optional)
      return std::string(operand.name) + " is null";
    if (reinterpret_cast<uintptr_t>(operand.data) % kAlignment != 0)
      return std::string(operand.name) + " is not " +
             std::to_string(kAlignment) + "-byte aligned";
  }
  return "";
}

/// Runs the checked problem `p` with the operands' `pointers` on `stream`:
/// loads cuDNN, finds or makes its plan, adds the plan's own tensors
/// (by-value scalars, the backward's workspace tensors) and executes.
std::string run(const Problem &p, Pointers &pointers, void *stream) {
  State &s = state();
  std::call_once(s.once, [&] { load(s); });
  if (!s.loadError.empty())
    return s.loadError;
  if (p.backward && s.version < 90600)
    return "the backward needs cuDNN 9.6 or later, which zeroes its dQ "
           "accumulator; libcudnn is " +
           versionName(s.version);
  std::lock_guard<std::mutex> lock(s.mutex);
  auto it = s.plans.find(p.key());
  if (it == s.plans.end()) {
    Plan plan;
    if (std::string error = makePlan(s, p, plan); !error.empty()) {
      destroyPlan(s.lib, plan);
      return error;
    }
    it = s.plans.emplace(p.key(), plan).first;
  }
  const Plan &plan = it->second;
  if (p.causal())
    pointers.add(kUidNegativeInfinity, &plan.negativeInfinity);
  if (p.backward) {
    char *workspace = static_cast<char *>(plan.workspace);
    pointers.add(kUidOne, &plan.one);
    pointers.add(kUidSoftmaxSum, workspace + plan.softmaxSumOffset);
    pointers.add(kUidDQAccumulator, workspace + plan.accumulatorOffset);
  }
  return execute(s, plan, pointers, stream);
}

} // namespace

extern "C" TSR_API void
tsrt_gpu_attention(void *stream, int64_t b, int64_t h, int64_t sq, int64_t skv,
                   int64_t d, int32_t dtype, const void *q, int32_t q_layout,
                   const void *k, int32_t k_layout, const void *v,
                   int32_t v_layout, void *o, int32_t o_layout, float *stats,
                   const float *scale, const void *bias, int32_t bias_broadcast,
                   int32_t flags) {
  Problem p;
  p.b = b, p.h = h, p.sq = sq, p.skv = skv, p.d = d, p.dtype = dtype;
  p.layouts = {q_layout, k_layout, v_layout, o_layout};
  p.stats = stats != nullptr, p.bias = bias != nullptr;
  p.biasBroadcast = bias ? bias_broadcast : 0, p.flags = flags;
  std::string error = checkProblem(p);
  if (error.empty())
    error = checkOperands({{"q", q, false},
                           {"k", k, false},
                           {"v", v, false},
                           {"o", o, false},
                           {"stats", stats, true},
                           {"scale", scale, false},
                           {"bias", bias, true}});
  if (error.empty()) {
    Pointers pointers;
    pointers.add(kUidQ, q);
    pointers.add(kUidK, k);
    pointers.add(kUidV, v);
    pointers.add(kUidO, o);
    pointers.add(kUidScale, scale);
    if (stats)
      pointers.add(kUidStats, stats);
    if (bias)
      pointers.add(kUidBias, bias);
    error = run(p, pointers, stream);
  }
  if (!error.empty())
    tsr::noteKernelError(describe(p) + ": " + error);
}

extern "C" TSR_API void tsrt_gpu_attention_backward(
    void *stream, int64_t b, int64_t h, int64_t sq, int64_t skv, int64_t d,
    int32_t dtype, const void *q, int32_t q_layout, const void *k,
    int32_t k_layout, const void *v, int32_t v_layout, const void *o,
    int32_t o_layout, const void *d_o, int32_t d_o_layout, const float *stats,
    void *d_q, int32_t d_q_layout, void *d_k, int32_t d_k_layout, void *d_v,
    int32_t d_v_layout, const float *scale, const void *bias,
    int32_t bias_broadcast, int32_t flags) {
  Problem p;
  p.backward = true;
  p.b = b, p.h = h, p.sq = sq, p.skv = skv, p.d = d, p.dtype = dtype;
  p.layouts = {q_layout,   k_layout,   v_layout,   o_layout,
               d_o_layout, d_q_layout, d_k_layout, d_v_layout};
  p.stats = true, p.bias = bias != nullptr;
  p.biasBroadcast = bias ? bias_broadcast : 0, p.flags = flags;
  std::string error = checkProblem(p);
  if (error.empty())
    error = checkOperands({{"q", q, false},
                           {"k", k, false},
                           {"v", v, false},
                           {"o", o, false},
                           {"d_o", d_o, false},
                           {"stats", stats, false},
                           {"d_q", d_q, false},
                           {"d_k", d_k, false},
                           {"d_v", d_v, false},
                           {"scale", scale, false},
                           {"bias", bias, true}});
  if (error.empty()) {
    Pointers pointers;
    for (auto [uid, data] : {std::pair<int64_t, const void *>{kUidQ, q},
                             {kUidK, k},
                             {kUidV, v},
                             {kUidO, o},
                             {kUidDO, d_o},
                             {kUidStats, stats},
                             {kUidDQ, d_q},
                             {kUidDK, d_k},
                             {kUidDV, d_v},
                             {kUidScale, scale}})
      pointers.add(uid, data);
    if (bias)
      pointers.add(kUidBias, bias);
    error = run(p, pointers, stream);
  }
  if (!error.empty())
    tsr::noteKernelError(describe(p) + ": " + error);
}
