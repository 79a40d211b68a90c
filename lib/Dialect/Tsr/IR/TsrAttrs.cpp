//===- TsrAttrs.cpp - Attributes of tsr and the training contract ---------===//
//
// The mesh attribute's syntax, and the verifiers of the `tsr.*`
// discardable attributes (TsrAttrNames.h) on functions, their arguments and
// results, and modules: an unknown name or a value of the wrong kind is an
// error naming the attribute and the known ones.
//
//===----------------------------------------------------------------------===//
#include "tessera/Dialect/Tsr/IR/TsrOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::tsr;

#include "tessera/Dialect/Tsr/IR/TsrEnums.cpp.inc"
#define GET_ATTRDEF_CLASSES
#include "tessera/Dialect/Tsr/IR/TsrAttrs.cpp.inc"

void TsrDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "tessera/Dialect/Tsr/IR/TsrAttrs.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// MeshAttr
//===----------------------------------------------------------------------===//

/// #tsr.mesh<["dp"=2, "tp"=4]>
Attribute MeshAttr::parse(AsmParser &parser, Type) {
  SmallVector<StringAttr> names;
  SmallVector<int64_t> sizes;
  auto parseAxis = [&]() -> ParseResult {
    std::string name;
    int64_t size;
    if (parser.parseString(&name) || parser.parseEqual() ||
        parser.parseInteger(size))
      return failure();
    names.push_back(parser.getBuilder().getStringAttr(name));
    sizes.push_back(size);
    return success();
  };
  if (parser.parseLess() ||
      parser.parseCommaSeparatedList(AsmParser::Delimiter::Square, parseAxis) ||
      parser.parseGreater())
    return {};
  return parser.getChecked<MeshAttr>(parser.getContext(), names, sizes);
}

void MeshAttr::print(AsmPrinter &printer) const {
  printer << "<[";
  llvm::interleaveComma(
      llvm::zip(getNames(), getSizes()), printer, [&](auto axis) {
        printer << std::get<0>(axis) << "=" << std::get<1>(axis);
      });
  printer << "]>";
}

LogicalResult MeshAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                               ArrayRef<StringAttr> names,
                               ArrayRef<int64_t> sizes) {
  if (names.size() != sizes.size())
    return emitError() << "mesh has " << names.size() << " axis names but "
                       << sizes.size() << " sizes";
  for (auto [i, name] : llvm::enumerate(names)) {
    if (name.getValue().empty())
      return emitError() << "mesh axis " << i << " has an empty name";
    if (sizes[i] < 1)
      return emitError() << "mesh axis '" << name.getValue()
                         << "' must have a positive size, got " << sizes[i];
    for (StringAttr other : names.take_front(i))
      if (other == name)
        return emitError() << "mesh axis '" << name.getValue()
                           << "' is declared twice";
  }
  return success();
}

std::optional<unsigned> MeshAttr::getAxisIndex(StringRef name) const {
  for (auto [i, axis] : llvm::enumerate(getNames()))
    if (axis.getValue() == name)
      return i;
  return std::nullopt;
}

std::optional<int64_t> MeshAttr::getAxisSize(StringRef name) const {
  if (std::optional<unsigned> i = getAxisIndex(name))
    return getSizes()[*i];
  return std::nullopt;
}

int64_t MeshAttr::getNumDevices() const {
  int64_t n = 1;
  for (int64_t size : getSizes())
    n *= size;
  return n;
}

//===----------------------------------------------------------------------===//
// ShardingAttr
//===----------------------------------------------------------------------===//

LogicalResult ShardingAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                   ArrayAttr dims, ArrayAttr partial) {
  llvm::SmallDenseSet<StringRef> seen;
  auto checkAxes = [&](Attribute axes, StringRef what) -> LogicalResult {
    auto list = dyn_cast<ArrayAttr>(axes);
    if (!list || !llvm::all_of(list, llvm::IsaPred<StringAttr>))
      return emitError() << what << " must be a list of mesh axis names, got "
                         << axes;
    for (Attribute axis : list) {
      StringRef name = cast<StringAttr>(axis).getValue();
      if (!seen.insert(name).second)
        return emitError() << "mesh axis '" << name
                           << "' appears more than once in a sharding";
    }
    return success();
  };
  for (auto [i, dim] : llvm::enumerate(dims))
    if (failed(checkAxes(dim, ("dimension " + Twine(i)).str())))
      return failure();
  if (partial && failed(checkAxes(partial, "partial")))
    return failure();
  return success();
}

