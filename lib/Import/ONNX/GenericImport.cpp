//===- GenericImport.cpp - ONNX protobuf to generic onnx.node ops ---------===//
//
// Stage 1 of ONNX import. libonnx parses the ModelProto, upgrades opsets
// older than 13, checks the graph and infers shapes; every node then becomes
// one `onnx.node` recording its opset and since_version, initializers become
// `tsr.constant`. This is the only code that touches libonnx: it is built
// with exceptions and catches every one of them here, turning it into one
// diagnostic.
//
//===----------------------------------------------------------------------===//
#include "OnnxTensors.h"
#include "OpsetTable.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "tessera/Dialect/Onnx/IR/OnnxDialect.h"
#include "tessera/Dialect/Tsr/IR/TsrDialect.h"
#include "tessera/Dialect/Tsr/IR/TsrOps.h"
#include "tessera/Import/ONNX/Import.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include "onnx/checker.h"
#include "onnx/defs/schema.h"
#include "onnx/onnx_pb.h"
#include "onnx/shape_inference/implementation.h"
#include "onnx/version_converter/convert.h"

#include <cmath>
#include <exception>
#include <map>
#include <unordered_map>

using namespace mlir;
using namespace mlir::tessera;
using namespace mlir::tessera::onnx_import;

/// libonnx messages span lines; a diagnostic is one line.
static std::string oneLine(const std::string &text) {
  std::string out;
  for (char c : text) {
    if (c == '\n' || c == '\r' || c == '\t')
      c = ' ';
    if (c == ' ' && (out.empty() || out.back() == ' '))
      continue;
    out.push_back(c);
  }
  while (!out.empty() && out.back() == ' ')
    out.pop_back();
  return out;
}

namespace {
/// The first error met; the importer stops there and reports it once.
struct ImportError {
  Location loc;
  std::string message;
};

/// Opsets from which the importer upgrades with libonnx's version converter.
constexpr int64_t kMinNativeOpset = 13;
/// The newest IR version libonnx 1.12's checker accepts.
constexpr int64_t kCheckerMaxIrVersion = 8;

class GenericImporter {
public:
  GenericImporter(MLIRContext &ctx, StringRef path,
                  const OnnxImportOptions &opts)
      : ctx(ctx), path(path.str()), opts(opts),
        fileLoc(FileLineColLoc::get(&ctx, path, 0, 0)) {
    modelDir = llvm::sys::path::parent_path(path).str();
  }

  /// Runs stage 1; on failure `error` holds the one diagnostic to emit.
  OwningOpRef<ModuleOp> run();
  std::optional<ImportError> error;

private:
  LogicalResult fail(Location loc, const Twine &message) {
    if (!error)
      error = ImportError{loc, message.str()};
    return failure();
  }
  LogicalResult fail(const Twine &message) { return fail(fileLoc, message); }

  LogicalResult readModel();
  LogicalResult upgradeAndCheck();
  LogicalResult setInputShapes();
  LogicalResult inferShapes();
  LogicalResult buildFunction(ModuleOp module);
  void warnSharedInitializers(ArrayRef<std::string> params);

  Type convertType(const onnx::TypeProto &type);
  FailureOr<NamedAttribute> convertAttribute(const onnx::AttributeProto &attr,
                                             const onnx::NodeProto &node,
                                             size_t index, Location loc);
  Location nodeLoc(const onnx::NodeProto &node, size_t index);
  std::string nodeName(const onnx::NodeProto &node, size_t index);
  std::string describe(const onnx::NodeProto &node, size_t index) {
    return "op '" + node.op_type() + "' (domain '" + node.domain() +
           "', opset " + std::to_string(opsetOf(node.domain())) +
           ") at node '" + nodeName(node, index) + "'";
  }
  int64_t opsetOf(const std::string &domain) {
    auto it = opsets.find(domain == "ai.onnx" ? "" : domain);
    return it == opsets.end() ? 0 : it->second;
  }

