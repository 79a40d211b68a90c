//===- GpuGemm.cpp - Matrix products of compiled CUDA programs, by cuBLASLt
//===//
//
// tsr-gpu-gemm turns a linalg.matmul or linalg.batch_matmul of the CUDA
// target into tsrt.gpu_gemm, which calls tsrt_gpu_gemm here on the stream
// of the program's kernels. cuBLASLt is loaded with dlopen on first use
// (tessera_runtime has no link-time dependency on CUDA), and a plan per
// shape (the operation and layout descriptors and the algorithm cuBLASLt's
// heuristic picks) is made once and kept.
//
// The buffers are row-major; cuBLASLt is column-major. A row-major M x N
// product C = A·B is the column-major N x M product C' = B'·A', where X'
// is X read column-major (its transpose): so cuBLASLt's first operand is B
// (N x K, leading dimension N), its second A (K x M, leading dimension K),
// and C is N x M with leading dimension N. An operand the program gives
// transposed (the [K, M] buffer of A^T, or B's [N, K]) is the column-major
// matrix of the other shape (M x K, or K x N) with cuBLASLt's transpose
// flag set on it. Batches are strided, rows·cols elements apart.
//
// An epilogue (ReLU or GELU's tanh approximation, a bias, both) is
// cuBLASLt's: the bias of each column
// of the row-major result is the bias of each row of the column-major one,
// which is how cuBLASLt applies it (a vector as long as D's rows). A bias
// gradient is cuBLASLt's BGRAD epilogue of the swapped operand: the sum of
// the program's op(A) over k (one value per row of the result) is BGRADB,
// that of op(B) (one per column) BGRADA. cuBLASLt does not offer every
// epilogue for every shape and type: where its heuristic has no algorithm
// with a BGRAD epilogue, the product runs without it and the sum runs as a
// second product with a vector of ones (ones[1, K]·op(B), op(A)·ones[K, 1]).
//
// ReLU's backward form is DRELU, which multiplies the product by the bit
// mask that RELU_AUX(_BIAS) wrote in the forward pass (cuBLASLt's own
// format; the compiler allocates it and passes it from one to the other).
// Its leading dimension, in bits, is the column-major result's rows (the
// program's n) rounded up to 128, as cuBLASLt requires. GELU's is DGELU,
// which multiplies the product by GELU's derivative at the input that
// GELU_AUX(_BIAS) wrote (an f32 matrix; its leading dimension, in
// elements, n rounded up to 8).
//
// The types and enumerators below are cuBLASLt's (cublasLt.h, CUDA 12 and
// 13), written out in GpuGemm.h so that the runtime builds without the
// toolkit; runtime/test/CublasLtAbiCheck.cpp checks them against the header
// where it is installed.
//
//===----------------------------------------------------------------------===//

#include "GpuGemm.h"
#include "RuntimeInternal.h"
#include "tessera-runtime/Device.h"

#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

using namespace tsr::cublaslt;