ShardingAttr ShardingAttr::getReplicated(MLIRContext *ctx, unsigned rank) {
  Builder b(ctx);
  SmallVector<Attribute> dims(rank, b.getArrayAttr({}));
  return get(ctx, b.getArrayAttr(dims), ArrayAttr());
}

ArrayAttr ShardingAttr::getDimAxes(unsigned dim) const {
  return cast<ArrayAttr>(getDims()[dim]);
}

SmallVector<StringRef> ShardingAttr::getPartialAxes() const {
  SmallVector<StringRef> axes;
  if (getPartial())
    for (Attribute a : getPartial())
      axes.push_back(cast<StringAttr>(a).getValue());
  return axes;
}

bool ShardingAttr::isReplicated() const {
  return getPartialAxes().empty() && llvm::all_of(getDims(), [](Attribute dim) {
           return cast<ArrayAttr>(dim).empty();
         });
}

std::optional<unsigned> ShardingAttr::getDimOf(StringRef axis) const {
  for (auto [i, dim] : llvm::enumerate(getDims()))
    for (Attribute a : cast<ArrayAttr>(dim))
      if (cast<StringAttr>(a).getValue() == axis)
        return i;
  return std::nullopt;
}

LogicalResult ZeroAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                               int64_t stage, ArrayAttr axes) {
  if (stage < 0 || stage > 3)
    return emitError() << "ZeRO stage must be 0, 1, 2 or 3, got " << stage;
  if (axes.empty() || !llvm::all_of(axes, llvm::IsaPred<StringAttr>))
    return emitError() << "ZeRO axes must be a non-empty list of mesh axis "
                          "names, got "
                       << axes;
  return success();
}

FailureOr<MeshAttr> mlir::tsr::getEnclosingMesh(Operation *op) {
  for (Operation *p = op; p; p = p->getParentOp())
    if (auto mesh = p->getAttrOfType<MeshAttr>(attr::kMesh))
      return mesh;
  return op->emitOpError("needs an enclosing op with a ")
         << attr::kMesh << " attribute";
}

FailureOr<int64_t> mlir::tsr::getMeshGroupSize(Operation *op,
                                               ArrayRef<StringRef> axes) {
  FailureOr<MeshAttr> mesh = getEnclosingMesh(op);
  if (failed(mesh))
    return failure();
  if (axes.empty())
    return op->emitOpError("names no mesh axis");
  int64_t size = 1;
  std::optional<unsigned> previous;
  for (StringRef axis : axes) {
    std::optional<unsigned> index = mesh->getAxisIndex(axis);
    if (!index)
      return op->emitOpError("mesh axis '")
             << axis << "' is not declared by " << *mesh;
    if (previous && *index <= *previous)
      return op->emitOpError("mesh axes must be distinct and in the mesh's "
                             "order ")
             << *mesh;
    previous = index;
    size *= mesh->getSizes()[*index];
  }
  return size;
}

//===----------------------------------------------------------------------===//
// The training contract: tsr.* attributes of arguments and results
//===----------------------------------------------------------------------===//

FailureOr<int64_t> mlir::tsr::getMeshGroupSize(Operation *op, ArrayAttr axes) {
  SmallVector<StringRef> names;
  for (Attribute a : axes)
    names.push_back(cast<StringAttr>(a).getValue());
  return getMeshGroupSize(op, names);
}

std::string mlir::tsr::getNodeName(Location loc) {
  if (auto name = dyn_cast<NameLoc>(loc))
    return name.getName().str();
  if (auto fused = dyn_cast<FusedLoc>(loc))
    for (Location inner : fused.getLocations())
      if (std::string name = getNodeName(inner); !name.empty())
        return name;
  if (auto site = dyn_cast<CallSiteLoc>(loc))
    return getNodeName(site.getCallee());
  return "";
}

