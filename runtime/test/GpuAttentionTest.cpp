//===- GpuAttentionTest.cpp - The runtime's cuDNN attention, against a fake
//===//
//
// tsrt_gpu_attention and tsrt_gpu_attention_backward (runtime/lib/
// GpuAttention.cpp) against FakeCudnn.c, which refuses any graph that is
// not the SDPA pattern, records each execution and computes it on the host,
// and FakeCudart.c, whose "device" memory (the workspace) is host memory:
// each operand must reach cuDNN with the dims and strides its layout code
// means, wired by uid to its pointer, and the results must match float64
// references computed here from the definitions.
//
// Tolerances. The inputs are exact in their dtype, so the errors are the
// roundings cuDNN's graph declares: P (and the backward's dS) rounded to
// the I/O type before it multiplies V (dO, Q), and each output rounded
// once. With u the unit roundoff (2^-8 for bf16, 2^-11 for f16) an output
// x = Σ a_i b_i is then within u(|x| + Σ |a_i b_i|) to first order; the
// tests allow 1.25 times that, plus 1e-5 for f32 accumulation and exp
// (the worst element seen is at 0.7 of the allowance). stats (f32) is
// within 1e-5 (1 + |stats|).
//
//===----------------------------------------------------------------------===//

#include "FakeCudnn.h"
#include "Float16.h"
#include "tessera-runtime/Device.h"
#include "tessera-runtime/Runtime.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <dlfcn.h>
#include <limits>
#include <string>
#include <vector>

namespace tsr {
std::string takeKernelError();
} // namespace tsr

namespace {

using Record = FakeCudnnRecord;
using Sizes = std::array<int64_t, 4>;
/// A logical [n0, n1, n2, n3] tensor in float64, row-major.
using Values = std::vector<double>;

/// The fakes, loaded by path before the runtime first opens them by soname.
void *fake(const char *path) {
  void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  EXPECT_NE(handle, nullptr) << dlerror();
  return handle;
}
void *fakeCudnn() {
  static void *cudart = fake(TSR_TEST_FAKE_CUDART);
  static void *handle = cudart ? fake(TSR_TEST_FAKE_CUDNN) : nullptr;
  return handle;
}

template <typename T> T entry(const char *name) {
  return reinterpret_cast<T>(dlsym(fakeCudnn(), name));
}
const Record &last() { return *entry<const Record *(*)()>("fakeCudnnLast")(); }
int graphs() { return entry<int (*)()>("fakeCudnnGraphs")(); }
int live() { return entry<int (*)()>("fakeCudnnLive")(); }
std::string refusal() { return entry<const char *(*)()>("fakeCudnnRefusal")(); }

int64_t flat(const Sizes &sizes, int64_t i0, int64_t i1, int64_t i2,
             int64_t i3) {
  return ((i0 * sizes[1] + i1) * sizes[2] + i2) * sizes[3] + i3;
}

/// A dense bf16 or f16 buffer of a logical [n0, n1, n2, n3] tensor stored
/// in the order of `layout`, the ABI's code: hex digits, outermost first.
struct Buffer {
  int32_t dtype = TSR_DTYPE_BFLOAT16;
  Sizes sizes{};
  int32_t layout = 0x0123;
  std::vector<uint16_t> bits;

  Buffer() = default;
  Buffer(int32_t dtype, Sizes sizes, int32_t layout)
      : dtype(dtype), sizes(sizes), layout(layout),
        bits(sizes[0] * sizes[1] * sizes[2] * sizes[3], 0x1234) {}

  /// The stride of each logical dimension: the product of the sizes of the
  /// dimensions stored inside it.
  Sizes strides() const {
    Sizes strides{};
    int64_t stride = 1;
    for (int shift = 0; shift < 16; shift += 4) {
      int dim = (layout >> shift) & 0xf;
      strides[dim] = stride;
      stride *= sizes[dim];
    }
    return strides;
  }

  uint16_t &at(int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
    Sizes s = strides();
    return bits[i0 * s[0] + i1 * s[1] + i2 * s[2] + i3 * s[3]];
  }

  double get(int64_t i0, int64_t i1, int64_t i2, int64_t i3) const {
    uint16_t b = const_cast<Buffer *>(this)->at(i0, i1, i2, i3);
    return dtype == TSR_DTYPE_BFLOAT16 ? tsr::bfloat16ToFloat(b)
                                       : tsr::halfToFloat(b);
  }

  void set(int64_t i0, int64_t i1, int64_t i2, int64_t i3, double value) {
    auto f = static_cast<float>(value);
    at(i0, i1, i2, i3) = dtype == TSR_DTYPE_BFLOAT16 ? tsr::floatToBfloat16(f)
                                                     : tsr::floatToHalf(f);
  }

