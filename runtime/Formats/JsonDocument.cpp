//===- JsonDocument.cpp - JSON read with nlohmann::json, offsets kept -----===//
//
// nlohmann's SAX parser reports values but not where they are. It reads its
// input one byte at a time through an iterator, so the handler knows how far
// the parser has read when each event arrives: the previous event's token
// ended there (or one byte later, after a number, whose end the lexer finds
// by reading one byte past it), and the current token starts at the first
// byte after that which is not whitespace, ':' or ',', the only bytes
// between two tokens that raise no event. The parser keeps its own stack
// (it does not recurse), and so does the tree builder.
//
//===----------------------------------------------------------------------===//

#include "runtime/Formats/JsonDocument.h"

#include "runtime/Formats/Utf8.h"
#include "runtime/Support/Status.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

#include <iterator>
#include <unordered_set>

namespace sinter::formats {

namespace {

/// An input iterator over the text that records how far it has been
/// advanced, which is how far the parser has read.
class TrackedIterator {
public:
  using iterator_category = std::input_iterator_tag;
  using value_type = char;
  using difference_type = std::ptrdiff_t;
  using pointer = const char *;
  using reference = const char &;

  TrackedIterator(const char *at, const char **furthest)
      : at(at), furthest(furthest) {}
  reference operator*() const { return *at; }
  TrackedIterator &operator++() {
    *furthest = ++at;
    return *this;
  }
  TrackedIterator operator++(int) {
    TrackedIterator before = *this;
    ++*this;
    return before;
  }
  bool operator==(const TrackedIterator &other) const { return at == other.at; }
  bool operator!=(const TrackedIterator &other) const { return at != other.at; }

private:
  const char *at;
  const char **furthest;
};

/// Long tokens are shortened in messages; the offset says where they are.
std::string clip(std::string_view token) {
  if (token.size() <= 40)
    return std::string(token);
  return absl::StrCat(absl::string_view(token.data(), 40), "...");
}

/// A key for a message: quoted, control characters escaped, long keys cut.
std::string quoteKey(std::string_view key) {
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

/// `text` as one printable line: control bytes, and all non-ASCII bytes
/// unless `text` is valid UTF-8, written as \xNN.
std::string printable(std::string_view text) {
  bool keepUtf8 = isValidUtf8(text);
  std::string out;
  for (char c : text) {
    unsigned char u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7F || (u >= 0x80 && !keepUtf8))
      out += absl::StrFormat("\\x%02x", u);
    else
      out += c;
  }
  return out;
}

/// nlohmann's reason without its "[json.exception.parse_error.101] parse
/// error at line 1, column 6: " prefix, which repeats the offset.
std::string parseErrorReason(const char *what) {
  std::string_view text = what;
  if (text.substr(0, 1) == "[") {
    size_t close = text.find("] ");
    if (close != std::string_view::npos)
      text.remove_prefix(close + 2);
  }
  if (text.substr(0, 15) == "parse error at ") {
    size_t colon = text.find(": ");
    if (colon != std::string_view::npos)
      text.remove_prefix(colon + 2);
  }
  return printable(text);
}

/// The SAX handler: builds the tree, records each value's offset and
/// enforces what nlohmann does not (see JsonDocument.h).
class TreeBuilder {
public:
  TreeBuilder(std::string_view text, const JsonLimits &limits, Json &root,
              std::vector<uint64_t> &offsets)
      : text(text), limits(limits), root(root), offsets(offsets),
        furthest(text.data()) {}

  const char **readPosition() { return &furthest; }
  const JsonError &error() const { return firstError; }

