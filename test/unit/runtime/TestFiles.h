//===- TestFiles.h - temp directories and whole-file I/O for runtime tests ===//

#ifndef SINTER_TEST_UNIT_RUNTIME_TESTFILES_H
#define SINTER_TEST_UNIT_RUNTIME_TESTFILES_H

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>

namespace sinter::test {

/// A fresh directory under the system temp dir, removed with its contents.
class TempDir {
public:
  explicit TempDir(std::string_view prefix = "sinter-test") {
    std::string pattern = (std::filesystem::temp_directory_path() /
                           (std::string(prefix) + "-XXXXXX"))
                              .string();
    if (char *made = mkdtemp(pattern.data()))
      path = made;
  }
  ~TempDir() {
    std::error_code ignored;
    if (!path.empty())
      std::filesystem::remove_all(path, ignored);
  }
  TempDir(const TempDir &) = delete;
  TempDir &operator=(const TempDir &) = delete;

  /// `name` inside the directory (nothing is created).
  std::string file(std::string_view name) const {
    return (std::filesystem::path(path) / std::string(name)).string();
  }
  std::string path;
};

inline std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

inline void writeFile(const std::string &path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

} // namespace sinter::test

#endif // SINTER_TEST_UNIT_RUNTIME_TESTFILES_H
