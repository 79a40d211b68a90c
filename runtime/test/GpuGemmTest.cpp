//===- GpuGemmTest.cpp - The runtime's cuBLASLt plans, against a fake -----===//
//
// tsrt_gpu_gemm (runtime/lib/GpuGemm.cpp) against FakeCublasLt.c, which
// records each plan and computes the product on the host, and FakeCudart.c,
// whose "device" memory (the workspace) is host memory: the row-major
// product the compiled program asks for must reach cuBLASLt as the
// column-major product of the swapped operands, with the right layouts,
// batch strides, scalars, workspace and stream, and give A·B.
//
//===----------------------------------------------------------------------===//

#include "FakeCublasLt.h"
#include "tessera-runtime/Device.h"
#include "tessera-runtime/Runtime.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <dlfcn.h>
#include <string>
#include <vector>

extern "C" void tsrt_gpu_gemm(void *stream, int64_t batch, int64_t m, int64_t n,
                              int64_t k, const void *a, const void *b, float *c,
                              int32_t dtype, int32_t transposeA,
                              int32_t transposeB, int32_t accumulate,
                              float *bias, int32_t epilogue, void *aux);
namespace tsr {
std::string takeKernelError();
} // namespace tsr

namespace {

using Record = FakeRecord;

/// The fakes, loaded by path before the runtime first opens them by soname.
void *fake(const char *path) {
  void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  EXPECT_NE(handle, nullptr) << dlerror();
  return handle;
}
void *fakeCublasLt() {
  static void *cudart = fake(TSR_TEST_FAKE_CUDART);
  static void *handle = cudart ? fake(TSR_TEST_FAKE_CUBLASLT) : nullptr;
  return handle;
}

const Record &last() {
  auto get = reinterpret_cast<const Record *(*)()>(
      dlsym(fakeCublasLt(), "fakeCublasLtLast"));
  return *get();
}

int heuristics() {
  return reinterpret_cast<int (*)()>(
      dlsym(fakeCublasLt(), "fakeCublasLtHeuristics"))();
}

/// Row-major [batch] x rows x cols of small integers (exact in bf16 too).
std::vector<float> matrix(int64_t batch, int64_t rows, int64_t cols, int seed) {
  std::vector<float> v(batch * rows * cols);
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = static_cast<float>((i * 7 + seed) % 9) - 4.0f;
  return v;
}

/// The row-major cols x rows transpose of the row-major rows x cols `m`.
std::vector<float> transpose(const std::vector<float> &m, int64_t rows,
                             int64_t cols) {
  std::vector<float> t(m.size());
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j)
      t[j * rows + i] = m[i * cols + j];
  return t;
}

std::vector<float> product(const std::vector<float> &a,
                           const std::vector<float> &b, int64_t batch,
                           int64_t m, int64_t n, int64_t k) {
  std::vector<float> c(batch * m * n, 0.0f);
  for (int64_t s = 0; s < batch; ++s)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j)
        for (int64_t p = 0; p < k; ++p)
          c[(s * m + i) * n + j] +=
              a[(s * m + i) * k + p] * b[(s * k + p) * n + j];
  return c;
}

