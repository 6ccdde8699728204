//===- Checkpoint.cpp - checkpoints that are complete or absent -----------===//
//
// The order of operations in saveCheckpoint is the crash-safety argument of
// Checkpoint.h; each step says which failure it rules out.
//
//===----------------------------------------------------------------------===//

#include "runtime/Train/Checkpoint.h"

#include "abi/Abi.h"

#include "runtime/Formats/AbslCompat.h"
#include "runtime/Formats/FileIO.h"
#include "runtime/Formats/JsonDocument.h"
#include "runtime/Formats/Utf8.h"
#include "runtime/Support/Status.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <optional>
#include <unistd.h>

using namespace sinter;
using namespace sinter::train;
using formats::Json;
using formats::toAbsl;
using formats::toStd;
namespace fs = std::filesystem;

namespace {

constexpr const char *kModelFile = "model.safetensors";
constexpr const char *kOptimizerFile = "optimizer.safetensors";
constexpr const char *kStateFile = "trainer.json";
constexpr const char *kMarkerFile = "COMPLETE";
constexpr const char *kLatestFile = "latest";

absl::Status errnoStatus(SourceLocation where, std::string_view path,
                         std::string_view what) {
  int error = errno;
  return makeError(
      where, absl::ErrnoToStatusCode(error),
      absl::StrCat(toAbsl(path), ": ", toAbsl(what), ": ", strerror(error)));
}

absl::Status fsyncDirectory(const std::string &path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return errnoStatus(SINTER_HERE, path,
                       "cannot open the directory to sync it");
  int rc = ::fsync(fd);
  ::close(fd);
  if (rc != 0)
    return errnoStatus(SINTER_HERE, path, "fsync of the directory failed");
  return absl::OkStatus();
}

absl::StatusOr<std::string> readWholeFile(const std::string &path) {
  SINTER_ASSIGN_OR_RETURN(std::unique_ptr<formats::FileSource> source,
                          formats::FileSource::open(path));
  std::string bytes(source->size(), '\0');
  SINTER_RETURN_IF_ERROR(source->read(0, bytes.size(), bytes.data()));
  return bytes;
}

std::string hashText(uint64_t hash) { return absl::StrFormat("%016x", hash); }


Json stateToJson(const TrainerState &s) {
  Json state = Json::object();
  state["step"] = s.step;
  // The seed is a uint64; as text it survives JSON's int64 range.
  state["seed"] = absl::StrCat(s.seed);
  state["data"] = s.data;
  state["data_state"] = s.dataState;
  state["program"] = s.program;
  if (s.lr)
    state["lr"] = *s.lr;
  if (s.loss)
    state["loss"] = *s.loss;
  // Absent means one rank (what every older checkpoint was).
  if (s.worldSize != 1)
    state["world_size"] = s.worldSize;
  if (s.gradAccumulationSteps != 1)
    state["grad_accumulation_steps"] = s.gradAccumulationSteps;
  if (s.lossScale) {
    Json scale = Json::object();
    scale["scale"] = s.lossScale->scale;
    scale["growth_tracker"] = s.lossScale->growthTracker;
    scale["skipped_steps"] = s.lossScale->skippedSteps;
    scale["consecutive_overflows"] = s.lossScale->consecutiveOverflows;
    state["loss_scale"] = scale;
  }
  return state;
}

/// The kinds of member trainer.json holds.
enum class Kind { Integer, String, Number };

absl::StatusOr<TrainerState> stateFromJson(std::string_view text,
                                           const std::string &path) {
  absl::StatusOr<formats::JsonDocument> document =
      formats::JsonDocument::parse(text);
  if (!document.ok())
    return formats::formatError(SINTER_HERE, path,
                                toStd(document.status().message()));
  const Json &json = document->root();
  if (!json.is_object())
    return formats::formatError(SINTER_HERE, path, "not a JSON object");
  auto field = [&](const char *name, Kind kind,
                   bool required = true) -> absl::StatusOr<const Json *> {
    const Json *v = formats::findMember(json, name);
    if (!v)
      return required ? formats::formatError(
                            SINTER_HERE, path,
                            absl::StrCat("missing member '", name, "'"))
                      : absl::StatusOr<const Json *>(nullptr);
    bool ok = kind == Kind::Integer  ? v->is_number_integer()
              : kind == Kind::String ? v->is_string()
                                     : v->is_number();
    if (!ok)
      return formats::formatError(
          SINTER_HERE, path, document->offsetOf(*v),
          absl::StrCat("'", name, "' has the wrong type"));
    return v;
  };
  auto string = [](const Json *v) { return v->get_ref<const std::string &>(); };
  TrainerState s;
  SINTER_ASSIGN_OR_RETURN(const Json *step, field("step", Kind::Integer));
  SINTER_ASSIGN_OR_RETURN(const Json *seed, field("seed", Kind::String));
  SINTER_ASSIGN_OR_RETURN(const Json *data, field("data", Kind::String));
  SINTER_ASSIGN_OR_RETURN(const Json *dataState,
                          field("data_state", Kind::String));
  SINTER_ASSIGN_OR_RETURN(const Json *program, field("program", Kind::String));
  SINTER_ASSIGN_OR_RETURN(const Json *lr, field("lr", Kind::Number, false));
  SINTER_ASSIGN_OR_RETURN(const Json *loss, field("loss", Kind::Number, false));
  SINTER_ASSIGN_OR_RETURN(const Json *worldSize,
                          field("world_size", Kind::Integer, false));
  SINTER_ASSIGN_OR_RETURN(
      const Json *accumulation,
      field("grad_accumulation_steps", Kind::Integer, false));
  s.step = step->get<int64_t>();
  if (s.step < 0)
    return formats::formatError(SINTER_HERE, path, "'step' is negative");
  if (!absl::SimpleAtoi(string(seed), &s.seed))
    return formats::formatError(SINTER_HERE, path,
                                "'seed' is not an unsigned integer");
  s.data = string(data);
  s.dataState = string(dataState);
  s.program = string(program);
  if (lr) {
    s.lr = lr->get<double>();
    if (!(*s.lr >= 0 && *s.lr <= sinter::abi::kMaxHyperparameter))
      return formats::formatError(
          SINTER_HERE, path, document->offsetOf(*lr),
          absl::StrFormat("'lr' is %g, not a learning rate in [0, %g]", *s.lr,
                          sinter::abi::kMaxHyperparameter));
  }
  if (loss)
    s.loss = loss->get<double>();
  if (worldSize) {
    s.worldSize = worldSize->get<int64_t>();
    if (s.worldSize < 1)
      return formats::formatError(SINTER_HERE, path,
                                  "'world_size' must be at least 1");
  }
  if (accumulation) {
    s.gradAccumulationSteps = accumulation->get<int64_t>();
    if (s.gradAccumulationSteps < 1)
      return formats::formatError(
          SINTER_HERE, path, "'grad_accumulation_steps' must be at least 1");
  }
  if (const Json *scale = formats::findMember(json, "loss_scale")) {
    auto member = [&](const char *name, bool integer) -> const Json * {
      const Json *v =
          scale->is_object() ? formats::findMember(*scale, name) : nullptr;
      if (!v || !(integer ? v->is_number_integer() : v->is_number()) ||
          (integer ? v->get<int64_t>() < 0 : !(v->get<double>() > 0)))
        return nullptr;
      return v;
    };
    const Json *value = member("scale", false),
               *tracker = member("growth_tracker", true),
               *skipped = member("skipped_steps", true),
               *consecutive = member("consecutive_overflows", true);
    if (!value || !tracker || !skipped || !consecutive)
      return formats::formatError(
          SINTER_HERE, path, document->offsetOf(*scale),
          "'loss_scale' needs a positive 'scale' and non-negative integers "
          "'growth_tracker', 'skipped_steps', 'consecutive_overflows'");
    s.lossScale = LossScaleState{value->get<double>(), tracker->get<int64_t>(),
                                 skipped->get<int64_t>(),
                                 consecutive->get<int64_t>()};
  }
  return s;
}

/// Checks one file against its COMPLETE entry: its size, and its hash,
/// read a piece at a time (a tensor file is then parsed from the disk, so
/// loading holds one copy of the state, not two).
absl::Status checkFile(const std::string &dir, const Json &marker,
                       const char *name) {
  std::string path = (fs::path(dir) / name).string();
  std::string markerPath = (fs::path(dir) / kMarkerFile).string();
  const Json *files = formats::findMember(marker, "files");
  const Json *entry = files ? formats::findMember(*files, name) : nullptr;
  const Json *bytes = entry ? formats::findMember(*entry, "bytes") : nullptr;
  const Json *hash = entry ? formats::findMember(*entry, "hash") : nullptr;
  if (!bytes || !bytes->is_number_integer() || !hash || !hash->is_string())
    return formats::formatError(SINTER_HERE, markerPath,
                                absl::StrCat("no valid entry for ", name));
  int64_t size = bytes->get<int64_t>();
  const std::string &expectedHash = hash->get_ref<const std::string &>();
  SINTER_ASSIGN_OR_RETURN(std::unique_ptr<formats::FileSource> source,
                          formats::FileSource::open(path));
  if (static_cast<int64_t>(source->size()) != size)
    return formats::formatError(
        SINTER_HERE, path,
        absl::StrFormat("has %d bytes but the checkpoint was saved "
                        "with %d (truncated or replaced)",
                        source->size(), size));
  StreamHash streamed;
  std::string piece(std::min<uint64_t>(source->size(),
                                       formats::kSafeTensorsPieceBytes),
                    '\0');
  for (uint64_t at = 0; at < source->size(); at += piece.size()) {
    uint64_t count = std::min<uint64_t>(piece.size(), source->size() - at);
    SINTER_RETURN_IF_ERROR(source->read(at, count, piece.data()));
    streamed.update(std::string_view(piece.data(), count));
  }
  if (hashText(streamed.digest()) != expectedHash)
    return formats::formatError(
        SINTER_HERE, path,
        "its contents do not match the hash in COMPLETE (corrupt)");
  return absl::OkStatus();
}

/// Checks one small file against its COMPLETE entry and returns its bytes.
absl::StatusOr<std::string> readChecked(const std::string &dir,
                                        const Json &marker, const char *name) {
  SINTER_RETURN_IF_ERROR(checkFile(dir, marker, name));
  return readWholeFile((fs::path(dir) / name).string());
}

/// The first tensor of `file` with a NaN or infinity, described.
std::optional<std::string> nonFinite(const formats::SafeTensorsFile &file) {
  for (const auto &[name, tensor] : file.tensors) {
    int64_t first = -1;
    if (int64_t count = formats::countNonFinite(tensor, &first))
      return absl::StrFormat("tensor %s holds %d NaN or infinite value(s) "
                             "(the first at element %d)",
                             formats::quoteForMessage(name), count, first);
  }
  return std::nullopt;
}

bool isCheckpointName(std::string_view text) {
  absl::string_view name = toAbsl(text);
  if (!absl::ConsumePrefix(&name, "step-") || name.empty())
    return false;
  for (char c : name)
    if (c < '0' || c > '9')
      return false;
  return true;
}

} // namespace