  /// Pseudo-random values in [-1, 1), exact in the dtype.
  Buffer &random(uint64_t seed) {
    for (int64_t i0 = 0; i0 < sizes[0]; ++i0)
      for (int64_t i1 = 0; i1 < sizes[1]; ++i1)
        for (int64_t i2 = 0; i2 < sizes[2]; ++i2)
          for (int64_t i3 = 0; i3 < sizes[3]; ++i3) {
            seed = seed * 6364136223846793005ull + 1442695040888963407ull;
            set(i0, i1, i2, i3, static_cast<double>(seed >> 11) * 0x1p-52 - 1);
          }
    return *this;
  }

  /// The logical tensor, row-major.
  Values values() const {
    Values v(bits.size());
    for (int64_t i0 = 0; i0 < sizes[0]; ++i0)
      for (int64_t i1 = 0; i1 < sizes[1]; ++i1)
        for (int64_t i2 = 0; i2 < sizes[2]; ++i2)
          for (int64_t i3 = 0; i3 < sizes[3]; ++i3)
            v[flat(sizes, i0, i1, i2, i3)] = get(i0, i1, i2, i3);
    return v;
  }
};

struct Shape {
  int64_t b, h, sq, skv, d;
  Sizes q() const { return {b, h, sq, d}; }
  Sizes kv() const { return {b, h, skv, d}; }
};

/// What both references read: the operands as float64, the bias and its
/// sizes (b or 1, h or 1, sq, skv), the scale, the mask.
struct Inputs {
  Shape s;
  Values q, k, v;
  const Values *bias = nullptr;
  Sizes biasSizes{};
  double scale = 0;
  bool causal = false;
};

/// softmax(scale q·kᵀ + bias, masked) of head (b, h), [sq, skv]; the row
/// maxima and log sums in `stats` (of the head's rows) when given.
std::vector<double> probabilities(const Inputs &in, int64_t b, int64_t h,
                                  double *stats = nullptr) {
  const Shape &s = in.s;
  std::vector<double> p(s.sq * s.skv);
  for (int64_t i = 0; i < s.sq; ++i) {
    double max = -std::numeric_limits<double>::infinity(), sum = 0;
    for (int64_t j = 0; j < s.skv; ++j) {
      double score = 0;
      for (int64_t k = 0; k < s.d; ++k)
        score += in.q[flat(s.q(), b, h, i, k)] * in.k[flat(s.kv(), b, h, j, k)];
      score *= in.scale;
      if (in.bias)
        score += (*in.bias)[flat(in.biasSizes, in.biasSizes[0] == 1 ? 0 : b,
                                 in.biasSizes[1] == 1 ? 0 : h, i, j)];
      p[i * s.skv + j] = score;
      if (!(in.causal && j > i))
        max = std::max(max, score);
    }
    for (int64_t j = 0; j < s.skv; ++j) {
      double &e = p[i * s.skv + j];
      e = in.causal && j > i ? 0 : std::exp(e - max);
      sum += e;
    }
    for (int64_t j = 0; j < s.skv; ++j)
      p[i * s.skv + j] /= sum;
    if (stats)
      stats[i] = max + std::log(sum);
  }
  return p;
}

/// O = P·V, with Σ_j p_ij |v_jk| per element and stats [b, h, sq].
struct Forward {
  Values o, bound, stats;
};

Forward referenceForward(const Inputs &in) {
  const Shape &s = in.s;
  Forward f{Values(s.b * s.h * s.sq * s.d), Values(s.b * s.h * s.sq * s.d),
            Values(s.b * s.h * s.sq)};
  for (int64_t b = 0; b < s.b; ++b)
    for (int64_t h = 0; h < s.h; ++h) {
      std::vector<double> p =
          probabilities(in, b, h, &f.stats[(b * s.h + h) * s.sq]);
      for (int64_t i = 0; i < s.sq; ++i)
        for (int64_t k = 0; k < s.d; ++k)
          for (int64_t j = 0; j < s.skv; ++j) {
            double term = p[i * s.skv + j] * in.v[flat(s.kv(), b, h, j, k)];
            f.o[flat(s.q(), b, h, i, k)] += term;
            f.bound[flat(s.q(), b, h, i, k)] += std::abs(term);
          }
    }
  return f;
}

/// The analytic gradients: dV = Pᵀ dO, dP = dO Vᵀ,
/// dS = P ⊙ (dP − rowsum(dO ⊙ O)), dQ = scale dS K, dK = scale dSᵀ Q; with
/// each element's Σ |terms|.
struct Backward {
  Values dq, dk, dv, dqBound, dkBound, dvBound;
};

Backward referenceBackward(const Inputs &in, const Values &o,
                           const Values &dO) {
  const Shape &s = in.s;
  size_t nq = s.b * s.h * s.sq * s.d, nkv = s.b * s.h * s.skv * s.d;
  Backward g{Values(nq), Values(nkv), Values(nkv),
             Values(nq), Values(nkv), Values(nkv)};
  auto add = [](Values &value, Values &bound, int64_t at, double term) {
    value[at] += term;
    bound[at] += std::abs(term);
  };
  for (int64_t b = 0; b < s.b; ++b)
    for (int64_t h = 0; h < s.h; ++h) {
      std::vector<double> p = probabilities(in, b, h), dS(s.sq * s.skv);
      for (int64_t i = 0; i < s.sq; ++i) {
        double rowSum = 0;
        for (int64_t k = 0; k < s.d; ++k)
          rowSum += dO[flat(s.q(), b, h, i, k)] * o[flat(s.q(), b, h, i, k)];
        for (int64_t j = 0; j < s.skv; ++j) {
          double dP = 0;
          for (int64_t k = 0; k < s.d; ++k)
            dP += dO[flat(s.q(), b, h, i, k)] * in.v[flat(s.kv(), b, h, j, k)];
          dS[i * s.skv + j] = p[i * s.skv + j] * (dP - rowSum);
        }
      }
      for (int64_t i = 0; i < s.sq; ++i)
        for (int64_t j = 0; j < s.skv; ++j)
          for (int64_t k = 0; k < s.d; ++k) {
            int64_t qi = flat(s.q(), b, h, i, k), kj = flat(s.kv(), b, h, j, k);
            double ds = in.scale * dS[i * s.skv + j];
            add(g.dv, g.dvBound, kj, p[i * s.skv + j] * dO[qi]);
            add(g.dq, g.dqBound, qi, ds * in.k[kj]);
            add(g.dk, g.dkBound, kj, ds * in.q[qi]);
          }
    }
  return g;
}

/// Every element of `got` within 1.25u(|want| + bound) + 1e-5 of `want`.
void expectClose(const Buffer &got, const Values &want, const Values &bound,
                 const std::string &what) {
  double u = got.dtype == TSR_DTYPE_BFLOAT16 ? 0x1p-8 : 0x1p-11;
  Values values = got.values();
  int failures = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    double tolerance = 1.25 * u * (std::abs(want[i]) + bound[i]) + 1e-5;
    if (!(std::abs(values[i] - want[i]) <= tolerance) && ++failures <= 5)
      ADD_FAILURE() << what << " element " << i << ": " << values[i]
                    << ", want " << want[i] << " within " << tolerance;
  }
  EXPECT_EQ(failures, 0) << what;
}

