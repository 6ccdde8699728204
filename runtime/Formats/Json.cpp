//===- Json.cpp - the step program's hand-written JSON reader and writer --===//
//
// Kept for runtime/Exec/StepProgram.cpp only (see Json.h); it goes when the
// step program moves to protobuf.
//
// A recursive-descent parser over a string_view. Recursion depth is bounded
// by JsonParseOptions::maxDepth (checked before each descent), which is what
// makes recursion safe on hostile input. Numbers are converted with
// std::from_chars, which ignores the C locale (strtod would read "1,5" in a
// German locale).
//
//===----------------------------------------------------------------------===//

#include "runtime/Formats/Json.h"

#include "runtime/Formats/AbslCompat.h"
#include "runtime/Formats/Utf8.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <unordered_set>

namespace sinter::formats {

//===----------------------------------------------------------------------===//
// JsonValue
//===----------------------------------------------------------------------===//

JsonValue JsonValue::makeBool(bool value) {
  JsonValue result;
  result.value = value;
  return result;
}

JsonValue JsonValue::makeInt(int64_t value) {
  JsonValue result;
  result.value = value;
  return result;
}

JsonValue JsonValue::makeNumber(double value) {
  JsonValue result;
  result.value = value;
  return result;
}

JsonValue JsonValue::makeString(std::string value) {
  JsonValue result;
  result.value = std::move(value);
  return result;
}

JsonValue JsonValue::makeArray(std::vector<JsonValue> items) {
  JsonValue result;
  result.value = std::move(items);
  return result;
}

JsonValue JsonValue::makeObject(std::vector<JsonMember> members) {
  JsonValue result;
  result.value = std::move(members);
  return result;
}

bool JsonValue::asBool() const {
  const bool *b = std::get_if<bool>(&value);
  return b && *b;
}

int64_t JsonValue::asInt() const {
  const int64_t *i = std::get_if<int64_t>(&value);
  return i ? *i : 0;
}

double JsonValue::asNumber() const {
  if (const double *d = std::get_if<double>(&value))
    return *d;
  if (const int64_t *i = std::get_if<int64_t>(&value))
    return static_cast<double>(*i);
  return 0;
}

const std::string &JsonValue::asString() const {
  static const std::string empty;
  const std::string *s = std::get_if<std::string>(&value);
  return s ? *s : empty;
}

const std::vector<JsonValue> &JsonValue::items() const {
  static const std::vector<JsonValue> empty;
  const auto *items = std::get_if<std::vector<JsonValue>>(&value);
  return items ? *items : empty;
}

const std::vector<JsonMember> &JsonValue::members() const {
  static const std::vector<JsonMember> empty;
  const auto *members = std::get_if<std::vector<JsonMember>>(&value);
  return members ? *members : empty;
}

std::vector<JsonValue> &JsonValue::mutableItems() {
  if (!isArray())
    value = std::vector<JsonValue>();
  return std::get<std::vector<JsonValue>>(value);
}

std::vector<JsonMember> &JsonValue::mutableMembers() {
  if (!isObject())
    value = std::vector<JsonMember>();
  return std::get<std::vector<JsonMember>>(value);
}

const JsonValue *JsonValue::find(std::string_view key) const {
  for (const JsonMember &member : members())
    if (member.first == key)
      return &member.second;
  return nullptr;
}

//===----------------------------------------------------------------------===//
// Parser
//===----------------------------------------------------------------------===//

namespace {

/// Renders one input byte for a message: printable ASCII quoted, anything
/// else as hex, so messages stay on one line.
std::string describeByte(char c) {
  unsigned char u = static_cast<unsigned char>(c);
  if (u >= 0x20 && u < 0x7F)
    return absl::StrCat("'", std::string(1, c), "'");
  return absl::StrFormat("byte 0x%02x", u);
}

class Parser {
public:
  Parser(std::string_view text, const JsonParseOptions &options)
      : text(text), maxDepth(std::clamp(options.maxDepth, 0, kJsonMaxDepth)),
        maxValues(options.maxValues) {}

  bool parseDocument(JsonValue &out) {
    skipWhitespace();
    if (!parseValue(out, /*depth=*/0))
      return false;
    skipWhitespace();
    if (pos != text.size())
      return fail("unexpected " + describeByte(text[pos]) +
                  " after the JSON value");
    return true;
  }

