//===- Utf8.h - checking and encoding UTF-8 -------------------------------===//
//
// What the formats need of UTF-8 besides JSON itself: safetensors names and
// metadata must be valid UTF-8 before they are written, error messages keep
// non-ASCII text only when it is valid, and sinter-text2tokens decodes and
// encodes characters. Validity follows Unicode 15 section 3.9 (D92): no
// overlong forms, no surrogate code points, nothing above U+10FFFF.
//
//===----------------------------------------------------------------------===//

#ifndef SINTER_RUNTIME_FORMATS_UTF8_H
#define SINTER_RUNTIME_FORMATS_UTF8_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace sinter::formats {

/// Length of the well-formed UTF-8 sequence at the start of `text` (1 to
/// 4), or 0 if it does not start with one (or is empty).
size_t utf8SequenceLength(std::string_view text);

/// Whether `text` is well-formed UTF-8.
bool isValidUtf8(std::string_view text);

/// Appends the UTF-8 encoding of `codePoint` (at most U+10FFFF, not a
/// surrogate: callers check) to `out`.
void appendUtf8(std::string &out, uint32_t codePoint);

} // namespace sinter::formats

#endif // SINTER_RUNTIME_FORMATS_UTF8_H