/// One attention problem: its buffers, the scale in "device" memory, the
/// optional bias (biasBroadcast < 0: none) and the flags.
struct Attention {
  Shape s;
  int32_t dtype;
  Buffer q, k, v, o, bias;
  std::vector<float> stats, scale;
  int32_t biasBroadcast = -1, flags = 0;

  Attention(Shape s, int32_t dtype, std::array<int32_t, 4> layouts,
            int32_t biasBroadcast = -1, int32_t flags = 0)
      : s(s), dtype(dtype), q(dtype, s.q(), layouts[0]),
        k(dtype, s.kv(), layouts[1]), v(dtype, s.kv(), layouts[2]),
        o(dtype, s.q(), layouts[3]), stats(s.b * s.h * s.sq, -7.0f),
        scale{static_cast<float>(1 / std::sqrt(double(s.d)))},
        biasBroadcast(biasBroadcast), flags(flags) {
    q.random(1), k.random(2), v.random(3);
    if (biasBroadcast >= 0)
      bias = Buffer(dtype,
                    {biasBroadcast & 1 ? 1 : s.b, biasBroadcast & 2 ? 1 : s.h,
                     s.sq, s.skv},
                    0x0123)
                 .random(4);
  }

  /// Null once a test cleared it.
  const float *scaleData() const {
    return scale.empty() ? nullptr : scale.data();
  }

  const void *biasData() const {
    return biasBroadcast >= 0 ? bias.bits.data() : nullptr;
  }