  MLIRContext &ctx;
  std::string path, modelDir;
  const OnnxImportOptions &opts;
  Location fileLoc;
  onnx::ModelProto model;
  std::unordered_map<std::string, int64_t> opsets;
};
} // namespace

LogicalResult GenericImporter::readModel() {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer)
    return fail("cannot read ONNX model '" + path +
                "': " + buffer.getError().message());
  size_t size = (*buffer)->getBufferSize();
  if (size == 0)
    return fail("'" + path + "' is empty, not an ONNX model");
  if (size > static_cast<size_t>(INT32_MAX))
    return fail("'" + path +
                "' is larger than 2 GiB; store the weights as "
                "ONNX external data");
  if (!model.ParseFromArray((*buffer)->getBufferStart(),
                            static_cast<int>(size)))
    return fail("cannot parse '" + path +
                "' as an ONNX ModelProto (truncated, corrupt or not an "
                "ONNX file)");
  if (!model.has_ir_version() || model.ir_version() <= 0 || !model.has_graph())
    return fail("'" + path + "' is not an ONNX model: it has no " +
                (model.has_graph() ? "IR version" : "graph"));
  for (const auto &opset : model.opset_import()) {
    std::string domain = opset.domain() == "ai.onnx" ? "" : opset.domain();
    opsets[domain] = opset.version();
  }
  if (!model.functions().empty())
    return fail("unsupported: model-local functions ('" +
                model.functions(0).name() + "') are not supported");
  return success();
}

LogicalResult GenericImporter::upgradeAndCheck() {
  // Ops outside the default domain, or newer than the declared opset, are
  // reported before libonnx sees them, with the node named.
  const auto &graph = model.graph();
  registerContribSchemas();
  for (int i = 0; i < graph.node_size(); ++i) {
    const auto &node = graph.node(i);
    if (node.domain() != "" && node.domain() != "ai.onnx") {
      if (node.domain() == kMicrosoftDomain &&
          lookupContribSinceVersion(node.domain(), node.op_type(),
                                    opsetOf(node.domain())))
        continue;
      return fail(nodeLoc(node, i),
                  "unsupported ONNX " + describe(node, i) +
                      ": only the default domain ('' / 'ai.onnx') and "
                      "'com.microsoft' MoE are supported");
    }
    if (!opsets.count(""))
      return fail("the model declares no opset for the default ONNX domain");
    int64_t first = 0;
    if (!lookupSinceVersion(node.op_type(), opsetOf(""), first))
      return fail(
          nodeLoc(node, i),
          "ONNX " + describe(node, i) + " is not defined in opset " +
              std::to_string(opsetOf("")) +
              (first ? " (it appears in opset " + std::to_string(first) + ")"
                     : std::string(" (unknown op)")));
  }

  int64_t opset = opsetOf("");
  if (opset < kMinNativeOpset) {
    try {
      model = onnx::version_conversion::ConvertVersion(
          model, static_cast<int>(kMinNativeOpset));
    } catch (const std::exception &e) {
      return fail("cannot upgrade the model from opset " +
                  std::to_string(opset) + " to " +
                  std::to_string(kMinNativeOpset) + ": " + e.what());
    }
    opsets[""] = kMinNativeOpset;
    for (auto &imp : *model.mutable_opset_import())
      if (imp.domain() == "" || imp.domain() == "ai.onnx")
        imp.set_version(kMinNativeOpset);
  }

  // libonnx 1.12 knows IR versions up to 8 and opsets up to 17; the protobuf
  // schema has not changed since, so newer models are checked as if they
  // declared those (newer opsets skip the checker: their schemas differ).
  if (opsetOf("") > kLibOnnxMaxOpset)
    return success();
  try {
    onnx::checker::CheckerContext checkCtx;
    checkCtx.set_ir_version(static_cast<int>(
        std::min<int64_t>(model.ir_version(), kCheckerMaxIrVersion)));
    std::unordered_map<std::string, int> imports;
    for (auto &[domain, version] : opsets)
      imports[domain] = static_cast<int>(version);
    checkCtx.set_opset_imports(imports);
    checkCtx.set_model_dir(modelDir);
    onnx::checker::LexicalScopeContext lexCtx;
    onnx::checker::check_graph(model.graph(), checkCtx, lexCtx);
  } catch (const std::exception &e) {
    std::string what = oneLine(e.what());
    return fail("invalid ONNX model: " + what);
  }
  return success();
}