  JsonError error;

private:
  bool fail(std::string message) { return failAt(pos, std::move(message)); }
  bool failAt(size_t at, std::string message) {
    error.offset = at;
    error.message = std::move(message);
    return false;
  }

  bool atEnd() const { return pos >= text.size(); }
  char peek() const { return text[pos]; }

  void skipWhitespace() {
    while (!atEnd() && (peek() == ' ' || peek() == '\t' || peek() == '\n' ||
                        peek() == '\r'))
      ++pos;
  }

  bool consumeLiteral(std::string_view literal) {
    if (text.substr(pos, literal.size()) != literal)
      return false;
    pos += literal.size();
    return true;
  }

  bool parseValue(JsonValue &out, int depth) {
    if (atEnd())
      return fail("unexpected end of input, expected a value");
    if (++valueCount > maxValues)
      return fail(absl::StrCat("more than ", maxValues, " values"));
    size_t start = pos;
    bool ok;
    switch (peek()) {
    case '{':
      ok = parseObject(out, depth + 1);
      break;
    case '[':
      ok = parseArray(out, depth + 1);
      break;
    case '"': {
      std::string s;
      ok = parseString(s);
      if (ok)
        out = JsonValue::makeString(std::move(s));
      break;
    }
    case 't':
    case 'f':
    case 'n':
      if (consumeLiteral("true")) {
        out = JsonValue::makeBool(true);
      } else if (consumeLiteral("false")) {
        out = JsonValue::makeBool(false);
      } else if (consumeLiteral("null")) {
        out = JsonValue();
      } else {
        return fail("invalid literal, expected true, false or null");
      }
      ok = true;
      break;
    default:
      if (peek() == '-' || (peek() >= '0' && peek() <= '9')) {
        ok = parseNumber(out);
        break;
      }
      return fail("unexpected " + describeByte(peek()) + ", expected a value");
    }
    if (ok)
      out.setOffset(start);
    return ok;
  }

  bool parseObject(JsonValue &out, int depth) {
    if (depth > maxDepth)
      return fail(absl::StrCat("nesting deeper than ", maxDepth, " levels"));
    ++pos; // '{'
    std::vector<JsonMember> members;
    std::unordered_set<std::string> keys;
    skipWhitespace();
    if (!atEnd() && peek() == '}') {
      ++pos;
      out = JsonValue::makeObject();
      return true;
    }
    while (true) {
      skipWhitespace();
      if (atEnd())
        return fail("unexpected end of input, expected an object key");
      if (peek() != '"')
        return fail("unexpected " + describeByte(peek()) +
                    ", expected '\"' to start an object key");
      size_t keyStart = pos;
      std::string key;
      if (!parseString(key))
        return false;
      if (!keys.insert(key).second)
        return failAt(keyStart, "duplicate key " + quoteKey(key));
      skipWhitespace();
      if (atEnd() || peek() != ':')
        return fail("expected ':' after an object key");
      ++pos;
      skipWhitespace();
      JsonValue member;
      if (!parseValue(member, depth))
        return false;
      members.emplace_back(std::move(key), std::move(member));
      skipWhitespace();
      if (atEnd())
        return fail("unexpected end of input, expected ',' or '}'");
      if (peek() == '}') {
        ++pos;
        break;
      }
      if (peek() != ',')
        return fail("expected ',' or '}'");
      ++pos;
    }
    out = JsonValue::makeObject(std::move(members));
    return true;
  }

  bool parseArray(JsonValue &out, int depth) {
    if (depth > maxDepth)
      return fail(absl::StrCat("nesting deeper than ", maxDepth, " levels"));
    ++pos; // '['
    std::vector<JsonValue> items;
    skipWhitespace();
    if (!atEnd() && peek() == ']') {
      ++pos;
      out = JsonValue::makeArray();
      return true;
    }
    while (true) {
      skipWhitespace();
      JsonValue item;
      if (!parseValue(item, depth))
        return false;
      items.push_back(std::move(item));
      skipWhitespace();
      if (atEnd())
        return fail("unexpected end of input, expected ',' or ']'");
      if (peek() == ']') {
        ++pos;
        break;
      }
      if (peek() != ',')
        return fail("expected ',' or ']'");
      ++pos;
    }
    out = JsonValue::makeArray(std::move(items));
    return true;
  }

