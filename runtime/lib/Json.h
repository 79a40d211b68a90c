//===- Json.h - The runtime's JSON reader -----------------------*- C++ -*-===//
//
// A strict RFC 8259 parser shared by the artifact manifest and checkpoint
// manifests. Nothing here is part of the C ABI.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_RUNTIME_LIB_JSON_H
#define TESSERA_RUNTIME_LIB_JSON_H

#include "tessera-runtime/Runtime.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace tsr {

/// One parsed JSON value. A number keeps its double value and, when its
/// literal has neither fraction nor exponent and fits, its exact integer.
struct Json {
  enum Kind { Null, Bool, Number, String, Array, Object } kind = Null;
  bool boolean = false;
  bool isInteger = false;
  int64_t integer = 0;
  double number = 0;
  std::string string;
  std::vector<Json> array;
  std::vector<std::pair<std::string, Json>> object;

  /// The member `key` of an object, or null.
  const Json *find(const char *key) const;
};

/// Why and where parsing stopped: a byte offset and its 1-based line and
/// column.
struct JsonError {
  std::string message;
  size_t offset = 0;
  size_t line = 1;
  size_t column = 1;
};

/// Parses `text` as exactly one JSON value. On failure returns false and
/// describes it in `outError`; records no last error.
bool parseJson(const std::string &text, Json &out, JsonError &outError);

/// Parses `text` as exactly one JSON value. On failure records
/// "LINE:COLUMN: message" as the last error and returns TSR_ERROR_PARSE.
tsr_status_t parseJson(const std::string &text, Json &out);

} // namespace tsr

#endif // TESSERA_RUNTIME_LIB_JSON_H