LogicalResult mlir::tsr::verifySharding(Operation *op, Type type,
                                        ShardingAttr sharding,
                                        const Twine &what) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor)
    return op->emitOpError() << what << " is sharded but is not a tensor";
  if (sharding.getDims().size() != size_t(tensor.getRank()))
    return op->emitOpError()
           << what << " has rank " << tensor.getRank() << " but its sharding "
           << sharding << " has " << sharding.getDims().size() << " dimensions";
  FailureOr<MeshAttr> mesh = getEnclosingMesh(op);
  if (failed(mesh))
    return failure();
  auto groupSize = [&](ArrayAttr axes) -> FailureOr<int64_t> {
    int64_t n = 1;
    for (Attribute a : axes) {
      std::optional<int64_t> size =
          mesh->getAxisSize(cast<StringAttr>(a).getValue());
      if (!size)
        return op->emitOpError()
               << what << ": mesh axis " << a << " of sharding " << sharding
               << " is not declared by " << *mesh;
      n *= *size;
    }
    return n;
  };
  for (auto [i, dim] : llvm::enumerate(sharding.getDims())) {
    FailureOr<int64_t> n = groupSize(cast<ArrayAttr>(dim));
    if (failed(n))
      return failure();
    if (tensor.getDimSize(i) % *n != 0)
      return op->emitOpError()
             << what << ": dimension " << i << " (size " << tensor.getDimSize(i)
             << ") cannot be split into " << *n << " equal blocks by "
             << sharding;
  }
  if (sharding.getPartial() && failed(groupSize(sharding.getPartial())))
    return failure();
  return success();
}

