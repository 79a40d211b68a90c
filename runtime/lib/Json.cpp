//===- Json.cpp - The runtime's JSON reader -------------------------------===//
//
// Part of the Tessera runtime; see Json.h.
//
//===----------------------------------------------------------------------===//

#include "Json.h"

#include "RuntimeInternal.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>

using namespace tsr;

const Json *Json::find(const char *key) const {
  for (const auto &member : object)
    if (member.first == key)
      return &member.second;
  return nullptr;
}

namespace {

/// A strict RFC 8259 parser; errors carry a line and column.
class JsonParser {
public:
  JsonParser(const std::string &text, JsonError &err) : text(text), err(err) {}

  bool parse(Json &out) {
    skipSpace();
    if (!parseValue(out, 0))
      return false;
    skipSpace();
    if (pos != text.size())
      return error("trailing characters after the JSON value");
    return true;
  }

private:
  static constexpr int kMaxDepth = 64;

  bool error(const std::string &message) {
    err.message = message;
    err.offset = pos;
    err.line = 1;
    err.column = 1;
    for (size_t i = 0; i < pos && i < text.size(); ++i) {
      if (text[i] == '\n') {
        ++err.line;
        err.column = 1;
      } else {
        ++err.column;
      }
    }
    return false;
  }

  void skipSpace() {
    while (pos < text.size() && (text[pos] == ' ' || text[pos] == '\t' ||
                                 text[pos] == '\n' || text[pos] == '\r'))
      ++pos;
  }

  bool consumeWord(const char *word) {
    size_t n = std::strlen(word);
    if (text.compare(pos, n, word) != 0)
      return false;
    pos += n;
    return true;
  }

  bool parseValue(Json &out, int depth) {
    if (depth > kMaxDepth)
      return error("nesting too deep");
    if (pos >= text.size())
      return error("unexpected end of input");
    char c = text[pos];
    if (c == '{')
      return parseObject(out, depth);
    if (c == '[')
      return parseArray(out, depth);
    if (c == '"') {
      out.kind = Json::String;
      return parseString(out.string);
    }
    if (c == '-' || (c >= '0' && c <= '9'))
      return parseNumber(out);
    if (consumeWord("true")) {
      out.kind = Json::Bool;
      out.boolean = true;
      return true;
    }
    if (consumeWord("false")) {
      out.kind = Json::Bool;
      return true;
    }
    if (consumeWord("null"))
      return true;
    return error("unexpected character");
  }

  bool parseObject(Json &out, int depth) {
    out.kind = Json::Object;
    ++pos;
    skipSpace();
    if (pos < text.size() && text[pos] == '}') {
      ++pos;
      return true;
    }
    while (true) {
      skipSpace();
      if (pos >= text.size() || text[pos] != '"')
        return error("expected a string key");
      std::string key;
      if (!parseString(key))
        return false;
      if (out.find(key.c_str()))
        return error("duplicate key \"" + key + "\"");
      skipSpace();
      if (pos >= text.size() || text[pos] != ':')
        return error("expected ':'");
      ++pos;
      skipSpace();
      Json value;
      if (!parseValue(value, depth + 1))
        return false;
      out.object.emplace_back(std::move(key), std::move(value));
      skipSpace();
      if (pos < text.size() && text[pos] == ',') {
        ++pos;
        continue;
      }
      if (pos < text.size() && text[pos] == '}') {
        ++pos;
        return true;
      }
      return error("expected ',' or '}'");
    }
  }

  bool parseArray(Json &out, int depth) {
    out.kind = Json::Array;
    ++pos;
    skipSpace();
    if (pos < text.size() && text[pos] == ']') {
      ++pos;
      return true;
    }
    while (true) {
      skipSpace();
      Json value;
      if (!parseValue(value, depth + 1))
        return false;
      out.array.push_back(std::move(value));
      skipSpace();
      if (pos < text.size() && text[pos] == ',') {
        ++pos;
        continue;
      }
      if (pos < text.size() && text[pos] == ']') {
        ++pos;
        return true;
      }
      return error("expected ',' or ']'");
    }
  }