TEST(GpuGemm, PlansARowMajorBatchAsCublasLtsColumnMajorProduct) {
  ASSERT_NE(fakeCublasLt(), nullptr);
  const int64_t batch = 2, m = 3, n = 4, k = 5;
  std::vector<float> a = matrix(batch, m, k, 1), b = matrix(batch, k, n, 2);
  std::vector<float> c(batch * m * n, 99.0f);
  void *stream = reinterpret_cast<void *>(0x5eed);
  tsrt_gpu_gemm(stream, batch, m, n, k, a.data(), b.data(), c.data(),
                TSR_DTYPE_FLOAT32, 0, 0, /*accumulate=*/0, nullptr,
                TSR_GEMM_EPILOGUE_NONE, nullptr);
  ASSERT_EQ(tsr::takeKernelError(), "");
  EXPECT_EQ(c, product(a, b, batch, m, n, k));

  const Record &r = last();
  // cuBLASLt's first operand is B (N x K, column-major), its second A.
  EXPECT_EQ(r.a.type, 0);
  EXPECT_EQ(r.a.rows, uint64_t(n));
  EXPECT_EQ(r.a.cols, uint64_t(k));
  EXPECT_EQ(r.a.ld, n);
  EXPECT_EQ(r.a.batch, batch);
  EXPECT_EQ(r.a.stride, n * k);
  EXPECT_EQ(r.b.rows, uint64_t(k));
  EXPECT_EQ(r.b.cols, uint64_t(m));
  EXPECT_EQ(r.b.ld, k);
  EXPECT_EQ(r.b.stride, k * m);
  EXPECT_EQ(r.c.rows, uint64_t(n));
  EXPECT_EQ(r.c.cols, uint64_t(m));
  EXPECT_EQ(r.c.ld, n);
  EXPECT_EQ(r.c.stride, n * m);
  EXPECT_EQ(r.d.rows, r.c.rows);
  EXPECT_EQ(r.alpha, 1.0f);
  EXPECT_EQ(r.beta, 0.0f);
  EXPECT_EQ(r.compute, 68); // CUBLAS_COMPUTE_32F: no TF32 rounding
  EXPECT_EQ(r.scale, 0);    // CUDA_R_32F
  EXPECT_EQ(r.maxWorkspace, uint64_t(32) << 20);
  EXPECT_EQ(r.workspaceBytes, size_t(1) << 20); // what the heuristic asked
  EXPECT_EQ(r.stream, stream);
}

/// The row-major transpose of [batch] x rows x cols.
std::vector<float> transposed(const std::vector<float> &v, int64_t batch,
                              int64_t rows, int64_t cols) {
  std::vector<float> t(v.size());
  for (int64_t s = 0; s < batch; ++s)
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j)
        t[(s * cols + j) * rows + i] = v[(s * rows + i) * cols + j];
  return t;
}

TEST(GpuGemm, ReadsTransposedOperandsWithCublasLtsTransposeFlags) {
  ASSERT_NE(fakeCublasLt(), nullptr);
  const int64_t batch = 2, m = 3, n = 4, k = 5;
  std::vector<float> a = matrix(batch, m, k, 8), b = matrix(batch, k, n, 9);
  std::vector<float> expected = product(a, b, batch, m, n, k);
  // The buffers hold A^T ([K, M]) and B^T ([N, K]).
  std::vector<float> at = transposed(a, batch, m, k),
                     bt = transposed(b, batch, k, n);
  for (auto [ta, tb] : {std::pair{1, 0}, std::pair{0, 1}, std::pair{1, 1}}) {
    std::vector<float> c(batch * m * n, 99.0f);
    tsrt_gpu_gemm(nullptr, batch, m, n, k, ta ? at.data() : a.data(),
                  tb ? bt.data() : b.data(), c.data(), TSR_DTYPE_FLOAT32, ta,
                  tb, 0, nullptr, TSR_GEMM_EPILOGUE_NONE, nullptr);
    ASSERT_EQ(tsr::takeKernelError(), "");
    EXPECT_EQ(c, expected) << "transpose_a " << ta << ", transpose_b " << tb;
    const Record &r = last();
    // cuBLASLt's first operand is B: its flag is TRANSA.
    EXPECT_EQ(r.transA, tb);
    EXPECT_EQ(r.transB, ta);
    // B^T [N, K] row-major is K x N column-major, leading dimension K.
    EXPECT_EQ(r.a.rows, uint64_t(tb ? k : n));
    EXPECT_EQ(r.a.ld, tb ? k : n);
    EXPECT_EQ(r.b.rows, uint64_t(ta ? m : k));
    EXPECT_EQ(r.b.ld, ta ? m : k);
    EXPECT_EQ(r.a.stride, n * k);
    EXPECT_EQ(r.b.stride, k * m);
  }
}