namespace {
/// Checks one `tsr.*` attribute of argument or result `index` of `op`.
LogicalResult verifyValueAttribute(Operation *op, bool isResult, unsigned index,
                                   NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  Attribute value = attr.getValue();
  auto fail = [&](StringRef expected) {
    return op->emitOpError()
           << (isResult ? "result " : "argument ") << index << " attribute '"
           << name << "' must be " << expected << ", got " << value;
  };
  auto function = dyn_cast<FunctionOpInterface>(op);
  if (name == attr::kName) {
    auto s = dyn_cast<StringAttr>(value);
    return s && !s.getValue().empty() ? success() : fail("a non-empty string");
  }
  if (name == attr::kRole)
    return isa<RoleAttr>(value) ? success()
                                : fail("a role such as #tsr.role<param> "
                                       "(data, label, param, state, loss, "
                                       "metric, grad, rng or sync)");
  if (name == attr::kUpdates || name == attr::kGradOf) {
    if (!isResult)
      return op->emitOpError("argument ")
             << index << " attribute '" << name
             << "' belongs on a result (it names an argument)";
    auto i = dyn_cast<IntegerAttr>(value);
    if (!i || (function && (i.getInt() < 0 ||
                            i.getInt() >= int64_t(function.getNumArguments()))))
      return fail("the index of an argument");
    return success();
  }
  if (name == attr::kInit)
    return isa<FloatAttr>(value) ? success() : fail("a float");
  if (name == attr::kBucket) {
    auto i = dyn_cast<IntegerAttr>(value);
    if (!isResult)
      return op->emitOpError("argument ")
             << index << " attribute '" << name << "' belongs on a result";
    return i && i.getInt() >= 0 ? success() : fail("a bucket number >= 0");
  }
  if (name == attr::kServer) {
    auto i = dyn_cast<IntegerAttr>(value);
    if (!isResult)
      return op->emitOpError("argument ")
             << index << " attribute '" << name << "' belongs on a result";
    return i && i.getInt() >= 0 ? success() : fail("a server number >= 0");
  }
  if (name == attr::kCompression) {
    auto spec = dyn_cast<StringAttr>(value);
    if (!isResult)
      return op->emitOpError("argument ")
             << index << " attribute '" << name << "' belongs on a result";
    return spec && !spec.getValue().empty()
               ? success()
               : fail("a compressor such as \"topk:0.01\"");
  }
  if (name == attr::kStatistics)
    return isa<UnitAttr>(value) ? success() : fail("a unit attribute");
  if (name == attr::kAuxLoss) {
    if (!isResult)
      return op->emitOpError("argument ")
             << index << " attribute '" << name << "' belongs on a result";
    return isa<UnitAttr>(value) ? success() : fail("a unit attribute");
  }
  if (name == attr::kReason)
    return isa<StringAttr>(value) ? success() : fail("a string");
  if (name == attr::kShards) {
    auto i = dyn_cast<IntegerAttr>(value);
    return i && i.getInt() >= 1 ? success() : fail("a positive integer");
  }
  if (name == attr::kGlobalShape)
    return isa<DenseI64ArrayAttr>(value) ? success() : fail("array<i64: ...>");
  if (name == attr::kSharding) {
    auto sharding = dyn_cast<ShardingAttr>(value);
    if (!sharding)
      return fail("a sharding such as #tsr.sharding<[[], [\"tp\"]]>");
    if (!function)
      return success();
    Type type = isResult ? function.getResultTypes()[index]
                         : function.getArgumentTypes()[index];
    // A ZeRO shard (tsr.shards) is a flat piece of its tsr.global_shape,
    // which the sharding describes.
    DictionaryAttr attrs = isResult ? function.getResultAttrDict(index)
                                    : function.getArgAttrDict(index);
    auto tensor = dyn_cast<RankedTensorType>(type);
    if (auto global = attrs ? attrs.getAs<DenseI64ArrayAttr>(attr::kGlobalShape)
                            : DenseI64ArrayAttr();
        tensor && global && attrs.get(attr::kShards))
      tensor = tensor.clone(global.asArrayRef());
    type = tensor ? Type(tensor) : type;
    // In a partitioned function (tsr-sharding-partition) the value is
    // this rank's block: the whole one is that many blocks of it.
    if (op->hasAttr(attr::kPartitioned) && tensor &&
        sharding.getDims().size() == size_t(tensor.getRank())) {
      FailureOr<MeshAttr> mesh = getEnclosingMesh(op);
      if (failed(mesh))
        return failure();
      SmallVector<int64_t> shape(tensor.getShape());
      for (auto [d, axes] : llvm::enumerate(sharding.getDims()))
        for (Attribute a : cast<ArrayAttr>(axes))
          shape[d] *=
              mesh->getAxisSize(cast<StringAttr>(a).getValue()).value_or(1);
      type = tensor.clone(shape);
    }
    return verifySharding(op, type, sharding,
                          (isResult ? "result " : "argument ") + Twine(index));
  }
  return op->emitOpError()
         << (isResult ? "result " : "argument ") << index
         << " has unknown attribute '" << name << "' (known: "
         << llvm::join(ArrayRef<StringRef>{attr::kName, attr::kRole,
                                           attr::kUpdates, attr::kGradOf,
                                           attr::kBucket, attr::kServer,
                                           attr::kCompression, attr::kInit,
                                           attr::kStatistics, attr::kShards,
                                           attr::kGlobalShape, attr::kSharding,
                                           attr::kReason, attr::kAuxLoss},
                       ", ")
         << ")";
}
} // namespace

LogicalResult TsrDialect::verifyRegionArgAttribute(Operation *op, unsigned,
                                                   unsigned argIndex,
                                                   NamedAttribute attr) {
  return verifyValueAttribute(op, /*isResult=*/false, argIndex, attr);
}

LogicalResult TsrDialect::verifyRegionResultAttribute(Operation *op, unsigned,
                                                      unsigned resultIndex,
                                                      NamedAttribute attr) {
  return verifyValueAttribute(op, /*isResult=*/true, resultIndex, attr);
}