  void forward(void *stream = nullptr, bool withStats = true) {
    tsrt_gpu_attention(
        stream, s.b, s.h, s.sq, s.skv, s.d, dtype, q.bits.data(), q.layout,
        k.bits.data(), k.layout, v.bits.data(), v.layout, o.bits.data(),
        o.layout, withStats ? stats.data() : nullptr, scaleData(), biasData(),
        biasBroadcast < 0 ? 0 : biasBroadcast, flags);
  }

  Values biasValues() const { return bias.values(); }

  /// The references' view, reading `biasStorage` for the bias.
  Inputs inputs(const Values &biasStorage) const {
    Inputs in{s, q.values(), k.values(), v.values()};
    if (biasBroadcast >= 0) {
      in.bias = &biasStorage;
      in.biasSizes = bias.sizes;
    }
    in.scale = scale[0];
    in.causal = flags & TSR_ATTENTION_CAUSAL;
    return in;
  }
};

/// The gradients' buffers of `a` and the backward call.
struct Gradients {
  Buffer dO, dQ, dK, dV;

  Gradients(const Attention &a, std::array<int32_t, 4> layouts)
      : dO(a.dtype, a.s.q(), layouts[0]), dQ(a.dtype, a.s.q(), layouts[1]),
        dK(a.dtype, a.s.kv(), layouts[2]), dV(a.dtype, a.s.kv(), layouts[3]) {
    dO.random(5);
  }

  void backward(Attention &a, void *stream = nullptr, bool withStats = true) {
    const Shape &s = a.s;
    tsrt_gpu_attention_backward(
        stream, s.b, s.h, s.sq, s.skv, s.d, a.dtype, a.q.bits.data(),
        a.q.layout, a.k.bits.data(), a.k.layout, a.v.bits.data(), a.v.layout,
        a.o.bits.data(), a.o.layout, dO.bits.data(), dO.layout,
        withStats ? a.stats.data() : nullptr, dQ.bits.data(), dQ.layout,
        dK.bits.data(), dK.layout, dV.bits.data(), dV.layout, a.scaleData(),
        a.biasData(), a.biasBroadcast < 0 ? 0 : a.biasBroadcast, a.flags);
  }
};

void expectTensor(const FakeCudnnTensor &t, int type, Sizes dims, Sizes strides,
                  const void *data, const char *what) {
  EXPECT_TRUE(t.present) << what;
  EXPECT_EQ(t.type, type) << what;
  EXPECT_EQ(Sizes({t.dims[0], t.dims[1], t.dims[2], t.dims[3]}), dims) << what;
  EXPECT_EQ(Sizes({t.strides[0], t.strides[1], t.strides[2], t.strides[3]}),
            strides)
      << what;
  EXPECT_EQ(t.data, data) << what;
  EXPECT_FALSE(t.byValue) << what;
}

constexpr int kCudnnFloat = 0, kCudnnHalf = 2, kCudnnBfloat16 = 9;
constexpr int32_t kBhsd = 0x0123, kBshd = 0x0213, kBhds = 0x0132;

TEST(GpuAttention, PlansBshdOperandsWithTheirStrides) {
  ASSERT_NE(fakeCudnn(), nullptr);
  Shape s{2, 4, 16, 32, 16};
  Attention a(s, TSR_DTYPE_BFLOAT16, {kBshd, kBshd, kBshd, kBshd});
  void *stream = reinterpret_cast<void *>(0x5eed);
  int executes = last().executes;
  a.forward(stream);
  ASSERT_EQ(tsr::takeKernelError(), "") << refusal();
  const Record &r = last();
  EXPECT_EQ(r.executes, executes + 1);
  EXPECT_FALSE(r.backward);
  EXPECT_FALSE(r.causal);
  // [b, s, h, d]: s steps over h·d, h over d. cuDNN reads Kᵀ: K's strides
  // with the last two swapped.
  Sizes q = {16 * 4 * 16, 16, 4 * 16, 1}, kv = {32 * 4 * 16, 16, 4 * 16, 1};
  expectTensor(r.q, kCudnnBfloat16, {2, 4, 16, 16}, q, a.q.bits.data(), "Q");
  expectTensor(r.k, kCudnnBfloat16, {2, 4, 16, 32}, {kv[0], kv[1], 1, kv[2]},
               a.k.bits.data(), "K^T");
  expectTensor(r.v, kCudnnBfloat16, {2, 4, 32, 16}, kv, a.v.bits.data(), "V");
  expectTensor(r.o, kCudnnBfloat16, {2, 4, 16, 16}, q, a.o.bits.data(), "O");
  expectTensor(r.stats, kCudnnFloat, {2, 4, 16, 1}, {4 * 16, 16, 1, 1},
               a.stats.data(), "stats");
  expectTensor(r.scale, kCudnnFloat, {1, 1, 1, 1}, {1, 1, 1, 1}, a.scale.data(),
               "scale");
  EXPECT_FALSE(r.bias.present);
  EXPECT_FALSE(r.negativeInfinity.present);
  // Distinct uids, each the variant pack's key of its own pointer.
  std::vector<int64_t> uids = {r.q.uid, r.k.uid,     r.v.uid,
                               r.o.uid, r.stats.uid, r.scale.uid};
  std::sort(uids.begin(), uids.end());
  EXPECT_EQ(std::unique(uids.begin(), uids.end()), uids.end());
  // The first engine config never finalizes in the fake: the runtime took
  // the second, and gave it the workspace its plan asked for.
  EXPECT_EQ(r.engine, 1);
  EXPECT_EQ(r.workspaceBytes, 2 * 4 * 16 * 8);
  EXPECT_NE(r.workspace, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(r.workspace) % 256, 0u);
  EXPECT_EQ(r.stream, stream);

  Values bias;
  Forward want = referenceForward(a.inputs(bias));
  expectClose(a.o, want.o, want.bound, "O");
}

