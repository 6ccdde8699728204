//===- TokenFiles.h - llm.c shards and nanoGPT raw token files ------------===//
//
// Two on-disk forms of a token stream, both little-endian uint16 tokens:
//
//   llm.c shard (karpathy/llm.c, dev/data/data_common.py write_datafile):
//     header   256 x int32: [0] magic 20240520, [1] version 1,
//              [2] number of tokens N, the rest 0
//     tokens   N x uint16
//   The file size must be exactly 1024 + 2N. llm.c's LLaMA-3 shards (magic
//   20240801, uint32 tokens) are not supported.
//
//   nanoGPT raw .bin (data/*/prepare.py: np.array(ids, dtype=np.uint16)
//   .tofile()): the tokens and nothing else; the size must be even.
//
// A file whose first int32 is the llm.c magic is read as a shard (and must
// then be a valid one); any other file is raw, except that a LLaMA-3 shard
// and a file with an llm.c-shaped header but a wrong magic are refused as
// such rather than read as garbage tokens.
//
// The loader memory-maps token files (MappedTokenFile): open validates the
// header and size as readTokenFile does and maps the file read-only, so that
// no token is read until a window is copied out. readTokenFile (whole files
// into a vector) is for tools and tests.
//
// Also here: how a list of .bin files (a directory's, or a glob's matches)
// splits into train and val sets by name, as llm.c and nanoGPT name them.
//
//===----------------------------------------------------------------------===//

#ifndef SINTER_RUNTIME_DATA_TOKENFILES_H
#define SINTER_RUNTIME_DATA_TOKENFILES_H

#include "runtime/Formats/FileIO.h"

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace sinter::data {

inline constexpr int32_t kLlmcMagic = 20240520;
inline constexpr int32_t kLlmcVersion = 1;
/// llm.c's LLaMA-3 shards (version 7, uint32 tokens): recognised, refused.
inline constexpr int32_t kLlmcLlama3Magic = 20240801;
inline constexpr int64_t kLlmcHeaderInts = 256;
inline constexpr int64_t kLlmcHeaderBytes = kLlmcHeaderInts * 4;

enum class TokenFileKind { Llmc, Raw };

struct TokenFile {
  TokenFileKind kind = TokenFileKind::Raw;
  std::vector<uint16_t> tokens;
  /// Byte offset of tokens[0] in the file (1024 for llm.c, 0 for raw).
  int64_t dataOffset = 0;
};

/// What a token file's header (or its size, for raw files) says, checked:
/// the form, where the tokens start and how many there are.
struct TokenFileLayout {
  TokenFileKind kind = TokenFileKind::Raw;
  /// Byte offset of token 0 (1024 for llm.c, 0 for raw).
  int64_t dataOffset = 0;
  int64_t numTokens = 0;
};

/// Checks `source`'s header against its size, reading at most the first
/// 1024 bytes. Errors are readTokenFile's.
absl::StatusOr<TokenFileLayout>
readTokenFileLayout(const formats::ByteSource &source);

/// A token file mapped read-only (mmap, MAP_PRIVATE) after its layout was
/// checked. Tokens are read through the mapping, so they cost memory only
/// once touched (and then page cache, shared with every process mapping
/// the file). A file truncated while mapped faults (SIGBUS) on access
/// rather than returning an error; token files are not expected to change
/// under a run.
class MappedTokenFile {
public:
  /// Errors: FileSource::open's (missing, unreadable, not a regular file),
  /// readTokenFile's for the contents, or the mmap errno text.
  static absl::StatusOr<MappedTokenFile> open(const std::string &path);
  MappedTokenFile(MappedTokenFile &&other) noexcept;
  MappedTokenFile &operator=(MappedTokenFile &&other) noexcept;
  MappedTokenFile(const MappedTokenFile &) = delete;
  MappedTokenFile &operator=(const MappedTokenFile &) = delete;
  ~MappedTokenFile();

  const std::string &path() const { return filePath; }
  const TokenFileLayout &layout() const { return fileLayout; }
  int64_t numTokens() const { return fileLayout.numTokens; }
  /// Copies tokens [begin, begin + count) (within numTokens()) to `dst`,
  /// decoding little-endian.
  void copyTokens(int64_t begin, int64_t count, uint16_t *dst) const;

private:
  MappedTokenFile(std::string path, TokenFileLayout layout, void *base,
                  size_t bytes)
      : filePath(std::move(path)), fileLayout(layout), base(base),
        mappedBytes(bytes) {}
  std::string filePath;
  TokenFileLayout fileLayout;
  void *base = nullptr; // null for a file without tokens
  size_t mappedBytes = 0;
};

/// Reads a whole token file. Errors are one line "<file>: byte offset N:
/// why" (bad version, a size that disagrees with the header, ...).
absl::StatusOr<TokenFile> readTokenFile(const formats::ByteSource &source);
absl::StatusOr<TokenFile> readTokenFile(const std::string &path);

/// The llm.c shard holding `tokens` (at most INT32_MAX of them).
absl::StatusOr<std::string>
serializeLlmcShard(const std::vector<uint16_t> &tokens);
/// Writes it to `path` atomically (formats::writeFileAtomic).
absl::Status writeLlmcShard(const std::string &path,
                            const std::vector<uint16_t> &tokens);

/// .bin files split by their base names: "train" in the name makes a train
/// file, else "val" a val file. When no name says either, every file is
/// train. Each list is sorted. A mix of named and unnamed files, or val
/// files without train files, is an error starting with `label`.
struct TokenFileSets {
  std::vector<std::string> train, val;
};
absl::StatusOr<TokenFileSets>
classifyTokenFiles(std::string_view label, std::vector<std::string> paths);

} // namespace sinter::data

#endif // SINTER_RUNTIME_DATA_TOKENFILES_H