TEST(GpuGemm, AccumulatesWithBetaOne) {
  ASSERT_NE(fakeCublasLt(), nullptr);
  const int64_t m = 4, n = 2, k = 3;
  std::vector<float> a = matrix(1, m, k, 3), b = matrix(1, k, n, 4);
  std::vector<float> c = matrix(1, m, n, 5),
                     expected = product(a, b, 1, m, n, k);
  for (size_t i = 0; i < c.size(); ++i)
    expected[i] += c[i];
  tsrt_gpu_gemm(nullptr, 1, m, n, k, a.data(), b.data(), c.data(),
                TSR_DTYPE_FLOAT32, 0, 0, /*accumulate=*/1, nullptr,
                TSR_GEMM_EPILOGUE_NONE, nullptr);
  ASSERT_EQ(tsr::takeKernelError(), "");
  EXPECT_EQ(c, expected);
  EXPECT_EQ(last().beta, 1.0f);
  EXPECT_EQ(last().a.batch, 1);
}

TEST(GpuGemm, MultipliesBf16OperandsIntoF32) {
  ASSERT_NE(fakeCublasLt(), nullptr);
  const int64_t m = 2, n = 3, k = 4;
  std::vector<float> a = matrix(1, m, k, 6), b = matrix(1, k, n, 7);
  auto bf16 = [](const std::vector<float> &v) {
    std::vector<uint16_t> out(v.size());
    for (size_t i = 0; i < v.size(); ++i) {
      uint32_t bits;
      std::memcpy(&bits, &v[i], 4);
      out[i] = static_cast<uint16_t>(bits >> 16); // exact: small integers
    }
    return out;
  };
  std::vector<uint16_t> a16 = bf16(a), b16 = bf16(b);
  std::vector<float> c(m * n, -1.0f);
  tsrt_gpu_gemm(nullptr, 1, m, n, k, a16.data(), b16.data(), c.data(),
                TSR_DTYPE_BFLOAT16, 0, 0, 0, nullptr, TSR_GEMM_EPILOGUE_NONE,
                nullptr);
  ASSERT_EQ(tsr::takeKernelError(), "");
  EXPECT_EQ(c, product(a, b, 1, m, n, k));
  EXPECT_EQ(last().a.type, 14); // CUDA_R_16BF
  EXPECT_EQ(last().b.type, 14);
  EXPECT_EQ(last().c.type, 0); // CUDA_R_32F
}

TEST(GpuGemm, MakesOnePlanPerShape) {
  ASSERT_NE(fakeCublasLt(), nullptr);
  std::vector<float> a = matrix(1, 6, 5, 1), b = matrix(1, 5, 6, 2), c(36);
  int before = heuristics();
  for (int i = 0; i < 3; ++i)
    tsrt_gpu_gemm(nullptr, 1, 6, 6, 5, a.data(), b.data(), c.data(),
                  TSR_DTYPE_FLOAT32, 0, 0, 0, nullptr, TSR_GEMM_EPILOGUE_NONE,
                  nullptr);
  ASSERT_EQ(tsr::takeKernelError(), "");
  EXPECT_EQ(heuristics(), before + 1);
}

TEST(GpuGemm, ReportsAShapeWithoutAnAlgorithmAndFreesItsPlan) {
  ASSERT_NE(fakeCublasLt(), nullptr);
  auto destroyed = reinterpret_cast<int (*)()>(
      dlsym(fakeCublasLt(), "fakeCublasLtDestroyed"));
  int before = destroyed();
  std::vector<float> a(49), b(49), c(49);
  tsrt_gpu_gemm(nullptr, 1, 7, 7, 7, a.data(), b.data(), c.data(),
                TSR_DTYPE_FLOAT32, 0, 0, 0, nullptr, TSR_GEMM_EPILOGUE_NONE,
                nullptr);
  EXPECT_EQ(tsr::takeKernelError(), "float32 GPU matmul 7x7 by 7x7: cuBLASLt "
                                    "has no algorithm for it");
  // The operation descriptor and the three layouts of the failed plan.
  EXPECT_EQ(destroyed(), before + 4);
}