TEST(GpuAttention, PlansATransposedKWithACausalMaskAndABroadcastBias) {
  ASSERT_NE(fakeCudnn(), nullptr);
  Shape s{2, 4, 16, 32, 16};
  Attention a(s, TSR_DTYPE_BFLOAT16, {kBhsd, kBhds, kBhsd, kBhsd},
              /*biasBroadcast=*/3, TSR_ATTENTION_CAUSAL);
  a.forward(nullptr, /*withStats=*/false);
  ASSERT_EQ(tsr::takeKernelError(), "") << refusal();
  const Record &r = last();
  // K is held [b, h, d, s]: Kᵀ is dense row-major to cuDNN.
  expectTensor(r.k, kCudnnBfloat16, {2, 4, 16, 32},
               {4 * 16 * 32, 16 * 32, 32, 1}, a.k.bits.data(), "K^T");
  expectTensor(r.q, kCudnnBfloat16, {2, 4, 16, 16},
               {4 * 16 * 16, 16 * 16, 16, 1}, a.q.bits.data(), "Q");
  expectTensor(r.bias, kCudnnBfloat16, {1, 1, 16, 32},
               {16 * 32, 16 * 32, 32, 1}, a.bias.bits.data(), "bias");
  EXPECT_FALSE(r.stats.present);
  EXPECT_TRUE(r.causal);
  EXPECT_TRUE(r.negativeInfinity.byValue);
  EXPECT_EQ(r.negativeInfinityValue, -std::numeric_limits<float>::infinity());
  EXPECT_EQ(r.workspaceBytes, 2 * 4 * 16 * 8);

  Values bias = a.biasValues();
  Forward want = referenceForward(a.inputs(bias));
  expectClose(a.o, want.o, want.bound, "O");
}

TEST(GpuAttention, ComputesTheForwardAndItsStats) {
  ASSERT_NE(fakeCudnn(), nullptr);
  // sq != skv: the causal mask is top-left aligned.
  Shape s{2, 3, 12, 20, 16};
  for (int32_t dtype : {TSR_DTYPE_BFLOAT16, TSR_DTYPE_FLOAT16})
    for (int32_t flags : {0, int32_t(TSR_ATTENTION_CAUSAL)})
      for (int32_t broadcast : {-1, 3, 0}) {
        std::string what = std::string(tsr_dtype_name(tsr_dtype_t(dtype))) +
                           (flags ? " causal" : "") + ", bias broadcast " +
                           std::to_string(broadcast);
        Attention a(s, dtype, {kBshd, kBhds, kBhsd, kBshd}, broadcast, flags);
        a.forward();
        ASSERT_EQ(tsr::takeKernelError(), "") << what << ": " << refusal();
        EXPECT_EQ(last().q.type,
                  dtype == TSR_DTYPE_BFLOAT16 ? kCudnnBfloat16 : kCudnnHalf);
        Values bias = a.biasValues();
        Forward want = referenceForward(a.inputs(bias));
        expectClose(a.o, want.o, want.bound, what + ": O");
        for (size_t i = 0; i < want.stats.size(); ++i)
          EXPECT_NEAR(a.stats[i], want.stats[i],
                      1e-5 * (1 + std::abs(want.stats[i])))
              << what << ": stats " << i;
      }
}

