//===- ManifestFields.h - Reading the fields of program.txt -----*- C++ -*-===//
//
// The lexical helpers of the manifest parser: a line cut into blank-separated
// tokens, a field cut at a separator, numbers read from a whole field,
// `b<id>` buffer references, and the quoting of text in messages.
//
//===----------------------------------------------------------------------===//
#ifndef SPARSEOPT_RUNTIME_MANIFESTFIELDS_H
#define SPARSEOPT_RUNTIME_MANIFESTFIELDS_H

#include <charconv>
#include <cstdint>
#include <string>
#include <vector>

namespace sparseopt {

/// Splits `text` at every `separator` (an empty text is one empty field).
std::vector<std::string> split(const std::string &text, char separator);

/// Splits `line` at blanks, dropping everything from the first '#'.
std::vector<std::string> tokenize(const std::string &line);

/// Parses all of `text` as a number of type T (no sign for unsigned T, no
/// leading '+', no blanks). Returns false on any leftover or overflow.
template <typename T> bool parseNumber(const std::string &text, T &out) {
  const char *first = text.data();
  const char *last = first + text.size();
  if (first == last || *first == '+')
    return false;
  auto [ptr, ec] = std::from_chars(first, last, out);
  return ec == std::errc() && ptr == last;
}

/// Parses `text` as an extent from 1 to `max` (a tensor map's dimension or
/// box side).
template <typename T>
bool parseExtent(const std::string &text, T &out, uint64_t max) {
  return parseNumber(text, out) && out != 0 && uint64_t(out) <= max;
}

/// Parses `text` as a buffer reference, b<id>, into `id`.
inline bool parseBufferRef(const std::string &text, uint64_t &id) {
  return text.size() >= 2 && text[0] == 'b' && parseNumber(text.substr(1), id);
}

/// `text` in single quotes, for messages.
inline std::string quoted(const std::string &text) { return "'" + text + "'"; }

} // namespace sparseopt

#endif // SPARSEOPT_RUNTIME_MANIFESTFIELDS_H
