//===- TokenFiles.cpp - llm.c shards and nanoGPT raw token files ----------===//

#include "runtime/Data/TokenFiles.h"

#include "runtime/Formats/AbslCompat.h"
#include "runtime/Support/Status.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <utility>

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

namespace sinter::data {

namespace {

int32_t loadInt32(const uint8_t *bytes) {
  uint32_t value = static_cast<uint32_t>(bytes[0]) |
                   static_cast<uint32_t>(bytes[1]) << 8 |
                   static_cast<uint32_t>(bytes[2]) << 16 |
                   static_cast<uint32_t>(bytes[3]) << 24;
  int32_t out;
  std::memcpy(&out, &value, 4);
  return out;
}

void storeInt32(std::string &out, size_t at, int32_t value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  for (int i = 0; i < 4; ++i)
    out[at + static_cast<size_t>(i)] = static_cast<char>(bits >> (8 * i));
}

/// Reads `count` little-endian uint16 tokens starting at byte `offset`.
absl::Status readTokens(const formats::ByteSource &source, uint64_t offset,
                        uint64_t count, std::vector<uint16_t> &tokens) {
  tokens.resize(count);
  if (count == 0)
    return absl::OkStatus();
  SINTER_RETURN_IF_ERROR(source.read(offset, count * 2, tokens.data()));
  // The files are little-endian; so is every host Sinter runs on, but keep
  // the byte order explicit rather than assumed.
  const uint16_t probe = 1;
  uint8_t first;
  std::memcpy(&first, &probe, 1);
  if (first != 1)
    for (uint16_t &token : tokens)
      token = static_cast<uint16_t>((token >> 8) | (token << 8));
  return absl::OkStatus();
}

/// A .bin without llm.c's GPT-2 magic is read as raw tokens, unless it is
/// recognisably some other shard: llm.c's LLaMA-3 shards (uint32 tokens),
/// or a file whose first 1024 bytes have the shape of an llm.c header (the
/// token count at [2] matches the file size, [3..255] are zero) with a
/// wrong magic. Raw token data that happens to look like that is
/// vanishingly unlikely; a corrupted or foreign header is not.
absl::Status checkNotAForeignShard(const formats::ByteSource &source) {
  uint64_t size = source.size();
  if (size < static_cast<uint64_t>(kLlmcHeaderBytes))
    return absl::OkStatus();
  uint8_t header[kLlmcHeaderBytes];
  SINTER_RETURN_IF_ERROR(source.read(0, kLlmcHeaderBytes, header));
  int32_t magic = loadInt32(header);
  if (magic == kLlmcLlama3Magic)
    return formats::formatError(
        SINTER_HERE, source.name(), 0,
        absl::StrCat("magic ", magic,
                     " is llm.c's LLaMA-3 shard (uint32 tokens), which is "
                     "not supported; expected GPT-2's ",
                     kLlmcMagic));
  int32_t count = loadInt32(header + 8);
  if (count < 0 || size != static_cast<uint64_t>(kLlmcHeaderBytes) +
                               2 * static_cast<uint64_t>(count))
    return absl::OkStatus();
  for (int64_t i = 3; i < kLlmcHeaderInts; ++i)
    if (loadInt32(header + 4 * i) != 0)
      return absl::OkStatus();
  return formats::formatError(
      SINTER_HERE, source.name(), 0,
      absl::StrCat("bad magic ", magic,
                   ": the file has an llm.c shard "
                   "header (its token count matches the file size), but "
                   "llm.c's magic is ",
                   kLlmcMagic));
}

std::string_view baseName(std::string_view path) {
  size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

} // namespace

absl::StatusOr<TokenFileLayout>
readTokenFileLayout(const formats::ByteSource &source) {
  std::string_view name = source.name();
  uint64_t size = source.size();
  TokenFileLayout layout;
  uint8_t first[4];
  bool llmc = false;
  if (size >= 4) {
    SINTER_RETURN_IF_ERROR(source.read(0, 4, first));
    llmc = loadInt32(first) == kLlmcMagic;
  }
  if (!llmc) {
    SINTER_RETURN_IF_ERROR(checkNotAForeignShard(source));
    if (size % 2 != 0)
      return formats::formatError(
          SINTER_HERE, name, size - 1,
          absl::StrCat("a raw token file holds uint16 tokens, but its size (",
                       size, " bytes) is odd"));
    layout.kind = TokenFileKind::Raw;
    layout.dataOffset = 0;
    layout.numTokens = static_cast<int64_t>(size / 2);
    return layout;
  }

  if (size < static_cast<uint64_t>(kLlmcHeaderBytes))
    return formats::formatError(
        SINTER_HERE, name, size,
        absl::StrCat("llm.c shard (magic ", kLlmcMagic,
                     ") is truncated: the header needs ", kLlmcHeaderBytes,
                     " bytes, the file has ", size));
  uint8_t header[kLlmcHeaderBytes];
  SINTER_RETURN_IF_ERROR(source.read(0, kLlmcHeaderBytes, header));
  int32_t version = loadInt32(header + 4);
  if (version != kLlmcVersion)
    return formats::formatError(SINTER_HERE, name, 4,
                                absl::StrCat("llm.c shard version ", version,
                                             " is not supported (expected ",
                                             kLlmcVersion, ")"));
  int32_t count = loadInt32(header + 8);
  if (count < 0)
    return formats::formatError(
        SINTER_HERE, name, 8,
        absl::StrCat("llm.c shard claims ", count, " tokens"));
  uint64_t expected = static_cast<uint64_t>(kLlmcHeaderBytes) +
                      2 * static_cast<uint64_t>(count);
  if (size != expected)
    return formats::formatError(
        SINTER_HERE, name, 8,
        absl::StrCat("llm.c shard header says ", count,
                     " tokens, so the file should have 1024 + 2 * ", count,
                     " = ", expected, " bytes, but it has ", size));
  layout.kind = TokenFileKind::Llmc;
  layout.dataOffset = kLlmcHeaderBytes;
  layout.numTokens = count;
  return layout;
}

absl::StatusOr<TokenFile> readTokenFile(const formats::ByteSource &source) {
  SINTER_ASSIGN_OR_RETURN(TokenFileLayout layout, readTokenFileLayout(source));
  TokenFile file;
  file.kind = layout.kind;
  file.dataOffset = layout.dataOffset;
  SINTER_RETURN_IF_ERROR(
      readTokens(source, static_cast<uint64_t>(layout.dataOffset),
                 static_cast<uint64_t>(layout.numTokens), file.tokens));
  return file;
}

absl::StatusOr<TokenFile> readTokenFile(const std::string &path) {
  SINTER_ASSIGN_OR_RETURN(std::unique_ptr<formats::FileSource> source,
                          formats::FileSource::open(path));
  return readTokenFile(*source);
}

//===----------------------------------------------------------------------===//
// MappedTokenFile
//===----------------------------------------------------------------------===//

absl::StatusOr<MappedTokenFile> MappedTokenFile::open(const std::string &path) {
  // The header is checked through pread (FileSource), so a malformed file
  // is refused before anything is mapped, with readTokenFile's messages.
  SINTER_ASSIGN_OR_RETURN(std::unique_ptr<formats::FileSource> source,
                          formats::FileSource::open(path));
  SINTER_ASSIGN_OR_RETURN(TokenFileLayout layout, readTokenFileLayout(*source));
  if (layout.numTokens == 0)
    return MappedTokenFile(path, layout, nullptr, 0);
  // The size FileSource saw, which the layout was checked against.
  auto bytes = static_cast<size_t>(source->size());
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return formats::formatError(
        SINTER_HERE, path,
        absl::StrCat("cannot open the file: ", std::strerror(errno)));
  void *base = ::mmap(nullptr, bytes, PROT_READ, MAP_PRIVATE, fd, 0);
  int mapErrno = errno;
  ::close(fd); // the mapping keeps the file
  if (base == MAP_FAILED)
    return formats::formatError(
        SINTER_HERE, path,
        absl::StrCat("cannot map the file: ", std::strerror(mapErrno)));
  return MappedTokenFile(path, layout, base, bytes);
}

MappedTokenFile::MappedTokenFile(MappedTokenFile &&other) noexcept
    : filePath(std::move(other.filePath)), fileLayout(other.fileLayout),
      base(std::exchange(other.base, nullptr)),
      mappedBytes(std::exchange(other.mappedBytes, 0)) {}

MappedTokenFile &MappedTokenFile::operator=(MappedTokenFile &&other) noexcept {
  if (this != &other) {
    if (base)
      ::munmap(base, mappedBytes);
    filePath = std::move(other.filePath);
    fileLayout = other.fileLayout;
    base = std::exchange(other.base, nullptr);
    mappedBytes = std::exchange(other.mappedBytes, 0);
  }
  return *this;
}

MappedTokenFile::~MappedTokenFile() {
  if (base)
    ::munmap(base, mappedBytes);
}

void MappedTokenFile::copyTokens(int64_t begin, int64_t count,
                                 uint16_t *dst) const {
  const auto *bytes =
      static_cast<const uint8_t *>(base) + fileLayout.dataOffset + 2 * begin;
  // Byte by byte: explicit about the order, and the compiler turns it into
  // plain loads on little-endian hosts.
  for (int64_t i = 0; i < count; ++i)
    dst[i] = static_cast<uint16_t>(bytes[2 * i] | bytes[2 * i + 1] << 8);
}

absl::StatusOr<std::string>
serializeLlmcShard(const std::vector<uint16_t> &tokens) {
  if (tokens.size() > static_cast<size_t>(std::numeric_limits<int32_t>::max()))
    return sinter::InvalidArgumentError(
        SINTER_HERE,
        absl::StrCat("an llm.c shard holds at most 2^31 - 1 tokens, not ",
                     tokens.size()));
  std::string out(static_cast<size_t>(kLlmcHeaderBytes) + 2 * tokens.size(),
                  '\0');
  storeInt32(out, 0, kLlmcMagic);
  storeInt32(out, 4, kLlmcVersion);
  storeInt32(out, 8, static_cast<int32_t>(tokens.size()));
  size_t at = static_cast<size_t>(kLlmcHeaderBytes);
  for (uint16_t token : tokens) {
    out[at++] = static_cast<char>(token & 0xFF);
    out[at++] = static_cast<char>(token >> 8);
  }
  return out;
}

absl::Status writeLlmcShard(const std::string &path,
                            const std::vector<uint16_t> &tokens) {
  absl::StatusOr<std::string> bytes = serializeLlmcShard(tokens);
  if (!bytes.ok())
    return sinter::withMessage(
        SINTER_HERE, bytes.status(),
        absl::StrCat(path, ": ", bytes.status().message()));
  return formats::writeFileAtomic(path, {*bytes});
}

absl::StatusOr<TokenFileSets>
classifyTokenFiles(std::string_view label, std::vector<std::string> paths) {
  std::sort(paths.begin(), paths.end());
  TokenFileSets sets;
  std::vector<std::string> other;
  for (std::string &path : paths) {
    std::string_view base = baseName(path);
    if (base.find("train") != std::string_view::npos)
      sets.train.push_back(std::move(path));
    else if (base.find("val") != std::string_view::npos)
      sets.val.push_back(std::move(path));
    else
      other.push_back(std::move(path));
  }
  if (sets.train.empty() && sets.val.empty()) {
    sets.train = std::move(other);
    return sets;
  }
  if (!other.empty())
    return formats::formatError(
        SINTER_HERE, label,
        absl::StrCat("'", other.front(),
                     "' is neither a train nor a val file (when some "
                     ".bin names contain 'train' or 'val', all must)"));
  if (sets.train.empty())
    return formats::formatError(
        SINTER_HERE, label,
        absl::StrCat("has val files (", absl::StrJoin(sets.val, ", "),
                     ") but no train file (a name containing "
                     "'train')"));
  return sets;
}

} // namespace sinter::data