/// Central differences of Σ dO ⊙ O(q, k, v) against the analytic
/// gradients, all in float64: the backward's reference is the derivative
/// of the forward's.
TEST(GpuAttention, ReferenceGradientsAreTheForwardsDerivatives) {
  Shape s{1, 2, 5, 7, 8};
  Attention a(s, TSR_DTYPE_FLOAT16, {kBhsd, kBhsd, kBhsd, kBhsd}, 1,
              TSR_ATTENTION_CAUSAL);
  Values bias = a.biasValues(),
         dO = Buffer(a.dtype, s.q(), kBhsd).random(9).values();
  Inputs in = a.inputs(bias);
  Backward g = referenceBackward(in, referenceForward(in).o, dO);
  auto loss = [&](const Inputs &x) {
    Values o = referenceForward(x).o;
    double sum = 0;
    for (size_t i = 0; i < o.size(); ++i)
      sum += dO[i] * o[i];
    return sum;
  };
  const double step = 1e-6;
  for (int which = 0; which < 3; ++which)
    for (size_t i = 0; i < 40; i += 3) {
      Inputs plus = in, minus = in;
      Values *p = which == 0 ? &plus.q : which == 1 ? &plus.k : &plus.v;
      Values *m = which == 0 ? &minus.q : which == 1 ? &minus.k : &minus.v;
      (*p)[i] += step, (*m)[i] -= step;
      double numeric = (loss(plus) - loss(minus)) / (2 * step);
      double analytic = (which == 0 ? g.dq : which == 1 ? g.dk : g.dv)[i];
      EXPECT_NEAR(numeric, analytic, 1e-6) << "operand " << which << ", " << i;
    }
}

TEST(GpuAttention, ComputesTheBackward) {
  ASSERT_NE(fakeCudnn(), nullptr);
  Shape s{2, 3, 12, 20, 16};
  struct Case {
    int32_t dtype, flags, broadcast;
  };
  for (Case c : {Case{TSR_DTYPE_BFLOAT16, TSR_ATTENTION_CAUSAL, -1},
                 Case{TSR_DTYPE_FLOAT16, 0, 0},
                 Case{TSR_DTYPE_BFLOAT16, TSR_ATTENTION_CAUSAL, 1}}) {
    std::string what = std::string(tsr_dtype_name(tsr_dtype_t(c.dtype))) +
                       (c.flags ? " causal" : "") + ", bias broadcast " +
                       std::to_string(c.broadcast);
    Attention a(s, c.dtype, {kBhsd, kBshd, kBhds, kBshd}, c.broadcast, c.flags);
    a.forward();
    Gradients g(a, {kBshd, kBhsd, kBshd, kBhsd});
    g.backward(a);
    ASSERT_EQ(tsr::takeKernelError(), "") << what << ": " << refusal();
    EXPECT_TRUE(last().backward);
    Values bias = a.biasValues();
    Backward want =
        referenceBackward(a.inputs(bias), a.o.values(), g.dO.values());
    expectClose(g.dV, want.dv, want.dvBound, what + ": dV");
    expectClose(g.dK, want.dk, want.dkBound, what + ": dK");
    expectClose(g.dQ, want.dq, want.dqBound, what + ": dQ");
  }
}

