//===- LiftToGPU.h - sgpu.lift as a generated gather kernel -----*- C++ -*-===//

#ifndef SPARSEOPT_LIB_CONVERSION_LIFTTOGPU_H
#define SPARSEOPT_LIB_CONVERSION_LIFTTOGPU_H

#include "sparse-opt/Dialect/SGPU/SGPU.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/SymbolTable.h"

namespace mlir {
namespace sgpu {

/// Replaces `op` by a launch of a generated gather kernel (one thread per
/// one or two 4-column chunks of the lifted row; per element for an odd K,
/// LiftToGPU.cpp) added to `gpuModule` as `sgpu_lift_<index>`.
void lowerLiftToGPU(LiftOp op, gpu::GPUModuleOp gpuModule,
                    SymbolTable &symbols, size_t index);

/// The same gather into a new `M x pitch` buffer (pitch >= the lifted K'),
/// launched before `op`; the columns past K' read zeros (their source
/// index is past K). Returns the buffer and leaves `op` in place: the
/// caller (a consumer that wants aligned rows) replaces its use.
Value lowerLiftToGPUPadded(LiftOp op, int64_t pitch,
                           gpu::GPUModuleOp gpuModule, SymbolTable &symbols,
                           size_t index);

/// The split lift of a 6:8 lift in the window order of tile_groups 16: a
/// new `M x K'/3` buffer W1 holding only the shared
/// windows, W1[m, 4g + l] = x[m, 8g + 2 + l] (zero past K), written by the
/// same generated kernel before `op`; the TMA spmm loads X itself for the
/// other two thirds of the lifted columns. Returns W1 and leaves `op` in
/// place, as lowerLiftToGPUPadded does.
Value lowerLiftWindowsToGPU(LiftOp op, gpu::GPUModuleOp gpuModule,
                            SymbolTable &symbols, size_t index);

} // namespace sgpu
} // namespace mlir

#endif // SPARSEOPT_LIB_CONVERSION_LIFTTOGPU_H
