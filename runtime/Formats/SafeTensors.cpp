//===- SafeTensors.cpp - read and write .safetensors files ----------------===//
//
// Reading is two passes over the header: first every entry is checked on
// its own (dtype, shape, offsets inside the data section, size consistent
// with dtype x shape), then the entries sorted by offset must tile the data
// section. Only then is tensor memory allocated, and its total is exactly
// the data section size, which is bounded by the file size.
//
//===----------------------------------------------------------------------===//

#include "runtime/Formats/SafeTensors.h"

#include "runtime/Formats/AbslCompat.h"
#include "runtime/Formats/FileIO.h"
#include "runtime/Formats/JsonDocument.h"
#include "runtime/Formats/Utf8.h"
#include "runtime/Support/Status.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <set>

namespace sinter::formats {

/// A header near the 100 MB cap could describe tens of millions of JSON
/// values, each ~50 bytes as a tree. No real checkpoint comes close (a
/// tensor entry is about ten values, and large models have a few thousand
/// tensors per file), so the tree is capped well below what the byte cap
/// alone would allow.
static constexpr uint64_t kMaxHeaderValues = uint64_t(1) << 22;

static constexpr char kMetadataKey[] = "__metadata__";

const HostTensor *SafeTensorsFile::find(std::string_view name) const {
  for (const auto &[tensorName, tensor] : tensors)
    if (tensorName == name)
      return &tensor;
  return nullptr;
}

namespace {

/// One validated header entry.
struct Entry {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  uint64_t begin, end;
  const Json *offsets; // the entry's data_offsets, for errors
};

const Json::object_t &members(const Json &object) {
  return object.get_ref<const Json::object_t &>();
}
const Json::array_t &items(const Json &array) {
  return array.get_ref<const Json::array_t &>();
}
const std::string &text(const Json &string) {
  return string.get_ref<const std::string &>();
}

/// Checks the parsed header and builds the entry list. JSON offsets are
/// relative to the header, which starts at file offset 8.
class HeaderChecker {
public:
  HeaderChecker(std::string_view name, uint64_t headerSize, uint64_t dataSize,
                const JsonDocument &document)
      : name(name), headerSize(headerSize), dataSize(dataSize),
        document(document) {}

  absl::Status check(const Json &root, SafeTensorsFile &file,
                     std::vector<Entry> &entries) {
    if (!root.is_object())
      return errorAt(root, "header is not a JSON object");
    for (const auto &member : members(root)) {
      if (member.first == kMetadataKey) {
        SINTER_RETURN_IF_ERROR(checkMetadata(member.second, file.metadata));
        continue;
      }
      Entry entry;
      SINTER_RETURN_IF_ERROR(checkEntry(member.first, member.second, entry));
      entries.push_back(std::move(entry));
    }
    return checkCoverage(entries);
  }

private:
  absl::Status errorAt(const Json &value, std::string_view message) {
    return formatError(SINTER_HERE, name,
                       kHeaderBase + document.offsetOf(value), message);
  }
  absl::Status tensorError(const Json &value, std::string_view tensor,
                           std::string_view message) {
    return errorAt(value, absl::StrCat("tensor ", quoteForMessage(tensor), ": ",
                                       toAbsl(message)));
  }

  absl::Status checkMetadata(const Json &value,
                             std::map<std::string, std::string> &metadata) {
    // The reference reads the key into an Option, so it accepts null as
    // "no metadata"; so do we.
    if (value.is_null())
      return absl::OkStatus();
    if (!value.is_object())
      return errorAt(value, "__metadata__ must be an object mapping strings "
                            "to strings");
    for (const auto &member : members(value)) {
      if (!member.second.is_string())
        return errorAt(member.second,
                       absl::StrCat("__metadata__ value of ",
                                    quoteForMessage(member.first),
                                    " must be a string (safetensors metadata "
                                    "is a string-to-string map)"));
      metadata.emplace(member.first, text(member.second));
    }
    return absl::OkStatus();
  }

  /// A non-negative JSON integer.
  std::optional<int64_t> count(const Json &value) {
    if (!value.is_number_integer() || value.get<int64_t>() < 0)
      return std::nullopt;
    return value.get<int64_t>();
  }

