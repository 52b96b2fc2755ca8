//===- TwellToGPU.h - sgpu.twell_pack / sgpu.twell_ffn as kernels -*- C++ -*-===//
//
// The GPU lowering of TwELL activations (CUDA cores): a pack kernel writing
// the concrete form that TwellToLoops.h documents (TwellToGPU.cpp), and a
// consumer kernel reading only that form (TwellConsumerGPU.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef SPARSEOPT_LIB_CONVERSION_TWELLTOGPU_H
#define SPARSEOPT_LIB_CONVERSION_TWELLTOGPU_H

#include "TwellToLoops.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/SymbolTable.h"

#include <string>

namespace mlir {
namespace sgpu {

/// Threads of a consumer block (at most; fewer for a narrow output).
constexpr int64_t kTwellConsumerThreads = 256;
/// The most entries a tile may hold (W - 1) for the GPU consumer: it
/// stages a whole tile's entries in static shared memory (8 bytes each).
constexpr int64_t kTwellMaxTileEntries = 4096;
/// The largest output width d the consumer kernel supports: each thread
/// keeps its share of the f32 output row in at most 64 registers.
constexpr int64_t kTwellMaxOutputFeatures = kTwellConsumerThreads * 64;

/// Allocates at `b` the concrete parts of `op`'s value and the run's
/// nonzero count (`active`, [1] i64), both counters marked as program
/// stats (`twell<index>.fallback_rows`, `twell<index>.active_neurons`,
/// with the pack's break-even density as the limit).
TwellBuffers allocTwellPackBuffers(OpBuilder &b, TwellPackOp op, size_t index,
                                   Value &active);

/// Why `matmul` and the `pack` of its output cannot become the fused
/// sm_90a producer (empty when they can): the matmul must have a ReLU
/// epilogue, no other user, 16-bit operands and result, K a multiple of 8
/// (TMA row pitches), and the tile must be 64, 128 or 256 columns (one
/// wgmma N). (TwellProducerGPU.cpp)
std::string whyNoFusedTwellProducer(MatmulOp matmul, TwellPackOp pack);

/// Emits, before `pack`, the fused producer of its value: the buffers of
/// allocTwellPackBuffers, a clear kernel (counters and flags), the TMA +
/// wgmma GEMM `sgpu_twell_producer_<index>` of `matmul` whose epilogue
/// applies bias and ReLU and packs every (row, tile) from the accumulators,
/// and `sgpu_twell_fixup_<index>`, which completes the fallback rows of the
/// rows that overflowed. `cluster` 2 pairs the blocks of two token blocks
/// into clusters sharing W's tile (a remark where they cannot pair).
/// `matmul` and `pack` stay until the consumers are lowered; the caller
/// erases them. (TwellProducerGPU.cpp)
TwellBuffers lowerFusedTwellProducer(MatmulOp matmul, TwellPackOp pack,
                                     gpu::GPUModuleOp gpuModule,
                                     SymbolTable &symbols, size_t index,
                                     int64_t reserveSMs, int64_t cluster = 1);

/// Emits, before `op`, the buffers of the concrete form (memref.alloc), a
/// launch of `sgpu_twell_clear_<index>` (fallback-row count := 0) and one of
/// `sgpu_twell_pack_<index>` (one block per row) filling them. `op` stays
/// until its users are lowered; the caller erases it.
TwellBuffers lowerTwellPackToGPU(TwellPackOp op, gpu::GPUModuleOp gpuModule,
                                 SymbolTable &symbols, size_t index);

/// Emits a launch of `sgpu_twell_down_t_<index>` writing `op`'s down
/// projection Wd [d, F] transposed, [F, d], into a new buffer, which it
/// returns. The launch is a prepare-stage step (run when the params are
/// bound) when Wd is a constant or an argument read only as the down
/// projection of TwELL consumers, and it is then placed where Wd is
/// defined, and reused by every consumer of the same Wd through `atBind`;
/// otherwise it runs before `op`. `count` numbers the kernels.
/// (TwellConsumerGPU.cpp)
Value transposeTwellDown(TwellFFNOp op, DenseMap<Value, Value> &atBind,
                         gpu::GPUModuleOp gpuModule, SymbolTable &symbols,
                         size_t &count);

/// Replaces `op` by a launch of `sgpu_twell_ffn_<index>` (one block per
/// row) reading the concrete parts of its packed operand and `downT`, the
/// down projection transposed by transposeTwellDown. (TwellConsumerGPU.cpp)
void lowerTwellFFNToGPU(TwellFFNOp op, const TwellBuffers &packed,
                        Value downT, gpu::GPUModuleOp gpuModule,
                        SymbolTable &symbols, size_t index);

} // namespace sgpu
} // namespace mlir

#endif // SPARSEOPT_LIB_CONVERSION_TWELLTOGPU_H
