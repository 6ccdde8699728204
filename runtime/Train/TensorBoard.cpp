//===- TensorBoard.cpp - the run's metrics as a TensorBoard event file ----===//

#include "runtime/Train/TensorBoard.h"

#include "runtime/Support/Status.h"
#include "runtime/Train/TensorBoardEvent.pb.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

#include <isa-l/crc.h>

#include <cerrno>
#include <chrono>
#include <climits>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <unistd.h>

using namespace sinter::train;

uint32_t sinter::train::maskedCrc32c(std::string_view data) {
  // ISA-L's iSCSI CRC is CRC-32C without the final inversion.
  uint32_t crc = 0xffffffffu;
  for (size_t at = 0; at < data.size();) {
    size_t n = std::min<size_t>(data.size() - at, INT_MAX);
    crc = crc32_iscsi(
        reinterpret_cast<unsigned char *>(const_cast<char *>(data.data() + at)),
        static_cast<int>(n), crc);
    at += n;
  }
  crc = ~crc;
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

std::string sinter::train::tfRecord(std::string_view data) {
  auto appendLittle = [](std::string &out, uint64_t v, int bytes) {
    for (int i = 0; i < bytes; ++i)
      out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  };
  std::string record;
  record.reserve(data.size() + 16);
  appendLittle(record, data.size(), 8);
  appendLittle(record, maskedCrc32c(record), 4);
  record.append(data);
  appendLittle(record, maskedCrc32c(data), 4);
  return record;
}

static double wallTime() {
  return std::chrono::duration<double>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

absl::StatusOr<std::unique_ptr<TensorBoardLog>>
TensorBoardLog::open(const std::string &dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec || !std::filesystem::is_directory(dir))
    return sinter::PermissionDeniedError(
        SINTER_HERE,
        absl::StrCat(dir, ": cannot create the --tensorboard directory: ",
                     ec ? ec.message() : "a file of that name exists"));
  char host[256] = "localhost";
  if (::gethostname(host, sizeof host) != 0)
    std::strcpy(host, "localhost");
  host[sizeof host - 1] = 0;
  auto seconds = static_cast<int64_t>(wallTime());
  // A new file, never another run's: O_EXCL, and the next n if taken.
  for (int n = 0; n < 1000; ++n) {
    std::string path =
        (std::filesystem::path(dir) /
         absl::StrFormat("events.out.tfevents.%d.%s.%d.%d", seconds, host,
                         static_cast<int>(::getpid()), n))
            .string();
    int fd =
        ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0 && errno == EEXIST)
      continue;
    if (fd < 0)
      return sinter::PermissionDeniedError(
          SINTER_HERE,
          absl::StrCat(path, ": cannot open for writing: ", strerror(errno)));
    FILE *file = ::fdopen(fd, "wb");
    if (!file) {
      ::close(fd);
      return sinter::PermissionDeniedError(
          SINTER_HERE, absl::StrCat(path, ": ", strerror(errno)));
    }
    std::unique_ptr<TensorBoardLog> log(new TensorBoardLog(file, path));
    tensorboard::Event version;
    version.set_file_version("brain.Event:2");
    SINTER_RETURN_IF_ERROR(log->writeEvent(version, 0));
    return log;
  }
  return sinter::PermissionDeniedError(
      SINTER_HERE,
      absl::StrCat(dir, ": no new event file name for this second and "
                        "process"));
}

TensorBoardLog::~TensorBoardLog() { std::fclose(file); }

absl::Status TensorBoardLog::writeEvent(tensorboard::Event &event,
                                        int64_t step) {
  event.set_wall_time(wallTime());
  event.set_step(step);
  std::string record = tfRecord(event.SerializeAsString());
  // One write a record, flushed: TensorBoard reads the file while it
  // grows, and a killed run keeps every record it finished.
  if (std::fwrite(record.data(), 1, record.size(), file) != record.size() ||
      std::fflush(file) != 0)
    return sinter::DataLossError(
        SINTER_HERE,
        absl::StrCat(filePath, ": write failed: ", strerror(errno)));
  return absl::OkStatus();
}

absl::Status TensorBoardLog::write(
    int64_t step, std::string_view group,
    const std::vector<std::pair<std::string, double>> &values) {
  tensorboard::Event event;
  tensorboard::Summary *summary = event.mutable_summary();
  for (const auto &[name, value] : values) {
    tensorboard::Summary::Value *v = summary->add_value();
    v->set_tag(std::string(group) + "/" + name);
    v->set_simple_value(static_cast<float>(value));
  }
  return writeEvent(event, step);
}

absl::Status TensorBoardLog::writeResume(int64_t step) {
  tensorboard::Event event;
  event.mutable_session_log()->set_status(tensorboard::SessionLog::START);
  return writeEvent(event, step + 1);
}