// Eight bytes at a time, multiply-xorshift mixed (splitmix64's finalizer),
// then the tail and the length.

void StreamHash::update(std::string_view bytes) {
  total += bytes.size();
  auto word = [&](const char *p) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    h = (h ^ w) * kMul;
    h ^= h >> 29;
  };
  if (partialSize) {
    size_t take = std::min(bytes.size(), 8 - partialSize);
    std::memcpy(partial + partialSize, bytes.data(), take);
    partialSize += take;
    bytes.remove_prefix(take);
    if (partialSize < 8)
      return;
    word(partial);
    partialSize = 0;
  }
  size_t i = 0;
  for (; i + 8 <= bytes.size(); i += 8)
    word(bytes.data() + i);
  partialSize = bytes.size() - i;
  std::memcpy(partial, bytes.data() + i, partialSize);
}

uint64_t StreamHash::digest() const {
  auto mix = [](uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  };
  uint64_t tail = 0;
  std::memcpy(&tail, partial, partialSize);
  return mix(h ^ tail ^ (total * kMul));
}

absl::StatusOr<TrainerState>
sinter::train::parseTrainerState(std::string_view text,
                                 const std::string &path) {
  return stateFromJson(text, path);
}

uint64_t sinter::train::hashBytes(std::string_view bytes) {
  StreamHash hash;
  hash.update(bytes);
  return hash.digest();
}