  absl::Status checkEntry(const std::string &tensor, const Json &value,
                          Entry &entry) {
    entry.name = tensor;
    if (!value.is_object())
      return tensorError(value, tensor,
                         "entry must be an object with dtype, shape and "
                         "data_offsets");
    const Json *dtype = nullptr, *shape = nullptr, *offsets = nullptr;
    for (const auto &member : members(value)) {
      if (member.first == "dtype")
        dtype = &member.second;
      else if (member.first == "shape")
        shape = &member.second;
      else if (member.first == "data_offsets")
        offsets = &member.second;
      else
        return tensorError(member.second, tensor,
                           absl::StrCat("unexpected key ",
                                        quoteForMessage(member.first),
                                        " (expected dtype, shape, "
                                        "data_offsets)"));
    }
    if (!dtype || !shape || !offsets)
      return tensorError(value, tensor,
                         absl::StrCat("entry has no ", !dtype ? "dtype"
                                                       : !shape
                                                           ? "shape"
                                                           : "data_offsets"));

    if (!dtype->is_string())
      return tensorError(*dtype, tensor, "dtype must be a string");
    std::optional<DType> parsed = parseSafeTensorsDType(text(*dtype));
    if (!parsed) {
      std::vector<std::string> known;
      for (DType d : kAllDTypes)
        known.emplace_back(dtypeName(d));
      return tensorError(
          *dtype, tensor,
          absl::StrCat("unsupported dtype ", quoteForMessage(text(*dtype)),
                       " (supported: ", absl::StrJoin(known, ", "), ")"));
    }
    entry.dtype = *parsed;

    if (!shape->is_array())
      return tensorError(*shape, tensor,
                         "shape must be an array of non-negative integers");
    if (items(*shape).size() > static_cast<size_t>(kMaxRank))
      return tensorError(*shape, tensor,
                         absl::StrCat("rank ", items(*shape).size(),
                                      " exceeds the maximum of ", kMaxRank));
    for (const Json &dim : items(*shape)) {
      std::optional<int64_t> n = count(dim);
      if (!n)
        return tensorError(dim, tensor,
                           "shape must be an array of non-negative integers");
      entry.shape.push_back(*n);
    }
    absl::StatusOr<int64_t> bytes = numBytes(entry.dtype, entry.shape);
    if (!bytes.ok())
      return tensorError(*shape, tensor, toStd(bytes.status().message()));

    if (!offsets->is_array() || items(*offsets).size() != 2 ||
        !count(items(*offsets)[0]) || !count(items(*offsets)[1]))
      return tensorError(*offsets, tensor,
                         "data_offsets must be [begin, end] with "
                         "non-negative integers");
    entry.begin = items(*offsets)[0].get<int64_t>();
    entry.end = items(*offsets)[1].get<int64_t>();
    entry.offsets = offsets;
    std::string span =
        absl::StrCat("data_offsets [", entry.begin, ", ", entry.end, "]");
    if (entry.end < entry.begin)
      return tensorError(*offsets, tensor,
                         absl::StrCat(span, " end before begin"));
    if (entry.end > dataSize)
      return tensorError(*offsets, tensor,
                         absl::StrCat(span,
                                      " run past the end of the data "
                                      "section (",
                                      dataSize, " bytes; file truncated?)"));
    if (entry.end - entry.begin != static_cast<uint64_t>(*bytes))
      return tensorError(
          *offsets, tensor,
          absl::StrCat(toAbsl(dtypeName(entry.dtype)), " shape [",
                       absl::StrJoin(entry.shape, ", "), "] needs ", *bytes,
                       " bytes but ", span, " span ", entry.end - entry.begin));
    return absl::OkStatus();
  }

