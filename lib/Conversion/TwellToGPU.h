//===- TwellToGPU.h - sgpu.twell_pack / sgpu.twell_ffn as kernels -*- C++ -*-===//
//
// The first GPU lowering of TwELL activations (CUDA cores only): a pack
// kernel writing the concrete form that TwellToLoops.h documents, and a
// consumer kernel reading only that form.
//
//===----------------------------------------------------------------------===//

#ifndef SPARSEOPT_LIB_CONVERSION_TWELLTOGPU_H
#define SPARSEOPT_LIB_CONVERSION_TWELLTOGPU_H

#include "TwellToLoops.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/SymbolTable.h"

namespace mlir {
namespace sgpu {

/// The largest output width d the consumer kernel supports: its f32
/// accumulator row lives in static shared memory (48 KiB).
constexpr int64_t kTwellMaxOutputFeatures = 12 * 1024 - 64;

/// Emits, before `op`, the buffers of the concrete form (memref.alloc), a
/// launch of `sgpu_twell_clear_<index>` (fallback-row count := 0) and one of
/// `sgpu_twell_pack_<index>` (one block per row) filling them. `op` stays
/// until its users are lowered; the caller erases it.
TwellBuffers lowerTwellPackToGPU(TwellPackOp op, gpu::GPUModuleOp gpuModule,
                                 SymbolTable &symbols, size_t index);

/// Replaces `op` by a launch of `sgpu_twell_ffn_<index>` (one block per
/// row) reading the concrete parts of its packed operand.
void lowerTwellFFNToGPU(TwellFFNOp op, const TwellBuffers &packed,
                        gpu::GPUModuleOp gpuModule, SymbolTable &symbols,
                        size_t index);

} // namespace sgpu
} // namespace mlir

#endif // SPARSEOPT_LIB_CONVERSION_TWELLTOGPU_H