LogicalResult GenericImporter::setInputShapes() {
  auto *graph = model.mutable_graph();
  llvm::StringSet<> initializers;
  for (const auto &init : graph->initializer())
    initializers.insert(init.name());
  for (const auto &[name, shape] : opts.inputShapes) {
    (void)shape;
    bool found = false;
    for (const auto &input : graph->input())
      found |= input.name() == name.str();
    if (!found)
      return fail("--input-shape names '" + name.str() +
                  "', which is not a graph input");
  }
  if (opts.batchSize > 0) {
    // Recorded intermediate and output shapes hold the old batch size;
    // shape inference recomputes them.
    graph->clear_value_info();
    for (auto &output : *graph->mutable_output())
      if (output.type().has_tensor_type())
        output.mutable_type()->mutable_tensor_type()->clear_shape();
  }
  for (auto &input : *graph->mutable_input()) {
    if (initializers.contains(input.name()))
      continue;
    const std::string &name = input.name();
    if (!input.type().has_tensor_type())
      return fail("unsupported: graph input '" + name +
                  "' is not a tensor (sequences, maps and optionals are not "
                  "supported)");
    auto *tensor = input.mutable_type()->mutable_tensor_type();
    if (!getElementType(&ctx, tensor->elem_type()))
      return fail("unsupported: graph input '" + name + "' has element type " +
                  getDataTypeName(tensor->elem_type()) +
                  " (supported: float, double, float16, bfloat16, int8/16/32/"
                  "64, uint8/16/32/64, bool)");
    auto given = opts.inputShapes.find(name);
    if (given != opts.inputShapes.end()) {
      const auto &dims = given->second;
      if (tensor->has_shape() &&
          tensor->shape().dim_size() != static_cast<int>(dims.size()))
        return fail("--input-shape gives input '" + name + "' rank " +
                    std::to_string(dims.size()) + ", the model declares rank " +
                    std::to_string(tensor->shape().dim_size()));
      for (auto [i, d] : llvm::enumerate(dims))
        if (d <= 0)
          return fail("--input-shape gives input '" + name + "' dimension " +
                      std::to_string(i) + " size " + std::to_string(d) +
                      "; sizes must be positive");
      if (opts.batchSize > 0 && !dims.empty() && dims[0] != opts.batchSize)
        return fail("--input-shape gives input '" + name +
                    "' dimension 0 size " + std::to_string(dims[0]) +
                    ", but --batch-size makes the batch of one step " +
                    std::to_string(opts.batchSize) +
                    " (per micro-batch and rank): give the batch once");
      for (auto [i, d] : llvm::enumerate(dims)) {
        if (!tensor->has_shape() ||
            tensor->shape().dim_size() <= static_cast<int>(i))
          tensor->mutable_shape()->add_dim();
        auto *dim = tensor->mutable_shape()->mutable_dim(i);
        if (dim->has_dim_value() && dim->dim_value() != d)
          return fail("--input-shape gives input '" + name + "' dimension " +
                      std::to_string(i) + " size " + std::to_string(d) +
                      ", the model declares " +
                      std::to_string(dim->dim_value()));
        dim->set_dim_value(d);
      }
      if (dims.empty())
        tensor->mutable_shape();
      continue;
    }
    if (opts.batchSize > 0 && tensor->has_shape() &&
        tensor->shape().dim_size() >= 1)
      tensor->mutable_shape()->mutable_dim(0)->set_dim_value(opts.batchSize);
    if (!tensor->has_shape())
      return fail("graph input '" + name +
                  "' has unknown rank: give its shape with --input-shape " +
                  name + "=DxDx...");
    for (int i = 0; i < tensor->shape().dim_size(); ++i) {
      const auto &dim = tensor->shape().dim(i);
      if (dim.has_dim_value()) {
        if (dim.dim_value() < 0)
          return fail("graph input '" + name + "' declares dimension " +
                      std::to_string(i) + " with negative size " +
                      std::to_string(dim.dim_value()));
        continue;
      }
      std::string symbol = dim.has_dim_param()
                               ? "symbolic dimension '" + dim.dim_param() + "'"
                               : std::string("unknown dimension");
      return fail("graph input '" + name + "' has " + symbol + " (dim " +
                  std::to_string(i) + "): give its size with --input-shape " +
                  name + "=DxDx...");
    }
  }
  return success();
}