/// The epilogue as the CPU target computes it (a bias per column of the
/// row-major result, then max(x, 0)) against cuBLASLt's, as the fake
/// implements its documented semantics: a bias per row of the column-major
/// D, then ReLU. The values are small integers, so the sums are exact.
TEST(GpuGemm, AppliesBiasAndReluEpiloguesPerColumnOfTheRowMajorResult) {
  ASSERT_NE(fakeCublasLt(), nullptr);
  const int64_t m = 3, n = 4, k = 5;
  std::vector<float> a = matrix(1, m, k, 2), b = matrix(1, k, n, 5);
  std::vector<float> plain = product(a, b, 1, m, n, k);
  std::vector<float> bias = {-3.0f, 1.0f, 0.0f, 40.0f};
  struct Case {
    int32_t epilogue;
    uint32_t cublas;
    bool biased, relu;
  };
  for (Case e : {Case{TSR_GEMM_EPILOGUE_RELU, 2, false, true},
                 Case{TSR_GEMM_EPILOGUE_BIAS, 4, true, false},
                 Case{TSR_GEMM_EPILOGUE_RELU_BIAS, 6, true, true}}) {
    std::vector<float> expected(m * n);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        float v = plain[i * n + j] + (e.biased ? bias[j] : 0.0f);
        expected[i * n + j] = e.relu ? std::max(v, 0.0f) : v;
      }
    std::vector<float> c(m * n, 99.0f);
    tsrt_gpu_gemm(nullptr, 1, m, n, k, a.data(), b.data(), c.data(),
                  TSR_DTYPE_FLOAT32, 0, 0, 0, e.biased ? bias.data() : nullptr,
                  e.epilogue, nullptr);
    ASSERT_EQ(tsr::takeKernelError(), "") << "epilogue " << e.epilogue;
    EXPECT_EQ(c, expected) << "epilogue " << e.epilogue;
    EXPECT_EQ(last().epilogue, e.cublas);
    EXPECT_EQ(last().bias, e.biased ? bias.data() : nullptr);
  }
  // The shape's plan is kept, but each call gives cuBLASLt its own bias.
  std::vector<float> other = {1.0f, 2.0f, 3.0f, 4.0f}, c(m * n);
  int before = heuristics();
  tsrt_gpu_gemm(nullptr, 1, m, n, k, a.data(), b.data(), c.data(),
                TSR_DTYPE_FLOAT32, 0, 0, 0, other.data(),
                TSR_GEMM_EPILOGUE_BIAS, nullptr);
  ASSERT_EQ(tsr::takeKernelError(), "");
  EXPECT_EQ(heuristics(), before);
  EXPECT_EQ(last().bias, other.data());
  EXPECT_EQ(c[n + 3], plain[n + 3] + 4.0f);
}