std::string sinter::train::checkpointName(int64_t step) {
  return absl::StrFormat("step-%08d", step);
}

void sinter::train::removeStaleTemporaries(const std::string &root) {
  std::error_code ec;
  for (fs::directory_iterator it(root, ec), end; !ec && it != end;
       it.increment(ec)) {
    std::string name = it->path().filename().string();
    if (absl::StartsWith(name, ".step-") && it->is_directory(ec))
      fs::remove_all(it->path(), ec);
  }
}

absl::Status sinter::train::checkWritable(const std::string &root) {
  std::error_code ec;
  fs::create_directories(root, ec);
  if (ec)
    return sinter::PermissionDeniedError(
        SINTER_HERE, absl::StrCat(root, ": cannot create the checkpoint "
                                        "directory: ",
                                  ec.message()));
  std::string probe =
      (fs::path(root) / absl::StrCat(".write-test-", ::getpid())).string();
  int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0)
    return errnoStatus(SINTER_HERE, root, "cannot write checkpoints here");
  ::close(fd);
  ::unlink(probe.c_str());
  return absl::OkStatus();
}

namespace {

/// Hashes what it passes on (COMPLETE's entry of a file written streamed).
class HashingSink final : public formats::ByteSink {
public:
  HashingSink(formats::ByteSink &inner, StreamHash &hash)
      : inner(inner), hash(hash) {}
  absl::Status write(std::string_view bytes) override {
    hash.update(bytes);
    return inner.write(bytes);
  }

private:
  formats::ByteSink &inner;
  StreamHash &hash;
};

Json fileEntry(const StreamHash &hash) {
  Json entry = Json::object();
  entry["bytes"] = static_cast<int64_t>(hash.size());
  entry["hash"] = hashText(hash.digest());
  return entry;
}

} // namespace