LogicalResult GenericImporter::inferShapes() {
  // Strict inference within libonnx's opsets; above them its schemas are
  // stale, so node-level failures are tolerated and types stay unknown.
  bool strict = opsetOf("") <= kLibOnnxMaxOpset;
  try {
    onnx::ShapeInferenceOptions options(/*check_type_val=*/strict,
                                        /*strict_mode_val=*/strict ? 1 : 0,
                                        /*data_prop_val=*/true);
    onnx::shape_inference::InferShapes(
        model, onnx::OpSchemaRegistry::Instance(), options);
  } catch (const std::exception &e) {
    std::string what = oneLine(e.what());
    std::string hint;
    if (opts.batchSize > 0)
      hint = " (the batch size replaced dimension 0 of every graph input; a "
             "model that hard-codes its batch size, e.g. in a Reshape shape, "
             "must be compiled with that batch size)";
    return fail("ONNX shape inference failed: " + what + hint);
  }
  return success();
}

std::string GenericImporter::nodeName(const onnx::NodeProto &node,
                                      size_t index) {
  if (!node.name().empty())
    return node.name();
  return node.op_type() + "_" + std::to_string(index);
}

Location GenericImporter::nodeLoc(const onnx::NodeProto &node, size_t index) {
  return NameLoc::get(StringAttr::get(&ctx, nodeName(node, index)), fileLoc);
}

Type GenericImporter::convertType(const onnx::TypeProto &type) {
  if (!type.has_tensor_type())
    return NoneType::get(&ctx);
  const auto &tensor = type.tensor_type();
  Type elem = getElementType(&ctx, tensor.elem_type());
  if (!elem)
    return NoneType::get(&ctx);
  if (!tensor.has_shape())
    return UnrankedTensorType::get(elem);
  SmallVector<int64_t> shape;
  for (const auto &dim : tensor.shape().dim()) {
    if (!dim.has_dim_value() || dim.dim_value() < 0)
      return UnrankedTensorType::get(elem);
    shape.push_back(dim.dim_value());
  }
  return RankedTensorType::get(shape, elem);
}