/// Bias gradients beside weight gradients, the sums over k the CPU target
/// computes as reductions: dW = xᵀ·dy with db[j] = sum_i dy[i, j]
/// (BIAS_GRAD_B, of op(b)), and dWᵀ = dyᵀ·x (a weight stored [out, in])
/// with the same sum, now of op(a) (BIAS_GRAD_A). The program's A is
/// cuBLASLt's second operand, so BIAS_GRAD_A is BGRADB and BIAS_GRAD_B
/// BGRADA; the fake computes their documented semantics. Small integers:
/// the sums are exact.
TEST(GpuGemm, ComputesBiasGradientsAsCublasLtsBgradEpilogues) {
  ASSERT_NE(fakeCublasLt(), nullptr);
  const int64_t rows = 6, in = 3, out = 4;
  std::vector<float> x = matrix(1, rows, in, 1), dy = matrix(1, rows, out, 3);
  std::vector<float> db(out, 0.0f);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < out; ++j)
      db[j] += dy[i * out + j];
  std::vector<float> dw(in * out, 0.0f), dwt(out * in, 0.0f);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t p = 0; p < in; ++p)
      for (int64_t j = 0; j < out; ++j) {
        dw[p * out + j] += x[i * in + p] * dy[i * out + j];
        dwt[j * in + p] += x[i * in + p] * dy[i * out + j];
      }

  std::vector<float> c(in * out, 99.0f), bias(out, 99.0f);
  tsrt_gpu_gemm(nullptr, 1, in, out, rows, x.data(), dy.data(), c.data(),
                TSR_DTYPE_FLOAT32, 1, 0, 0, bias.data(),
                TSR_GEMM_EPILOGUE_BIAS_GRAD_B, nullptr);
  ASSERT_EQ(tsr::takeKernelError(), "");
  EXPECT_EQ(c, dw);
  EXPECT_EQ(bias, db);
  EXPECT_EQ(last().epilogue, 256u); // CUBLASLT_EPILOGUE_BGRADA
  EXPECT_EQ(last().bias, bias.data());

  std::vector<float> ct(out * in, 99.0f), biasT(out, 99.0f);
  tsrt_gpu_gemm(nullptr, 1, out, in, rows, dy.data(), x.data(), ct.data(),
                TSR_DTYPE_FLOAT32, 1, 0, 0, biasT.data(),
                TSR_GEMM_EPILOGUE_BIAS_GRAD_A, nullptr);
  ASSERT_EQ(tsr::takeKernelError(), "");
  EXPECT_EQ(ct, dwt);
  EXPECT_EQ(biasT, db);
  EXPECT_EQ(last().epilogue, 512u); // CUBLASLT_EPILOGUE_BGRADB

  // bf16 operands: the sums are f32 (cuBLASLt's output type).
  std::vector<uint16_t> xh(x.size()), dyh(dy.size());
  auto bf16 = [](float f) {
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    return static_cast<uint16_t>(bits >> 16);
  };
  std::transform(x.begin(), x.end(), xh.begin(), bf16);
  std::transform(dy.begin(), dy.end(), dyh.begin(), bf16);
  std::vector<float> ch(in * out), biasH(out);
  tsrt_gpu_gemm(nullptr, 1, in, out, rows, xh.data(), dyh.data(), ch.data(),
                TSR_DTYPE_BFLOAT16, 1, 0, 0, biasH.data(),
                TSR_GEMM_EPILOGUE_BIAS_GRAD_B, nullptr);
  ASSERT_EQ(tsr::takeKernelError(), "");
  EXPECT_EQ(ch, dw);
  EXPECT_EQ(biasH, db);
}

/// GELU's tanh approximation after the bias (GELU_BIAS) and of the product
/// alone (GELU), against the formula tsr.gelu {approximate = tanh} computes
/// on the CPU target, in double: f32's rounding of the fake's tanhf and
/// products, 1e-6 of each value at most.
TEST(GpuGemm, AppliesGeluOfTanhAsCublasLtsGeluEpilogue) {
  ASSERT_NE(fakeCublasLt(), nullptr);
  const int64_t m = 5, n = 6, k = 3;
  std::vector<float> a = matrix(1, m, k, 1), b = matrix(1, k, n, 2), bias(n);
  for (int64_t j = 0; j < n; ++j)
    bias[j] = 0.25f * static_cast<float>(j) - 0.5f;
  std::vector<float> ab = product(a, b, 1, m, n, k);
  for (bool biased : {true, false}) {
    std::vector<float> c(m * n, 99.0f);
    tsrt_gpu_gemm(nullptr, 1, m, n, k, a.data(), b.data(), c.data(),
                  TSR_DTYPE_FLOAT32, 0, 0, 0, biased ? bias.data() : nullptr,
                  biased ? TSR_GEMM_EPILOGUE_GELU_BIAS : TSR_GEMM_EPILOGUE_GELU,
                  nullptr);
    ASSERT_EQ(tsr::takeKernelError(), "");
    EXPECT_EQ(last().epilogue, biased ? 36u : 32u); // GELU_BIAS, GELU
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double x = ab[i * n + j] + (biased ? bias[j] : 0.0f);
        double gelu =
            0.5 * x *
            (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
        EXPECT_NEAR(c[i * n + j], gelu, 1e-6 * std::max(1.0, std::abs(gelu)))
            << "at " << i << ", " << j << (biased ? " with" : " without")
            << " a bias";
      }
  }
}