absl::StatusOr<std::string>
sinter::train::saveCheckpoint(const std::string &root,
                              const Checkpoint &checkpoint) {
  CheckpointSources sources;
  sources.model = formats::sourcesOf(checkpoint.model);
  sources.optimizer = formats::sourcesOf(checkpoint.optimizer);
  sources.state = checkpoint.state;
  return saveCheckpoint(root, sources);
}

absl::StatusOr<std::string>
sinter::train::saveCheckpoint(const std::string &root,
                              const CheckpointSources &checkpoint) {
  // trainer.json is JSON text, which holds only UTF-8.
  for (auto [what, text] :
       {std::pair{"the data spec", &checkpoint.state.data},
        std::pair{"the data state", &checkpoint.state.dataState},
        std::pair{"the program fingerprint", &checkpoint.state.program}})
    if (!formats::isValidUtf8(*text))
      return sinter::InvalidArgumentError(
          SINTER_HERE,
          absl::StrCat(root, ": cannot save a checkpoint: ", what, " ",
                       formats::quoteForMessage(*text),
                       " is not valid UTF-8 (trainer.json holds it as JSON "
                       "text)"));
  std::error_code ec;
  fs::create_directories(root, ec);
  if (ec)
    return sinter::PermissionDeniedError(
        SINTER_HERE,
        absl::StrCat(
            root, ": cannot create the checkpoint directory: ", ec.message()));

  // 1. Everything goes to a hidden temp directory first: a kill from here to
  //    step 3 leaves at most a temp directory that loading never looks at
  //    (and the next run removes).
  std::string name = checkpointName(checkpoint.state.step);
  std::string finalDir = (fs::path(root) / name).string();
  std::string tempDir =
      (fs::path(root) / absl::StrCat(".", name, ".tmp-", ::getpid())).string();
  fs::remove_all(tempDir, ec);
  if (!fs::create_directory(tempDir, ec) || ec)
    return sinter::PermissionDeniedError(
        SINTER_HERE,
        absl::StrCat(tempDir, ": cannot create the directory: ", ec.message()));
  auto abandon = [&](absl::Status status) {
    std::error_code ignored;
    fs::remove_all(tempDir, ignored);
    return status;
  };

  // The tensors stream from their sources a piece at a time, each piece
  // hashed for COMPLETE and checked as it goes: a checkpoint is a recovery
  // point, so one holding NaN or infinities is not written.
  Json entries = Json::object();
  for (auto [file, tensors] :
       {std::pair{kModelFile, &checkpoint.model},
        std::pair{kOptimizerFile, &checkpoint.optimizer}}) {
    formats::PieceCheck finite = [&, file = file](
                                     const formats::TensorSource &tensor,
                                     uint64_t offset, std::string_view piece) {
      int64_t first = -1;
      if (!formats::countNonFinite(tensor.dtype, piece, &first))
        return absl::OkStatus();
      int64_t element =
          static_cast<int64_t>(offset) / formats::dtypeByteSize(tensor.dtype) +
          first;
      return sinter::DataLossError(
          SINTER_HERE,
          absl::StrFormat("not saving the checkpoint of step %d: its %s "
                          "tensor %s holds NaN or infinite values (the first "
                          "at element %d)",
                          checkpoint.state.step, file,
                          formats::quoteForMessage(tensor.name), element));
    };
    StreamHash hash;
    absl::Status written = formats::writeFileAtomic(
        (fs::path(tempDir) / file).string(), [&](formats::ByteSink &sink) {
          HashingSink hashing(sink, hash);
          return formats::streamSafeTensors(*tensors, hashing, finite);
        });
    if (!written.ok())
      return abandon(std::move(written));
    entries[file] = fileEntry(hash);
  }
  std::string state = formats::writeJson(stateToJson(checkpoint.state)) + "\n";
  if (absl::Status s = formats::writeFileAtomic(
          (fs::path(tempDir) / kStateFile).string(), {state});
      !s.ok())
    return abandon(std::move(s));
  StreamHash stateHash;
  stateHash.update(state);
  entries[kStateFile] = fileEntry(stateHash);

  // 2. The marker last: a directory without it is not a checkpoint.
  Json markerJson = Json::object();
  markerJson["step"] = checkpoint.state.step;
  markerJson["files"] = std::move(entries);
  std::string marker = formats::writeJson(markerJson) + "\n";
  if (absl::Status s = formats::writeFileAtomic(
          (fs::path(tempDir) / kMarkerFile).string(), {marker});
      !s.ok())
    return abandon(std::move(s));

  // 3. Into place. Saving a step that already exists (a resumed run saving
  //    at the step it resumed from) exchanges the two directories
  //    atomically, so `latest` never names a missing directory.
  if (fs::exists(finalDir, ec)) {
    if (::renameat2(AT_FDCWD, tempDir.c_str(), AT_FDCWD, finalDir.c_str(),
                    RENAME_EXCHANGE) != 0)
      return errnoStatus(SINTER_HERE, finalDir,
                         "cannot replace the old checkpoint");
    fs::remove_all(tempDir, ec); // now the old copy
  } else if (::rename(tempDir.c_str(), finalDir.c_str()) != 0) {
    return errnoStatus(SINTER_HERE, finalDir,
                       "cannot move the checkpoint into place");
  }
  SINTER_RETURN_IF_ERROR(fsyncDirectory(root));

  // 4. Only now does `latest` move.
  std::string latest = name + "\n";
  SINTER_RETURN_IF_ERROR(formats::writeFileAtomic(
      (fs::path(root) / kLatestFile).string(), {latest}));
  return finalDir;
}

