//===- TwellToLoops.h - reference loops for the TwELL ops -------*- C++ -*-===//
//
// Reference (CPU) semantics of sgpu.twell_pack and sgpu.twell_ffn, used by
// convert-sgpu-to-loops. The packed value is materialized in its concrete
// form (the one `!sgpu.twell` documents), so a CPU run checks the format and
// its overflow path, not only the FFN's arithmetic.
//
//===----------------------------------------------------------------------===//

#ifndef SPARSEOPT_LIB_CONVERSION_TWELLTOLOOPS_H
#define SPARSEOPT_LIB_CONVERSION_TWELLTOLOOPS_H

#include "sparse-opt/Dialect/SGPU/SGPU.h"

namespace mlir {
namespace sgpu {

/// The concrete parts of one `!sgpu.twell<MxFxT, #sgpu.twell<tile = TT,
/// compression = C>>` value, as buffers (W = TT / C, NT = ceil(F / TT)):
///   words        memref<M x NT x W x i32>  word 0: count, 1..: entries
///   flags        memref<M x i32>           1 where the row overflowed
///   fallback     memref<M x F x T>         the overflowing rows, others 0
///   fallbackRows memref<1 x i32>           how many rows overflowed
struct TwellBuffers {
  Value words, flags, fallback, fallbackRows;
};

/// Emits, before `op`, the loops that fill the concrete parts from the op's
/// input and returns them; `op` stays until its users are lowered, then the
/// caller erases it. With `report`, the program prints the fallback-row
/// count when it runs.
TwellBuffers lowerTwellPackToLoops(TwellPackOp op, bool report);

/// Replaces `op` by loops reading the concrete parts of its packed operand.
void lowerTwellFFNToLoops(TwellFFNOp op, const TwellBuffers &packed);

} // namespace sgpu
} // namespace mlir

#endif // SPARSEOPT_LIB_CONVERSION_TWELLTOLOOPS_H
