//===- InputNesting.h - Refuse input nested deeper than the parser can take ===//
//
// MLIR's parser recurses once per level of brackets, so text nested some
// 10,000 levels deep overflows its stack and kills the process. The driver
// (sparse-opt) and the C API check their input with this first and refuse
// anything nested deeper than kMaxInputNesting with a located error.
//
//===----------------------------------------------------------------------===//
#ifndef SPARSEOPT_PIPELINES_INPUTNESTING_H
#define SPARSEOPT_PIPELINES_INPUTNESTING_H

#include "llvm/ADT/StringRef.h"

namespace mlir::sgpu {

/// Far deeper than any model's IR (a few tens of levels), far below what
/// the parser's stack takes.
inline constexpr unsigned kMaxInputNesting = 1000;

/// The 1-based line of the first bracket ((, [, { or <) that opens level
/// kMaxInputNesting + 1 of `text`, or 0 when the text stays within the
/// limit. Brackets inside strings and `//` comments do not count; `->` is
/// not a closing bracket.
unsigned lineNestedTooDeep(llvm::StringRef text);

} // namespace mlir::sgpu

#endif // SPARSEOPT_PIPELINES_INPUTNESTING_H