absl::StatusOr<Checkpoint>
sinter::train::loadCheckpoint(const std::string &path,
                              std::string *loadedFrom) {
  std::error_code ec;
  if (!fs::exists(path, ec))
    return sinter::NotFoundError(
        SINTER_HERE, absl::StrCat(path, ": no such checkpoint directory"));
  std::string dir = path;
  std::string latestPath = (fs::path(path) / kLatestFile).string();
  if (fs::exists(latestPath, ec)) {
    SINTER_ASSIGN_OR_RETURN(std::string latest, readWholeFile(latestPath));
    std::string_view name = toStd(absl::StripAsciiWhitespace(latest));
    if (!isCheckpointName(name))
      return formats::formatError(SINTER_HERE, latestPath,
                                  absl::StrCat("does not name a checkpoint (",
                                               formats::quoteForMessage(name),
                                               ")"));
    dir = (fs::path(path) / std::string(name)).string();
  } else if (!fs::exists(fs::path(path) / kMarkerFile, ec)) {
    return sinter::NotFoundError(
        SINTER_HERE,
        absl::StrCat(
            path,
            ": not a checkpoint (no COMPLETE marker) and no 'latest' in it"));
  }
  std::string markerPath = (fs::path(dir) / kMarkerFile).string();
  if (!fs::exists(markerPath, ec))
    return sinter::NotFoundError(
        SINTER_HERE,
        absl::StrCat(dir, ": incomplete checkpoint (no COMPLETE marker)"));
  SINTER_ASSIGN_OR_RETURN(std::string markerText, readWholeFile(markerPath));
  absl::StatusOr<formats::JsonDocument> markerDocument =
      formats::JsonDocument::parse(markerText);
  if (!markerDocument.ok())
    return formats::formatError(SINTER_HERE, markerPath,
                                toStd(markerDocument.status().message()));
  const Json *marker = &markerDocument->root();

  Checkpoint checkpoint;
  for (auto [file, tensors] : {std::pair{kModelFile, &checkpoint.model},
                               std::pair{kOptimizerFile, &checkpoint.optimizer}}) {
    SINTER_RETURN_IF_ERROR(checkFile(dir, *marker, file));
    SINTER_ASSIGN_OR_RETURN(
        *tensors, formats::readSafeTensors((fs::path(dir) / file).string()));
  }

  SINTER_ASSIGN_OR_RETURN(std::string state,
                          readChecked(dir, *marker, kStateFile));
  std::string statePath = (fs::path(dir) / kStateFile).string();
  SINTER_ASSIGN_OR_RETURN(checkpoint.state, stateFromJson(state, statePath));

  // The step is written three times more: COMPLETE, the directory's name
  // and the model's metadata. A disagreement is files mixed from two
  // checkpoints, which would resume a model at the wrong step.
  std::vector<std::string> disagree;
  const Json *markerStep = formats::findMember(*marker, "step");
  if (!markerStep || !markerStep->is_number_integer() ||
      markerStep->get<int64_t>() != checkpoint.state.step)
    disagree.push_back(absl::StrCat(
        "COMPLETE says ",
        markerStep ? formats::writeJson(*markerStep) : std::string("nothing")));
  std::string dirName = fs::path(dir).lexically_normal().filename().string();
  if (dirName.empty())
    dirName = fs::path(dir).lexically_normal().parent_path().filename().string();
  if (isCheckpointName(dirName) &&
      dirName != checkpointName(checkpoint.state.step))
    disagree.push_back(absl::StrCat("the directory is ", dirName));
  auto metadataStep = checkpoint.model.metadata.find("sinter.step");
  if (metadataStep != checkpoint.model.metadata.end() &&
      metadataStep->second != absl::StrCat(checkpoint.state.step))
    disagree.push_back(absl::StrCat("model.safetensors says ",
                                    metadataStep->second));
  if (!disagree.empty())
    return formats::formatError(
        SINTER_HERE, statePath,
        absl::StrFormat("'step' is %d, but %s: the checkpoint's files do not "
                        "belong together (copied from different checkpoints?)",
                        checkpoint.state.step, absl::StrJoin(disagree, ", ")));
  for (auto [file, tensors] : {std::pair{kModelFile, &checkpoint.model},
                               std::pair{kOptimizerFile, &checkpoint.optimizer}})
    if (std::optional<std::string> bad = nonFinite(*tensors))
      return formats::formatError(
          SINTER_HERE, (fs::path(dir) / file).string(),
          absl::StrCat(*bad, ": a checkpoint with non-finite state is no "
                             "recovery point; resume from an earlier one"));
  if (loadedFrom)
    *loadedFrom = dir;
  return checkpoint;
}