/// ReLU's forward and backward through cuBLASLt's mask: a hidden layer
/// h = relu(x·W1 + b1) by RELU_AUX_BIAS, which also writes the mask, then
/// the gradient of its input dpre = (dy·W2ᵀ) * (x·W1 + b1 > 0) by DRELU
/// reading it, both against what the CPU target computes (the bias add,
/// max(x, 0), and autodiff's select). n = 130 needs two 128-bit words per
/// row: the leading dimension is 256 bits. Small integers: exact.
TEST(GpuGemm, PassesReluMasksFromRELU_AUX_BIASToDRELU) {
  ASSERT_NE(fakeCublasLt(), nullptr);
  const int64_t rows = 3, in = 4, hidden = 130, out = 2;
  std::vector<float> x = matrix(1, rows, in, 1), w1 = matrix(1, in, hidden, 2),
                     dy = matrix(1, rows, out, 3),
                     w2t = matrix(1, out, hidden, 5), b1(hidden);
  for (int64_t j = 0; j < hidden; ++j)
    b1[j] = static_cast<float>(j % 5) - 2.0f;
  std::vector<float> pre = product(x, w1, 1, rows, hidden, in);
  std::vector<float> h(pre.size()), dpre(pre.size());
  std::vector<float> dh = product(dy, w2t, 1, rows, hidden, out);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < hidden; ++j) {
      float &v = pre[i * hidden + j];
      v += b1[j];
      h[i * hidden + j] = std::max(v, 0.0f);
      dpre[i * hidden + j] = v > 0.0f ? dh[i * hidden + j] : 0.0f;
    }
  const int64_t maskBytes = (hidden + 127) / 128 * 16;
  std::vector<unsigned char> mask(rows * maskBytes, 0xA5);
  std::vector<float> c(rows * hidden, 99.0f);
  tsrt_gpu_gemm(nullptr, 1, rows, hidden, in, x.data(), w1.data(), c.data(),
                TSR_DTYPE_FLOAT32, 0, 0, 0, b1.data(),
                TSR_GEMM_EPILOGUE_RELU_AUX_BIAS, mask.data());
  ASSERT_EQ(tsr::takeKernelError(), "");
  EXPECT_EQ(c, h);
  EXPECT_EQ(last().epilogue, 134u); // CUBLASLT_EPILOGUE_RELU_AUX_BIAS
  EXPECT_EQ(last().aux, mask.data());
  EXPECT_EQ(last().auxLd, 256);

  // dh = dy·W2ᵀ with W2 stored [hidden, out]: W2ᵀ is read transposed.
  std::vector<float> w2 = transpose(w2t, out, hidden);
  std::vector<float> d(rows * hidden, 99.0f);
  tsrt_gpu_gemm(nullptr, 1, rows, hidden, out, dy.data(), w2.data(), d.data(),
                TSR_DTYPE_FLOAT32, 0, 1, 0, nullptr, TSR_GEMM_EPILOGUE_DRELU,
                mask.data());
  ASSERT_EQ(tsr::takeKernelError(), "");
  EXPECT_EQ(d, dpre);
  EXPECT_EQ(last().epilogue, 136u); // CUBLASLT_EPILOGUE_DRELU
  EXPECT_EQ(last().auxLd, 256);

  // Without its mask, or of a batch, the call is refused with a reason.
  tsrt_gpu_gemm(nullptr, 1, rows, hidden, out, dy.data(), w2.data(), d.data(),
                TSR_DTYPE_FLOAT32, 0, 1, 0, nullptr, TSR_GEMM_EPILOGUE_DRELU,
                nullptr);
  EXPECT_NE(tsr::takeKernelError().find("without an aux matrix"),
            std::string::npos);
}