  /// The tensors must tile [0, dataSize): the reference rejects overlaps,
  /// holes and trailing bytes so that no bytes in the file go unaccounted
  /// for (a file that is also valid as another format could hide a payload
  /// there).
  absl::Status checkCoverage(const std::vector<Entry> &entries) {
    std::vector<const Entry *> sorted;
    for (const Entry &entry : entries)
      sorted.push_back(&entry);
    std::stable_sort(
        sorted.begin(), sorted.end(), [](const Entry *a, const Entry *b) {
          return std::pair(a->begin, a->end) < std::pair(b->begin, b->end);
        });
    uint64_t covered = 0;
    const Entry *previous = nullptr;
    for (const Entry *entry : sorted) {
      if (entry->begin < covered)
        return formatError(
            SINTER_HERE, name, kHeaderBase + document.offsetOf(*entry->offsets),
            absl::StrCat("tensor ", quoteForMessage(entry->name),
                         " (data_offsets [", entry->begin, ", ", entry->end,
                         "]) overlaps tensor ", quoteForMessage(previous->name),
                         " (data_offsets [", previous->begin, ", ",
                         previous->end, "])"));
      if (entry->begin > covered)
        return formatError(
            SINTER_HERE, name, kHeaderBase + document.offsetOf(*entry->offsets),
            absl::StrCat("data section bytes [", covered, ", ", entry->begin,
                         ") before tensor ", quoteForMessage(entry->name),
                         " belong to no tensor (holes are not allowed)"));
      covered = entry->end;
      previous = entry;
    }
    if (covered != dataSize)
      return formatError(SINTER_HERE, name, kHeaderBase + headerSize + covered,
                         absl::StrCat(dataSize - covered,
                                      " trailing bytes after the last tensor "
                                      "(the data section has ",
                                      dataSize, " bytes, tensors cover ",
                                      covered, ")"));
    return absl::OkStatus();
  }

