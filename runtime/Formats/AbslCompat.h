//===- AbslCompat.h - std::string_view <-> absl::string_view --------------===//
//
// Debian's Abseil 20220623 is built with ABSL_OPTION_USE_STD_STRING_VIEW=0,
// so absl::string_view is its own class there: absl::StrCat and StrJoin do
// not accept a std::string_view, and absl::Status::message() does not return
// one. Other Abseil builds alias the two types. These conversions compile
// and do the right thing under both, so runtime/ can keep std::string_view
// in its interfaces.
//
//===----------------------------------------------------------------------===//

#ifndef SINTER_RUNTIME_FORMATS_ABSLCOMPAT_H
#define SINTER_RUNTIME_FORMATS_ABSLCOMPAT_H

#include "absl/strings/string_view.h"

#include <string_view>

namespace sinter::formats {

inline absl::string_view toAbsl(std::string_view text) {
  return absl::string_view(text.data(), text.size());
}

inline std::string_view toStd(absl::string_view text) {
  return std::string_view(text.data(), text.size());
}

} // namespace sinter::formats

#endif // SINTER_RUNTIME_FORMATS_ABSLCOMPAT_H