FailureOr<NamedAttribute>
GenericImporter::convertAttribute(const onnx::AttributeProto &attr,
                                  const onnx::NodeProto &node, size_t index,
                                  Location loc) {
  Builder b(&ctx);
  auto unsupported = [&](const Twine &what) {
    return fail(loc, "unsupported ONNX " + describe(node, index) +
                         ": attribute '" + attr.name() + "' " + what);
  };
  if (!attr.ref_attr_name().empty())
    return unsupported("refers to a function attribute");
  auto tensorAttr = [&](const onnx::TensorProto &t) -> Attribute {
    std::string err;
    DenseElementsAttr value = convertTensor(&ctx, t, modelDir, err);
    if (!value)
      (void)unsupported("holds a " + err);
    return value;
  };
  Attribute value;
  switch (attr.type()) {
  case onnx::AttributeProto::FLOAT:
    value = b.getF32FloatAttr(attr.f());
    break;
  case onnx::AttributeProto::INT:
    value = b.getI64IntegerAttr(attr.i());
    break;
  case onnx::AttributeProto::STRING:
    value = b.getStringAttr(attr.s());
    break;
  case onnx::AttributeProto::TENSOR:
    value = tensorAttr(attr.t());
    if (!value)
      return failure();
    break;
  case onnx::AttributeProto::FLOATS: {
    SmallVector<Attribute> values;
    for (float f : attr.floats())
      values.push_back(b.getF32FloatAttr(f));
    value = b.getArrayAttr(values);
    break;
  }
  case onnx::AttributeProto::INTS: {
    SmallVector<Attribute> values;
    for (int64_t i : attr.ints())
      values.push_back(b.getI64IntegerAttr(i));
    value = b.getArrayAttr(values);
    break;
  }
  case onnx::AttributeProto::STRINGS: {
    SmallVector<Attribute> values;
    for (const std::string &s : attr.strings())
      values.push_back(b.getStringAttr(s));
    value = b.getArrayAttr(values);
    break;
  }
  case onnx::AttributeProto::TENSORS: {
    SmallVector<Attribute> values;
    for (const auto &t : attr.tensors()) {
      Attribute v = tensorAttr(t);
      if (!v)
        return failure();
      values.push_back(v);
    }
    value = b.getArrayAttr(values);
    break;
  }
  case onnx::AttributeProto::GRAPH:
  case onnx::AttributeProto::GRAPHS:
    return unsupported("is a subgraph (control flow is not supported)");
  case onnx::AttributeProto::SPARSE_TENSOR:
  case onnx::AttributeProto::SPARSE_TENSORS:
    return unsupported("is a sparse tensor");
  case onnx::AttributeProto::TYPE_PROTO:
  case onnx::AttributeProto::TYPE_PROTOS:
    return unsupported("is a type");
  default:
    return unsupported("has an unknown attribute type");
  }
  return NamedAttribute(b.getStringAttr(attr.name()), value);
}

/// What a float initializer is to training.
enum class InitializerKind {
  /// A weight: every node input it feeds may carry a gradient by the ONNX
  /// schema (Unknown counts as differentiable).
  Trainable,
  /// Running statistics: it feeds only BatchNormalization's input_mean or
  /// input_var, which the schema marks differentiable but training updates
  /// from batch statistics, not from gradients.
  Statistics,
  /// Anything else (shapes, bounds, constants an op needs as such).
  Constant,
};

/// The node inputs each value feeds, as (node, input index): one pass over
/// the graph, so that classifying every initializer stays linear in the
/// model (scanning every node per initializer took most of a 24-layer
/// GPT-2-shaped model's import).
using InputUses =
    llvm::StringMap<SmallVector<std::pair<const onnx::NodeProto *, int>>>;

static InputUses collectInputUses(const onnx::GraphProto &graph) {
  InputUses uses;
  for (const auto &node : graph.node())
    for (int i = 0; i < node.input_size(); ++i)
      uses[node.input(i)].push_back({&node, i});
  return uses;
}

static InitializerKind classifyInitializer(const InputUses &uses,
                                           const std::string &name) {
  auto it = uses.find(name);
  if (it == uses.end())
    return InitializerKind::Constant;
  bool weight = true, statistics = true;
  for (auto [node, i] : it->second) {
    const auto *schema = onnx::OpSchemaRegistry::Schema(
        node->op_type(), static_cast<int>(kLibOnnxMaxOpset), node->domain());
    bool bnStatistic = node->op_type() == "BatchNormalization" && i >= 3;
    statistics &= bnStatistic;
    if (bnStatistic || !schema || schema->inputs().empty()) {
      weight = false;
      continue;
    }
    const auto &formal =
        schema->inputs()[std::min<size_t>(i, schema->inputs().size() - 1)];
    if (formal.GetDifferentiationCategory() ==
        onnx::OpSchema::NonDifferentiable)
      weight = false;
  }
  if (weight)
    return InitializerKind::Trainable;
  return statistics ? InitializerKind::Statistics : InitializerKind::Constant;
}

