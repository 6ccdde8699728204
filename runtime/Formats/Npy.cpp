//===- Npy.cpp - read and write NumPy .npy files --------------------------===//
//
// Reading goes preamble -> header dict -> dtype/shape checks -> size check
// against the bytes actually present -> allocate -> copy, so a hostile shape
// can never cause an allocation larger than the file.
//
//===----------------------------------------------------------------------===//

#include "runtime/Formats/Npy.h"

#include "runtime/Formats/AbslCompat.h"
#include "runtime/Formats/FileIO.h"
#include "runtime/Support/Status.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

#include <cctype>
#include <cstring>
#include <optional>

namespace sinter::formats {

static constexpr char kMagic[] = "\x93NUMPY";
static constexpr size_t kMagicSize = 6;
/// numpy's own reader refuses headers longer than this (_MAX_HEADER_SIZE,
/// numpy >= 1.24) as unsafe to evaluate; for the plain dtypes we support a
/// header is under 1 KiB, so the same cap costs nothing and bounds the
/// allocation before parsing.
static constexpr uint64_t kMaxHeaderSize = 10000;
/// np.save reserves room for the first dimension to grow to this many
/// digits (GROWTH_AXIS_MAX_DIGITS), so files can be appended to in place.
static constexpr size_t kGrowthAxisMaxDigits = 21;
// one-definition: .npy pads its header to this (the format's own number).
static constexpr size_t kArrayAlign = 64;

namespace {

/// What the header dict says, before validation against the file size.
struct NpyHeader {
  std::optional<std::string> descr;
  std::optional<bool> fortranOrder;
  std::optional<std::vector<int64_t>> shape;
  uint64_t descrOffset = 0, fortranOffset = 0, shapeOffset = 0;
};

/// A strict parser for the one dict shape .npy headers have: string keys,
/// and values that are a string, True/False or a tuple of integers. Python
/// syntax is followed where it matters for correctness ("(3)" is an int, not
/// a tuple, so it is rejected as numpy would); everything numpy never writes
/// (escapes, other value kinds, duplicate keys) is rejected.
class HeaderParser {
public:
  HeaderParser(std::string_view text, uint64_t base, std::string_view name,
               bool allowLongSuffix)
      : text(text), base(base), name(name), allowLongSuffix(allowLongSuffix) {}

  absl::Status parse(NpyHeader &header) {
    skipSpace();
    if (!consume('{'))
      return error("header is not a Python dict (expected '{')");
    while (true) {
      skipSpace();
      if (consume('}'))
        break;
      uint64_t keyOffset = base + pos;
      std::string key;
      SINTER_RETURN_IF_ERROR(parseString(key));
      skipSpace();
      if (!consume(':'))
        return error("expected ':' after a header key");
      skipSpace();
      uint64_t valueOffset = base + pos;
      absl::Status s = absl::OkStatus();
      if (key == "descr") {
        if (header.descr)
          return duplicate(keyOffset, key);
        if (!atEnd() && (peek() == '[' || peek() == '{'))
          return error("structured dtypes are not supported (descr must be "
                       "a plain type string such as '<f4')");
        header.descr.emplace();
        header.descrOffset = valueOffset;
        s = parseString(*header.descr);
      } else if (key == "fortran_order") {
        if (header.fortranOrder)
          return duplicate(keyOffset, key);
        header.fortranOffset = valueOffset;
        if (consumeWord("True"))
          header.fortranOrder = true;
        else if (consumeWord("False"))
          header.fortranOrder = false;
        else
          return error("fortran_order must be True or False");
      } else if (key == "shape") {
        if (header.shape)
          return duplicate(keyOffset, key);
        header.shape.emplace();
        header.shapeOffset = valueOffset;
        s = parseShape(*header.shape);
      } else {
        return formatError(SINTER_HERE, name, keyOffset,
                           absl::StrCat("unexpected header key ",
                                        quoteForMessage(key),
                                        " (expected descr, fortran_order, "
                                        "shape)"));
      }
      SINTER_RETURN_IF_ERROR(s);
      skipSpace();
      if (consume('}'))
        break;
      if (!consume(','))
        return error("expected ',' or '}' in the header dict");
    }
    skipSpace();
    if (!atEnd())
      return error("unexpected text after the header dict");
    if (!header.descr)
      return formatError(SINTER_HERE, name, base, "header has no 'descr' key");
    if (!header.fortranOrder)
      return formatError(SINTER_HERE, name, base,
                         "header has no 'fortran_order' key");
    if (!header.shape)
      return formatError(SINTER_HERE, name, base, "header has no 'shape' key");
    return absl::OkStatus();
  }

private:
  bool atEnd() const { return pos >= text.size(); }
  char peek() const { return text[pos]; }
  bool consume(char c) {
    if (atEnd() || peek() != c)
      return false;
    ++pos;
    return true;
  }
  bool consumeWord(std::string_view word) {
    if (text.substr(pos, word.size()) != word)
      return false;
    size_t end = pos + word.size();
    // "Falsehood" is not False.
    if (end < text.size() &&
        (std::isalnum(static_cast<unsigned char>(text[end])) ||
         text[end] == '_'))
      return false;
    pos = end;
    return true;
  }
  void skipSpace() {
    while (!atEnd() && (peek() == ' ' || peek() == '\t' || peek() == '\n' ||
                        peek() == '\r'))
      ++pos;
  }
  absl::Status error(std::string_view message) const {
    return formatError(SINTER_HERE, name, base + pos, message);
  }
  absl::Status duplicate(uint64_t offset, std::string_view key) const {
    return formatError(
        SINTER_HERE, name, offset,
        absl::StrCat("duplicate header key '", toAbsl(key), "'"));
  }

