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

} // namespace sgpu
} // namespace mlir

#endif // SPARSEOPT_LIB_CONVERSION_LIFTTOGPU_H
