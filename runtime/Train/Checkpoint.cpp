//===- Checkpoint.cpp - checkpoints that are complete or absent -----------===//
//
// The order of operations in saveCheckpoint is the crash-safety argument of
// Checkpoint.h; each step says which failure it rules out.
//
//===----------------------------------------------------------------------===//

#include "runtime/Train/Checkpoint.h"

#include "runtime/Formats/AbslCompat.h"
#include "runtime/Formats/FileIO.h"
#include "runtime/Formats/Json.h"
#include "runtime/Support/Status.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <unistd.h>

using namespace sinter;
using namespace sinter::train;
using formats::JsonMember;
using formats::toAbsl;
using formats::toStd;
using formats::JsonValue;
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

JsonValue fileEntry(std::string_view bytes) {
  return JsonValue::makeObject(
      {{"bytes", JsonValue::makeInt(static_cast<int64_t>(bytes.size()))},
       {"hash", JsonValue::makeString(hashText(hashBytes(bytes)))}});
}

JsonValue stateToJson(const TrainerState &s) {
  std::vector<JsonMember> m = {
      {"step", JsonValue::makeInt(s.step)},
      // The seed is a uint64; as text it survives JSON's int64 range.
      {"seed", JsonValue::makeString(absl::StrCat(s.seed))},
      {"data", JsonValue::makeString(s.data)},
      {"data_state", JsonValue::makeString(s.dataState)},
      {"program", JsonValue::makeString(s.program)},
  };
  if (s.lr)
    m.push_back({"lr", JsonValue::makeNumber(*s.lr)});
  if (s.loss)
    m.push_back({"loss", JsonValue::makeNumber(*s.loss)});
  return JsonValue::makeObject(std::move(m));
}

absl::StatusOr<TrainerState> stateFromJson(std::string_view text,
                                           const std::string &path) {
  absl::StatusOr<JsonValue> json = formats::parseJson(text);
  if (!json.ok())
    return formats::formatError(SINTER_HERE, path,
                                toStd(json.status().message()));
  if (!json->isObject())
    return formats::formatError(SINTER_HERE, path, "not a JSON object");
  TrainerState s;
  auto field = [&](const char *name, formats::JsonKind kind,
                   bool required = true) -> absl::StatusOr<const JsonValue *> {
    const JsonValue *v = json->find(name);
    if (!v)
      return required ? formats::formatError(
                            SINTER_HERE, path,
                            absl::StrCat("missing member '", name, "'"))
                      : absl::StatusOr<const JsonValue *>(nullptr);
    bool ok = kind == formats::JsonKind::Number ? v->isNumber()
                                                : v->kind() == kind;
    if (!ok)
      return formats::formatError(
          SINTER_HERE, path, v->offset(),
          absl::StrCat("'", name, "' has the wrong type"));
    return v;
  };
  absl::StatusOr<const JsonValue *> step =
      field("step", formats::JsonKind::Int);
  absl::StatusOr<const JsonValue *> seed =
      field("seed", formats::JsonKind::String);
  absl::StatusOr<const JsonValue *> data =
      field("data", formats::JsonKind::String);
  absl::StatusOr<const JsonValue *> dataState =
      field("data_state", formats::JsonKind::String);
  absl::StatusOr<const JsonValue *> program =
      field("program", formats::JsonKind::String);
  absl::StatusOr<const JsonValue *> lr =
      field("lr", formats::JsonKind::Number, false);
  absl::StatusOr<const JsonValue *> loss =
      field("loss", formats::JsonKind::Number, false);
  for (const auto *f : {&step, &seed, &data, &dataState, &program, &lr, &loss})
    if (!f->ok())
      return f->status();
  s.step = (*step)->asInt();
  if (s.step < 0)
    return formats::formatError(SINTER_HERE, path, "'step' is negative");
  if (!absl::SimpleAtoi((*seed)->asString(), &s.seed))
    return formats::formatError(SINTER_HERE, path,
                                "'seed' is not an unsigned integer");
  s.data = (*data)->asString();
  s.dataState = (*dataState)->asString();
  s.program = (*program)->asString();
  if (*lr)
    s.lr = (*lr)->asNumber();
  if (*loss)
    s.loss = (*loss)->asNumber();
  return s;
}