/// GELU's forward and backward through cuBLASLt's aux matrix: a hidden
/// layer h = gelu(x·W1 + b1) by GELU_AUX_BIAS, which also writes GELU's
/// input, then the gradient of that input dpre = (dy·W2ᵀ) * gelu'(pre) by
/// DGELU reading it, against autodiff's derivative of tsr.gelu
/// {approximate = tanh} in double, 1e-6 of each value at most (f32's
/// rounding of the fake's tanhf and products). hidden = 13 pads each row
/// of the aux matrix to 16 elements; the operands are multiples of 1/8, so
/// the products (and GELU's input) are exact.
TEST(GpuGemm, PassesGeluInputsFromGELU_AUX_BIASToDGELU) {
  ASSERT_NE(fakeCublasLt(), nullptr);
  const int64_t rows = 3, in = 4, hidden = 13, out = 2, ld = 16;
  auto scaled = [](std::vector<float> v) {
    for (float &f : v)
      f *= 0.125f;
    return v;
  };
  std::vector<float> x = scaled(matrix(1, rows, in, 1)),
                     w1 = scaled(matrix(1, in, hidden, 2)),
                     dy = scaled(matrix(1, rows, out, 3)),
                     w2t = scaled(matrix(1, out, hidden, 5)), b1(hidden);
  for (int64_t j = 0; j < hidden; ++j)
    b1[j] = 0.25f * static_cast<float>(j % 5) - 0.5f;
  std::vector<float> pre = product(x, w1, 1, rows, hidden, in);
  std::vector<float> dh = product(dy, w2t, 1, rows, hidden, out);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < hidden; ++j)
      pre[i * hidden + j] += b1[j];
  const double c0 = std::sqrt(2 / M_PI), k0 = 0.044715;
  std::vector<float> aux(rows * ld, 99.0f), c(rows * hidden, 99.0f);
  tsrt_gpu_gemm(nullptr, 1, rows, hidden, in, x.data(), w1.data(), c.data(),
                TSR_DTYPE_FLOAT32, 0, 0, 0, b1.data(),
                TSR_GEMM_EPILOGUE_GELU_AUX_BIAS, aux.data());
  ASSERT_EQ(tsr::takeKernelError(), "");
  EXPECT_EQ(last().epilogue, 164u); // CUBLASLT_EPILOGUE_GELU_AUX_BIAS
  EXPECT_EQ(last().aux, aux.data());
  EXPECT_EQ(last().auxLd, ld);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < hidden; ++j) {
      double v = pre[i * hidden + j];
      double gelu = 0.5 * v * (1 + std::tanh(c0 * (v + k0 * v * v * v)));
      EXPECT_EQ(aux[i * ld + j], pre[i * hidden + j]) << i << ", " << j;
      EXPECT_NEAR(c[i * hidden + j], gelu, 1e-6 * std::max(1.0, std::abs(gelu)))
          << i << ", " << j;
    }

  // dh = dy·W2ᵀ with W2 stored [hidden, out]: W2ᵀ is read transposed.
  std::vector<float> w2 = transpose(w2t, out, hidden);
  std::vector<float> d(rows * hidden, 99.0f);
  tsrt_gpu_gemm(nullptr, 1, rows, hidden, out, dy.data(), w2.data(), d.data(),
                TSR_DTYPE_FLOAT32, 0, 1, 0, nullptr, TSR_GEMM_EPILOGUE_DGELU,
                aux.data());
  ASSERT_EQ(tsr::takeKernelError(), "");
  EXPECT_EQ(last().epilogue, 192u); // CUBLASLT_EPILOGUE_DGELU
  EXPECT_EQ(last().auxLd, ld);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < hidden; ++j) {
      // ElementwiseRules.cpp's geluGrad, in double.
      double v = pre[i * hidden + j], t = std::tanh(c0 * (v + k0 * v * v * v));
      double grad =
          dh[i * hidden + j] *
          (0.5 * (1 + t) + 0.5 * v * (1 - t * t) * c0 * (1 + 3 * k0 * v * v));
      EXPECT_NEAR(d[i * hidden + j], grad, 1e-6 * std::max(1.0, std::abs(grad)))
          << i << ", " << j;
    }

  // Without its input, or with a bias, the call is refused with a reason.
  tsrt_gpu_gemm(nullptr, 1, rows, hidden, out, dy.data(), w2.data(), d.data(),
                TSR_DTYPE_FLOAT32, 0, 1, 0, nullptr, TSR_GEMM_EPILOGUE_DGELU,
                nullptr);
  EXPECT_NE(tsr::takeKernelError().find("without an aux matrix"),
            std::string::npos);
  tsrt_gpu_gemm(nullptr, 1, rows, hidden, out, dy.data(), w2.data(), d.data(),
                TSR_DTYPE_FLOAT32, 0, 1, 0, b1.data(), TSR_GEMM_EPILOGUE_DGELU,
                aux.data());
  EXPECT_NE(tsr::takeKernelError().find("with a bias"), std::string::npos);
}