  bool null() { return addValue(Json(nullptr)); }
  bool boolean(bool value) { return addValue(Json(value)); }
  bool number_integer(Json::number_integer_t value) {
    return addValue(Json(value));
  }
  bool number_unsigned(Json::number_unsigned_t value) {
    // Non-negative integers arrive unsigned; the tree keeps every integer
    // as int64, so one above INT64_MAX is an error, as it would be for a
    // negative one below INT64_MIN.
    uint64_t start = tokenStart();
    if (value > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      return fail(start,
                  absl::StrCat("integer ", value, " does not fit in 64 bits"));
    return addValue(Json(static_cast<int64_t>(value)), start);
  }
  bool number_float(Json::number_float_t value, const std::string &token) {
    uint64_t start = tokenStart();
    // nlohmann reads an integer too large for 64 bits as a double.
    // (A number beyond the range of a double never gets here: nlohmann
    // reports it as error 406, see parse_error.)
    if (token.find_first_of(".eE") == std::string::npos)
      return fail(start, absl::StrCat("integer ", clip(token),
                                      " does not fit in 64 bits"));
    return addValue(Json(value), start);
  }
  bool string(std::string &value) { return addValue(Json(std::move(value))); }
  bool binary(Json::binary_t &) {
    // Only the binary formats (CBOR, ...) produce these; text never does.
    return fail(tokenStart(), "unexpected binary value");
  }
  bool start_object(std::size_t) { return open(Json::object()); }
  bool key(std::string &key) {
    uint64_t start = tokenStart();
    if (!containers.back().keys.insert(key).second)
      return fail(start, "duplicate key " + quoteKey(key));
    pendingKey = std::move(key);
    return true;
  }
  bool end_object() { return close(); }
  bool start_array(std::size_t) { return open(Json::array()); }
  bool end_array() { return close(); }
  bool parse_error(std::size_t position, const std::string &lastToken,
                   const nlohmann::detail::exception &ex) {
    // out_of_range.406: a number beyond the range of a double.
    if (ex.id == 406)
      return fail(tokenStart(), absl::StrCat("number ", clip(lastToken),
                                             " is out of the range of a "
                                             "double"));
    // `position` counts the bytes read, the offending one included.
    uint64_t at = position > 0 ? position - 1 : 0;
    return fail(std::min<uint64_t>(at, text.size()),
                parseErrorReason(ex.what()));
  }

private:
  struct OpenContainer {
    Json *value;
    std::unordered_set<std::string> keys; // objects only
  };

  /// Where the token of the current event starts (see the file comment);
  /// also moves the mark to the end of what the parser has read.
  uint64_t tokenStart() {
    size_t at = previousEnd;
    while (at < text.size() &&
           (text[at] == ' ' || text[at] == '\t' || text[at] == '\n' ||
            text[at] == '\r' || text[at] == ':' || text[at] == ','))
      ++at;
    previousEnd = static_cast<size_t>(furthest - text.data());
    return at;
  }

  bool fail(uint64_t offset, std::string message) {
    if (!hasError) {
      hasError = true;
      firstError = {offset, std::move(message)};
    }
    return false;
  }

  bool countValue(uint64_t start) {
    if (++valueCount > limits.maxValues)
      return fail(start,
                  absl::StrCat("more than ", limits.maxValues, " values"));
    offsets.push_back(start);
    return true;
  }

  /// Places `value` in the open container (or at the root) and returns
  /// where it now lives.
  Json *place(Json value) {
    if (containers.empty()) {
      root = std::move(value);
      return &root;
    }
    Json &parent = *containers.back().value;
    if (parent.is_array()) {
      Json::array_t &items = parent.get_ref<Json::array_t &>();
      items.push_back(std::move(value));
      return &items.back();
    }
    // Appended without ordered_map's linear search: key() has already
    // checked that the key is new.
    Json::object_t &members = parent.get_ref<Json::object_t &>();
    members.emplace_back(std::move(pendingKey), std::move(value));
    return &members.back().second;
  }

  bool addValue(Json value) { return addValue(std::move(value), tokenStart()); }
  bool addValue(Json value, uint64_t start) {
    if (!countValue(start))
      return false;
    place(std::move(value));
    return true;
  }

  bool open(Json container) {
    uint64_t start = tokenStart();
    if (static_cast<int64_t>(containers.size()) >= limits.maxDepth)
      return fail(start, absl::StrCat("nesting deeper than ", limits.maxDepth,
                                      " levels"));
    if (!countValue(start))
      return false;
    containers.push_back({place(std::move(container)), {}});
    return true;
  }

  bool close() {
    tokenStart();
    containers.pop_back();
    return true;
  }

  std::string_view text;
  const JsonLimits &limits;
  Json &root;
  std::vector<uint64_t> &offsets;
  const char *furthest;
  size_t previousEnd = 0;
  std::vector<OpenContainer> containers;
  std::string pendingKey;
  uint64_t valueCount = 0;
  bool hasError = false;
  JsonError firstError;
};

} // namespace

absl::StatusOr<JsonDocument> JsonDocument::parse(std::string_view text,
                                                 const JsonLimits &limits,
                                                 JsonError *error) {
  JsonDocument document;
  TreeBuilder builder(text, limits, *document.rootValue, document.offsets);
  JsonError failure;
  bool failed = false;
  if (text.substr(0, 3) == "\xEF\xBB\xBF") {
    // nlohmann skips a byte-order mark; RFC 8259 text has none.
    failure = {0, "unexpected byte 0xef, expected a value"};
    failed = true;
  } else {
    TrackedIterator begin(text.data(), builder.readPosition());
    TrackedIterator end(text.data() + text.size(), builder.readPosition());
    bool parsed = Json::sax_parse(begin, end, &builder);
    // nlohmann ends the input at a NUL byte; anything from there on is
    // an error here, whether or not the text before it was complete.
    size_t nul = text.find('\0');
    if (nul != std::string_view::npos &&
        (parsed || builder.error().offset >= nul)) {
      failure = {nul, parsed ? "unexpected byte 0x00 after the JSON value"
                             : "unexpected byte 0x00"};
      failed = true;
    } else if (!parsed) {
      failure = builder.error();
      failed = true;
    }
  }
  if (failed) {
    if (error)
      *error = failure;
    return sinter::InvalidArgumentError(
        SINTER_HERE,
        absl::StrCat("byte offset ", failure.offset, ": ", failure.message));
  }
  return document;
}

uint64_t JsonDocument::offsetOf(const Json &value) const {
  // The values in the order the parser met them, which is the order
  // `offsets` holds: each value, then its members or items.
  std::vector<const Json *> pending = {rootValue.get()};
  size_t index = 0;
  while (!pending.empty()) {
    const Json *at = pending.back();
    pending.pop_back();
    if (at == &value)
      return index < offsets.size() ? offsets[index] : 0;
    ++index;
    if (at->is_object()) {
      const Json::object_t &members = at->get_ref<const Json::object_t &>();
      for (auto it = members.rbegin(); it != members.rend(); ++it)
        pending.push_back(&it->second);
    } else if (at->is_array()) {
      const Json::array_t &items = at->get_ref<const Json::array_t &>();
      for (auto it = items.rbegin(); it != items.rend(); ++it)
        pending.push_back(&*it);
    }
  }
  return 0;
}

const Json *findMember(const Json &object, std::string_view key) {
  if (!object.is_object())
    return nullptr;
  auto it = object.find(std::string(key));
  return it == object.end() ? nullptr : &*it;
}

std::string writeJson(const Json &value) {
  return value.dump(/*indent=*/-1, ' ', /*ensure_ascii=*/false,
                    Json::error_handler_t::replace);
}

} // namespace sinter::formats
