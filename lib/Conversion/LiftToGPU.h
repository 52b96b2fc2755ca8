//===- LiftToGPU.h - sgpu.lift as a generated gather kernel -----*- C++ -*-===//

#ifndef SPARSEOPT_LIB_CONVERSION_LIFTTOGPU_H
#define SPARSEOPT_LIB_CONVERSION_LIFTTOGPU_H

#include "KernelSink.h"
#include "sparse-opt/Dialect/SGPU/SGPU.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Transforms/DialectConversion.h"
#include "llvm/ADT/SmallPtrSet.h"

namespace mlir {
namespace sgpu {

/// The pattern replacing sgpu.lift by a launch of a generated gather
/// kernel (one thread per one or two 4-column chunks of the lifted row; per
/// element for an odd K, LiftToGPU.cpp) added to the sink as
/// `sgpu_lift_<n>`; a lift in `loweredWithSpmm` (the spmm it feeds lowered
/// it) is erased.
void populateLiftToGPUPatterns(
    RewritePatternSet &patterns, KernelSink &sink,
    const llvm::SmallPtrSetImpl<Operation *> &loweredWithSpmm);
/// The same gather into a new `M x pitch` buffer (pitch >= the lifted K'),
/// launched at `host`; the columns past K' read zeros (their source
/// index is past K). Returns the buffer and leaves `op` in place: the
/// caller (a consumer that wants aligned rows) replaces its use.
Value lowerLiftToGPUPadded(OpBuilder &host, LiftOp op, int64_t pitch,
                           KernelSink &sink);
/// The split lift of a 6:8 lift in the window order of tile_groups 16: a
/// new `M x K'/3` buffer W1 holding only the shared
/// windows, W1[m, 4g + l] = x[m, 8g + 2 + l] (zero past K), written by the
/// same generated kernel at `host`; the TMA spmm loads X itself for the
/// other two thirds of the lifted columns. Returns W1 and leaves `op` in
/// place, as lowerLiftToGPUPadded does.
Value lowerLiftWindowsToGPU(OpBuilder &host, LiftOp op, KernelSink &sink);

} // namespace sgpu
} // namespace mlir

#endif // SPARSEOPT_LIB_CONVERSION_LIFTTOGPU_H
