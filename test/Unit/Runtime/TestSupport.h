//===- TestSupport.h - Helpers shared by the runtime's unit tests -*- C++ -*-===//

#ifndef SPARSEOPT_TEST_UNIT_RUNTIME_TESTSUPPORT_H
#define SPARSEOPT_TEST_UNIT_RUNTIME_TESTSUPPORT_H

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace sparseopt_test {

/// A fresh directory under the test temp dir, removed at scope exit.
class TempDir {
public:
  TempDir() {
    std::string pattern = ::testing::TempDir() + "sparseopt-runtime-XXXXXX";
    std::vector<char> buffer(pattern.begin(), pattern.end());
    buffer.push_back('\0');
    const char *made = mkdtemp(buffer.data());
    path_ = made != nullptr ? made : "";
  }
  ~TempDir() {
    std::error_code ignored;
    if (!path_.empty())
      std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir &) = delete;
  TempDir &operator=(const TempDir &) = delete;
  const std::string &path() const { return path_; }
  const char *c_str() const { return path_.c_str(); }

  /// Writes `contents` to <dir>/<name>.
  void write(const std::string &name, const std::string &contents) const {
    std::ofstream out(path_ + "/" + name, std::ios::binary);
    out << contents;
  }

  /// Writes <dir>/program.txt: `body` and the `end` line that closes
  /// every program (tests of a missing `end` write the file themselves).
  void writeProgram(const std::string &body) const {
    write("program.txt", body + "end\n");
  }

private:
  std::string path_;
};

/// True when `text` contains `part`.
inline ::testing::AssertionResult contains(const std::string &text,
                                           const std::string &part) {
  if (text.find(part) != std::string::npos)
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "'" << text << "' does not contain '" << part << "'";
}

} // namespace sparseopt_test

#endif // SPARSEOPT_TEST_UNIT_RUNTIME_TESTSUPPORT_H