  static constexpr uint64_t kHeaderBase = 8;
  std::string_view name;
  uint64_t headerSize;
  uint64_t dataSize;
  const JsonDocument &document;
};

} // namespace

static absl::StatusOr<SafeTensorsFile>
parseSafeTensorsSource(const ByteSource &source) {
  std::string_view name = source.name();
  uint64_t fileSize = source.size();
  if (fileSize < 8)
    return formatError(SINTER_HERE, name, 0,
                       absl::StrCat("file is too short for a safetensors "
                                    "header length (",
                                    fileSize, " bytes; need 8)"));
  unsigned char lengthBytes[8];
  SINTER_RETURN_IF_ERROR(source.read(0, 8, lengthBytes));
  uint64_t headerSize = 0;
  for (int i = 7; i >= 0; --i)
    headerSize = (headerSize << 8) | lengthBytes[i];
  if (headerSize > kSafeTensorsMaxHeaderSize)
    return formatError(SINTER_HERE, name, 0,
                       absl::StrCat("header length ", headerSize,
                                    " exceeds the limit of ",
                                    kSafeTensorsMaxHeaderSize, " bytes"));
  if (headerSize > fileSize - 8)
    return formatError(SINTER_HERE, name, 0,
                       absl::StrCat("header length ", headerSize,
                                    " runs past the end of the file (",
                                    fileSize, " bytes)"));
  std::string header(headerSize, '\0');
  SINTER_RETURN_IF_ERROR(source.read(8, headerSize, header.data()));

  uint64_t dataStart = 8 + headerSize;
  uint64_t dataSize = fileSize - dataStart;
  SafeTensorsFile file;
  std::vector<Entry> entries;
  {
    JsonLimits limits;
    limits.maxValues = kMaxHeaderValues;
    JsonError jsonError;
    absl::StatusOr<JsonDocument> document =
        JsonDocument::parse(header, limits, &jsonError);
    if (!document.ok())
      return formatError(
          SINTER_HERE, name, 8 + jsonError.offset,
          absl::StrCat("header is not valid JSON: ", jsonError.message));
    HeaderChecker checker(name, headerSize, dataSize, *document);
    SINTER_RETURN_IF_ERROR(checker.check(document->root(), file, entries));
    for (Entry &entry : entries)
      entry.offsets = nullptr; // into the tree, which goes now
  } // The tree can be large; it is freed before the tensors are allocated.

  file.tensors.reserve(entries.size());
  for (Entry &entry : entries) {
    HostTensor tensor;
    tensor.dtype = entry.dtype;
    tensor.shape = std::move(entry.shape);
    tensor.data.resize(static_cast<size_t>(entry.end - entry.begin));
    SINTER_RETURN_IF_ERROR(source.read(dataStart + entry.begin,
                                       tensor.data.size(), tensor.data.data()));
    if (tensor.dtype == DType::Bool)
      for (size_t i = 0; i < tensor.data.size(); ++i)
        if (tensor.data[i] > 1)
          return formatError(SINTER_HERE, name, dataStart + entry.begin + i,
                             absl::StrCat("tensor ",
                                          quoteForMessage(entry.name),
                                          ": bool element ", i, " is ",
                                          int(tensor.data[i]), ", not 0 or 1"));
    file.tensors.emplace_back(std::move(entry.name), std::move(tensor));
  }
  return file;
}

absl::StatusOr<SafeTensorsFile> readSafeTensors(const std::string &path) {
  SINTER_ASSIGN_OR_RETURN(std::unique_ptr<FileSource> source,
                          FileSource::open(path));
  return parseSafeTensorsSource(*source);
}

absl::StatusOr<SafeTensorsFile>
parseSafeTensors(std::string_view bytes, std::string_view nameForErrors) {
  return parseSafeTensorsSource(MemorySource(bytes, nameForErrors));
}

namespace {

/// What the header says of one tensor.
struct HeaderEntry {
  std::string_view name;
  DType dtype;
  const std::vector<int64_t> *shape;
  uint64_t bytes;
};

} // namespace

/// The 8-byte length and the padded JSON header for `entries`, in order.
/// Errors have no file name; callers add it.
static absl::StatusOr<std::string>
buildSafeTensorsHeader(const std::map<std::string, std::string> &metadataIn,
                       const std::vector<HeaderEntry> &entries) {
  // Members are appended to the objects' member lists directly: the keys
  // are distinct (checked here, or map keys), and ordered_json's operator[]
  // would search the list for each one.
  Json root = Json::object();
  Json::object_t &members = root.get_ref<Json::object_t &>();

  Json metadata = Json::object();
  Json::object_t &metadataMembers = metadata.get_ref<Json::object_t &>();
  if (!metadataIn.count("format"))
    metadataMembers.emplace_back("format", "pt");
  for (const auto &[key, value] : metadataIn) {
    if (!isValidUtf8(key) || !isValidUtf8(value))
      return sinter::InvalidArgumentError(
          SINTER_HERE, absl::StrCat("metadata entry ", quoteForMessage(key),
                                    " is not valid UTF-8"));
    metadataMembers.emplace_back(key, value);
  }
  members.emplace_back(kMetadataKey, std::move(metadata));

  std::set<std::string_view> names;
  uint64_t offset = 0;
  for (const HeaderEntry &tensor : entries) {
    std::string quoted = quoteForMessage(tensor.name);
    if (tensor.name == kMetadataKey)
      return sinter::InvalidArgumentError(
          SINTER_HERE, "a tensor cannot be named '__metadata__'");
    if (!names.insert(tensor.name).second)
      return sinter::InvalidArgumentError(
          SINTER_HERE, absl::StrCat("tensor name ", quoted, " appears twice"));
    if (!isValidUtf8(tensor.name))
      return sinter::InvalidArgumentError(
          SINTER_HERE,
          absl::StrCat("tensor name ", quoted, " is not valid UTF-8"));
    uint64_t end;
    if (__builtin_add_overflow(offset, tensor.bytes, &end))
      return sinter::InvalidArgumentError(SINTER_HERE,
                                          "total tensor size overflows");

    Json entry = Json::object();
    Json::object_t &fields = entry.get_ref<Json::object_t &>();
    fields.emplace_back("dtype", std::string(dtypeName(tensor.dtype)));
    fields.emplace_back("shape", Json(*tensor.shape));
    Json span =
        Json::array({static_cast<int64_t>(offset), static_cast<int64_t>(end)});
    fields.emplace_back("data_offsets", std::move(span));
    members.emplace_back(std::string(tensor.name), std::move(entry));
    offset = end;
  }

  std::string json = writeJson(root);
  // Trailing spaces make the data section start on an 8-byte boundary, as
  // the reference writer does; readers strip them as JSON whitespace.
  json.append((8 - json.size() % 8) % 8, ' ');
  if (json.size() > kSafeTensorsMaxHeaderSize)
    return sinter::InvalidArgumentError(
        SINTER_HERE,
        absl::StrCat("header would be ", json.size(),
                     " bytes, over the limit of ", kSafeTensorsMaxHeaderSize));
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i)
    out[i] = static_cast<char>((uint64_t(json.size()) >> (8 * i)) & 0xFF);
  out += json;
  return out;
}