absl::Status sinter::train::pruneCheckpoints(const std::string &root,
                                             int64_t keepLast,
                                             int64_t keepEvery) {
  if (keepLast <= 0)
    return absl::OkStatus();
  std::vector<std::pair<int64_t, fs::path>> steps;
  std::error_code ec;
  for (fs::directory_iterator it(root, ec), end; !ec && it != end;
       it.increment(ec)) {
    std::string name = it->path().filename().string();
    int64_t step;
    if (isCheckpointName(name) && it->is_directory(ec) &&
        absl::SimpleAtoi(name.substr(5), &step))
      steps.push_back({step, it->path()});
  }
  if (ec)
    return errnoStatus(SINTER_HERE, root, "cannot list the checkpoints");
  std::sort(steps.begin(), steps.end());
  // `latest` is kept whatever it names.
  std::string latest;
  if (absl::StatusOr<std::string> text =
          readWholeFile((fs::path(root) / kLatestFile).string());
      text.ok())
    latest = std::string(absl::StripAsciiWhitespace(*text));
  int64_t newer = 0;
  for (auto it = steps.rbegin(); it != steps.rend(); ++it) {
    bool keep = newer++ < keepLast ||
                (keepEvery > 0 && it->first % keepEvery == 0) ||
                it->second.filename() == latest;
    if (keep)
      continue;
    fs::remove_all(it->second, ec);
    if (ec)
      return sinter::PermissionDeniedError(
          SINTER_HERE, absl::StrCat(it->second.string(),
                                    ": cannot remove an old checkpoint "
                                    "(--keep-last): ",
                                    ec.message()));
  }
  return fsyncDirectory(root);
}

