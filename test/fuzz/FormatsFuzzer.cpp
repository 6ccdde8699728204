//===- FormatsFuzzer.cpp - libFuzzer target for the files a run reads -----===//
//
// The training binary reads files a user hands it: checkpoints (.safetensors
// and trainer.json, from --init and --resume, often downloaded), .npy data,
// token files (llm.c shards or raw), and JSON. The first byte of an input
// picks the reader, the rest is the file:
//
//   0  parseSafeTensors   then, when it parses, serialize and parse again:
//                         the same tensors and metadata (with "format":
//                         "pt" added where it was missing)
//   1  parseNpy           the same round trip
//   2  readTokenFile      from memory (the header checks of every token file)
//   3  JsonDocument::parse
//   4  parseTrainerState  (trainer.json)
//
// Every input must end in a value or an error status: a crash, an abort, a
// hang, an allocation beyond the limit or a sanitizer report is a bug, and
// so is a round trip that changes anything (it calls abort()). Build and
// run: docs/Fuzzing.md. The kept corpus is replayed by the unit tests
// (SinterFormatsCorpusTest).
//
//===----------------------------------------------------------------------===//

#include "runtime/Data/TokenFiles.h"
#include "runtime/Formats/FileIO.h"
#include "runtime/Formats/JsonDocument.h"
#include "runtime/Formats/Npy.h"
#include "runtime/Formats/SafeTensors.h"
#include "runtime/Train/Checkpoint.h"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <string_view>

namespace {

using namespace sinter;

[[noreturn]] void roundTripFailed(const char *format, const char *what) {
  std::fprintf(stderr, "FormatsFuzzer: a %s file %s\n", format, what);
  std::abort();
}

/// When `parse` accepts the bytes: `serialize` must write what it parsed,
/// `parse` must read that back, and `same` must hold between the two.
template <typename Parse, typename Serialize, typename Same>
void roundTrip(std::string_view bytes, const char *what, Parse parse,
               Serialize serialize, Same same) {
  auto first = parse(bytes);
  if (!first.ok())
    return;
  absl::StatusOr<std::string> again = serialize(*first);
  if (!again.ok())
    roundTripFailed(what, "does not serialize once parsed");
  auto back = parse(*again);
  if (!back.ok())
    roundTripFailed(what, "does not parse once serialized");
  if (!same(*first, *back))
    roundTripFailed(what, "changed in a round trip");
}

void safeTensors(std::string_view bytes) {
  roundTrip(
      bytes, ".safetensors",
      [](std::string_view b) {
        return formats::parseSafeTensors(b, "fuzz.safetensors");
      },
      [](const formats::SafeTensorsFile &f) {
        return formats::serializeSafeTensors(f);
      },
      [](const formats::SafeTensorsFile &a, const formats::SafeTensorsFile &b) {
        // The writer adds "format": "pt" where it is missing (PyTorch's
        // loader wants it); nothing else may change.
        std::map<std::string, std::string> metadata = a.metadata;
        metadata.emplace("format", "pt");
        return a.tensors == b.tensors && b.metadata == metadata;
      });
}

void npy(std::string_view bytes) {
  roundTrip(
      bytes, ".npy",
      [](std::string_view b) { return formats::parseNpy(b, "fuzz.npy"); },
      [](const formats::HostTensor &t) { return formats::serializeNpy(t); },
      [](const formats::HostTensor &a, const formats::HostTensor &b) {
        return a == b;
      });
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0)
    return 0;
  std::string_view bytes(reinterpret_cast<const char *>(data) + 1, size - 1);
  switch (data[0] % 5) {
  case 0:
    safeTensors(bytes);
    break;
  case 1:
    npy(bytes);
    break;
  case 2: {
    formats::MemorySource source(bytes, "fuzz.bin");
    (void)data::readTokenFile(source);
    break;
  }
  case 3:
    (void)formats::JsonDocument::parse(bytes);
    break;
  case 4:
    (void)train::parseTrainerState(bytes, "trainer.json");
    break;
  }
  return 0;
}