/// The header for `file`, whose tensors are checked against their shapes.
static absl::StatusOr<std::string>
buildSafeTensorsHeader(const SafeTensorsFile &file) {
  std::vector<HeaderEntry> entries;
  for (const auto &[name, tensor] : file.tensors) {
    if (absl::Status s = tensor.validate(); !s.ok())
      return withMessage(SINTER_HERE, s,
                         absl::StrCat("tensor ", quoteForMessage(name), ": ",
                                      s.message()));
    entries.push_back({name, tensor.dtype, &tensor.shape, tensor.data.size()});
  }
  return buildSafeTensorsHeader(file.metadata, entries);
}

absl::StatusOr<std::string> serializeSafeTensors(const SafeTensorsFile &file) {
  absl::StatusOr<std::string> out = buildSafeTensorsHeader(file);
  if (!out.ok())
    return withMessage(
        SINTER_HERE, out.status(),
        absl::StrCat("cannot write safetensors: ", out.status().message()));
  for (const auto &entry : file.tensors)
    out->append(reinterpret_cast<const char *>(entry.second.data.data()),
                entry.second.data.size());
  return out;
}

absl::Status writeSafeTensors(const std::string &path,
                              const SafeTensorsFile &file) {
  absl::StatusOr<std::string> header = buildSafeTensorsHeader(file);
  if (!header.ok())
    return withMessage(SINTER_HERE, header.status(),
                       absl::StrCat(path, ": cannot write safetensors: ",
                                    header.status().message()));
  std::vector<std::string_view> pieces = {*header};
  for (const auto &entry : file.tensors)
    pieces.emplace_back(
        reinterpret_cast<const char *>(entry.second.data.data()),
        entry.second.data.size());
  return writeFileAtomic(path, pieces);
}

SafeTensorsSources sourcesOf(const SafeTensorsFile &file) {
  SafeTensorsSources out;
  out.metadata = file.metadata;
  for (const auto &[name, tensor] : file.tensors)
    out.tensors.push_back(
        {name, tensor.dtype, tensor.shape,
         [&tensor = tensor](uint64_t offset, uint64_t count, void *dst) {
           if (offset > tensor.data.size() ||
               count > tensor.data.size() - offset)
             return sinter::OutOfRangeError(
                 SINTER_HERE,
                 absl::StrCat("read of bytes [", offset, ", ", offset + count,
                              ") of a tensor of ", tensor.data.size()));
           std::memcpy(dst, tensor.data.data() + offset, count);
           return absl::OkStatus();
         }});
  return out;
}

absl::Status streamSafeTensors(const SafeTensorsSources &file, ByteSink &sink,
                               const PieceCheck &check) {
  std::vector<HeaderEntry> entries;
  for (const TensorSource &t : file.tensors) {
    absl::StatusOr<int64_t> bytes = numBytes(t.dtype, t.shape);
    if (!bytes.ok())
      return withMessage(SINTER_HERE, bytes.status(),
                         absl::StrCat("cannot write safetensors: tensor ",
                                      quoteForMessage(t.name), ": ",
                                      bytes.status().message()));
    entries.push_back({t.name, t.dtype, &t.shape, uint64_t(*bytes)});
  }
  absl::StatusOr<std::string> header =
      buildSafeTensorsHeader(file.metadata, entries);
  if (!header.ok())
    return withMessage(
        SINTER_HERE, header.status(),
        absl::StrCat("cannot write safetensors: ", header.status().message()));
  SINTER_RETURN_IF_ERROR(sink.write(*header));
  uint64_t largest = 0;
  for (const HeaderEntry &e : entries)
    largest = std::max(largest, e.bytes);
  std::string piece(std::min(largest, kSafeTensorsPieceBytes), '\0');
  for (size_t i = 0; i < entries.size(); ++i) {
    const TensorSource &t = file.tensors[i];
    for (uint64_t offset = 0; offset < entries[i].bytes;
         offset += kSafeTensorsPieceBytes) {
      uint64_t count =
          std::min(kSafeTensorsPieceBytes, entries[i].bytes - offset);
      SINTER_RETURN_IF_ERROR(t.read(offset, count, piece.data()));
      std::string_view bytes(piece.data(), static_cast<size_t>(count));
      if (check)
        SINTER_RETURN_IF_ERROR(check(t, offset, bytes));
      SINTER_RETURN_IF_ERROR(sink.write(bytes));
    }
  }
  return absl::OkStatus();
}

} // namespace sinter::formats