TEST(GpuAttention, PlansTheBackwardWithItsWorkspaceTensors) {
  ASSERT_NE(fakeCudnn(), nullptr);
  Shape s{2, 4, 16, 32, 16};
  Attention a(s, TSR_DTYPE_BFLOAT16, {kBshd, kBshd, kBshd, kBshd});
  a.forward();
  Gradients g(a, {kBshd, kBhsd, kBshd, kBhsd});
  void *stream = reinterpret_cast<void *>(0xfeed);
  g.backward(a, stream);
  ASSERT_EQ(tsr::takeKernelError(), "") << refusal();
  const Record &r = last();
  EXPECT_TRUE(r.backward);
  Sizes q = {16 * 4 * 16, 16, 4 * 16, 1}, kv = {32 * 4 * 16, 16, 4 * 16, 1};
  expectTensor(r.k, kCudnnBfloat16, {2, 4, 16, 32}, {kv[0], kv[1], 1, kv[2]},
               a.k.bits.data(), "K^T");
  // The backward reads Vᵀ.
  expectTensor(r.v, kCudnnBfloat16, {2, 4, 16, 32}, {kv[0], kv[1], 1, kv[2]},
               a.v.bits.data(), "V^T");
  expectTensor(r.o, kCudnnBfloat16, {2, 4, 16, 16}, q, a.o.bits.data(), "O");
  expectTensor(r.dO, kCudnnBfloat16, {2, 4, 16, 16}, q, g.dO.bits.data(), "dO");
  expectTensor(r.dQ, kCudnnBfloat16, {2, 4, 16, 16},
               {4 * 16 * 16, 16 * 16, 16, 1}, g.dQ.bits.data(), "dQ");
  expectTensor(r.dK, kCudnnBfloat16, {2, 4, 32, 16}, kv, g.dK.bits.data(),
               "dK");
  expectTensor(r.dV, kCudnnBfloat16, {2, 4, 32, 16},
               {4 * 32 * 16, 32 * 16, 16, 1}, g.dV.bits.data(), "dV");
  expectTensor(r.stats, kCudnnFloat, {2, 4, 16, 1}, {4 * 16, 16, 1, 1},
               a.stats.data(), "stats");
  // The softmax sum and the dQ accumulator follow cuDNN's own workspace in
  // the plan's buffer, 256-byte aligned.
  int64_t workspace = 2 * 4 * 16 * 32 * 4;
  EXPECT_EQ(r.workspaceBytes, workspace);
  auto *base = static_cast<char *>(r.workspace);
  expectTensor(r.softmaxSum, kCudnnFloat, {2, 4, 16, 1}, {4 * 16, 16, 1, 1},
               base + workspace, "softmax sum");
  expectTensor(r.dQAccumulator, kCudnnFloat, {2, 4, 16, 16},
               {4 * 16 * 16, 16 * 16, 16, 1}, base + workspace + 2 * 4 * 16 * 4,
               "dQ accumulator");
  EXPECT_TRUE(r.one.byValue);
  EXPECT_EQ(r.oneValue, 1.0f);
  EXPECT_EQ(r.scale.data, a.scale.data());
  EXPECT_EQ(r.stream, stream);
}

TEST(GpuAttention, MakesOnePlanPerShapeAndFlags) {
  ASSERT_NE(fakeCudnn(), nullptr);
  Shape s{1, 2, 8, 8, 8};
  Attention a(s, TSR_DTYPE_BFLOAT16, {kBhsd, kBhsd, kBhsd, kBhsd});
  int before = graphs(), executes = last().executes;
  a.forward();
  a.forward();
  ASSERT_EQ(tsr::takeKernelError(), "") << refusal();
  EXPECT_EQ(graphs(), before + 1);
  a.flags = TSR_ATTENTION_CAUSAL;
  a.forward();
  a.forward();
  ASSERT_EQ(tsr::takeKernelError(), "") << refusal();
  EXPECT_EQ(graphs(), before + 2);
  a.flags = 0;
  a.forward();
  EXPECT_EQ(graphs(), before + 2);
  EXPECT_EQ(last().executes, executes + 5);
}

TEST(GpuAttention, ReportsAShapeWithoutAnEngineAndFreesItsPlan) {
  ASSERT_NE(fakeCudnn(), nullptr);
  // The fake's heuristics have no engine for sq == 24.
  Attention a({1, 1, 24, 24, 8}, TSR_DTYPE_BFLOAT16,
              {kBhsd, kBhsd, kBhsd, kBhsd});
  int descriptors = live();
  a.forward();
  EXPECT_EQ(tsr::takeKernelError(),
            "bfloat16 GPU attention 1x1x24x24 (d 8): cuDNN has no engine for "
            "it");
  EXPECT_EQ(live(), descriptors);
}