/// Warns about trained initializers that feed the same input of several
/// nodes of one op type, directly or through Identity nodes: the layers
/// those nodes belong to train one shared copy. PyTorch's exporter in eval
/// mode merges initializers of equal value (a module's freshly copied
/// layers, every norm's weight of ones) and keeps each dropped name as an
/// Identity of the kept one, which ties layers the model trains apart.
void GenericImporter::warnSharedInitializers(ArrayRef<std::string> params) {
  const auto &graph = model.graph();
  // Every value that is a param or an Identity of one, to that param.
  llvm::StringMap<size_t> root;
  for (auto [i, name] : llvm::enumerate(params))
    root[name] = i;
  SmallVector<SmallVector<std::string>> aliases(params.size());
  for (const auto &node : graph.node()) {
    if (node.op_type() != "Identity" || node.input_size() != 1 ||
        node.output_size() != 1)
      continue;
    auto it = root.find(node.input(0));
    if (it == root.end())
      continue;
    size_t param = it->second;
    root[node.output(0)] = param;
    aliases[param].push_back(node.output(0));
  }
  // For every param, the nodes of each (op type, input index) it feeds.
  SmallVector<std::map<std::pair<std::string, int>, SmallVector<std::string>>>
      uses(params.size());
  for (int i = 0; i < graph.node_size(); ++i) {
    const auto &node = graph.node(i);
    if (node.op_type() == "Identity")
      continue;
    for (int k = 0; k < node.input_size(); ++k) {
      auto it = root.find(node.input(k));
      if (it != root.end())
        uses[it->second][{node.op_type(), k}].push_back(nodeName(node, i));
    }
  }
  SmallVector<std::string> shared;
  for (auto [i, name] : llvm::enumerate(params))
    for (const auto &[use, nodes] : uses[i])
      if (nodes.size() > 1) {
        std::string also = aliases[i].empty()
                               ? ""
                               : ", also named " + llvm::join(aliases[i], ", ");
        shared.push_back("'" + name + "'" + also + " (input " +
                         std::to_string(use.second) + " of " +
                         std::to_string(nodes.size()) + " " + use.first +
                         " nodes: " + llvm::join(nodes, ", ") + ")");
        break;
      }
  if (shared.empty())
    return;
  emitWarning(fileLoc)
      << shared.size() << " trained initializer"
      << (shared.size() == 1 ? " feeds" : "s each feed")
      << " the same input of several nodes, so their layers train one shared "
         "copy: "
      << llvm::join(shared, "; ")
      << ". PyTorch's exporter in eval mode merges initializers of equal "
         "value (freshly built copies of a layer, norm weights of ones); to "
         "train the layers apart, export with torch.onnx.export(..., "
         "training=torch.onnx.TrainingMode.TRAINING), which merges only the "
         "same tensor (docs/pytorch.md)";
}

