//===- Json.h - The runtime's JSON reading and writing ----------*- C++ -*-===//
//
// nlohmann::json with the runtime's rules on top: strict parsing (no
// duplicate keys, bounded nesting) with errors that name a line and column,
// and serialization that never throws. Shared by the artifact manifest,
// checkpoint manifests and tessera-run's logs. Nothing here is part of the C
// ABI.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_RUNTIME_LIB_JSON_H
#define TESSERA_RUNTIME_LIB_JSON_H

#include "tessera-runtime/Runtime.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>

namespace tsr {

/// A JSON value whose objects keep their members in insertion order, so
/// that written files list them in the order the code builds them.
using Json = nlohmann::ordered_json;

/// Parses `text` as exactly one JSON value, rejecting duplicate keys and
/// nesting deeper than 64. On failure records "LINE:COLUMN: message" as the
/// last error and returns TSR_ERROR_PARSE.
tsr_status_t parseJson(const std::string &text, Json &out);

/// The member `key` of `object`, or null (also when `object` is no object).
const Json *findMember(const Json &object, const char *key);

/// Whether `value` is an integer number that fits in int64_t; then stores
/// it in `out`. Numbers written with a fraction or exponent are not.
bool getInteger(const Json &value, int64_t &out);

/// Whether `text` is valid UTF-8, as every string in a JSON file must be.
bool isValidUtf8(const std::string &text);

/// Serializes `value` on one line (`indent` < 0) or indented by `indent`
/// spaces per level. Invalid UTF-8 in strings becomes U+FFFD instead of
/// throwing; non-finite numbers become null.
std::string dumpJson(const Json &value, int indent = -1);

} // namespace tsr

#endif // TESSERA_RUNTIME_LIB_JSON_H
