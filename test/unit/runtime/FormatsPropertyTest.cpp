//===- FormatsPropertyTest.cpp - randomized format tests ------------------===//
//
// Random tensors round-trip bit for bit through both formats, and randomly
// mutated files never crash the readers (every rejection is one line naming
// the file).
//
//===----------------------------------------------------------------------===//

#include "runtime/Formats/Npy.h"
#include "runtime/Formats/SafeTensors.h"

#include "test/unit/runtime/FormatsTestUtil.h"

#include "absl/strings/str_cat.h"

namespace sinter::formats {
namespace {

std::vector<int64_t> randomShape(std::mt19937_64 &rng) {
  std::vector<int64_t> shape(rng() % 5);
  for (int64_t &dim : shape)
    dim = static_cast<int64_t>(rng() % 6);
  return shape;
}

TEST(PropertyTest, RandomTensorsRoundTrip) {
  TempDir dir;
  constexpr uint64_t kSeed = 20240611;
  std::mt19937_64 rng(kSeed);
  for (int iteration = 0; iteration < 300; ++iteration) {
    SCOPED_TRACE(absl::StrCat("seed ", kSeed, " iteration ", iteration));
    SafeTensorsFile file;
    int count = static_cast<int>(rng() % 6);
    for (int i = 0; i < count; ++i) {
      DType dtype = kAllDTypes[rng() % std::size(kAllDTypes)];
      HostTensor tensor = randomTensor(dtype, randomShape(rng), rng);
      if (dtype != DType::BF16) {
        absl::StatusOr<std::string> npy = serializeNpy(tensor);
        ASSERT_TRUE(npy.ok()) << npy.status();
        absl::StatusOr<HostTensor> back = parseNpy(*npy, "r.npy");
        ASSERT_TRUE(back.ok()) << back.status();
        ASSERT_EQ(*back, tensor);
      }
      file.tensors.emplace_back(absl::StrCat("t", i, "/", rng() % 1000),
                                std::move(tensor));
    }
    if (rng() % 2)
      file.metadata[absl::StrCat("k", rng() % 10)] = "v";
    absl::StatusOr<std::string> bytes = serializeSafeTensors(file);
    ASSERT_TRUE(bytes.ok()) << bytes.status();
    absl::StatusOr<SafeTensorsFile> back = parseSafeTensors(*bytes, "r");
    ASSERT_TRUE(back.ok()) << back.status();
    ASSERT_EQ(back->tensors, file.tensors);
    if (iteration % 50 == 0) {
      std::string path = dir.file("r.safetensors");
      ASSERT_TRUE(writeSafeTensors(path, file).ok());
      absl::StatusOr<SafeTensorsFile> fromFile = readSafeTensors(path);
      ASSERT_TRUE(fromFile.ok()) << fromFile.status();
      ASSERT_EQ(fromFile->tensors, file.tensors);
    }
  }
}

/// Applies one random corruption: flip, overwrite, truncate, insert or
/// poke a length field with an extreme value.
void mutate(std::string &bytes, std::mt19937_64 &rng) {
  switch (rng() % 5) {
  case 0:
    if (!bytes.empty())
      bytes[rng() % bytes.size()] ^= static_cast<char>(1 << (rng() % 8));
    break;
  case 1:
    if (!bytes.empty())
      bytes[rng() % bytes.size()] = static_cast<char>(rng());
    break;
  case 2:
    bytes.resize(bytes.empty() ? 0 : rng() % bytes.size());
    break;
  case 3:
    bytes.insert(bytes.empty() ? 0 : rng() % bytes.size(), 1 + rng() % 4,
                 "{[\",:]} 0123456789-eE"[rng() % 22]);
    break;
  case 4: {
    static const uint64_t extremes[] = {
        0, 1, 0xFFFF, 0xFFFFFFFF, UINT64_MAX, uint64_t(1) << 63};
    std::string value = littleEndian(extremes[rng() % 6], 8);
    size_t at = bytes.empty() ? 0 : rng() % bytes.size();
    bytes.replace(at, std::min<size_t>(8, bytes.size() - at), value);
    break;
  }
  }
}

TEST(PropertyTest, MutatedFilesNeverCrash) {
  constexpr uint64_t kSeed = 99;
  std::mt19937_64 rng(kSeed);
  SafeTensorsFile file;
  file.metadata = {{"a", "b"}};
  file.tensors.emplace_back("w", randomTensor(DType::F32, {2, 3}, rng));
  file.tensors.emplace_back("m", randomTensor(DType::Bool, {4}, rng));
  file.tensors.emplace_back("s", randomTensor(DType::I64, {}, rng));
  std::string safetensors = *serializeSafeTensors(file);
  std::string npy = *serializeNpy(randomTensor(DType::I16, {3, 2}, rng));
  int accepted = 0;
  for (int iteration = 0; iteration < 5000; ++iteration) {
    SCOPED_TRACE(absl::StrCat("seed ", kSeed, " iteration ", iteration));
    std::string a = safetensors, b = npy;
    int rounds = 1 + static_cast<int>(rng() % 3);
    for (int i = 0; i < rounds; ++i) {
      mutate(a, rng);
      mutate(b, rng);
    }
    absl::StatusOr<SafeTensorsFile> st = parseSafeTensors(a, "fuzz");
    if (st.ok())
      ++accepted;
    else
      expectError(st.status(), "fuzz", "");
    absl::StatusOr<HostTensor> np = parseNpy(b, "fuzz");
    if (np.ok())
      ++accepted;
    else
      expectError(np.status(), "fuzz", "");
    if (HasFailure())
      break;
  }
  // Most mutations must be caught (flips inside float data are not).
  EXPECT_LT(accepted, 5000);
}

} // namespace
} // namespace sinter::formats