LogicalResult TsrDialect::verifyOperationAttribute(Operation *op,
                                                   NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  Attribute value = attr.getValue();
  if (name == attr::kMesh) {
    if (!isa<MeshAttr>(value))
      return op->emitOpError("attribute '")
             << name << "' must be a mesh such as #tsr.mesh<[\"dp\"=4]>, got "
             << value;
    return success();
  }
  if (name == attr::kZero) {
    if (!isa<ZeroAttr>(value))
      return op->emitOpError("attribute '")
             << name
             << "' must be a layout such as #tsr.zero<stage = 2, axes = "
                "[\"dp\"]>, got "
             << value;
    return success();
  }
  if (name == attr::kLocalSteps) {
    auto steps = dyn_cast<IntegerAttr>(value);
    if (!steps || steps.getInt() < 1)
      return op->emitOpError("attribute '")
             << name << "' must be a period of at least 1 step, got " << value;
    return success();
  }
  if (name == attr::kParameterServer) {
    auto dict = dyn_cast<DictionaryAttr>(value);
    auto servers = dict ? dict.getAs<IntegerAttr>("servers") : IntegerAttr();
    auto staleness =
        dict ? dict.getAs<IntegerAttr>("staleness") : IntegerAttr();
    if (!servers || servers.getInt() < 1 || !staleness ||
        staleness.getInt() < -1 || dict.size() != 2)
      return op->emitOpError("attribute '")
             << name
             << "' must be {servers = S, staleness = K} with S >= 1 and K >= "
                "-1 (-1: bulk-synchronous), got "
             << value;
    return success();
  }
  if (name == attr::kServer) {
    auto server = dyn_cast<IntegerAttr>(value);
    if (!server || server.getInt() < 0)
      return op->emitOpError("attribute '")
             << name << "' must be a server number >= 0, got " << value;
    return success();
  }
  if (name == attr::kBackward) {
    if (!isa<UnitAttr>(value))
      return op->emitOpError("attribute '")
             << name << "' must be a unit attribute, got " << value;
    return success();
  }
  if (name == attr::kStage) {
    auto stage = dyn_cast<IntegerAttr>(value);
    if (!stage || stage.getInt() < 0)
      return op->emitOpError("attribute '")
             << name << "' must be a pipeline stage number, got " << value;
    return success();
  }
  if (name == attr::kLayer) {
    auto layer = dyn_cast<IntegerAttr>(value);
    auto layers = dyn_cast<DenseI64ArrayAttr>(value);
    if (isa<FunctionOpInterface>(op)
            ? !layers || layers.empty() ||
                  llvm::any_of(layers.asArrayRef(),
                               [](int64_t k) { return k < 0; })
            : !layer || layer.getInt() < 0)
      return op->emitOpError("attribute '")
             << name
             << "' must be a layer number on an op or an array<i64> of them "
                "on a function, got "
             << value;
    return success();
  }
  if (name == attr::kPipeline || name == attr::kPipelineSchedule) {
    if (!isa<DictionaryAttr>(value) || !isa<FunctionOpInterface>(op))
      return op->emitOpError("attribute '")
             << name << "' must be a dictionary on a function, got " << value;
    return success();
  }
  if (name == attr::kRanks) {
    auto dict = dyn_cast<DictionaryAttr>(value);
    if (!dict || !isa<FunctionOpInterface>(op) ||
        !llvm::all_of(dict, [](NamedAttribute entry) {
          return isa<IntegerAttr>(entry.getValue());
        }))
      return op->emitOpError("attribute '")
             << name
             << "' must map mesh axes to coordinates on a function, such as "
                "{pp = 1 : i64}, got "
             << value;
    for (NamedAttribute entry : dict) {
      FailureOr<int64_t> size =
          getMeshGroupSize(op, ArrayRef<StringRef>{entry.getName()});
      if (failed(size))
        return failure();
      int64_t coord = cast<IntegerAttr>(entry.getValue()).getInt();
      if (coord < 0 || coord >= *size)
        return op->emitOpError("attribute '")
               << name << "': coordinate " << coord << " is not on axis '"
               << entry.getName().getValue() << "' of size " << *size;
    }
    return success();
  }
  if (name == attr::kSharding) {
    auto list = dyn_cast<ArrayAttr>(value);
    if (!list || list.size() != op->getNumResults() ||
        !llvm::all_of(list, llvm::IsaPred<ShardingAttr>))
      return op->emitOpError("attribute '")
             << name << "' must list one #tsr.sharding per result ("
             << op->getNumResults() << "), got " << value;
    for (auto [i, sharding] : llvm::enumerate(list))
      if (failed(verifySharding(op, op->getResult(i).getType(),
                                cast<ShardingAttr>(sharding),
                                "result " + Twine(i))))
        return failure();
    return success();
  }
  if (name == attr::kOperandShardings) {
    auto list = dyn_cast<ArrayAttr>(value);
    if (!list || list.size() != op->getNumOperands() ||
        !llvm::all_of(list, llvm::IsaPred<ShardingAttr>))
      return op->emitOpError("attribute '")
             << name << "' must list one #tsr.sharding per operand ("
             << op->getNumOperands() << "), got " << value;
    for (auto [i, sharding] : llvm::enumerate(list))
      if (failed(verifySharding(op, op->getOperand(i).getType(),
                                cast<ShardingAttr>(sharding),
                                "operand " + Twine(i))))
        return failure();
    return success();
  }
  if (name == attr::kReason) {
    auto reason = dyn_cast<StringAttr>(value);
    if (!reason || reason.getValue().empty())
      return op->emitOpError("attribute '")
             << name << "' must be a non-empty string, got " << value;
    return success();
  }
  if (name == attr::kCompression) {
    auto spec = dyn_cast<StringAttr>(value);
    if (!spec || spec.getValue().empty())
      return op->emitOpError("attribute '")
             << name << "' must be a compressor such as \"topk:0.01\", got "
             << value;
    return success();
  }
  if (name == attr::kDenseBytes) {
    auto bytes = dyn_cast<IntegerAttr>(value);
    if (!bytes || bytes.getInt() < 0)
      return op->emitOpError("attribute '")
             << name << "' must be a byte count, got " << value;
    return success();
  }
  if (name == attr::kPartitioned) {
    auto axes = dyn_cast<ArrayAttr>(value);
    if (!axes || !llvm::all_of(axes, llvm::IsaPred<StringAttr>))
      return op->emitOpError("attribute '")
             << name << "' must be a list of mesh axis names, got " << value;
    SmallVector<StringRef> names;
    for (Attribute a : axes)
      names.push_back(cast<StringAttr>(a).getValue());
    return success(succeeded(getMeshGroupSize(op, names)));
  }
  if (name == attr::kFrozen) {
    auto dict = dyn_cast<DictionaryAttr>(value);
    if (!dict || !llvm::all_of(dict, [](NamedAttribute entry) {
          return isa<StringAttr>(entry.getValue());
        }))
      return op->emitOpError("attribute '")
             << name << "' must map initializer names to reasons, got "
             << value;
    return success();
  }
  if (name == attr::kScatterShape) {
    auto shape = dyn_cast<DenseI64ArrayAttr>(value);
    if (!shape || shape.size() < 2 || shape[0] < 0 ||
        shape[0] >= shape.size() - 1 ||
        llvm::any_of(
            shape.asArrayRef().drop_front(), [](int64_t d) { return d <= 0; }))
      return op->emitOpError("attribute '")
             << name
             << "' must be [axis, d0, d1, ...]: an axis of the positive "
                "shape that follows, got "
             << value;
    return success();
  }
  if (name == attr::kPeakAllocBytes) {
    auto i = dyn_cast<IntegerAttr>(value);
    if (!i || i.getInt() < 0)
      return op->emitOpError("attribute '")
             << name << "' must be a byte count, got " << value;
    return success();
  }
  if (name == attr::kInPlace) {
    auto args = dyn_cast<DenseI64ArrayAttr>(value);
    auto function = dyn_cast<FunctionOpInterface>(op);
    if (!args || !function || !llvm::all_of(args.asArrayRef(), [&](int64_t j) {
          return j >= -1 && j < int64_t(function.getNumArguments());
        }))
      return op->emitOpError("attribute '")
             << name
             << "' must be an array<i64> on a function: per result, the "
                "index of an argument or -1, got "
             << value;
    return success();
  }
  if (name == attr::kKernel || name == attr::kOnHost ||
      name == attr::kPipelineCell) {
    if (!isa<UnitAttr>(value) || !isa<FunctionOpInterface>(op))
      return op->emitOpError("attribute '")
             << name << "' must be a unit attribute on a function, got "
             << value;
    return success();
  }
  if (name == attr::kProfileRegions) {
    auto regions = dyn_cast<ArrayAttr>(value);
    auto isRegion = [](Attribute a) {
      auto d = dyn_cast<DictionaryAttr>(a);
      return d && d.getAs<StringAttr>("kind") &&
             d.getAs<StringAttr>("callee") && d.getAs<StringAttr>("node") &&
             d.getAs<BoolAttr>("backward") && d.size() == 4;
    };
    if (!isa<ModuleOp>(op) || !regions || !llvm::all_of(regions, isRegion))
      return op->emitOpError("attribute '")
             << name
             << "' must be an array of {kind, callee, node, backward} "
                "dictionaries on a module, got "
             << value;
    return success();
  }
  if (name == attr::kSchedule) {
    auto calls = dyn_cast<ArrayAttr>(value);
    auto module = dyn_cast<ModuleOp>(op);
    if (!module || !calls || calls.empty() ||
        !llvm::all_of(calls, llvm::IsaPred<FlatSymbolRefAttr>))
      return op->emitOpError("attribute '")
             << name
             << "' must be a non-empty array of function symbols on a "
                "module, such as [@forward, @backward], got "
             << value;
    for (Attribute call : calls)
      if (!module.lookupSymbol<FunctionOpInterface>(
              cast<FlatSymbolRefAttr>(call)))
        return op->emitOpError("attribute '")
               << name << "' calls " << call
               << ", which is not a function of the module";
    return success();
  }
  if (name == attr::kRemat) {
    auto choice = dyn_cast<StringAttr>(value);
    if (isa<FunctionOpInterface>(op)) {
      if (!choice ||
          !llvm::is_contained(
              ArrayRef<StringRef>{"none", "selective", "full", "auto"},
              choice.getValue()))
        return op->emitOpError("attribute '")
               << name
               << "' must be a policy (none, selective, full or auto), got "
               << value;
      return success();
    }
    if (!choice ||
        !llvm::is_contained(
            ArrayRef<StringRef>{"recompute", "recomputed", "offload"},
            choice.getValue()))
      return op->emitOpError("attribute '")
             << name
             << "' must be \"recompute\", \"recomputed\" or \"offload\", got "
             << value;
    return success();
  }
  if (name == attr::kPrecision) {
    static const StringRef policies[] = {"bf16", "fp16"},
                           types[] = {"f32", "bf16", "f16"};
    auto choice = dyn_cast<StringAttr>(value);
    ArrayRef<StringRef> allowed = isa<FunctionOpInterface>(op)
                                      ? ArrayRef<StringRef>(policies)
                                      : ArrayRef<StringRef>(types);
    if (!choice || !llvm::is_contained(allowed, choice.getValue()))
      return op->emitOpError("attribute '")
             << name << "' must be one of " << llvm::join(allowed, ", ")
             << ", got " << value;
    return success();
  }
  return op->emitOpError("has unknown attribute '")
         << name << "' (known on ops: " << attr::kMesh << ", " << attr::kZero
         << ", " << attr::kFrozen << ", " << attr::kBackward << ", "
         << attr::kRemat << ", " << attr::kPrecision << ", "
         << attr::kPeakAllocBytes << ", " << attr::kSchedule << ", "
         << attr::kSharding << ", " << attr::kOperandShardings << ", "
         << attr::kPartitioned << ", " << attr::kReason << ", " << attr::kStage
         << ", " << attr::kLayer << ", " << attr::kPipeline << ", "
         << attr::kRanks << ", " << attr::kPipelineSchedule << ", "
         << attr::kPipelineCell << ", " << attr::kScatterShape << ", "
         << attr::kCompression << ", " << attr::kDenseBytes << ", "
         << attr::kLocalSteps << ", " << attr::kParameterServer << ", "
         << attr::kServer << ", " << attr::kKernel << ", " << attr::kOnHost
         << ", " << attr::kInPlace << ", " << attr::kProfileRegions << ")";
}