  absl::Status parseString(std::string &out) {
    if (atEnd() || (peek() != '\'' && peek() != '"'))
      return error("expected a quoted string");
    char quote = peek();
    ++pos;
    size_t start = pos;
    while (!atEnd() && peek() != quote && peek() != '\n') {
      if (peek() == '\\')
        return error("escapes are not supported in header strings");
      ++pos;
    }
    // Python string literals cannot span lines either.
    if (atEnd() || peek() == '\n')
      return error("unterminated string in the header");
    out.assign(text.substr(start, pos - start));
    ++pos;
    return absl::OkStatus();
  }

  absl::Status parseShape(std::vector<int64_t> &shape) {
    if (!consume('('))
      return error("shape must be a tuple of integers such as (2, 3)");
    skipSpace();
    if (consume(')'))
      return absl::OkStatus(); // () is a 0-d array.
    bool sawComma = false;
    while (true) {
      skipSpace();
      if (consume(')'))
        break; // After a trailing comma: "(3,)".
      if (shape.size() == static_cast<size_t>(kMaxRank))
        return error(
            absl::StrCat("shape has more than ", kMaxRank, " dimensions"));
      int64_t dim;
      SINTER_RETURN_IF_ERROR(parseDimension(dim));
      shape.push_back(dim);
      skipSpace();
      if (consume(',')) {
        sawComma = true;
        continue;
      }
      if (consume(')'))
        break;
      return error("expected ',' or ')' in the shape tuple");
    }
    // Python reads "(3)" as the integer 3, and numpy rejects it.
    if (!sawComma)
      return error("shape must be a tuple; a 1-d shape is written (n,)");
    return absl::OkStatus();
  }

  absl::Status parseDimension(int64_t &dim) {
    size_t start = pos;
    if (!atEnd() && peek() == '-')
      return error("shape dimensions must not be negative");
    while (!atEnd() && peek() >= '0' && peek() <= '9')
      ++pos;
    if (pos == start)
      return error("expected an integer in the shape tuple");
    std::string_view digits = text.substr(start, pos - start);
    if (digits.size() > 1 && digits[0] == '0')
      return formatError(SINTER_HERE, name, base + start,
                         "leading zeros are not allowed in shape dimensions");
    // Python 2 wrote long integers as "3L"; numpy still reads such v1/v2
    // files by filtering the suffix out.
    if (allowLongSuffix && !atEnd() && (peek() == 'L' || peek() == 'l'))
      ++pos;
    dim = 0;
    for (char c : digits)
      if (__builtin_mul_overflow(dim, 10, &dim) ||
          __builtin_add_overflow(dim, c - '0', &dim))
        return formatError(SINTER_HERE, name, base + start,
                           absl::StrCat("shape dimension ",
                                        toAbsl(digits.substr(0, 30)),
                                        " does not fit in 64 bits"));
    return absl::OkStatus();
  }

