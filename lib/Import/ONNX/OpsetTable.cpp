//===- OpsetTable.cpp - ONNX op versions beyond libonnx 1.12 --------------===//
//
// libonnx 1.12 has the schemas of opsets 1 to 17. Models declaring opsets 18
// to 21 still parse; what changes there is recorded below so that each node
// carries the since_version the legalization handlers key on.
//
//===----------------------------------------------------------------------===//
#include "OpsetTable.h"

#include "onnx/defs/schema.h"
#include "onnx/defs/shape_inference.h"

#include <map>
#include <mutex>
#include <vector>

using namespace mlir::tessera::onnx_import;

/// Ops whose schema changed, or that appeared, in opsets 18 to 21.
static const std::map<std::string, std::vector<int64_t>> &newerVersions() {
  static const std::map<std::string, std::vector<int64_t>> table = {
      {"ReduceMean", {18}},
      {"ReduceMax", {18, 20}},
      {"ReduceMin", {18, 20}},
      {"ReduceProd", {18}},
      {"ReduceL1", {18}},
      {"ReduceL2", {18}},
      {"ReduceLogSum", {18}},
      {"ReduceLogSumExp", {18}},
      {"ReduceSumSquare", {18}},
      {"Split", {18}},
      {"Pad", {18, 19, 21}},
      {"ScatterElements", {18}},
      {"ScatterND", {18}},
      {"Resize", {18, 19}},
      {"LpPool", {18}},
      {"Col2Im", {18}},
      {"BitwiseAnd", {18}},
      {"BitwiseOr", {18}},
      {"BitwiseXor", {18}},
      {"BitwiseNot", {18}},
      {"CenterCropPad", {18}},
      {"GroupNormalization", {18, 21}},
      {"Mish", {18}},
      {"OptionalGetElement", {18}},
      {"OptionalHasElement", {18}},
      {"AveragePool", {19}},
      {"Cast", {19, 21}},
      {"CastLike", {19, 21}},
      {"Constant", {19, 21}},
      {"DeformConv", {19}},
      {"DequantizeLinear", {19, 21}},
      {"QuantizeLinear", {19, 21}},
      {"Equal", {19}},
      {"Identity", {19, 21}},
      {"If", {19, 21}},
      {"Loop", {19, 21}},
      {"Scan", {19, 21}},
      {"Reshape", {19, 21}},
      {"Shape", {19, 21}},
      {"Size", {19, 21}},
      {"AffineGrid", {20}},
      {"ConstantOfShape", {20, 21}},
      {"DFT", {20}},
      {"Gelu", {20}},
      {"GridSample", {20}},
      {"ImageDecoder", {20}},
      {"IsInf", {20}},
      {"IsNaN", {20}},
      {"RegexFullMatch", {20}},
      {"StringConcat", {20}},
      {"StringSplit", {20}},
      {"Flatten", {21}},
      {"QLinearMatMul", {21}},
      {"Squeeze", {21}},
      {"Transpose", {21}},
      {"Unsqueeze", {21}},
  };
  return table;
}

std::optional<int64_t> mlir::tessera::onnx_import::lookupSinceVersion(
    const std::string &opType, int64_t opset, int64_t &firstOpset) {
  firstOpset = 0;
  if (opset > kLibOnnxMaxOpset) {
    auto it = newerVersions().find(opType);
    if (it != newerVersions().end()) {
      std::optional<int64_t> best;
      for (int64_t v : it->second)
        if (v <= opset)
          best = v;
      if (best)
        return best;
    }
  }
  int64_t known = std::min<int64_t>(opset, kLibOnnxMaxOpset);
  if (const auto *schema = onnx::OpSchemaRegistry::Schema(
          opType, static_cast<int>(known), onnx::ONNX_DOMAIN))
    return schema->since_version();
  if (const auto *latest = onnx::OpSchemaRegistry::Schema(
          opType, static_cast<int>(kLibOnnxMaxOpset), onnx::ONNX_DOMAIN)) {
    // Known to libonnx, but only from a later opset than declared.
    const auto *first = latest;
    for (int64_t v = kLibOnnxMaxOpset; v >= 1; --v) {
      const auto *s = onnx::OpSchemaRegistry::Schema(
          opType, static_cast<int>(v), onnx::ONNX_DOMAIN);
      if (!s)
        break;
      first = s;
      v = s->since_version();
    }
    firstOpset = first->since_version();
    return std::nullopt;
  }
  auto it = newerVersions().find(opType);
  if (it != newerVersions().end() && !it->second.empty())
    firstOpset = it->second.front();
  return std::nullopt;
}

