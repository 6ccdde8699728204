//===- FileIO.cpp - byte sources, atomic writes and format errors ---------===//
//
// POSIX file descriptors rather than iostreams: pread gives random access
// without a shared file position, and write/fsync/rename/fsync(dir) is the
// exact sequence crash-safety needs (stdio buffering would only add an
// fflush step in between).
//
//===----------------------------------------------------------------------===//

#include "runtime/Formats/FileIO.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "runtime/Formats/AbslCompat.h"
#include "runtime/Formats/Utf8.h"
#include "runtime/Support/Status.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace sinter::formats {

/// Linux transfers at most 0x7ffff000 bytes per read/write call; asking for
/// less keeps each call's count well inside ssize_t on every platform.
static constexpr uint64_t kMaxIoChunk = uint64_t(1) << 30;

static absl::Status errnoError(SourceLocation where, int error,
                               std::string_view path, std::string_view what) {
  return makeError(
      where, absl::ErrnoToStatusCode(error),
      absl::StrCat(toAbsl(path), ": ", toAbsl(what), ": ", strerror(error)));
}

absl::Status formatError(SourceLocation where, std::string_view name,
                         uint64_t offset, std::string_view message) {
  return sinter::InvalidArgumentError(
      where, absl::StrCat(toAbsl(name), ": byte offset ", offset, ": ",
                          toAbsl(message)));
}

absl::Status formatError(SourceLocation where, std::string_view name,
                         std::string_view message) {
  return sinter::InvalidArgumentError(
      where, absl::StrCat(toAbsl(name), ": ", toAbsl(message)));
}

std::string quoteForMessage(std::string_view text) {
  constexpr size_t kMaxShown = 80;
  bool keepUtf8 = isValidUtf8(text);
  std::string out = "'";
  for (char c : text.substr(0, kMaxShown)) {
    unsigned char u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7F || (u >= 0x80 && !keepUtf8))
      out += absl::StrFormat("\\x%02x", u);
    else
      out += c;
  }
  out += "'";
  if (text.size() > kMaxShown)
    absl::StrAppend(&out, "... (", text.size(), " bytes)");
  return out;
}

//===----------------------------------------------------------------------===//
// Sources
//===----------------------------------------------------------------------===//

absl::Status MemorySource::read(uint64_t offset, uint64_t count,
                                void *dst) const {
  if (offset > bytes.size() || count > bytes.size() - offset)
    return formatError(SINTER_HERE, label, offset,
                       absl::StrCat("read of ", count,
                                    " bytes runs past the end (", bytes.size(),
                                    " bytes)"));
  if (count)
    std::memcpy(dst, bytes.data() + offset, count);
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<FileSource>>
FileSource::open(const std::string &path) {
  int fd;
  do {
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0)
    return errnoError(SINTER_HERE, errno, path, "cannot open for reading");
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    int error = errno;
    ::close(fd);
    return errnoError(SINTER_HERE, error, path, "cannot stat");
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return sinter::InvalidArgumentError(
        SINTER_HERE, absl::StrCat(path, ": not a regular file"));
  }
  return std::unique_ptr<FileSource>(
      new FileSource(path, fd, static_cast<uint64_t>(st.st_size)));
}

FileSource::~FileSource() { ::close(fd); }

absl::Status FileSource::read(uint64_t offset, uint64_t count,
                              void *dst) const {
  if (offset > fileSize || count > fileSize - offset)
    return formatError(SINTER_HERE, path, offset,
                       absl::StrCat("read of ", count,
                                    " bytes runs past the end (", fileSize,
                                    " bytes)"));
  auto *out = static_cast<char *>(dst);
  while (count > 0) {
    size_t chunk = static_cast<size_t>(std::min(count, kMaxIoChunk));
    ssize_t got = ::pread(fd, out, chunk, static_cast<off_t>(offset));
    if (got < 0) {
      if (errno == EINTR)
        continue;
      return errnoError(SINTER_HERE, errno, path,
                        absl::StrCat("read at byte ", offset));
    }
    if (got == 0)
      return formatError(SINTER_HERE, path, offset,
                         "unexpected end of file (did it shrink while being "
                         "read?)");
    out += got;
    offset += static_cast<uint64_t>(got);
    count -= static_cast<uint64_t>(got);
  }
  return absl::OkStatus();
}