  /// Four hex digits at `pos`, advancing past them.
  bool parseHex4(uint32_t &out) {
    if (text.size() - pos < 4)
      return fail("truncated \\u escape");
    out = 0;
    for (int i = 0; i < 4; ++i) {
      char c = text[pos + i];
      uint32_t digit;
      if (c >= '0' && c <= '9')
        digit = c - '0';
      else if (c >= 'a' && c <= 'f')
        digit = c - 'a' + 10;
      else if (c >= 'A' && c <= 'F')
        digit = c - 'A' + 10;
      else
        return failAt(pos + i, "invalid hex digit in \\u escape");
      out = out * 16 + digit;
    }
    pos += 4;
    return true;
  }

  bool parseString(std::string &out) {
    ++pos; // '"'
    while (true) {
      if (atEnd())
        return fail("unterminated string");
      unsigned char c = static_cast<unsigned char>(peek());
      if (c == '"') {
        ++pos;
        return true;
      }
      if (c < 0x20)
        return fail(absl::StrFormat(
            "control character 0x%02x in a string must be escaped", c));
      if (c == '\\') {
        if (!parseEscape(out))
          return false;
        continue;
      }
      size_t length = utf8SequenceLength(text.substr(pos));
      if (length == 0)
        return fail("invalid UTF-8 in a string");
      out.append(text.substr(pos, length));
      pos += length;
    }
  }

  bool parseEscape(std::string &out) {
    size_t start = pos;
    ++pos; // '\\'
    if (atEnd())
      return fail("unterminated string");
    char c = peek();
    ++pos;
    switch (c) {
    case '"':
    case '\\':
    case '/':
      out += c;
      return true;
    case 'b':
      out += '\b';
      return true;
    case 'f':
      out += '\f';
      return true;
    case 'n':
      out += '\n';
      return true;
    case 'r':
      out += '\r';
      return true;
    case 't':
      out += '\t';
      return true;
    case 'u':
      break;
    default:
      return failAt(start,
                    "invalid escape: backslash followed by " + describeByte(c));
    }
    uint32_t unit;
    if (!parseHex4(unit))
      return false;
    if (unit >= 0xDC00 && unit <= 0xDFFF)
      return failAt(start, "unpaired low surrogate in \\u escape");
    if (unit >= 0xD800 && unit <= 0xDBFF) {
      // A high surrogate must be followed by an escaped low surrogate; the
      // pair encodes one code point above U+FFFF.
      if (text.substr(pos, 2) != "\\u")
        return failAt(start, "unpaired high surrogate in \\u escape");
      pos += 2;
      uint32_t low;
      if (!parseHex4(low))
        return false;
      if (low < 0xDC00 || low > 0xDFFF)
        return failAt(start, "unpaired high surrogate in \\u escape");
      unit = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00);
    }
    appendUtf8(out, unit);
    return true;
  }

  bool parseNumber(JsonValue &out) {
    size_t start = pos;
    auto digits = [&] {
      size_t from = pos;
      while (!atEnd() && peek() >= '0' && peek() <= '9')
        ++pos;
      return pos - from;
    };
    if (peek() == '-')
      ++pos;
    size_t intStart = pos;
    size_t intDigits = digits();
    if (intDigits == 0)
      return fail("expected a digit");
    if (intDigits > 1 && text[intStart] == '0')
      return failAt(intStart, "leading zeros are not allowed in numbers");
    bool integral = true;
    if (!atEnd() && peek() == '.') {
      integral = false;
      ++pos;
      if (digits() == 0)
        return fail("expected a digit after '.'");
    }
    if (!atEnd() && (peek() == 'e' || peek() == 'E')) {
      integral = false;
      ++pos;
      if (!atEnd() && (peek() == '+' || peek() == '-'))
        ++pos;
      if (digits() == 0)
        return fail("expected a digit in the exponent");
    }
    std::string_view token = text.substr(start, pos - start);
    const char *first = token.data();
    const char *last = token.data() + token.size();
    if (integral) {
      int64_t value;
      auto [ptr, ec] = std::from_chars(first, last, value);
      if (ec != std::errc() || ptr != last)
        return failAt(start, absl::StrCat("integer ", clip(token),
                                          " does not fit in 64 bits"));
      out = JsonValue::makeInt(value);
      return true;
    }
    double value;
    auto [ptr, ec] = std::from_chars(first, last, value);
    if (ec != std::errc() || ptr != last)
      return failAt(start, absl::StrCat("number ", clip(token),
                                        " is out of the range of a double"));
    out = JsonValue::makeNumber(value);
    return true;
  }

