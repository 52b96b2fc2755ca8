//===- Signature.cpp - Read and check signature.json ----------------------===//

#include "Signature.h"
#include "Files.h"
#include "Manifest.h"

#include <cctype>
#include <cstdlib>
#include <map>
#include <memory>
#include <sys/stat.h>

namespace sparseopt {
namespace {

/// A JSON value: what signature.json needs (objects, arrays, strings,
/// numbers kept as text, true/false/null).
struct Json {
  enum Kind { Null, Bool, Number, String, Array, Object } kind = Null;
  std::string text; ///< a string's value, a number's spelling
  std::vector<Json> items;
  std::map<std::string, Json> members;

  const Json *member(const std::string &key) const {
    auto found = members.find(key);
    return found == members.end() ? nullptr : &found->second;
  }
};

/// A recursive-descent JSON reader, bounded in depth (the signature nests
/// three levels; a file nested deeper is refused, never a stack overflow).
class JsonReader {
public:
  explicit JsonReader(const std::string &text) : s(text) {}

  bool read(Json &out, std::string &error) {
    if (!value(out, 0) || (skip(), pos != s.size())) {
      if (problem.empty())
        problem = "unexpected text";
      error = "invalid JSON at byte " + std::to_string(pos) + ": " + problem;
      return false;
    }
    return true;
  }

private:
  static constexpr int kMaxDepth = 16;
  const std::string &s;
  size_t pos = 0;
  std::string problem;

  void skip() {
    while (pos < s.size() && std::isspace(static_cast<unsigned char>(s[pos])))
      ++pos;
  }
  bool fail(const std::string &why) {
    problem = why;
    return false;
  }
  bool literal(const char *word) {
    size_t n = std::char_traits<char>::length(word);
    if (s.compare(pos, n, word) != 0)
      return fail("unexpected text");
    pos += n;
    return true;
  }

  bool value(Json &out, int depth) {
    if (depth > kMaxDepth)
      return fail("nested more than " + std::to_string(kMaxDepth) +
                  " levels deep");
    skip();
    if (pos >= s.size())
      return fail("unexpected end of file");
    char c = s[pos];
    if (c == '{')
      return object(out, depth);
    if (c == '[')
      return array(out, depth);
    if (c == '"') {
      out.kind = Json::String;
      return string(out.text);
    }
    if (c == '-' || std::isdigit(static_cast<unsigned char>(c)))
      return number(out);
    if (c == 't' || c == 'f') {
      out.kind = Json::Bool;
      out.text = c == 't' ? "true" : "false";
      return literal(c == 't' ? "true" : "false");
    }
    if (c == 'n') {
      out.kind = Json::Null;
      return literal("null");
    }
    return fail(std::string("unexpected character '") + c + "'");
  }

  bool number(Json &out) {
    size_t start = pos;
    if (s[pos] == '-')
      ++pos;
    while (pos < s.size() &&
           (std::isdigit(static_cast<unsigned char>(s[pos])) || s[pos] == '.' ||
            s[pos] == 'e' || s[pos] == 'E' || s[pos] == '+' || s[pos] == '-'))
      ++pos;
    out.kind = Json::Number;
    out.text = s.substr(start, pos - start);
    return true;
  }

  bool string(std::string &out) {
    ++pos; // the opening quote
    out.clear();
    while (pos < s.size() && s[pos] != '"') {
      char c = s[pos++];
      if (static_cast<unsigned char>(c) < 0x20)
        return fail("a control character in a string");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos >= s.size())
        break;
      char e = s[pos++];
      switch (e) {
      case '"': case '\\': case '/': out += e; break;
      case 'b': out += '\b'; break;
      case 'f': out += '\f'; break;
      case 'n': out += '\n'; break;
      case 'r': out += '\r'; break;
      case 't': out += '\t'; break;
      case 'u': {
        if (pos + 4 > s.size())
          return fail("a short \\u escape");
        char *end = nullptr;
        std::string hex = s.substr(pos, 4);
        unsigned long code = std::strtoul(hex.c_str(), &end, 16);
        if (end != hex.c_str() + 4)
          return fail("a bad \\u escape");
        pos += 4;
        // UTF-8 of a code unit (names are ASCII; surrogates are kept as is).
        if (code < 0x80) {
          out += char(code);
        } else if (code < 0x800) {
          out += char(0xC0 | (code >> 6));
          out += char(0x80 | (code & 0x3F));
        } else {
          out += char(0xE0 | (code >> 12));
          out += char(0x80 | ((code >> 6) & 0x3F));
          out += char(0x80 | (code & 0x3F));
        }
        break;
      }
      default:
        return fail(std::string("an unknown escape \\") + e);
      }
    }
    if (pos >= s.size())
      return fail("an unterminated string");
    ++pos; // the closing quote
    return true;
  }