  bool parseHex4(unsigned &out) {
    if (text.size() - pos < 4)
      return false;
    out = 0;
    for (int i = 0; i < 4; ++i) {
      char c = text[pos++];
      out <<= 4;
      if (c >= '0' && c <= '9')
        out |= c - '0';
      else if (c >= 'a' && c <= 'f')
        out |= c - 'a' + 10;
      else if (c >= 'A' && c <= 'F')
        out |= c - 'A' + 10;
      else
        return false;
    }
    return true;
  }

  static void appendUtf8(std::string &out, unsigned code) {
    if (code < 0x80) {
      out += static_cast<char>(code);
    } else if (code < 0x800) {
      out += static_cast<char>(0xC0 | (code >> 6));
      out += static_cast<char>(0x80 | (code & 0x3F));
    } else if (code < 0x10000) {
      out += static_cast<char>(0xE0 | (code >> 12));
      out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (code & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (code >> 18));
      out += static_cast<char>(0x80 | ((code >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (code & 0x3F));
    }
  }

  bool parseString(std::string &out) {
    ++pos;
    while (true) {
      if (pos >= text.size())
        return error("unterminated string");
      char c = text[pos++];
      if (c == '"')
        return true;
      if (static_cast<unsigned char>(c) < 0x20)
        return error("control character in string");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos >= text.size())
        return error("unterminated string");
      char escape = text[pos++];
      switch (escape) {
      case '"':
      case '\\':
      case '/':
        out += escape;
        break;
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'n':
        out += '\n';
        break;
      case 'r':
        out += '\r';
        break;
      case 't':
        out += '\t';
        break;
      case 'u': {
        unsigned code;
        if (!parseHex4(code))
          return error("bad \\u escape");
        if (code >= 0xD800 && code < 0xDC00) {
          unsigned low;
          if (!consumeWord("\\u") || !parseHex4(low) || low < 0xDC00 ||
              low >= 0xE000)
            return error("unpaired surrogate in \\u escape");
          code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
        } else if (code >= 0xDC00 && code < 0xE000) {
          return error("unpaired surrogate in \\u escape");
        }
        appendUtf8(out, code);
        break;
      }
      default:
        return error("bad escape in string");
      }
    }
  }

  bool parseNumber(Json &out) {
    size_t start = pos;
    auto digits = [&] {
      size_t first = pos;
      while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9')
        ++pos;
      return pos > first;
    };
    if (text[pos] == '-')
      ++pos;
    if (pos < text.size() && text[pos] == '0')
      ++pos;
    else if (!digits())
      return error("malformed number");
    bool integral = true;
    if (pos < text.size() && text[pos] == '.') {
      ++pos;
      integral = false;
      if (!digits())
        return error("malformed number");
    }
    if (pos < text.size() && (text[pos] == 'e' || text[pos] == 'E')) {
      ++pos;
      integral = false;
      if (pos < text.size() && (text[pos] == '+' || text[pos] == '-'))
        ++pos;
      if (!digits())
        return error("malformed number");
    }
    out.kind = Json::Number;
    std::string literal = text.substr(start, pos - start);
    out.number = std::strtod(literal.c_str(), nullptr);
    if (integral) {
      errno = 0;
      long long value = std::strtoll(literal.c_str(), nullptr, 10);
      out.isInteger = errno != ERANGE;
      out.integer = value;
    }
    return true;
  }

  const std::string &text;
  JsonError &err;
  size_t pos = 0;
};

} // namespace

bool tsr::parseJson(const std::string &text, Json &out, JsonError &outError) {
  return JsonParser(text, outError).parse(out);
}

tsr_status_t tsr::parseJson(const std::string &text, Json &out) {
  JsonError error;
  if (parseJson(text, out, error))
    return TSR_OK;
  return fail(TSR_ERROR_PARSE, std::to_string(error.line) + ":" +
                                   std::to_string(error.column) + ": " +
                                   error.message);
}