  /// Long tokens are shortened in messages; the offset says where they are.
  static std::string clip(std::string_view token) {
    if (token.size() <= 40)
      return std::string(token);
    return absl::StrCat(toAbsl(token.substr(0, 40)), "...");
  }

  static std::string quoteKey(std::string_view key) {
    std::string out = "\"";
    for (char c : key.substr(0, 80)) {
      unsigned char u = static_cast<unsigned char>(c);
      if (u < 0x20 || u == 0x7F)
        out += absl::StrFormat("\\u%04x", u);
      else
        out += c;
    }
    out += key.size() > 80 ? "\"..." : "\"";
    return out;
  }

  std::string_view text;
  size_t pos = 0;
  int maxDepth;
  uint64_t maxValues;
  uint64_t valueCount = 0;
};

} // namespace

absl::StatusOr<JsonValue> parseJson(std::string_view text,
                                    const JsonParseOptions &options,
                                    JsonError *error) {
  Parser parser(text, options);
  JsonValue value;
  if (parser.parseDocument(value))
    return value;
  if (error)
    *error = parser.error;
  return absl::InvalidArgumentError(absl::StrCat(
      "byte offset ", parser.error.offset, ": ", parser.error.message));
}

//===----------------------------------------------------------------------===//
// Printer
//===----------------------------------------------------------------------===//

static void printString(std::string &out, std::string_view s) {
  out += '"';
  for (char c : s) {
    switch (c) {
    case '"':
      out += "\\\"";
      break;
    case '\\':
      out += "\\\\";
      break;
    case '\b':
      out += "\\b";
      break;
    case '\f':
      out += "\\f";
      break;
    case '\n':
      out += "\\n";
      break;
    case '\r':
      out += "\\r";
      break;
    case '\t':
      out += "\\t";
      break;
    default:
      if (static_cast<unsigned char>(c) < 0x20)
        out += absl::StrFormat("\\u%04x", static_cast<unsigned char>(c));
      else
        out += c;
    }
  }
  out += '"';
}

static void printValue(std::string &out, const JsonValue &value) {
  switch (value.kind()) {
  case JsonKind::Null:
    out += "null";
    return;
  case JsonKind::Bool:
    out += value.asBool() ? "true" : "false";
    return;
  case JsonKind::Int:
    absl::StrAppend(&out, value.asInt());
    return;
  case JsonKind::Number: {
    double d = value.asNumber();
    if (!std::isfinite(d)) {
      out += "null";
      return;
    }
    char buffer[64];
    auto [end, ec] = std::to_chars(buffer, buffer + sizeof(buffer), d);
    std::string_view digits(buffer, ec == std::errc() ? end - buffer : 0);
    out += digits;
    if (digits.find_first_of(".eE") == std::string_view::npos)
      out += ".0";
    return;
  }
  case JsonKind::String:
    printString(out, value.asString());
    return;
  case JsonKind::Array: {
    out += '[';
    bool first = true;
    for (const JsonValue &item : value.items()) {
      if (!first)
        out += ',';
      first = false;
      printValue(out, item);
    }
    out += ']';
    return;
  }
  case JsonKind::Object: {
    out += '{';
    bool first = true;
    for (const JsonMember &member : value.members()) {
      if (!first)
        out += ',';
      first = false;
      printString(out, member.first);
      out += ':';
      printValue(out, member.second);
    }
    out += '}';
    return;
  }
  }
}

std::string printJson(const JsonValue &value) {
  std::string out;
  printValue(out, value);
  return out;
}

} // namespace sinter::formats