  bool array(Json &out, int depth) {
    out.kind = Json::Array;
    ++pos;
    skip();
    if (pos < s.size() && s[pos] == ']') {
      ++pos;
      return true;
    }
    while (true) {
      out.items.emplace_back();
      if (!value(out.items.back(), depth + 1))
        return false;
      skip();
      if (pos < s.size() && s[pos] == ',') {
        ++pos;
        continue;
      }
      if (pos < s.size() && s[pos] == ']') {
        ++pos;
        return true;
      }
      return fail("expected ',' or ']'");
    }
  }

  bool object(Json &out, int depth) {
    out.kind = Json::Object;
    ++pos;
    skip();
    if (pos < s.size() && s[pos] == '}') {
      ++pos;
      return true;
    }
    while (true) {
      skip();
      std::string key;
      if (pos >= s.size() || s[pos] != '"' || !string(key))
        return problem.empty() ? fail("expected a member name") : false;
      skip();
      if (pos >= s.size() || s[pos] != ':')
        return fail("expected ':'");
      ++pos;
      Json item;
      if (!value(item, depth + 1))
        return false;
      if (out.members.count(key))
        return fail("member \"" + key + "\" repeated");
      out.members.emplace(key, std::move(item));
      skip();
      if (pos < s.size() && s[pos] == ',') {
        ++pos;
        continue;
      }
      if (pos < s.size() && s[pos] == '}') {
        ++pos;
        return true;
      }
      return fail("expected ',' or '}'");
    }
  }
};

Status malformed(const std::string &why) {
  return fail(SPARSEOPT_ERROR_PARSE, std::string(kSignatureFileName) + ": " + why);
}

/// A non-negative integer that fits 63 bits, or false.
bool integerOf(const Json &j, uint64_t &out) {
  if (j.kind != Json::Number || j.text.empty() || j.text[0] == '-')
    return false;
  for (char c : j.text)
    if (!std::isdigit(static_cast<unsigned char>(c)))
      return false;
  if (j.text.size() > 18)
    return false;
  out = std::strtoull(j.text.c_str(), nullptr, 10);
  return true;
}

/// One entry of "inputs" or "outputs"; `what` is "input 2" or "output 0".
Status tensorSpec(const Json &j, const std::string &what, TensorSpecDecl &out) {
  if (j.kind != Json::Object)
    return malformed(what + " must be an object");
  const Json *shape = j.member("shape");
  const Json *dtype = j.member("dtype");
  if (shape == nullptr || shape->kind != Json::Array)
    return malformed(what + " has no \"shape\" list");
  if (dtype == nullptr || dtype->kind != Json::String)
    return malformed(what + " has no \"dtype\" string");
  out.dtype = dtype->text;
  uint64_t elementBytes = elementTypeBytes(out.dtype);
  if (elementBytes == 0)
    return malformed(what + " has an unknown element type \"" + out.dtype +
                     "\"");
  out.bytes = elementBytes;
  out.text = out.dtype + "[";
  for (size_t d = 0; d < shape->items.size(); ++d) {
    const Json &dim = shape->items[d];
    uint64_t size = 0;
    if (!integerOf(dim, size) || size == 0)
      return malformed(what + " dimension " + std::to_string(d) + " is " +
                       (dim.kind == Json::Number ? dim.text : "not a number") +
                       ": every dimension must be a positive integer");
    if (size > (uint64_t(1) << 62) / out.bytes)
      return malformed(what + " is 2^62 bytes or more");
    out.bytes *= size;
    out.shape.push_back(size);
    out.text += (d ? ", " : "") + std::to_string(size);
  }
  out.text += "]";
  if (const Json *name = j.member("name")) {
    if (name->kind == Json::String)
      out.name = name->text;
    else if (name->kind != Json::Null)
      return malformed("the name of " + what + " must be a string");
  }
  return SPARSEOPT_OK;
}

Status tensorList(const Json &root, const char *key, const char *what,
                  std::vector<TensorSpecDecl> &out) {
  const Json *list = root.member(key);
  if (list == nullptr || list->kind != Json::Array)
    return malformed(std::string("no \"") + key + "\" list");
  for (size_t i = 0; i < list->items.size(); ++i) {
    out.emplace_back();
    if (Status s = tensorSpec(list->items[i],
                              std::string(what) + " " + std::to_string(i),
                              out.back()))
      return s;
  }
  return SPARSEOPT_OK;
}

/// Checks that `specs` describe `buffers` of the program, one for one.
Status sameBytes(const Manifest &m, const std::vector<size_t> &arguments,
                 const std::vector<TensorSpecDecl> &specs,
                 const std::vector<size_t> &buffers, const char *kind) {
  if (arguments.size() != buffers.size())
    return malformed("it describes " + std::to_string(arguments.size()) + " " +
                     kind + "(s) but program.txt has " +
                     std::to_string(buffers.size()));
  for (size_t i = 0; i < buffers.size(); ++i) {
    const TensorSpecDecl &spec = specs[arguments[i]];
    const BufferDecl &buffer = m.buffers[buffers[i]];
    if (spec.bytes != buffer.bytes)
      return malformed(std::string(kind) + " " + std::to_string(i) + " is " +
                       spec.text + " (" + std::to_string(spec.bytes) +
                       " bytes) but program.txt line " +
                       std::to_string(buffer.line) + " gives it " +
                       std::to_string(buffer.bytes) + " bytes");
  }
  return SPARSEOPT_OK;
}

} // namespace

