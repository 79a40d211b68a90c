//===- Json.cpp - The runtime's JSON reading and writing ------------------===//
//
// Part of the Tessera runtime; see Json.h.
//
//===----------------------------------------------------------------------===//

#include "Json.h"

#include "RuntimeInternal.h"

#include <algorithm>
#include <cstddef>
#include <iterator>
#include <limits>
#include <unordered_set>
#include <vector>

using namespace tsr;

namespace {

constexpr int kMaxDepth = 64;

/// Walks the text for nlohmann's parser and records how far it has read, so
/// that rules checked in the parser's callback can name a position.
class TrackingIterator {
public:
  using iterator_category = std::forward_iterator_tag;
  using value_type = char;
  using difference_type = std::ptrdiff_t;
  using pointer = const char *;
  using reference = const char &;

  TrackingIterator(const char *at, const char **read) : at(at), read(read) {}

  reference operator*() const { return *at; }
  TrackingIterator &operator++() {
    *read = ++at;
    return *this;
  }
  TrackingIterator operator++(int) {
    TrackingIterator old = *this;
    ++*this;
    return old;
  }
  bool operator==(const TrackingIterator &other) const {
    return at == other.at;
  }
  bool operator!=(const TrackingIterator &other) const {
    return at != other.at;
  }

private:
  const char *at;
  const char **read;
};

/// A rule of the runtime broken by otherwise valid JSON.
struct RuleViolation {
  std::string message;
};

/// Records "LINE:COLUMN: message" for byte `offset` of `text`.
tsr_status_t failAt(const std::string &text, size_t offset,
                    const std::string &message) {
  offset = std::min(offset, text.size());
  size_t line = 1 + static_cast<size_t>(
                        std::count(text.begin(), text.begin() + offset, '\n'));
  size_t newline =
      offset == 0 ? std::string::npos : text.rfind('\n', offset - 1);
  size_t column = newline == std::string::npos ? offset + 1 : offset - newline;
  return fail(TSR_ERROR_PARSE, std::to_string(line) + ":" +
                                   std::to_string(column) + ": " + message);
}

/// The reason in a parse_error's text, without the position nlohmann puts
/// in front of it: "unexpected '}'; expected string literal".
std::string reasonOf(const nlohmann::json::parse_error &error) {
  std::string text = error.what();
  size_t syntax = text.find("syntax error while parsing ");
  if (syntax != std::string::npos) {
    size_t dash = text.find(" - ", syntax);
    if (dash != std::string::npos)
      return text.substr(dash + 3);
  }
  size_t colon = text.find(": ");
  return colon == std::string::npos ? text : text.substr(colon + 2);
}

} // namespace

tsr_status_t tsr::parseJson(const std::string &text, Json &out) {
  const char *begin = text.data();
  const char *read = begin;
  // The keys of every object being parsed, innermost last.
  std::vector<std::unordered_set<std::string>> keys;
  auto check = [&](int depth, Json::parse_event_t event, Json &parsed) {
    switch (event) {
    case Json::parse_event_t::object_start:
      keys.emplace_back();
      [[fallthrough]];
    case Json::parse_event_t::array_start:
    case Json::parse_event_t::value:
      if (depth > kMaxDepth)
        throw RuleViolation{"nesting too deep"};
      break;
    case Json::parse_event_t::key:
      if (!keys.back().insert(parsed.get<std::string>()).second)
        throw RuleViolation{"duplicate key \"" + parsed.get<std::string>() +
                            "\""};
      break;
    case Json::parse_event_t::object_end:
      keys.pop_back();
      break;
    case Json::parse_event_t::array_end:
      break;
    }
    return true;
  };
  try {
    out = Json::parse(TrackingIterator(begin, &read),
                      TrackingIterator(begin + text.size(), &read), check);
  } catch (const nlohmann::json::parse_error &error) {
    // `byte` counts the characters read, the offending one included.
    return failAt(text, error.byte ? error.byte - 1 : 0, reasonOf(error));
  } catch (const RuleViolation &violation) {
    return failAt(text, static_cast<size_t>(read - begin), violation.message);
  }
  return TSR_OK;
}

const Json *tsr::findMember(const Json &object, const char *key) {
  if (!object.is_object())
    return nullptr;
  auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

bool tsr::getInteger(const Json &value, int64_t &out) {
  if (value.is_number_unsigned()) {
    uint64_t magnitude = value.get<uint64_t>();
    if (magnitude > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      return false;
    out = static_cast<int64_t>(magnitude);
    return true;
  }
  if (!value.is_number_integer())
    return false;
  out = value.get<int64_t>();
  return true;
}

bool tsr::isValidUtf8(const std::string &text) {
  try {
    Json(text).dump();
    return true;
  } catch (const nlohmann::json::type_error &) {
    return false;
  }
}

std::string tsr::dumpJson(const Json &value, int indent) {
  return value.dump(indent, ' ', false, Json::error_handler_t::replace);
}
