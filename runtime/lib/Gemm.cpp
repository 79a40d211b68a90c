//===- Gemm.cpp - Matrix products for compiled CPU code -------------------===//
//
// tsr-linalg-to-blas turns a bf16 x bf16 -> f32 matmul into a call of
// tsr_gemm_bf16. Debian's OpenBLAS is built without bf16 (cblas_sbgemm is
// declared, not exported); oneDNN's matmul primitive runs it with the
// AVX512-BF16 brgemm kernels where the CPU has them (docs/precision.md has
// the figures). A primitive is made once per shape and kept: oneDNN's own
// cache would hash the descriptor on every call.
//
// An f32 matmul calls tsr_gemm_f32 (unless compiled for OpenBLAS): oneDNN's
// AVX-512 sgemm took 0.5-0.9x OpenBLAS's time on every shape of the BERT-
// and GPT-2-shaped models here (docs/pipeline.md). A failure is reported
// like the others, not ignored.
//
// An f16 x f16 -> f32 matmul calls tsr_gemm_f16: no x86 CPU library here
// multiplies f16 without AVX512-FP16, so the operands are widened to f32
// (exactly) into scratch buffers kept between calls, and oneDNN's sgemm
// multiplies them.
//
//===----------------------------------------------------------------------===//

#include "Float16.h"
#include "RuntimeInternal.h"
#include "tessera-runtime/Runtime.h"

#include <oneapi/dnnl/dnnl.hpp>

#include <dlfcn.h>

#include <map>
#include <mutex>
#include <tuple>
#include <vector>

namespace {

using Shape =
    std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, bool>;

struct Gemms {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  std::mutex mutex;
  std::map<Shape, dnnl::matmul> primitives;

  dnnl::matmul &get(const Shape &shape) {
    auto it = primitives.find(shape);
    if (it != primitives.end())
      return it->second;
    auto [m, n, k, lda, ldb, ldc, accumulate] = shape;
    using dt = dnnl::memory::data_type;
    dnnl::memory::desc a({m, k}, dt::bf16, dnnl::memory::dims{lda, 1});
    dnnl::memory::desc b({k, n}, dt::bf16, dnnl::memory::dims{ldb, 1});
    dnnl::memory::desc c({m, n}, dt::f32, dnnl::memory::dims{ldc, 1});
    dnnl::primitive_attr attr;
    if (accumulate) {
      dnnl::post_ops ops;
      ops.append_sum(1.0f);
      attr.set_post_ops(ops);
    }
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a, b, c), attr, engine);
    return primitives.emplace(shape, dnnl::matmul(pd)).first->second;
  }
};

Gemms &gemms() {
  static Gemms instance;
  return instance;
}

/// Records "<type> matmul MxK by KxN: <what>" as the program's failure.
void fail(const char *type, int64_t m, int64_t n, int64_t k,
          const std::string &what) {
  tsr::noteKernelError(std::string(type) + " matmul " + std::to_string(m) +
                       "x" + std::to_string(k) + " by " + std::to_string(k) +
                       "x" + std::to_string(n) + ": " + what);
}

} // namespace

extern "C" TSR_API void tsr_gemm_bf16(int64_t m, int64_t n, int64_t k,
                                      const void *a, int64_t lda, const void *b,
                                      int64_t ldb, float *c, int64_t ldc,
                                      float beta) {
  if (m == 0 || n == 0)
    return;
  try {
    Gemms &g = gemms();
    std::lock_guard<std::mutex> lock(g.mutex);
    // C = beta·C first where the primitive cannot: its sum post-op adds C
    // once (beta = 1), without it C is overwritten (beta = 0).
    if ((beta != 0.0f && beta != 1.0f) || k == 0)
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j)
          c[i * ldc + j] = beta == 0.0f ? 0.0f : beta * c[i * ldc + j];
    if (k == 0)
      return;
    Shape shape{m, n, k, lda, ldb, ldc, beta != 0.0f};
    dnnl::matmul &mm = g.get(shape);
    using dt = dnnl::memory::data_type;
    dnnl::memory ma({{m, k}, dt::bf16, dnnl::memory::dims{lda, 1}}, g.engine,
                    const_cast<void *>(a));
    dnnl::memory mb({{k, n}, dt::bf16, dnnl::memory::dims{ldb, 1}}, g.engine,
                    const_cast<void *>(b));
    dnnl::memory mc({{m, n}, dt::f32, dnnl::memory::dims{ldc, 1}}, g.engine, c);
    mm.execute(
        g.stream,
        {{DNNL_ARG_SRC, ma}, {DNNL_ARG_WEIGHTS, mb}, {DNNL_ARG_DST, mc}});
    g.stream.wait();
  } catch (const dnnl::error &e) {
    fail("bf16", m, n, k, std::string("oneDNN: ") + e.what());
  } catch (const std::bad_alloc &) {
    fail("bf16", m, n, k, "out of memory");
  }
}

extern "C" TSR_API void tsr_gemm_f32(int64_t m, int64_t n, int64_t k,
                                     const float *a, int64_t lda,
                                     const float *b, int64_t ldb, float *c,
                                     int64_t ldc, float beta) {
  if (m == 0 || n == 0)
    return;
  if (dnnl_status_t status =
          dnnl_sgemm('N', 'N', m, n, k, 1.0f, a, lda, b, ldb, beta, c, ldc);
      status != dnnl_success)
    fail("f32", m, n, k,
         "oneDNN sgemm: status " + std::to_string(static_cast<int>(status)));
}

extern "C" TSR_API void tsr_set_num_threads(int threads) {
  if (threads <= 0)
    return;
  // oneDNN runs on OpenMP (libgomp, its dependency and so loaded with this
  // library): its sgemm uses as many threads as OpenMP gives the caller.
  using SetThreads = void (*)(int);
  if (auto set = reinterpret_cast<SetThreads>(
          dlsym(RTLD_DEFAULT, "omp_set_num_threads")))
    set(threads);
}

extern "C" TSR_API void tsr_gemm_f16(int64_t m, int64_t n, int64_t k,
                                     const void *a, int64_t lda, const void *b,
                                     int64_t ldb, float *c, int64_t ldc,
                                     float beta) {
  if (m == 0 || n == 0)
    return;
  try {
    // The widened operands, dense (leading dimensions k and n).
    static thread_local std::vector<float> wideA, wideB;
    wideA.resize(static_cast<size_t>(m * k));
    wideB.resize(static_cast<size_t>(k * n));
    auto widen = [](const void *src, int64_t rows, int64_t cols, int64_t ld,
                    std::vector<float> &dst) {
      const auto *half = static_cast<const uint16_t *>(src);
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; ++j)
          dst[i * cols + j] = tsr::halfToFloat(half[i * ld + j]);
    };
    widen(a, m, k, lda, wideA);
    widen(b, k, n, ldb, wideB);
    if (dnnl_status_t status = dnnl_sgemm('N', 'N', m, n, k, 1.0f, wideA.data(),
                                          k, wideB.data(), n, beta, c, ldc);
        status != dnnl_success)
      fail("f16", m, n, k,
           "oneDNN sgemm: status " + std::to_string(static_cast<int>(status)));
  } catch (const std::bad_alloc &) {
    fail("f16", m, n, k, "out of memory");
  }
}
