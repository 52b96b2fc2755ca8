//===- Signature.h - signature.json: the host function's tensors -*- C++ -*-===//
//
// The compiler writes signature.json beside program.txt: the host function's
// name, the shape and element type of each argument and result, and which
// arguments are params (weights). The runtime reads it when it parses a
// program (it is optional: a hand-written program may have none) and checks
// it against the program: every dimension a positive integer, every element
// type known, the params' positions valid, and the byte size of each tensor
// equal to the size of the program buffer it describes. A signature that
// disagrees with its program is a PARSE error, not a run with wrong shapes.
//
//===----------------------------------------------------------------------===//
#ifndef SPARSEOPT_RUNTIME_SIGNATURE_H
#define SPARSEOPT_RUNTIME_SIGNATURE_H

#include "Errors.h"

#include <cstdint>
#include <string>
#include <vector>

namespace sparseopt {

struct Manifest;

/// The signature file name inside an artifact directory.
inline constexpr const char *kSignatureFileName = "signature.json";

/// One argument or result.
struct TensorSpecDecl {
  std::vector<uint64_t> shape;
  std::string dtype; ///< an MLIR element type name: f16, bf16, f32, i32, ...
  std::string name;  ///< a param's qualified name, or empty
  uint64_t bytes = 0;
  std::string text; ///< "bf16[16, 4096]", as the queries return it
};

struct SignatureDecl {
  bool present = false;
  std::string function;
  std::vector<TensorSpecDecl> arguments; ///< inputs and params, in order
  std::vector<TensorSpecDecl> outputs;
  std::vector<size_t> params; ///< argument positions, sorted
  /// The argument of each program input and of each program param.
  std::vector<size_t> inputArguments, paramArguments;
};

/// Bytes per element of an MLIR element type name (f16 -> 2, i1 -> 1,
/// index -> 8), as the compiler sizes buffers; 0 when not a type name.
uint64_t elementTypeBytes(const std::string &dtype);

/// Reads <m.dir>/signature.json into m.signature when the file exists and
/// checks it against the parsed program `m`. Errors: PARSE (malformed, or
/// not the program's), IO (unreadable), each starting "signature.json: ".
Status readSignature(Manifest &m);

} // namespace sparseopt

#endif // SPARSEOPT_RUNTIME_SIGNATURE_H
