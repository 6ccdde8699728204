//===- JsonDocument.h - JSON read with nlohmann::json, value offsets kept -===//
//
// The runtime's JSON files (safetensors headers, a checkpoint's trainer.json
// and COMPLETE, sinter-text2tokens' meta.json) are read and written with
// nlohmann::json (Debian's nlohmann-json3-dev), as ordered_json so members
// keep their file order. Reading goes through nlohmann's SAX parser, never
// its exceptions, with a handler that builds the tree and adds what
// untrusted input needs and nlohmann does not do:
//
//   - RFC 8259 only, one value and optional whitespace: nlohmann's own
//     grammar (no comments, no trailing commas, no NaN), plus no byte-order
//     mark and no NUL byte anywhere (nlohmann would stop reading at one).
//   - Duplicate object keys are an error (after escape decoding).
//   - Integers (no fraction, no exponent) are kept exact as int64; one that
//     does not fit is an error, never a silently rounded double; every
//     integer in the tree is a number_integer. A number beyond the range of
//     a double is an error too.
//   - Nesting depth and the number of values are capped.
//   - Every value's byte offset is kept (offsetOf), so that callers can
//     report "byte offset N" for a value of the wrong kind.
//
// Syntax errors carry nlohmann's reason and the offset of the last byte
// read, in one printable line.
//
//===----------------------------------------------------------------------===//

#ifndef SINTER_RUNTIME_FORMATS_JSONDOCUMENT_H
#define SINTER_RUNTIME_FORMATS_JSONDOCUMENT_H

#include "absl/status/statusor.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace sinter::formats {

/// A JSON value whose objects keep their members in insertion (file) order.
using Json = nlohmann::ordered_json;

struct JsonLimits {
  /// Arrays and objects may nest this deep (the outermost one is level 1).
  int maxDepth = 64;
  /// At most this many values (every scalar, array and object counts one).
  uint64_t maxValues = std::numeric_limits<uint64_t>::max();
};

/// Where and why a text was rejected, for callers that embed JSON in a
/// larger file and re-anchor the offset.
struct JsonError {
  uint64_t offset = 0; // from the start of the text
  std::string message; // without the offset, e.g. "duplicate key \"a\""
};

/// A parsed text: the tree and the offset of each of its values.
class JsonDocument {
public:
  /// Parses `text` as exactly one JSON value surrounded by optional
  /// whitespace. Errors are InvalidArgument "byte offset N: why"; if `error`
  /// is non-null it also receives N and the reason separately.
  static absl::StatusOr<JsonDocument> parse(std::string_view text,
                                            const JsonLimits &limits = {},
                                            JsonError *error = nullptr);

  const Json &root() const { return *rootValue; }

  /// The byte offset in the text of the first character of `value`, which
  /// must be root() or one of its descendants (0 otherwise). A walk of the
  /// tree: meant for error messages, not for every value.
  uint64_t offsetOf(const Json &value) const;

private:
  // The root lives on the heap so that moving the document keeps the
  // addresses of its values, which offsetOf compares.
  std::unique_ptr<Json> rootValue = std::make_unique<Json>();
  std::vector<uint64_t> offsets; // of every value, in document (pre-)order
};

/// The member `key` of `object`, or null when it is absent or `object` is
/// not an object.
const Json *findMember(const Json &object, std::string_view key);

/// Compact JSON (no whitespace), members in stored order, integers in
/// decimal, strings escaped as RFC 8259 requires and otherwise kept as
/// UTF-8. Strings must be valid UTF-8 (see Utf8.h): callers check, and an
/// invalid byte would be written as U+FFFD rather than fail.
std::string writeJson(const Json &value);

} // namespace sinter::formats

#endif // SINTER_RUNTIME_FORMATS_JSONDOCUMENT_H