TEST(GpuAttention, RefusesWhatCudnnDoesNotRunAndComputesNothing) {
  ASSERT_NE(fakeCudnn(), nullptr);
  Shape s{2, 4, 16, 16, 16};
  const std::string shape = "GPU attention 2x4x16x16 (d 16): ";
  auto refuses = [&](Attention &a, const std::string &error) {
    int executes = last().executes, descriptors = live();
    std::vector<uint16_t> before = a.o.bits;
    a.forward();
    EXPECT_EQ(tsr::takeKernelError(), error);
    EXPECT_EQ(last().executes, executes) << error;
    EXPECT_EQ(live(), descriptors) << error;
    EXPECT_EQ(a.o.bits, before) << error;
  };
  {
    Attention a(s, TSR_DTYPE_BFLOAT16, {kBhsd, 0x0112, kBhsd, kBhsd});
    refuses(a, "bfloat16 " + shape +
                   "k_layout 0x0112 is not a layout code (a permutation of "
                   "the hex digits 0123)");
  }
  {
    Attention a(s, TSR_DTYPE_BFLOAT16, {kBhsd, kBhsd, kBhsd, 0x10123});
    refuses(a, "bfloat16 " + shape +
                   "o_layout 0x10123 is not a layout code (a permutation of "
                   "the hex digits 0123)");
  }
  {
    Attention a({2, 4, 16, 16, 264}, TSR_DTYPE_BFLOAT16,
                {kBhsd, kBhsd, kBhsd, kBhsd});
    refuses(a, "bfloat16 GPU attention 2x4x16x16 (d 264): head dim 264 is not "
               "a multiple of 8 up to 256, what cuDNN's fused attention takes");
  }
  {
    Attention a({2, 4, 16, 16, 12}, TSR_DTYPE_FLOAT16,
                {kBhsd, kBhsd, kBhsd, kBhsd});
    refuses(a, "float16 GPU attention 2x4x16x16 (d 12): head dim 12 is not a "
               "multiple of 8 up to 256, what cuDNN's fused attention takes");
  }
  {
    Attention a(s, TSR_DTYPE_FLOAT32, {kBhsd, kBhsd, kBhsd, kBhsd});
    refuses(a, "float32 " + shape +
                   "dtype float32 is not one cuDNN's fused attention takes "
                   "(bfloat16, float16)");
  }
  {
    Attention a(s, TSR_DTYPE_BFLOAT16, {kBhsd, kBhsd, kBhsd, kBhsd});
    a.scale.clear();
    refuses(a, "bfloat16 " + shape + "scale is null");
  }
  {
    Attention a(s, TSR_DTYPE_BFLOAT16, {kBhsd, kBhsd, kBhsd, kBhsd}, 4);
    refuses(a, "bfloat16 " + shape +
                   "bias_broadcast 0x0004 has bits other than 1 (batch) and 2 "
                   "(head)");
  }
  {
    Attention a(s, TSR_DTYPE_BFLOAT16, {kBhsd, kBhsd, kBhsd, kBhsd}, -1, 2);
    refuses(a, "bfloat16 " + shape +
                   "flags 0x0002 has bits other than TSR_ATTENTION_CAUSAL");
  }
  {
    Attention a({2, 0, 16, 16, 16}, TSR_DTYPE_BFLOAT16,
                {kBhsd, kBhsd, kBhsd, kBhsd});
    refuses(a, "bfloat16 GPU attention 2x0x16x16 (d 16): every size must be "
               "positive");
  }
  {
    Attention a(s, TSR_DTYPE_BFLOAT16, {kBhsd, kBhsd, kBhsd, kBhsd});
    int executes = last().executes;
    tsrt_gpu_attention(nullptr, s.b, s.h, s.sq, s.skv, s.d, a.dtype,
                       a.q.bits.data() + 1, kBhsd, a.k.bits.data(), kBhsd,
                       a.v.bits.data(), kBhsd, a.o.bits.data(), kBhsd, nullptr,
                       a.scale.data(), nullptr, 0, 0);
    EXPECT_EQ(tsr::takeKernelError(),
              "bfloat16 " + shape + "q is not 16-byte aligned");
    EXPECT_EQ(last().executes, executes);
  }
}

TEST(GpuAttention, RefusesABackwardCudnnDoesNotRun) {
  ASSERT_NE(fakeCudnn(), nullptr);
  Attention a({2, 4, 16, 16, 136}, TSR_DTYPE_BFLOAT16,
              {kBhsd, kBhsd, kBhsd, kBhsd});
  Gradients g(a, {kBhsd, kBhsd, kBhsd, kBhsd});
  int executes = last().executes;
  std::vector<uint16_t> before = g.dQ.bits;
  g.backward(a);
  EXPECT_EQ(tsr::takeKernelError(),
            "bfloat16 GPU attention backward 2x4x16x16 (d 136): head dim 136 "
            "is not a multiple of 8 up to 128, what cuDNN's fused attention "
            "backward takes");
  Attention b({2, 4, 16, 16, 16}, TSR_DTYPE_BFLOAT16,
              {kBhsd, kBhsd, kBhsd, kBhsd});
  Gradients h(b, {kBhsd, kBhsd, kBhsd, 0x0123 + 0x1000});
  h.backward(b);
  EXPECT_EQ(tsr::takeKernelError(),
            "bfloat16 GPU attention backward 2x4x16x16 (d 16): d_v_layout "
            "0x1123 is not a layout code (a permutation of the hex digits "
            "0123)");
  Gradients n(b, {kBhsd, kBhsd, kBhsd, kBhsd});
  n.backward(b, nullptr, /*withStats=*/false);
  EXPECT_EQ(tsr::takeKernelError(),
            "bfloat16 GPU attention backward 2x4x16x16 (d 16): stats is null");
  EXPECT_EQ(last().executes, executes);
  EXPECT_EQ(g.dQ.bits, before);
}

} // namespace
