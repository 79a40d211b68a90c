//===- ClusterSpec.cpp - A cluster's figures for the cost model -----------===//
#include "tessera/Analysis/ClusterSpec.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

using namespace mlir;
using namespace mlir::tessera;
namespace json = llvm::json;

CostParameters ClusterSpec::getCostParameters(CostParameters fallback) const {
  return {peakFlops.value_or(fallback.peakFlops),
          memoryBandwidth.value_or(fallback.memoryBandwidth)};
}

LinkSpec ClusterSpec::getLink(StringRef axis) const {
  LinkSpec link = links.lookup(axis);
  if (!link.alpha)
    link.alpha = defaultLink.alpha;
  if (!link.beta)
    link.beta = defaultLink.beta;
  return link;
}

namespace {
StringRef getKindName(const json::Value &value) {
  switch (value.kind()) {
  case json::Value::Null:
    return "null";
  case json::Value::Boolean:
    return "a boolean";
  case json::Value::Number:
    return "a number";
  case json::Value::String:
    return "a string";
  case json::Value::Array:
    return "an array";
  case json::Value::Object:
    return "an object";
  }
  llvm_unreachable("unknown JSON value kind");
}

/// The path of field `key` of the object at `path` ("" for the top level).
std::string fieldPath(StringRef path, StringRef key) {
  return path.empty() ? key.str() : (path + "." + key).str();
}

/// Reads the fields of a parsed cluster file; keeps the first error.
class Parser {
public:
  explicit Parser(StringRef fileName) : fileName(fileName) {}

  LogicalResult parse(const json::Value &root, ClusterSpec &spec) {
    const json::Object *object = getObject(root, "");
    if (!object ||
        failed(checkKeys(*object, "", {"device", "default_link", "links"})))
      return failure();
    if (const json::Value *device = object->get("device")) {
      const json::Object *fields = getObject(*device, "device");
      std::optional<double> tflops, gbPerS;
      if (!fields ||
          failed(checkKeys(*fields, "device",
                           {"peak_tflops", "memory_bandwidth_gb_per_s"})) ||
          failed(getNumber(*fields, "device", "peak_tflops", "TFLOP/s",
                           /*positive=*/true, tflops)) ||
          failed(getNumber(*fields, "device", "memory_bandwidth_gb_per_s",
                           "GB/s", /*positive=*/true, gbPerS)))
        return failure();
      if (tflops)
        spec.peakFlops = *tflops * 1e12;
      if (gbPerS)
        spec.memoryBandwidth = *gbPerS * 1e9;
    }
    if (const json::Value *link = object->get("default_link"))
      if (failed(getLink(*link, "default_link", spec.defaultLink)))
        return failure();
    if (const json::Value *links = object->get("links")) {
      const json::Object *axes = getObject(*links, "links");
      if (!axes)
        return failure();
      for (const json::Object::value_type *axis : json::sortedElements(*axes)) {
        StringRef name = axis->first;
        if (name.empty())
          return fail("links", "a mesh axis name is empty");
        if (failed(getLink(axis->second, fieldPath("links", name),
                           spec.links[name])))
          return failure();
      }
    }
    return success();
  }

  /// Names the file and the field at `path`.
  LogicalResult fail(StringRef path, const Twine &message) {
    error =
        (fileName + ": " + (path.empty() ? "" : path + ": ") + message).str();
    return failure();
  }

  std::string error;

private:
  const json::Object *getObject(const json::Value &value, StringRef path) {
    const json::Object *object = value.getAsObject();
    if (!object)
      (void)fail(path, "expected an object, got " + getKindName(value));
    return object;
  }

  /// Fails on the first key of `object` (in sorted order) not in `keys`.
  LogicalResult checkKeys(const json::Object &object, StringRef path,
                          ArrayRef<StringRef> keys) {
    for (const json::Object::value_type *field : json::sortedElements(object))
      if (!llvm::is_contained(keys, StringRef(field->first)))
        return fail(fieldPath(path, field->first),
                    "unknown key (expected " +
                        llvm::join(keys.drop_back(), ", ") + " or " +
                        keys.back() + ")");
    return success();
  }

  /// Reads field `key` of `object`, if it is there: a number of `unit`,
  /// positive or else non-negative.
  LogicalResult getNumber(const json::Object &object, StringRef path,
                          StringRef key, StringRef unit, bool positive,
                          std::optional<double> &out) {
    const json::Value *value = object.get(key);
    if (!value)
      return success();
    std::string field = fieldPath(path, key);
    std::optional<double> number = value->getAsNumber();
    StringRef sign = positive ? "positive" : "non-negative";
    if (!number)
      return fail(field, llvm::formatv("expected a {0} number of {1}, got {2}",
                                       sign, unit, getKindName(*value)));
    if (positive ? !(*number > 0) : !(*number >= 0))
      return fail(field, llvm::formatv("expected a {0} number of {1}, got {2}",
                                       sign, unit, *value));
    out = number;
    return success();
  }

  /// Reads a link object: latency in microseconds, bandwidth in GB/s.
  LogicalResult getLink(const json::Value &value, StringRef path,
                        LinkSpec &out) {
    const json::Object *fields = getObject(value, path);
    std::optional<double> latencyUs, gbPerS;
    if (!fields ||
        failed(
            checkKeys(*fields, path, {"latency_us", "bandwidth_gb_per_s"})) ||
        failed(getNumber(*fields, path, "latency_us", "microseconds",
                         /*positive=*/false, latencyUs)) ||
        failed(getNumber(*fields, path, "bandwidth_gb_per_s", "GB/s",
                         /*positive=*/true, gbPerS)))
      return failure();
    if (latencyUs)
      out.alpha = *latencyUs * 1e-6;
    if (gbPerS)
      out.beta = 1 / (*gbPerS * 1e9);
    return success();
  }

  StringRef fileName;
};

/// A JSON syntax error as FILE:LINE:COLUMN: from llvm::json's message,
/// "[LINE:COLUMN, byte=OFFSET]: MESSAGE". Its column is the 0-based offset
/// in the line of where the parser stopped, mostly just past the character
/// it rejected: printed as it is, that character's 1-based column (and 1
/// for an empty file's 0).
std::string formatSyntaxError(StringRef fileName, llvm::Error error) {
  std::string text = llvm::toString(std::move(error));
  StringRef rest = text;
  unsigned line, column;
  if (rest.consume_front("[") && !rest.consumeInteger(10, line) &&
      rest.consume_front(":") && !rest.consumeInteger(10, column)) {
    auto [position, message] = rest.split("]: ");
    if (position.starts_with(", byte=") && !message.empty())
      return llvm::formatv("{0}:{1}:{2}: invalid JSON: {3}", fileName, line,
                           std::max(column, 1u), message);
  }
  return (fileName + ": invalid JSON: " + text).str();
}
} // namespace

llvm::Expected<ClusterSpec>
mlir::tessera::parseClusterSpec(StringRef text, StringRef fileName) {
  llvm::Expected<json::Value> root = json::parse(text);
  if (!root)
    return llvm::createStringError(
        formatSyntaxError(fileName, root.takeError()));
  ClusterSpec spec;
  Parser parser(fileName);
  if (failed(parser.parse(*root, spec)))
    return llvm::createStringError(parser.error);
  return spec;
}

llvm::Expected<ClusterSpec> mlir::tessera::readClusterSpec(StringRef path) {
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!buffer)
    return llvm::createStringError("cannot read cluster file '" + path +
                                   "': " + buffer.getError().message());
  return parseClusterSpec((*buffer)->getBuffer(), path);
}
