//===- Json.h - the step program's hand-written JSON reader and writer ----===//
//
// Only runtime/Exec/StepProgram.cpp (and its test) still use this file;
// everything else in the runtime reads and writes JSON with nlohmann::json
// (JsonDocument.h). It goes when the step program moves to protobuf.
//
// A strict parser written for untrusted input:
//
//   - RFC 8259 grammar only: no comments, no trailing commas, no NaN, no
//     single quotes, no leading zeros; one value then optional whitespace.
//   - Strings must be valid UTF-8 (no overlong forms, no surrogates); \uXXXX
//     escapes, including surrogate pairs, are decoded to UTF-8.
//   - Integers (no fraction, no exponent) are kept exact as int64; one that
//     does not fit is an error, never a silently rounded double, because the
//     integers we care about are shapes and byte offsets.
//   - Duplicate object keys are an error (after escape decoding, so "a" and
//     "\u0061" collide). Objects keep their members in file order.
//   - Nesting depth and the total number of values are capped, so a hostile
//     text can neither overflow the stack nor make the tree much larger than
//     the caller budgets for.
//
// Errors carry the byte offset in the text where parsing stopped.
//
//===----------------------------------------------------------------------===//

#ifndef SINTER_RUNTIME_FORMATS_JSON_H
#define SINTER_RUNTIME_FORMATS_JSON_H

#include "absl/status/statusor.h"

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace sinter::formats {

class JsonValue;
using JsonMember = std::pair<std::string, JsonValue>;

enum class JsonKind { Null, Bool, Int, Number, String, Array, Object };

/// One JSON value. Accessors of the wrong kind return a zero value (false,
/// 0, empty) instead of failing: check kind() first.
class JsonValue {
public:
  JsonValue() = default; // null

  static JsonValue makeBool(bool value);
  static JsonValue makeInt(int64_t value);
  static JsonValue makeNumber(double value);
  static JsonValue makeString(std::string value);
  static JsonValue makeArray(std::vector<JsonValue> items = {});
  static JsonValue makeObject(std::vector<JsonMember> members = {});

  JsonKind kind() const { return static_cast<JsonKind>(value.index()); }
  bool isNull() const { return kind() == JsonKind::Null; }
  bool isBool() const { return kind() == JsonKind::Bool; }
  bool isInt() const { return kind() == JsonKind::Int; }
  /// True for both Int and Number.
  bool isNumber() const {
    return kind() == JsonKind::Int || kind() == JsonKind::Number;
  }
  bool isString() const { return kind() == JsonKind::String; }
  bool isArray() const { return kind() == JsonKind::Array; }
  bool isObject() const { return kind() == JsonKind::Object; }

  bool asBool() const;
  int64_t asInt() const;
  /// The value of an Int or a Number as a double.
  double asNumber() const;
  const std::string &asString() const;
  const std::vector<JsonValue> &items() const;
  const std::vector<JsonMember> &members() const;
  /// Mutable access for building; turns a value of another kind into an
  /// empty array/object first.
  std::vector<JsonValue> &mutableItems();
  std::vector<JsonMember> &mutableMembers();

  /// The member named `key` of an object, or null if absent (or not an
  /// object).
  const JsonValue *find(std::string_view key) const;

  /// Byte offset of the value's first character in the parsed text (0 for
  /// values built in code).
  uint64_t offset() const { return sourceOffset; }
  void setOffset(uint64_t offset) { sourceOffset = offset; }

  /// Structural equality; ignores offsets. An Int never equals a Number.
  friend bool operator==(const JsonValue &lhs, const JsonValue &rhs) {
    return lhs.value == rhs.value;
  }
  friend bool operator!=(const JsonValue &lhs, const JsonValue &rhs) {
    return !(lhs == rhs);
  }

private:
  // Alternative order must match JsonKind.
  std::variant<std::monostate, bool, int64_t, double, std::string,
               std::vector<JsonValue>, std::vector<JsonMember>>
      value;
  uint64_t sourceOffset = 0;
};

struct JsonParseOptions {
  /// Arrays and objects may nest this deep (the outermost one is level 1).
  /// The parser recurses once per level, so values above kJsonMaxDepth are
  /// clamped to it.
  int maxDepth = 64;
  /// At most this many values (every scalar, array and object counts one).
  uint64_t maxValues = std::numeric_limits<uint64_t>::max();
};

inline constexpr int kJsonMaxDepth = 1000;

/// Where and why parsing failed, for callers that embed JSON in a larger
/// file and need to re-anchor the offset.
struct JsonError {
  uint64_t offset = 0; // from the start of the text
  std::string message; // without the offset, e.g. "expected ',' or '}'"
};

/// Parses `text` as exactly one JSON value surrounded by optional
/// whitespace. Errors are InvalidArgument "byte offset N: why"; if `error` is
/// non-null it also receives N and the reason separately.
absl::StatusOr<JsonValue> parseJson(std::string_view text,
                                    const JsonParseOptions &options = {},
                                    JsonError *error = nullptr);

/// Compact JSON (no whitespace), members in stored order. Numbers print in
/// the shortest form that reads back to the same double, with ".0" added to
/// integral values so they read back as Numbers; non-finite numbers, which
/// JSON cannot express, print as null (like JavaScript's JSON.stringify).
/// Strings are emitted as stored: callers must ensure they are valid UTF-8
/// (see Utf8.h) or the output will not parse.
std::string printJson(const JsonValue &value);

} // namespace sinter::formats

#endif // SINTER_RUNTIME_FORMATS_JSON_H