uint64_t elementTypeBytes(const std::string &dtype) {
  if (dtype == "index")
    return 8;
  size_t at = 0;
  if (dtype.compare(0, 2, "bf") == 0 || dtype.compare(0, 2, "tf") == 0 ||
      dtype.compare(0, 2, "si") == 0 || dtype.compare(0, 2, "ui") == 0)
    at = 2;
  else if (!dtype.empty() && (dtype[0] == 'f' || dtype[0] == 'i'))
    at = 1;
  else
    return 0;
  size_t digits = at;
  while (digits < dtype.size() && digits < at + 4 &&
         std::isdigit(static_cast<unsigned char>(dtype[digits])))
    ++digits;
  if (digits == at)
    return 0;
  unsigned long bits = std::strtoul(dtype.substr(at, digits - at).c_str(),
                                    nullptr, 10);
  if (bits == 0 || bits > 1024)
    return 0;
  return (bits + 7) / 8;
}

Status readSignature(Manifest &m) {
  std::string path = joinPath(m.dir, kSignatureFileName);
  struct stat info;
  if (stat(path.c_str(), &info) != 0)
    return SPARSEOPT_OK; // optional: hand-written programs have none
  std::string text, reason;
  if (!readFile(path, text, reason))
    return fail(SPARSEOPT_ERROR_IO,
                std::string(kSignatureFileName) + ": cannot read " + path +
                    ": " + reason);
  Json root;
  if (!JsonReader(text).read(root, reason))
    return malformed(reason);
  if (root.kind != Json::Object)
    return malformed("expected an object");

  SignatureDecl &sig = m.signature;
  sig = SignatureDecl();
  const Json *function = root.member("function");
  if (function == nullptr || function->kind != Json::String)
    return malformed("no \"function\" name");
  sig.function = function->text;
  if (Status s = tensorList(root, "inputs", "input", sig.arguments))
    return s;
  if (Status s = tensorList(root, "outputs", "output", sig.outputs))
    return s;

  std::vector<bool> isParam(sig.arguments.size(), false);
  if (const Json *params = root.member("params");
      params != nullptr && params->kind != Json::Null) {
    if (params->kind != Json::Array)
      return malformed("\"params\" must be a list of argument positions");
    for (const Json &p : params->items) {
      uint64_t position = 0;
      if (!integerOf(p, position) || position >= sig.arguments.size())
        return malformed("param position " + p.text +
                         " is not an argument position (the function has " +
                         std::to_string(sig.arguments.size()) +
                         " arguments)");
      if (!sig.params.empty() && position <= sig.params.back())
        return malformed("\"params\" must be sorted and without repeats");
      sig.params.push_back(size_t(position));
      isParam[size_t(position)] = true;
    }
  }
  for (size_t a = 0; a < sig.arguments.size(); ++a)
    (isParam[a] ? sig.paramArguments : sig.inputArguments).push_back(a);

  std::vector<size_t> outputs(sig.outputs.size());
  for (size_t i = 0; i < outputs.size(); ++i)
    outputs[i] = i;
  if (Status s = sameBytes(m, sig.inputArguments, sig.arguments, m.inputs,
                           "input"))
    return s;
  if (Status s = sameBytes(m, sig.paramArguments, sig.arguments, m.params,
                           "param"))
    return s;
  if (Status s = sameBytes(m, outputs, sig.outputs, m.outputs, "output"))
    return s;
  sig.present = true;
  return SPARSEOPT_OK;
}

} // namespace sparseopt
