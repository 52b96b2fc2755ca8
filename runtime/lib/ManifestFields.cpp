//===- ManifestFields.cpp - Cutting manifest lines into fields ------------===//
//
// tokenize (a line into blank-separated tokens) and split (a field at a
// separator), declared in ManifestFields.h.
//
//===----------------------------------------------------------------------===//

#include "ManifestFields.h"

namespace sparseopt {

/// Splits `text` at every `separator` (an empty text is one empty field).
std::vector<std::string> split(const std::string &text, char separator) {
  std::vector<std::string> fields;
  size_t start = 0;
  while (true) {
    size_t end = text.find(separator, start);
    if (end == std::string::npos) {
      fields.push_back(text.substr(start));
      return fields;
    }
    fields.push_back(text.substr(start, end - start));
    start = end + 1;
  }
}

/// Splits `line` at blanks, dropping everything from the first '#'.
std::vector<std::string> tokenize(const std::string &line) {
  std::vector<std::string> tokens;
  const char *blanks = " \t\r\v\f";
  size_t end = line.find('#');
  if (end == std::string::npos)
    end = line.size();
  size_t pos = 0;
  while (pos < end) {
    size_t start = line.find_first_not_of(blanks, pos);
    if (start == std::string::npos || start >= end)
      break;
    size_t stop = line.find_first_of(blanks, start);
    if (stop == std::string::npos || stop > end)
      stop = end;
    tokens.push_back(line.substr(start, stop - start));
    pos = stop;
  }
  return tokens;
}

} // namespace sparseopt
