//===- TensorBoard.h - the run's metrics as a TensorBoard event file ------===//
//
// `--tensorboard=DIR`: the scalars MetricsLog writes as JSONL, also in the
// form `tensorboard --logdir DIR` reads (PyTorch's SummaryWriter and
// MindSpore's SummaryCollector write the same kind of file). One file per
// run, records in TFRecord framing: the length, its masked CRC-32C, one
// Event message (TensorBoardEvent.proto), the message's masked CRC-32C.
// The CRC is Intel ISA-L's (Debian's libisal-dev) and the messages are
// protobuf's; only the framing (four fields) is written here, as no
// Debian package writes TFRecords from C++.
//
//===----------------------------------------------------------------------===//

#ifndef SINTER_RUNTIME_TRAIN_TENSORBOARD_H
#define SINTER_RUNTIME_TRAIN_TENSORBOARD_H

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sinter::tensorboard {
class Event;
} // namespace sinter::tensorboard

namespace sinter::train {

/// CRC-32C (Castagnoli) of `data`, masked as TFRecord stores it: rotated
/// right by 15 bits plus 0xa282ead8, so that a CRC of bytes that hold CRCs
/// stays informative.
uint32_t maskedCrc32c(std::string_view data);

/// One TFRecord: the length, its masked CRC, `data`, its masked CRC.
std::string tfRecord(std::string_view data);

class TensorBoardLog {
public:
  /// Creates `dir` if needed and a new file in it,
  /// events.out.tfevents.<Unix seconds>.<host>.<pid>.<n> (n makes the name
  /// new), whose first record is the format's version stamp.
  static absl::StatusOr<std::unique_ptr<TensorBoardLog>>
  open(const std::string &dir);
  ~TensorBoardLog();

  /// One record at `step`: each (name, value) as the scalar "group/name".
  /// Non-finite values are written as they are.
  absl::Status write(int64_t step, std::string_view group,
                     const std::vector<std::pair<std::string, double>> &values);
  /// The run continues after `step` steps done: a SessionLog START at step
  /// + 1, for which TensorBoard drops the records of that step and later
  /// ones read before it (logged by a run stopped after its last
  /// checkpoint), as it does for PyTorch's SummaryWriter(purge_step=).
  absl::Status writeResume(int64_t step);

  const std::string &path() const { return filePath; }

private:
  TensorBoardLog(FILE *file, std::string path)
      : file(file), filePath(std::move(path)) {}
  absl::Status writeEvent(tensorboard::Event &event, int64_t step);
  FILE *file;
  std::string filePath;
};

} // namespace sinter::train

#endif // SINTER_RUNTIME_TRAIN_TENSORBOARD_H
