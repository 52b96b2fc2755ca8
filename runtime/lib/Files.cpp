//===- Files.cpp - Small file helpers that report errors as text ----------===//

#include "Files.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace sparseopt {

bool regularFileSize(const std::string &path, uint64_t &size,
                     std::string &error) {
  struct stat info;
  if (stat(path.c_str(), &info) != 0) {
    error = std::strerror(errno);
    return false;
  }
  if (!S_ISREG(info.st_mode)) {
    error = S_ISDIR(info.st_mode) ? "is a directory" : "not a regular file";
    return false;
  }
  size = uint64_t(info.st_size);
  return true;
}

bool readFile(const std::string &path, std::string &contents,
              std::string &error) {
  uint64_t size = 0;
  if (!regularFileSize(path, size, error))
    return false;
  std::FILE *file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) {
    error = std::strerror(errno);
    return false;
  }
  contents.clear();
  contents.reserve(size_t(size));
  char chunk[1 << 16];
  size_t n = 0;
  while ((n = std::fread(chunk, 1, sizeof(chunk), file)) > 0)
    contents.append(chunk, n);
  bool failed = std::ferror(file) != 0;
  int savedErrno = errno;
  std::fclose(file);
  if (failed) {
    error = std::string("read error: ") + std::strerror(savedErrno);
    return false;
  }
  return true;
}

std::string joinPath(const std::string &dir, const std::string &relative) {
  if (relative.empty() || relative.front() == '/' || dir.empty())
    return relative;
  if (dir.back() == '/')
    return dir + relative;
  return dir + "/" + relative;
}

} // namespace sparseopt