namespace {

struct Library {
  int (*create)(void **);
  int (*matmulDescCreate)(void **, int, int);
  int (*matmulDescSetAttribute)(void *, int, const void *, size_t);
  int (*matmulDescDestroy)(void *);
  int (*matrixLayoutCreate)(void **, int, uint64_t, uint64_t, int64_t);
  int (*matrixLayoutSetAttribute)(void *, int, const void *, size_t);
  int (*matrixLayoutDestroy)(void *);
  int (*preferenceCreate)(void **);
  int (*preferenceSetAttribute)(void *, int, const void *, size_t);
  int (*algoGetHeuristic)(void *, void *, void *, void *, void *, void *,
                          void *, int, HeuristicResult *, int *);
  int (*matmul)(void *, void *, const void *, const void *, void *,
                const void *, void *, const void *, const void *, void *,
                void *, void *, const Algo *, void *, size_t, void *);
  const char *(*getStatusString)(int);
};

/// One shape's plan: descriptors made once, the heuristic's algorithm; or,
/// for a bias gradient that cuBLASLt has no algorithm for, none (`sum`:
/// the product and the sum run as two plain products).
struct Plan {
  void *operation = nullptr;
  void *first = nullptr, *second = nullptr, *result = nullptr;
  Algo algo{};
  size_t workspace = 0;
  bool sum = false;
};

constexpr const char *kNoAlgorithm = "cuBLASLt has no algorithm for it";

/// batch, m, n, k, dtype, transpose_a, transpose_b, epilogue.
using Shape = std::tuple<int64_t, int64_t, int64_t, int64_t, int32_t, bool,
                         bool, int32_t>;

/// cuBLASLt's epilogue for the runtime's code, or 0 for an unknown one.
int32_t cublasEpilogue(int32_t epilogue) {
  switch (epilogue) {
  case TSR_GEMM_EPILOGUE_NONE:
    return kEpilogueDefault;
  case TSR_GEMM_EPILOGUE_RELU:
    return kEpilogueRelu;
  case TSR_GEMM_EPILOGUE_BIAS:
    return kEpilogueBias;
  case TSR_GEMM_EPILOGUE_RELU_BIAS:
    return kEpilogueReluBias;
  case TSR_GEMM_EPILOGUE_RELU_AUX:
    return kEpilogueReluAux;
  case TSR_GEMM_EPILOGUE_RELU_AUX_BIAS:
    return kEpilogueReluAuxBias;
  case TSR_GEMM_EPILOGUE_DRELU:
    return kEpilogueDrelu;
  case TSR_GEMM_EPILOGUE_GELU:
    return kEpilogueGelu;
  case TSR_GEMM_EPILOGUE_GELU_BIAS:
    return kEpilogueGeluBias;
  case TSR_GEMM_EPILOGUE_GELU_AUX:
    return kEpilogueGeluAux;
  case TSR_GEMM_EPILOGUE_GELU_AUX_BIAS:
    return kEpilogueGeluAuxBias;
  case TSR_GEMM_EPILOGUE_DGELU:
    return kEpilogueDgelu;
  // cuBLASLt's first operand is the program's B, its second A.
  case TSR_GEMM_EPILOGUE_BIAS_GRAD_A:
    return kEpilogueBgradB;
  case TSR_GEMM_EPILOGUE_BIAS_GRAD_B:
    return kEpilogueBgradA;
  default:
    return 0;
  }
}

/// The library, its handle, the workspace and the plans. Never destroyed:
/// compiled programs may run during static destruction.
struct State {
  std::mutex mutex;
  std::once_flag once;
  Library lib{};
  std::string loadError;
  void *handle = nullptr;
  void *preference = nullptr;
  void *workspace = nullptr;
  std::map<Shape, Plan> plans;
  /// Device vectors of ones by dtype and length, for the sums of
  /// bias gradients cuBLASLt has no epilogue for; kept like the plans.
  std::map<std::pair<int32_t, int64_t>, void *> ones;
};

State &state() {
  static State *instance = new State();
  return *instance;
}

void load(State &s) {
  std::string tried;
  void *dl = tsr::dlopenCudaLibrary({"libcublasLt.so.13", "libcublasLt.so.12"},
                                    "libcublasLt.so", tried);
  if (!dl) {
    s.loadError = "no cuBLASLt (libcublasLt):" + tried;
    return;
  }
  Library &l = s.lib;
  auto bind = [&](auto &slot, const char *name) {
    return tsr::bindSymbol(dl, "libcublasLt", name, slot, s.loadError);
  };
  bool ok =
      bind(l.create, "cublasLtCreate") &&
      bind(l.matmulDescCreate, "cublasLtMatmulDescCreate") &&
      bind(l.matmulDescSetAttribute, "cublasLtMatmulDescSetAttribute") &&
      bind(l.matmulDescDestroy, "cublasLtMatmulDescDestroy") &&
      bind(l.matrixLayoutCreate, "cublasLtMatrixLayoutCreate") &&
      bind(l.matrixLayoutSetAttribute, "cublasLtMatrixLayoutSetAttribute") &&
      bind(l.matrixLayoutDestroy, "cublasLtMatrixLayoutDestroy") &&
      bind(l.preferenceCreate, "cublasLtMatmulPreferenceCreate") &&
      bind(l.preferenceSetAttribute, "cublasLtMatmulPreferenceSetAttribute") &&
      bind(l.algoGetHeuristic, "cublasLtMatmulAlgoGetHeuristic") &&
      bind(l.matmul, "cublasLtMatmul") &&
      bind(l.getStatusString, "cublasLtGetStatusString");
  if (!ok)
    return;
  auto check = [&](int status, const char *what) {
    if (status != kSuccess)
      s.loadError = std::string(what) + ": " + l.getStatusString(status);
    return status == kSuccess;
  };
  uint64_t limit = kWorkspaceBytes;
  if (!check(l.create(&s.handle), "cublasLtCreate") ||
      !check(l.preferenceCreate(&s.preference),
             "cublasLtMatmulPreferenceCreate") ||
      !check(l.preferenceSetAttribute(s.preference, kPrefMaxWorkspaceBytes,
                                      &limit, sizeof(limit)),
             "cublasLtMatmulPreferenceSetAttribute"))
    return;
  if (tsr_device_alloc(kWorkspaceBytes, &s.workspace) != TSR_OK)
    s.loadError = std::string("cuBLASLt workspace of ") +
                  std::to_string(kWorkspaceBytes) +
                  " bytes: " + tsr_last_error();
}

/// The column-major layout of a rows x cols matrix with `batch` copies
/// `stride` elements apart.
int makeLayout(const Library &l, void **layout, int type, int64_t rows,
               int64_t cols, int64_t batch) {
  if (int status = l.matrixLayoutCreate(layout, type, rows, cols, rows))
    return status;
  if (batch == 1)
    return kSuccess;
  int32_t count = static_cast<int32_t>(batch);
  int64_t stride = rows * cols;
  if (int status = l.matrixLayoutSetAttribute(*layout, kLayoutBatchCount,
                                              &count, sizeof(count)))
    return status;
  return l.matrixLayoutSetAttribute(*layout, kLayoutStridedBatchOffset, &stride,
                                    sizeof(stride));
}

/// Destroys the descriptors `plan` holds (of a plan that failed).
void destroyPlan(const Library &l, Plan &plan) {
  for (void *layout : {plan.first, plan.second, plan.result})
    if (layout)
      l.matrixLayoutDestroy(layout);
  if (plan.operation)
    l.matmulDescDestroy(plan.operation);
  plan = Plan();
}

bool isMasked(int32_t mode) {
  return mode == kEpilogueReluAux || mode == kEpilogueReluAuxBias ||
         mode == kEpilogueDrelu;
}

/// Whether `mode` writes or reads an aux matrix: ReLU's mask, or GELU's
/// input (an f32 matrix).
bool hasAux(int32_t mode) {
  return isMasked(mode) || mode == kEpilogueGeluAux ||
         mode == kEpilogueGeluAuxBias || mode == kEpilogueDgelu;
}

/// Makes the plan of `shape` (with `bias` and `aux`, whose alignment the
/// heuristic reads); "" or what failed.
std::string makePlan(State &s, const Shape &shape, float *bias, void *aux,
                     Plan &plan) {
  auto [batch, m, n, k, dtype, transposeA, transposeB, epilogue] = shape;
  const Library &l = s.lib;
  int input = dtype == TSR_DTYPE_BFLOAT16  ? kBf16
              : dtype == TSR_DTYPE_FLOAT16 ? kF16
                                           : kF32;
  auto status = [&](int code, const char *what) {
    return std::string(what) + ": " + l.getStatusString(code);
  };
  if (int code = l.matmulDescCreate(&plan.operation, kComputeF32, kF32))
    return status(code, "cublasLtMatmulDescCreate");
  // cuBLASLt's first operand is the program's B, its second A.
  int32_t transpose = kOpT;
  if (transposeB)
    if (int code = l.matmulDescSetAttribute(plan.operation, kDescTransA,
                                            &transpose, sizeof(transpose)))
      return status(code, "cublasLtMatmulDescSetAttribute");
  if (transposeA)
    if (int code = l.matmulDescSetAttribute(plan.operation, kDescTransB,
                                            &transpose, sizeof(transpose)))
      return status(code, "cublasLtMatmulDescSetAttribute");
  if (epilogue != kEpilogueDefault) {
    uint32_t mode = static_cast<uint32_t>(epilogue);
    if (int code = l.matmulDescSetAttribute(plan.operation, kDescEpilogue,
                                            &mode, sizeof(mode)))
      return status(code, "cublasLtMatmulDescSetAttribute (epilogue)");
  }
  if (bias)
    if (int code = l.matmulDescSetAttribute(plan.operation, kDescBiasPointer,
                                            &bias, sizeof(bias)))
      return status(code, "cublasLtMatmulDescSetAttribute (bias)");
  if (hasAux(epilogue)) {
    // The column-major result's rows, rounded up: for ReLU's mask in bits,
    // to 128, for GELU's input in elements, to 8.
    int64_t ld = isMasked(epilogue) ? (n + 127) / 128 * 128 : (n + 7) / 8 * 8;
    if (int code = l.matmulDescSetAttribute(plan.operation, kDescAuxPointer,
                                            &aux, sizeof(aux)))
      return status(code, "cublasLtMatmulDescSetAttribute (aux)");
    if (int code = l.matmulDescSetAttribute(plan.operation, kDescAuxLd, &ld,
                                            sizeof(ld)))
      return status(code, "cublasLtMatmulDescSetAttribute (aux ld)");
  }
  if (int code = transposeB ? makeLayout(l, &plan.first, input, k, n, batch)
                            : makeLayout(l, &plan.first, input, n, k, batch))
    return status(code, "cublasLtMatrixLayoutCreate");
  if (int code = transposeA ? makeLayout(l, &plan.second, input, m, k, batch)
                            : makeLayout(l, &plan.second, input, k, m, batch))
    return status(code, "cublasLtMatrixLayoutCreate");
  if (int code = makeLayout(l, &plan.result, kF32, n, m, batch))
    return status(code, "cublasLtMatrixLayoutCreate");
  HeuristicResult result{};
  int found = 0;
  if (int code = l.algoGetHeuristic(s.handle, plan.operation, plan.first,
                                    plan.second, plan.result, plan.result,
                                    s.preference, 1, &result, &found))
    return status(code, "cublasLtMatmulAlgoGetHeuristic");
  if (found == 0 || result.state != kSuccess)
    return kNoAlgorithm;
  plan.algo = result.algo;
  plan.workspace = result.workspaceSize;
  return "";
}

bool isBiasGradient(int32_t mode) {
  return mode == kEpilogueBgradA || mode == kEpilogueBgradB;
}

/// A device vector of `count` ones of `dtype`, made on first use.
void *onesVector(State &s, int32_t dtype, int64_t count, std::string &error) {
  void *&ones = s.ones[{dtype, count}];
  if (ones)
    return ones;
  size_t width = tsr_dtype_size(static_cast<tsr_dtype_t>(dtype));
  std::vector<unsigned char> host(count * width);
  // 1.0 in f32, bf16 (0x3f80) and f16 (0x3c00), little-endian.
  float one = 1.0f;
  uint16_t half = dtype == TSR_DTYPE_BFLOAT16 ? 0x3f80 : 0x3c00;
  for (int64_t i = 0; i < count; ++i)
    std::memcpy(&host[i * width],
                width == 4 ? static_cast<const void *>(&one) : &half, width);
  void *device = nullptr;
  if (tsr_device_alloc(host.size(), &device) != TSR_OK ||
      tsr_device_memcpy(device, host.data(), host.size(), nullptr) != TSR_OK) {
    tsr_device_free(device);
    error = std::string("a vector of ones for a bias gradient: ") +
            tsr_last_error();
    return nullptr;
  }
  return ones = device;
}

/// Queues the product of `shape` on `stream` with its plan, made on first
/// use; "" or what failed. Holds the state's lock.
std::string enqueue(State &s, void *stream, const Shape &shape, const void *a,
                    const void *b, float *c, bool accumulate, float *bias,
                    void *aux = nullptr) {
  auto it = s.plans.find(shape);
  if (it == s.plans.end()) {
    Plan plan;
    std::string error = makePlan(s, shape, bias, aux, plan);
    if (!error.empty()) {
      destroyPlan(s.lib, plan);
      if (error != kNoAlgorithm || !isBiasGradient(std::get<7>(shape)))
        return error;
      plan.sum = true;
    }
    it = s.plans.emplace(shape, plan).first;
  }
  const Plan &plan = it->second;
  auto [batch, m, n, k, dtype, transposeA, transposeB, mode] = shape;
  if (plan.sum) {
    // The product, then the sum over k as a product with ones.
    Shape plain{batch, m,          n,          k,
                dtype, transposeA, transposeB, kEpilogueDefault};
    if (std::string error =
            enqueue(s, stream, plain, a, b, c, accumulate, nullptr);
        !error.empty())
      return error;
    std::string error;
    void *ones = onesVector(s, dtype, k, error);
    if (!ones)
      return error;
    return mode == kEpilogueBgradB
               ? enqueue(s, stream,
                         Shape{1, m, 1, k, dtype, transposeA, false,
                               kEpilogueDefault},
                         a, ones, bias, false, nullptr)
               : enqueue(s, stream,
                         Shape{1, 1, n, k, dtype, false, transposeB,
                               kEpilogueDefault},
                         ones, b, bias, false, nullptr);
  }
  // The plan keeps the first call's bias; each call reads (or writes) its
  // own (the descriptor is read when the product is queued).
  if (bias)
    if (int code = s.lib.matmulDescSetAttribute(
            plan.operation, kDescBiasPointer, &bias, sizeof(bias)))
      return std::string("cublasLtMatmulDescSetAttribute (bias): ") +
             s.lib.getStatusString(code);
  if (aux)
    if (int code = s.lib.matmulDescSetAttribute(plan.operation, kDescAuxPointer,
                                                &aux, sizeof(aux)))
      return std::string("cublasLtMatmulDescSetAttribute (aux): ") +
             s.lib.getStatusString(code);
  float one = 1.0f, beta = accumulate ? 1.0f : 0.0f;
  if (int code =
          s.lib.matmul(s.handle, plan.operation, &one, b, plan.first, a,
                       plan.second, &beta, c, plan.result, c, plan.result,
                       &plan.algo, s.workspace, plan.workspace, stream))
    return std::string("cublasLtMatmul: ") + s.lib.getStatusString(code);
  return "";
}

} // namespace

