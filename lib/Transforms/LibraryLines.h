//===- LibraryLines.h - the program lines of library calls -----*- C++ -*-===//
//
// sgpu-emit-artifacts writes each host library call as one line of the
// runtime program (docs/runtime.md): sgpu.gemm_call as a `gemm` line
// (cuBLASLt), sgpu.attention_call as an `attention` line (cuDNN).
//
//===----------------------------------------------------------------------===//

#ifndef SPARSEOPT_TRANSFORMS_LIBRARYLINES_H
#define SPARSEOPT_TRANSFORMS_LIBRARYLINES_H

#include "mlir/IR/Operation.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/raw_ostream.h"

namespace mlir {
namespace sgpu {

/// Writes `call` (an sgpu.gemm_call or sgpu.attention_call) as its program
/// line to `os`; `ids` numbers the program's buffers. Fails with an error at
/// the call when an operand is no buffer of the program.
LogicalResult writeLibraryLine(Operation *call,
                               const llvm::DenseMap<Value, int> &ids,
                               raw_ostream &os);

} // namespace sgpu
} // namespace mlir

#endif // SPARSEOPT_TRANSFORMS_LIBRARYLINES_H