/// Checks one file against its COMPLETE entry and returns its bytes.
absl::StatusOr<std::string> readChecked(const std::string &dir,
                                        const JsonValue &marker,
                                        const char *name) {
  std::string path = (fs::path(dir) / name).string();
  std::string markerPath = (fs::path(dir) / kMarkerFile).string();
  const JsonValue *files = marker.find("files");
  const JsonValue *entry = files ? files->find(name) : nullptr;
  const JsonValue *bytes = entry ? entry->find("bytes") : nullptr;
  const JsonValue *hash = entry ? entry->find("hash") : nullptr;
  if (!bytes || !bytes->isInt() || !hash || !hash->isString())
    return formats::formatError(SINTER_HERE, markerPath,
                                absl::StrCat("no valid entry for ", name));
  SINTER_ASSIGN_OR_RETURN(std::string text, readWholeFile(path));
  if (static_cast<int64_t>(text.size()) != bytes->asInt())
    return formats::formatError(
        SINTER_HERE, path,
        absl::StrFormat("has %d bytes but the checkpoint was saved "
                        "with %d (truncated or replaced)",
                        text.size(), bytes->asInt()));
  if (hashText(hashBytes(text)) != hash->asString())
    return formats::formatError(
        SINTER_HERE, path,
        "its contents do not match the hash in COMPLETE (corrupt)");
  return std::move(text);
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

uint64_t sinter::train::hashBytes(std::string_view bytes) {
  // Eight bytes at a time, multiply-xorshift mixed (splitmix64's finalizer),
  // then the tail and the length.
  constexpr uint64_t kMul = 0x9E3779B97F4A7C15ull;
  auto mix = [](uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  };
  uint64_t h = kMul;
  size_t i = 0;
  for (; i + 8 <= bytes.size(); i += 8) {
    uint64_t w;
    std::memcpy(&w, bytes.data() + i, 8);
    h = (h ^ w) * kMul;
    h ^= h >> 29;
  }
  uint64_t tail = 0;
  std::memcpy(&tail, bytes.data() + i, bytes.size() - i);
  return mix(h ^ tail ^ (static_cast<uint64_t>(bytes.size()) * kMul));
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

absl::StatusOr<std::string>
sinter::train::saveCheckpoint(const std::string &root,
                              const Checkpoint &checkpoint) {
  std::error_code ec;
  fs::create_directories(root, ec);
  if (ec)
    return sinter::PermissionDeniedError(
        SINTER_HERE,
        absl::StrCat(
            root, ": cannot create the checkpoint directory: ", ec.message()));

  // 1. Everything goes to a hidden temp directory first: a kill from here to
  //    step 3 leaves at most a temp directory that loading never looks at.
  std::string name = checkpointName(checkpoint.state.step);
  std::string finalDir = (fs::path(root) / name).string();
  std::string tempDir =
      (fs::path(root) / absl::StrCat(".", name, ".tmp-", ::getpid())).string();
  fs::remove_all(tempDir, ec);
  if (!fs::create_directory(tempDir, ec) || ec)
    return sinter::PermissionDeniedError(
        SINTER_HERE,
        absl::StrCat(tempDir, ": cannot create the directory: ", ec.message()));

  SINTER_ASSIGN_OR_RETURN(std::string model,
                          formats::serializeSafeTensors(checkpoint.model));
  SINTER_ASSIGN_OR_RETURN(std::string optimizer,
                          formats::serializeSafeTensors(checkpoint.optimizer));
  std::string state = formats::printJson(stateToJson(checkpoint.state)) + "\n";

  std::vector<std::pair<const char *, const std::string *>> files = {
      {kModelFile, &model}, {kOptimizerFile, &optimizer}, {kStateFile, &state}};
  std::vector<JsonMember> entries;
  for (auto [file, bytes] : files) {
    SINTER_RETURN_IF_ERROR(formats::writeFileAtomic(
        (fs::path(tempDir) / file).string(), {*bytes}));
    entries.push_back({file, fileEntry(*bytes)});
  }
  // 2. The marker last: a directory without it is not a checkpoint.
  std::string marker =
      formats::printJson(JsonValue::makeObject(
          {{"step", JsonValue::makeInt(checkpoint.state.step)},
           {"files", JsonValue::makeObject(std::move(entries))}})) +
      "\n";
  SINTER_RETURN_IF_ERROR(formats::writeFileAtomic(
      (fs::path(tempDir) / kMarkerFile).string(), {marker}));

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
  absl::StatusOr<JsonValue> marker = formats::parseJson(markerText);
  if (!marker.ok())
    return formats::formatError(SINTER_HERE, markerPath,
                                toStd(marker.status().message()));

  Checkpoint checkpoint;
  SINTER_ASSIGN_OR_RETURN(std::string model,
                          readChecked(dir, *marker, kModelFile));
  SINTER_ASSIGN_OR_RETURN(
      checkpoint.model,
      formats::parseSafeTensors(model, (fs::path(dir) / kModelFile).string()));

  SINTER_ASSIGN_OR_RETURN(std::string optimizer,
                          readChecked(dir, *marker, kOptimizerFile));
  SINTER_ASSIGN_OR_RETURN(
      checkpoint.optimizer,
      formats::parseSafeTensors(optimizer,
                                (fs::path(dir) / kOptimizerFile).string()));

  SINTER_ASSIGN_OR_RETURN(std::string state,
                          readChecked(dir, *marker, kStateFile));
  SINTER_ASSIGN_OR_RETURN(
      checkpoint.state,
      stateFromJson(state, (fs::path(dir) / kStateFile).string()));
  if (loadedFrom)
    *loadedFrom = dir;
  return checkpoint;
}
