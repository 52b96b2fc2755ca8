//===- NormToGPU.h - sgpu.rms_norm / sgpu.layer_norm as kernels -*- C++ -*-===//

#ifndef SPARSEOPT_LIB_CONVERSION_NORMTOGPU_H
#define SPARSEOPT_LIB_CONVERSION_NORMTOGPU_H

#include "sparse-opt/Dialect/SGPU/SGPU.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/SymbolTable.h"

namespace mlir {
namespace sgpu {

/// Threads per block of the normalization kernels for rows of `d` features:
/// 256, or the fewest whole warps covering `d` when that is less.
int64_t normBlockThreads(int64_t d);

/// Replaces `op` (sgpu.rms_norm or sgpu.layer_norm) by a launch of a
/// generated kernel, one block per row, added to `gpuModule` as
/// `sgpu_rms_norm_<index>` / `sgpu_layer_norm_<index>`.
void lowerNormToGPU(Operation *op, gpu::GPUModuleOp gpuModule,
                    SymbolTable &symbols, size_t index);

} // namespace sgpu
} // namespace mlir

#endif // SPARSEOPT_LIB_CONVERSION_NORMTOGPU_H