void mlir::tessera::onnx_import::registerContribSchemas() {
  static std::once_flag once;
  std::call_once(once, [] {
    using onnx::AttributeProto;
    using onnx::OpSchema;
    auto &domains = onnx::OpSchemaRegistry::DomainToVersionRange::Instance();
    if (!domains.Map().count(kMicrosoftDomain))
      domains.AddDomainToVersion(kMicrosoftDomain, 1, 1);
    OpSchema moe;
    moe.SetName("MoE")
        .SetDomain(kMicrosoftDomain)
        .SinceVersion(1)
        .SetDoc("Mixture of experts (onnxruntime contrib op): softmax over "
                "router_probs, top-k experts per token, each a two-layer "
                "MLP, outputs summed weighted by the (optionally "
                "renormalized) routing probabilities.")
        .Attr("activation_type", "relu, gelu, silu, swiglu or identity",
              AttributeProto::STRING, std::string("relu"))
        .Attr("k", "experts per token", AttributeProto::INT,
              static_cast<int64_t>(1))
        .Attr("normalize_routing_weights",
              "renormalize the top-k probabilities to sum to 1",
              AttributeProto::INT, static_cast<int64_t>(0))
        .Attr("use_sparse_mixer", "sparse mixer routing (top-2 only)",
              AttributeProto::INT, static_cast<int64_t>(0))
        .Attr("activation_alpha", "alpha of swiglu", AttributeProto::FLOAT,
              1.0f)
        .Attr("activation_beta", "beta of swiglu", AttributeProto::FLOAT, 0.0f)
        .Attr("swiglu_fusion",
              "0: FC1 and FC3, 1: interleaved, 2: concatenated",
              AttributeProto::INT, static_cast<int64_t>(0))
        .Attr("swiglu_limit", "clamp limit of swiglu", AttributeProto::FLOAT,
              false)
        .Input(0, "input", "[tokens, hidden] or [batch, seq, hidden]", "T")
        .Input(1, "router_probs", "router logits [tokens, experts]", "T")
        .Input(2, "fc1_experts_weights", "[experts, inter, hidden]", "T")
        .Input(3, "fc1_experts_bias", "[experts, inter]", "T",
               OpSchema::Optional)
        .Input(4, "fc2_experts_weights", "[experts, hidden, inter]", "T")
        .Input(5, "fc2_experts_bias", "[experts, hidden]", "T",
               OpSchema::Optional)
        .Input(6, "fc3_experts_weights", "[experts, inter, hidden]", "T",
               OpSchema::Optional)
        .Input(7, "fc3_experts_bias", "[experts, inter]", "T",
               OpSchema::Optional)
        .Output(0, "output", "the input's shape", "T")
        .TypeConstraint("T",
                        {"tensor(float)", "tensor(float16)", "tensor(bfloat16)",
                         "tensor(double)"},
                        "float tensors")
        .TypeAndShapeInferenceFunction([](onnx::InferenceContext &ctx) {
          onnx::propagateElemTypeFromInputToOutput(ctx, 0, 0);
          if (onnx::hasInputShape(ctx, 0))
            onnx::propagateShapeFromInputToOutput(ctx, 0, 0);
        });
    onnx::RegisterSchema(std::move(moe));
  });
}

std::optional<int64_t> mlir::tessera::onnx_import::lookupContribSinceVersion(
    const std::string &domain, const std::string &opType, int64_t opset) {
  registerContribSchemas();
  if (const auto *schema = onnx::OpSchemaRegistry::Schema(
          opType, static_cast<int>(opset), domain))
    return schema->since_version();
  return std::nullopt;
}