  std::string_view text;
  uint64_t base; // file offset of text[0]
  std::string_view name;
  bool allowLongSuffix;
  size_t pos = 0;
};

} // namespace

static uint64_t readLittleEndian(const unsigned char *bytes, int count) {
  uint64_t value = 0;
  for (int i = count - 1; i >= 0; --i)
    value = (value << 8) | bytes[i];
  return value;
}

/// The first element of `data` (a Bool tensor) that is not 0 or 1.
static std::optional<size_t> findBadBool(const std::vector<uint8_t> &data) {
  for (size_t i = 0; i < data.size(); ++i)
    if (data[i] > 1)
      return i;
  return std::nullopt;
}

static absl::StatusOr<HostTensor> parseNpySource(const ByteSource &source) {
  std::string_view name = source.name();
  uint64_t fileSize = source.size();
  unsigned char preamble[12];
  if (fileSize < 10)
    return formatError(SINTER_HERE, name, 0,
                       absl::StrCat("file is too short to be .npy (", fileSize,
                                    " bytes; the preamble alone is 10)"));
  SINTER_RETURN_IF_ERROR(source.read(0, 10, preamble));
  if (std::memcmp(preamble, kMagic, kMagicSize) != 0)
    return formatError(SINTER_HERE, name, 0,
                       "not a .npy file (bad magic; expected \\x93NUMPY)");
  int major = preamble[6], minor = preamble[7];
  if ((major != 1 && major != 2 && major != 3) || minor != 0)
    return formatError(SINTER_HERE, name, 6,
                       absl::StrCat("unsupported .npy version ", major, ".",
                                    minor, " (supported: 1.0, 2.0, 3.0)"));
  // 1.0 has a 2-byte header length; 2.0 and 3.0 have 4 bytes.
  int lengthBytes = major == 1 ? 2 : 4;
  uint64_t prefixSize = 8 + lengthBytes;
  if (fileSize < prefixSize)
    return formatError(SINTER_HERE, name, 8,
                       "file ends inside the header length");
  if (lengthBytes == 4)
    SINTER_RETURN_IF_ERROR(source.read(10, 2, preamble + 10));
  uint64_t headerSize = readLittleEndian(preamble + 8, lengthBytes);
  if (headerSize > kMaxHeaderSize)
    return formatError(SINTER_HERE, name, 8,
                       absl::StrCat("header length ", headerSize,
                                    " exceeds the limit of ", kMaxHeaderSize,
                                    " bytes"));
  if (headerSize > fileSize - prefixSize)
    return formatError(SINTER_HERE, name, 8,
                       absl::StrCat("header length ", headerSize,
                                    " runs past the end of the file (",
                                    fileSize, " bytes)"));
  std::string headerText(headerSize, '\0');
  SINTER_RETURN_IF_ERROR(
      source.read(prefixSize, headerSize, headerText.data()));

  NpyHeader header;
  HeaderParser parser(headerText, prefixSize, name,
                      /*allowLongSuffix=*/major <= 2);
  SINTER_RETURN_IF_ERROR(parser.parse(header));

  const std::string &descr = *header.descr;
  std::optional<DType> dtype = parseNpyDescr(descr);
  if (!dtype) {
    std::string why = "unsupported dtype";
    if (!descr.empty() && descr[0] == '>')
      why = "big-endian data is not supported (convert with "
            "arr.astype(arr.dtype.newbyteorder('<')))";
    else if (descr == "|O" || descr == "<O" || descr == ">O")
      why = "object arrays are not supported (they need pickle)";
    return formatError(
        SINTER_HERE, name, header.descrOffset,
        absl::StrCat("descr ", quoteForMessage(descr), ": ", why));
  }
  if (*header.fortranOrder)
    return formatError(SINTER_HERE, name, header.fortranOffset,
                       "Fortran-order arrays are not supported (save "
                       "np.ascontiguousarray(arr) instead)");
  absl::StatusOr<int64_t> dataSize = numBytes(*dtype, *header.shape);
  if (!dataSize.ok())
    return formatError(SINTER_HERE, name, header.shapeOffset,
                       toStd(dataSize.status().message()));

  uint64_t dataStart = prefixSize + headerSize;
  uint64_t available = fileSize - dataStart;
  uint64_t needed = static_cast<uint64_t>(*dataSize);
  if (available < needed)
    return formatError(
        SINTER_HERE, name, dataStart,
        absl::StrCat("truncated: ", toAbsl(dtypeName(*dtype)), " shape (",
                     absl::StrJoin(*header.shape, ", "), ") needs ", needed,
                     " bytes of data but the file has ", available));
  if (available > needed)
    return formatError(SINTER_HERE, name, dataStart + needed,
                       absl::StrCat(available - needed,
                                    " unexpected bytes after the ", needed,
                                    " bytes of array data"));

  HostTensor tensor;
  tensor.dtype = *dtype;
  tensor.shape = std::move(*header.shape);
  tensor.data.resize(static_cast<size_t>(needed));
  SINTER_RETURN_IF_ERROR(source.read(dataStart, needed, tensor.data.data()));
  if (tensor.dtype == DType::Bool)
    if (std::optional<size_t> bad = findBadBool(tensor.data))
      return formatError(SINTER_HERE, name, dataStart + *bad,
                         absl::StrCat("bool element ", *bad, " is ",
                                      int(tensor.data[*bad]), ", not 0 or 1"));
  return tensor;
}

absl::StatusOr<HostTensor> readNpy(const std::string &path) {
  SINTER_ASSIGN_OR_RETURN(std::unique_ptr<FileSource> source,
                          FileSource::open(path));
  return parseNpySource(*source);
}

absl::StatusOr<HostTensor> parseNpy(std::string_view bytes,
                                    std::string_view nameForErrors) {
  return parseNpySource(MemorySource(bytes, nameForErrors));
}

/// The preamble and padded header np.save would write for `tensor`.
static absl::StatusOr<std::string> npyHeader(const HostTensor &tensor) {
  std::optional<std::string_view> descr = npyDescr(tensor.dtype);
  if (!descr)
    return sinter::InvalidArgumentError(
        SINTER_HERE,
        absl::StrCat("cannot write a ", toAbsl(dtypeName(tensor.dtype)),
                     " tensor to .npy: numpy has no ",
                     toAbsl(dtypeName(tensor.dtype)),
                     " dtype (convert to F32 first, or use safetensors)"));
  if (absl::Status s = tensor.validate(); !s.ok())
    return withMessage(SINTER_HERE, s,
                       absl::StrCat("cannot write .npy: ", s.message()));

  // Python's repr of a tuple: "()", "(3,)", "(2, 3)".
  std::string shape = "(" + absl::StrJoin(tensor.shape, ", ");
  if (tensor.shape.size() == 1)
    shape += ",";
  shape += ")";
  std::string dict =
      absl::StrCat("{'descr': '", toAbsl(*descr),
                   "', 'fortran_order': False, 'shape': ", shape, ", }");
  if (!tensor.shape.empty())
    dict.append(kGrowthAxisMaxDigits - std::to_string(tensor.shape[0]).size(),
                ' ');
  // Pad with spaces and end with '\n' so the data starts on a 64-byte
  // boundary; like numpy, a header that is already aligned still gets a full
  // 64 bytes of padding.
  size_t used = kMagicSize + 2 + 2 + dict.size() + 1;
  dict.append(kArrayAlign - used % kArrayAlign, ' ');
  dict += '\n';

  std::string out(kMagic, kMagicSize);
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(dict.size() & 0xFF);
  out += static_cast<char>(dict.size() >> 8);
  out += dict;
  return out;
}

absl::StatusOr<std::string> serializeNpy(const HostTensor &tensor) {
  SINTER_ASSIGN_OR_RETURN(std::string out, npyHeader(tensor));
  out.append(reinterpret_cast<const char *>(tensor.data.data()),
             tensor.data.size());
  return out;
}

absl::Status writeNpy(const std::string &path, const HostTensor &tensor) {
  absl::StatusOr<std::string> header = npyHeader(tensor);
  if (!header.ok())
    return withMessage(SINTER_HERE, header.status(),
                       absl::StrCat(path, ": ", header.status().message()));
  std::string_view data(reinterpret_cast<const char *>(tensor.data.data()),
                        tensor.data.size());
  return writeFileAtomic(path, {*header, data});
}

} // namespace sinter::formats
