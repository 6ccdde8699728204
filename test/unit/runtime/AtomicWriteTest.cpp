//===- AtomicWriteTest.cpp - crash-safe file replacement ------------------===//
//
// writeFileAtomic through the .npy and .safetensors writers: replacing a
// file, failures leaving no temp file behind, and errors naming the path.
//
//===----------------------------------------------------------------------===//

#include "runtime/Formats/FileIO.h"
#include "runtime/Formats/Npy.h"
#include "runtime/Formats/SafeTensors.h"

#include "test/unit/runtime/FormatsTestUtil.h"

#include "absl/strings/str_cat.h"

#include <filesystem>

namespace sinter::formats {
namespace {

namespace fs = std::filesystem;
using sinter::test::readFile;
using sinter::test::writeFile;

/// Names in `dir` that look like our temp files.
std::vector<std::string> tempFiles(const std::string &dir) {
  std::vector<std::string> found;
  for (const auto &item : fs::directory_iterator(dir))
    if (item.path().filename().string().find(".tmp.") != std::string::npos)
      found.push_back(item.path().string());
  return found;
}

TEST(AtomicWriteTest, ReplacesExistingFile) {
  TempDir dir;
  std::string path = dir.file("x.npy");
  writeFile(path, "old contents");
  HostTensor tensor = *HostTensor::zeros(DType::I32, {4});
  ASSERT_TRUE(writeNpy(path, tensor).ok());
  EXPECT_EQ(*readNpy(path), tensor);
  EXPECT_TRUE(tempFiles(dir.path).empty());
  // A relative path (no directory part) fsyncs ".".
  std::string cwd = fs::current_path().string();
  fs::current_path(dir.path);
  EXPECT_TRUE(writeNpy("rel.npy", tensor).ok());
  fs::current_path(cwd);
  EXPECT_TRUE(fs::exists(dir.file("rel.npy")));
}

TEST(AtomicWriteTest, FailedRenameLeavesNoTempFile) {
  TempDir dir;
  // A non-empty directory where the file should go: rename() must fail.
  std::string path = dir.file("occupied.safetensors");
  fs::create_directory(path);
  writeFile(path + "/keep", "x");
  SafeTensorsFile file;
  file.tensors.emplace_back("w", *HostTensor::zeros(DType::F32, {2}));
  absl::Status status = writeSafeTensors(path, file);
  expectError(status, path, "rename from " + path + ".tmp.");
  EXPECT_TRUE(tempFiles(dir.path).empty());
  EXPECT_TRUE(fs::is_directory(path));
}

TEST(AtomicWriteTest, MissingDirectoryNamesPathAndErrno) {
  TempDir dir;
  std::string path = dir.file("no/such/dir/x.npy");
  absl::Status status = writeNpy(path, *HostTensor::zeros(DType::U8, {1}));
  expectError(status, path, "cannot create temporary file " + path + ".tmp.");
  EXPECT_NE(status.message().find("No such file or directory"),
            std::string_view::npos);
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
}

TEST(AtomicWriteTest, WritesManyPieces) {
  TempDir dir;
  std::string path = dir.file("pieces");
  ASSERT_TRUE(writeFileAtomic(path, {"ab", "", "cde"}).ok());
  EXPECT_EQ(readFile(path), "abcde");
  ASSERT_TRUE(writeFileAtomic(path, {}).ok());
  EXPECT_EQ(readFile(path), "");
}

} // namespace
} // namespace sinter::formats
