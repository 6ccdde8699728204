//===- FileIO.h - byte sources, atomic writes and format errors -----------===//
//
// What the .npy and .safetensors code shares:
//
//   - ByteSource: random-access reads from a file or from memory, so one
//     parser serves both readNpy(path) and parseNpy(bytes). The size is known
//     up front, which lets parsers check every claimed length against it
//     before allocating anything; a file source then reads tensor data
//     straight into the tensor instead of slurping the whole file first.
//   - writeFileAtomic: the temp-file + fsync + rename + directory-fsync
//     sequence, so a crash mid-save never leaves a partial file under the
//     final name (a half-written checkpoint that loads is worse than none);
//     its streamed form takes the bytes from a producer, through a ByteSink.
//   - formatError: the one-line "<file>: byte offset N: why" shape of every
//     malformed-input error, made at the caller's SINTER_HERE.
//
//===----------------------------------------------------------------------===//

#ifndef SINTER_RUNTIME_FORMATS_FILEIO_H
#define SINTER_RUNTIME_FORMATS_FILEIO_H

#include "runtime/Support/Status.h"

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace sinter::formats {

/// A fixed-size run of bytes that can be read at any offset.
class ByteSource {
public:
  virtual ~ByteSource() = default;
  /// The name errors start with: the path, or the caller's label.
  virtual std::string_view name() const = 0;
  virtual uint64_t size() const = 0;
  /// Copies bytes [offset, offset + count) to `dst`. Callers check the range
  /// against size() first; an out-of-range request or an I/O error is
  /// returned as a status naming the source.
  virtual absl::Status read(uint64_t offset, uint64_t count,
                            void *dst) const = 0;
};

/// Bytes already in memory. `bytes` must outlive the source.
class MemorySource final : public ByteSource {
public:
  MemorySource(std::string_view bytes, std::string_view name)
      : bytes(bytes), label(name) {}
  std::string_view name() const override { return label; }
  uint64_t size() const override { return bytes.size(); }
  absl::Status read(uint64_t offset, uint64_t count, void *dst) const override;

private:
  std::string_view bytes;
  std::string label;
};

/// A regular file opened for reading. Its size is taken once at open; a file
/// that shrinks underneath us shows up as a read error, not a crash.
class FileSource final : public ByteSource {
public:
  /// Fails with the errno text for a missing or unreadable file, and for
  /// anything that is not a regular file (a FIFO or /dev/zero has no size to
  /// validate against, and reading one to EOF is unbounded).
  static absl::StatusOr<std::unique_ptr<FileSource>>
  open(const std::string &path);
  ~FileSource() override;

  std::string_view name() const override { return path; }
  uint64_t size() const override { return fileSize; }
  absl::Status read(uint64_t offset, uint64_t count, void *dst) const override;

private:
  FileSource(std::string path, int fd, uint64_t fileSize)
      : path(std::move(path)), fd(fd), fileSize(fileSize) {}
  std::string path;
  int fd;
  uint64_t fileSize;
};

/// Replaces `path` with the concatenation of `pieces`, atomically: the bytes
/// go to "<path>.tmp.<pid>", which is flushed and fsync'ed, renamed over
/// `path`, and then the containing directory is fsync'ed so the rename
/// itself survives a power cut. On failure the temp file is removed, the
/// old `path` (if any) is untouched, and the error names the path, the step
/// and the errno text. A failure of the final directory fsync is reported
/// too, although by then `path` already holds the new bytes.
absl::Status writeFileAtomic(const std::string &path,
                             const std::vector<std::string_view> &pieces);

/// Where a streamed write puts its bytes, in order.
class ByteSink {
public:
  virtual ~ByteSink() = default;
  virtual absl::Status write(std::string_view bytes) = 0;
};

/// writeFileAtomic for bytes made a piece at a time (a checkpoint read out
/// of device buffers): `produce` writes them to the sink it is given, and
/// its error abandons the write as a failed write would.
absl::Status writeFileAtomic(const std::string &path,
                             absl::FunctionRef<absl::Status(ByteSink &)> produce);

/// InvalidArgument "<name>: byte offset <offset>: <message>", made at
/// `where` (SINTER_HERE).
absl::Status formatError(SourceLocation where, std::string_view name,
                         uint64_t offset, std::string_view message);
/// InvalidArgument "<name>: <message>", for errors with no single offset.
absl::Status formatError(SourceLocation where, std::string_view name,
                         std::string_view message);

/// `text` in single quotes for a message, with control bytes (and, unless
/// `text` is valid UTF-8, all non-ASCII bytes) written as \xNN so that the
/// message stays one printable line, and clipped after 80 bytes.
std::string quoteForMessage(std::string_view text);

} // namespace sinter::formats

#endif // SINTER_RUNTIME_FORMATS_FILEIO_H