//===----------------------------------------------------------------------===//
// Atomic write
//===----------------------------------------------------------------------===//

static absl::Status writeAll(int fd, std::string_view bytes,
                             const std::string &path,
                             const std::string &tempPath) {
  while (!bytes.empty()) {
    size_t chunk =
        static_cast<size_t>(std::min<uint64_t>(bytes.size(), kMaxIoChunk));
    ssize_t wrote = ::write(fd, bytes.data(), chunk);
    if (wrote < 0) {
      if (errno == EINTR)
        continue;
      return errnoError(SINTER_HERE, errno, path,
                        absl::StrCat("write to ", tempPath));
    }
    bytes.remove_prefix(static_cast<size_t>(wrote));
  }
  return absl::OkStatus();
}

/// The directory whose entry `path` names: what must be fsync'ed to make a
/// rename of `path` durable.
static std::string parentDirectory(const std::string &path) {
  size_t slash = path.find_last_of('/');
  if (slash == std::string::npos)
    return ".";
  if (slash == 0)
    return "/";
  return path.substr(0, slash);
}

namespace {

/// The temp file's descriptor as a sink.
class FileSink final : public ByteSink {
public:
  FileSink(int fd, const std::string &path, const std::string &tempPath)
      : fd(fd), path(path), tempPath(tempPath) {}
  absl::Status write(std::string_view bytes) override {
    return writeAll(fd, bytes, path, tempPath);
  }

private:
  int fd;
  const std::string &path, &tempPath;
};

} // namespace

absl::Status writeFileAtomic(const std::string &path,
                             const std::vector<std::string_view> &pieces) {
  return writeFileAtomic(path, [&](ByteSink &sink) {
    for (std::string_view piece : pieces)
      SINTER_RETURN_IF_ERROR(sink.write(piece));
    return absl::OkStatus();
  });
}

absl::Status
writeFileAtomic(const std::string &path,
                absl::FunctionRef<absl::Status(ByteSink &)> produce) {
  std::string tempPath = absl::StrCat(path, ".tmp.", ::getpid());
  int fd;
  do {
    fd = ::open(tempPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
                0666);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0)
    return errnoError(SINTER_HERE, errno, path,
                      absl::StrCat("cannot create temporary file ", tempPath));

  // Everything up to the rename may fail; each failure closes and removes
  // the temp file so no debris with a near-final name is left behind.
  auto abandon = [&](absl::Status status) {
    if (fd >= 0)
      ::close(fd);
    ::unlink(tempPath.c_str());
    return status;
  };
  FileSink sink(fd, path, tempPath);
  if (absl::Status status = produce(sink); !status.ok())
    return abandon(addFrame(SINTER_HERE, std::move(status)));
  if (::fsync(fd) != 0)
    return abandon(errnoError(SINTER_HERE, errno, path,
                              absl::StrCat("fsync of ", tempPath)));
  // close() can report a deferred write error (NFS does this), so it is
  // checked like any other step.
  int closed = ::close(fd);
  fd = -1;
  if (closed != 0)
    return abandon(errnoError(SINTER_HERE, errno, path,
                              absl::StrCat("close of ", tempPath)));
  if (::rename(tempPath.c_str(), path.c_str()) != 0)
    return abandon(errnoError(SINTER_HERE, errno, path,
                              absl::StrCat("rename from ", tempPath)));

  std::string directory = parentDirectory(path);
  int dirFd = ::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dirFd < 0)
    return errnoError(SINTER_HERE, errno, path,
                      absl::StrCat("cannot open directory ", directory,
                                   " to fsync the rename"));
  int synced = ::fsync(dirFd);
  int syncError = errno;
  ::close(dirFd);
  if (synced != 0)
    return errnoError(SINTER_HERE, syncError, path,
                      absl::StrCat("fsync of directory ", directory));
  return absl::OkStatus();
}

} // namespace sinter::formats