LogicalResult GenericImporter::buildFunction(ModuleOp module) {
  const auto &graph = model.graph();
  OpBuilder b(&ctx);
  b.setInsertionPointToEnd(module.getBody());

  // Types known after shape inference, by value name.
  std::unordered_map<std::string, const onnx::TypeProto *> knownTypes;
  for (const auto &vi : graph.value_info())
    knownTypes[vi.name()] = &vi.type();
  for (const auto &vi : graph.output())
    if (vi.has_type())
      knownTypes[vi.name()] = &vi.type();

  llvm::StringSet<> initializerNames;
  for (const auto &init : graph.initializer())
    initializerNames.insert(init.name());
  for (const auto &sparse : graph.sparse_initializer())
    return fail("unsupported: sparse initializer '" + sparse.values().name() +
                "'");

  SmallVector<Type> argTypes;
  SmallVector<std::string> argNames;
  for (const auto &input : graph.input()) {
    if (initializerNames.contains(input.name()))
      continue;
    Type t = convertType(input.type());
    if (!isa<RankedTensorType>(t))
      return fail("graph input '" + input.name() + "' has no static shape");
    argTypes.push_back(t);
    argNames.push_back(input.name());
  }

  // Trainable initializers and BatchNormalization statistics become
  // arguments after the graph inputs. A model with training_info names the
  // initializers its training updates; otherwise every float initializer
  // that feeds only differentiable inputs is trained, unless it holds a
  // non-finite value (an attention mask of -inf is not a weight).
  llvm::StringSet<> updated;
  for (const auto &info : model.training_info())
    for (const auto &binding : info.update_binding())
      updated.insert(binding.key());
  size_t numInputs = argTypes.size();
  SmallVector<bool> argIsStatistics;
  // Only constants become attributes: a parameter's values are read by the
  // runtime from the model, so the compiler never copies them (a
  // GPT-2-shaped model's 650 MB were copied twice and hashed once).
  SmallVector<DenseElementsAttr> initValues;
  SmallVector<NamedAttribute> frozen;
  InputUses uses = collectInputUses(graph);
  for (const auto &init : graph.initializer()) {
    std::string err;
    std::optional<TensorData> data = readTensor(&ctx, init, modelDir, err);
    if (!data)
      return fail("initializer " + err);
    initValues.push_back({});
    auto constant = [&] { initValues.back() = toElementsAttr(*data); };
    if (!opts.initializersAsParams ||
        !isa<FloatType>(data->type.getElementType())) {
      constant();
      continue;
    }
    InitializerKind kind = classifyInitializer(uses, init.name());
    StringRef reason;
    if (kind == InitializerKind::Constant)
      reason = "feeds no differentiable input";
    else if (kind == InitializerKind::Trainable && !updated.empty() &&
             !updated.contains(init.name()))
      reason = "not updated by the model's training_info";
    else if (kind == InitializerKind::Trainable && holdsNonFinite(*data))
      reason = "holds non-finite values";
    if (!reason.empty()) {
      frozen.push_back(b.getNamedAttr(init.name(), b.getStringAttr(reason)));
      constant();
      continue;
    }
    argTypes.push_back(data->type);
    argNames.push_back(init.name());
    argIsStatistics.push_back(kind == InitializerKind::Statistics);
  }

  // Running statistics are not trained; a shared pair is refused by the
  // update that would write it twice.
  SmallVector<std::string> trained;
  for (size_t i = numInputs; i < argNames.size(); ++i)
    if (!argIsStatistics[i - numInputs])
      trained.push_back(argNames[i]);
  warnSharedInitializers(trained);
  auto func =
      func::FuncOp::create(b, fileLoc, "main", b.getFunctionType(argTypes, {}));
  Block *body = func.addEntryBlock();
  if (!frozen.empty())
    func->setAttr(tsr::attr::kFrozen, b.getDictionaryAttr(frozen));
  for (auto [i, name] : llvm::enumerate(argNames)) {
    func.setArgAttr(i, tsr::attr::kName, b.getStringAttr(name));
    if (i < numInputs)
      continue;
    func.setArgAttr(i, tsr::attr::kRole,
                    tsr::RoleAttr::get(b.getContext(), tsr::Role::param));
    if (argIsStatistics[i - numInputs])
      func.setArgAttr(i, tsr::attr::kStatistics, b.getUnitAttr());
  }
  b.setInsertionPointToStart(body);

  llvm::StringMap<Value> values;
  for (auto [i, name] : llvm::enumerate(argNames))
    values[name] = body->getArgument(i);
  for (auto [init, value] : llvm::zip(graph.initializer(), initValues)) {
    if (values.contains(init.name()))
      continue;
    Location loc = NameLoc::get(b.getStringAttr(init.name()), fileLoc);
    values[init.name()] = tsr::ConstantOp::create(b, loc, value);
  }

  Value none;
  for (int i = 0; i < graph.node_size(); ++i) {
    const auto &node = graph.node(i);
    Location loc = nodeLoc(node, i);
    SmallVector<Value> operands;
    for (const std::string &name : node.input()) {
      if (name.empty()) {
        if (!none)
          none = onnx_generic::NoneOp::create(b, fileLoc, b.getNoneType());
        operands.push_back(none);
        continue;
      }
      auto it = values.find(name);
      if (it == values.end())
        return fail(loc, "input '" + name + "' of node '" + nodeName(node, i) +
                             "' is not a graph input, initializer or the "
                             "output of an earlier node");
      operands.push_back(it->second);
    }
    SmallVector<Type> resultTypes;
    for (const std::string &name : node.output()) {
      auto it = knownTypes.find(name);
      resultTypes.push_back(it == knownTypes.end() || name.empty()
                                ? NoneType::get(&ctx)
                                : convertType(*it->second));
    }
    SmallVector<NamedAttribute> attrs;
    for (const auto &attr : node.attribute()) {
      auto converted = convertAttribute(attr, node, i, loc);
      if (failed(converted))
        return failure();
      attrs.push_back(*converted);
    }
    std::string domain = node.domain() == "ai.onnx" ? "" : node.domain();
    int64_t opset = opsetOf(domain), first = 0;
    std::optional<int64_t> since =
        domain.empty()
            ? lookupSinceVersion(node.op_type(), opset, first)
            : lookupContribSinceVersion(domain, node.op_type(), opset);
    if (!since)
      return fail(loc, "ONNX " + describe(node, i) +
                           " is not defined in opset " + std::to_string(opset));
    auto op = onnx_generic::NodeOp::create(
        b, loc, resultTypes, operands, b.getStringAttr(node.op_type()),
        b.getStringAttr(domain), b.getStringAttr(nodeName(node, i)),
        b.getI64IntegerAttr(opset), b.getI64IntegerAttr(*since),
        b.getDictionaryAttr(attrs));
    for (auto [name, result] : llvm::zip(node.output(), op.getResults()))
      if (!name.empty())
        values[name] = result;
  }

  SmallVector<Value> results;
  for (const auto &output : graph.output()) {
    auto it = values.find(output.name());
    if (it == values.end())
      return fail("graph output '" + output.name() +
                  "' is not produced by any node, input or initializer");
    results.push_back(it->second);
  }
  func::ReturnOp::create(b, fileLoc, results);
  SmallVector<Type> resultTypes;
  for (Value v : results)
    resultTypes.push_back(v.getType());
  func.setType(b.getFunctionType(argTypes, resultTypes));
  for (auto [i, output] : llvm::enumerate(graph.output()))
    func.setResultAttr(i, tsr::attr::kName, b.getStringAttr(output.name()));
  return success();
}

OwningOpRef<ModuleOp> GenericImporter::run() {
  ctx.getOrLoadDialect<tsr::TsrDialect>();
  ctx.getOrLoadDialect<onnx_generic::OnnxDialect>();
  ctx.getOrLoadDialect<func::FuncDialect>();
  try {
    if (failed(readModel()) || failed(upgradeAndCheck()) ||
        failed(setInputShapes()) || failed(inferShapes()))
      return nullptr;
    OwningOpRef<ModuleOp> module = ModuleOp::create(fileLoc);
    if (failed(buildFunction(*module)))
      return nullptr;
    return module;
  } catch (const std::exception &e) {
    (void)fail("ONNX import failed: " + Twine(e.what()));
  } catch (...) {
    (void)fail("ONNX import failed with an unknown exception");
  }
  return nullptr;
}

OwningOpRef<ModuleOp>
mlir::tessera::importOnnxModelGeneric(MLIRContext &ctx, StringRef path,
                                      const OnnxImportOptions &opts) {
  GenericImporter importer(ctx, path, opts);
  OwningOpRef<ModuleOp> module = importer.run();
  if (!module) {
    assert(importer.error && "a failed import must say why");
    emitError(importer.error->loc) << importer.error->message;
  }
  return module;
}