/// Where cuBLASLt has no algorithm with a BGRAD epilogue, the product runs
/// without it and the sum as a product with ones: the same numbers, two
/// calls, and the plan remembers it (no heuristic query on the next call).
TEST(GpuGemm, SumsABiasGradientWithOnesWhereCublasLtHasNoEpilogueForIt) {
  ASSERT_NE(fakeCublasLt(), nullptr);
  auto refuse = reinterpret_cast<void (*)(int)>(
      dlsym(fakeCublasLt(), "fakeCublasLtRefuseBiasGradients"));
  refuse(1);
  const int64_t rows = 5, in = 2, out = 3;
  std::vector<float> x = matrix(1, rows, in, 4), dy = matrix(1, rows, out, 6);
  std::vector<float> db(out, 0.0f), dw(in * out, 0.0f);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < out; ++j) {
      db[j] += dy[i * out + j];
      for (int64_t p = 0; p < in; ++p)
        dw[p * out + j] += x[i * in + p] * dy[i * out + j];
    }
  for (int round = 0; round < 2; ++round) {
    int calls = last().calls, queries = heuristics();
    std::vector<float> c(in * out, 99.0f), bias(out, 99.0f);
    tsrt_gpu_gemm(nullptr, 1, in, out, rows, x.data(), dy.data(), c.data(),
                  TSR_DTYPE_FLOAT32, 1, 0, 0, bias.data(),
                  TSR_GEMM_EPILOGUE_BIAS_GRAD_B, nullptr);
    ASSERT_EQ(tsr::takeKernelError(), "") << "round " << round;
    EXPECT_EQ(c, dw) << "round " << round;
    EXPECT_EQ(bias, db) << "round " << round;
    EXPECT_EQ(last().calls, calls + 2) << "round " << round;
    // The last call is the sum: ones[1, rows]·dy, column-major out x 1.
    EXPECT_EQ(last().epilogue, 1u);
    EXPECT_EQ(last().c.rows, static_cast<uint64_t>(out));
    EXPECT_EQ(last().c.cols, 1u);
    // The first round asks for the BGRAD plan, then the two plain ones.
    EXPECT_EQ(heuristics(), queries + (round == 0 ? 3 : 0));
  }
  // The sum of op(a) over k likewise: dWᵀ = dyᵀ·x, db of dy's columns.
  std::vector<float> ct(out * in), biasT(out, 99.0f);
  tsrt_gpu_gemm(nullptr, 1, out, in, rows, dy.data(), x.data(), ct.data(),
                TSR_DTYPE_FLOAT32, 1, 0, 0, biasT.data(),
                TSR_GEMM_EPILOGUE_BIAS_GRAD_A, nullptr);
  ASSERT_EQ(tsr::takeKernelError(), "");
  EXPECT_EQ(biasT, db);
  refuse(0);
}

TEST(GpuGemm, RefusesAnEpilogueItDoesNotRun) {
  ASSERT_NE(fakeCublasLt(), nullptr);
  std::vector<float> a(6), b(6), c(4), bias(2);
  tsrt_gpu_gemm(nullptr, 1, 2, 2, 3, a.data(), b.data(), c.data(),
                TSR_DTYPE_FLOAT32, 0, 0, 0, nullptr, TSR_GEMM_EPILOGUE_BIAS,
                nullptr);
  EXPECT_EQ(tsr::takeKernelError(),
            "float32 GPU matmul 2x3 by 3x2: epilogue 2 without a bias is not "
            "one tsrt_gpu_gemm runs");
  tsrt_gpu_gemm(nullptr, 1, 2, 2, 3, a.data(), b.data(), c.data(),
                TSR_DTYPE_FLOAT32, 0, 0, 0, bias.data(), 9, nullptr);
  EXPECT_EQ(tsr::takeKernelError(),
            "float32 GPU matmul 2x3 by 3x2: epilogue 9 with a bias is not "
            "one tsrt_gpu_gemm runs");
}

} // namespace