extern "C" TSR_API void tsrt_gpu_gemm(void *stream, int64_t batch, int64_t m,
                                      int64_t n, int64_t k, const void *a,
                                      const void *b, float *c, int32_t dtype,
                                      int32_t transposeA, int32_t transposeB,
                                      int32_t accumulate, float *bias,
                                      int32_t epilogue, void *aux) {
  auto fail = [&](const std::string &what) {
    tsr::noteKernelError(
        std::string(tsr_dtype_name(static_cast<tsr_dtype_t>(dtype))) +
        " GPU matmul " + (batch > 1 ? std::to_string(batch) + " x " : "") +
        std::to_string(m) + "x" + std::to_string(k) + " by " +
        std::to_string(k) + "x" + std::to_string(n) + ": " + what);
  };
  int32_t mode = cublasEpilogue(epilogue);
  bool biased = mode == kEpilogueBias || mode == kEpilogueReluBias ||
                mode == kEpilogueReluAuxBias || mode == kEpilogueGeluBias ||
                mode == kEpilogueGeluAuxBias || isBiasGradient(mode);
  bool withAux = hasAux(mode);
  if (mode == 0 || biased != (bias != nullptr) || (biased && batch != 1))
    return fail("epilogue " + std::to_string(epilogue) +
                (bias ? " with" : " without") +
                " a bias is not one tsrt_gpu_gemm runs");
  if (withAux != (aux != nullptr) ||
      (withAux && (batch != 1 || accumulate != 0)))
    return fail("epilogue " + std::to_string(epilogue) +
                (aux ? " with" : " without") +
                " an aux matrix (or of a batch, or accumulating) is not one "
                "tsrt_gpu_gemm runs");
  State &s = state();
  std::call_once(s.once, [&] { load(s); });
  if (!s.loadError.empty())
    return fail(s.loadError);
  std::lock_guard<std::mutex> lock(s.mutex);
  Shape shape{batch, m, n, k, dtype, transposeA != 0, transposeB != 0, mode};
  if (std::string error =
          enqueue(s, stream, shape, a, b, c, accumulate != 0, bias, aux);
      !error.empty())
    fail(error);
}
