//===- TwellToGPU.h - sgpu.twell_pack / sgpu.twell_ffn as kernels -*- C++ -*-===//
//
// The GPU lowering of TwELL activations (CUDA cores): a pack kernel writing
// the concrete form that TwellToLoops.h documents (TwellToGPU.cpp), and a
// consumer kernel reading only that form (TwellConsumerGPU.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef SPARSEOPT_LIB_CONVERSION_TWELLTOGPU_H
#define SPARSEOPT_LIB_CONVERSION_TWELLTOGPU_H

#include "KernelSink.h"
#include "TwellToLoops.h"
#include "sparse-opt/Conversion/DeviceInfo.h"
#include "sparse-opt/Conversion/TargetInfo.h"

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

/// Allocates at `b` the two program stats of `op` (see
/// allocTwellPackBuffers): returns the fallback-row count ([1] i32) and
/// sets `active` ([1] i64).
Value allocTwellStats(OpBuilder &b, TwellPackOp op, size_t index,
                      Value &active);

/// Appends `sgpu_twell_clear_<index>` (1 thread: every stat, [1] i32 or
/// i64, := 0) to `kb`'s gpu.module and returns it; `kb` is left after it.
gpu::GPUFuncOp buildTwellClearKernel(OpBuilder &kb, Location loc,
                                     SymbolTable &symbols, ValueRange stats,
                                     size_t index);

/// Where the tensor-core consumer cannot run `ffn` (empty when it can):
/// sm_90a wgmma, d a multiple of 8 (16-byte row chunks), and a pack fed by
/// the library producer, whose H the block pack reads.
/// (TwellTensorCoreGPU.cpp)
std::string whyNoTwellTensorCores(TwellFFNOp ffn, const TargetInfo &target,
                                  bool fusedProducer);

/// The block form of TwELL activations that the tensor-core consumer
/// reads, per block b of 64 rows (Nb blocks, F padded to Fp, a multiple of
/// 256): count[b] (how many neurons are active in any of its rows, U),
/// idx[b, 0 .. U) those neurons in increasing order, then 0 up to the next
/// multiple of 256, and coef[64 b + r, p] = H[64 b + r, idx[b, p]] (0 past
/// U and past M), plus the two stats of the pack (fallback rows stay 0:
/// the form has no capacity). (TwellTensorCoreGPU.cpp)
struct TwellBlocks {
  Value idx, coef, count, fallbackRows, active;
  /// The stat `twell<i>.block_neurons` ([1] i64, out of Nb * F): the sum of
  /// the blocks' U, what the tensor cores work on (the measured union).
  Value blockNeurons;
};

/// Emits at `b` (before `pack`) the buffers of the block form, the clear kernel
/// and `sgpu_twell_blocks_<index>` (one block of 256 threads per 64 rows)
/// filling them from the pack's input H. (TwellTensorCoreGPU.cpp)
TwellBlocks lowerTwellPackToBlocks(OpBuilder &b, TwellPackOp pack,
                                   KernelSink &sink, size_t index);

/// At `b`: the tensor-core consumer of `op`, returning its result: for a gated FFN
/// `sgpu_twell_up_<index>`, the gathered GEMM P = (X . Wu[idx]^T) * coef,
/// over coef, or into a buffer of its own when the pack has other
/// consumers; then `sgpu_twell_down_<index>`, Y = P . WdT[idx]
/// (both the gathered mode of the TMA pipeline, SpmmTMA.h; `gatherByTma`:
/// the gathered rows by TMA boxes instead of cp.async).
/// (TwellTensorCoreGPU.cpp)
Value lowerTwellFFNToTensorCores(OpBuilder &b, TwellFFNOp op,
                                 const TwellBlocks &blocks, Value downT,
                                 KernelSink &sink, size_t index,
                                 const KernelBudget &budget,
                                 bool gatherByTma = false);

/// Why `matmul` and the `pack` of its output cannot become the fused
/// sm_90a producer (empty when they can): the matmul must have a ReLU
/// epilogue, no other user, 16-bit operands and result, K a multiple of 8
/// (TMA row pitches), and the tile must be 64, 128 or 256 columns (one
/// wgmma N). (TwellProducerGPU.cpp)
std::string whyNoFusedTwellProducer(MatmulOp matmul, TwellPackOp pack);

/// Emits at `b` (before `pack`) the fused producer of its value: the buffers of
/// allocTwellPackBuffers, a clear kernel (counters and flags), the TMA +
/// wgmma GEMM `sgpu_twell_producer_<index>` of `matmul` whose epilogue
/// applies bias and ReLU and packs every (row, tile) from the accumulators,
/// and `sgpu_twell_fixup_<index>`, which completes the fallback rows of the
/// rows that overflowed. `cluster` 2 pairs the blocks of two token blocks
/// into clusters sharing W's tile (a remark where they cannot pair).
/// `matmul` and `pack` stay until the consumers are lowered; the caller
/// erases them. (TwellProducerGPU.cpp)
TwellBuffers lowerFusedTwellProducer(OpBuilder &b, MatmulOp matmul,
                                     TwellPackOp pack, KernelSink &sink,
                                     size_t index, const KernelBudget &budget,
                                     int64_t cluster = 1);

/// Emits at `b` (before `op`) the buffers of the concrete form (memref.alloc), a
/// launch of `sgpu_twell_clear_<index>` (fallback-row count := 0) and one of
/// `sgpu_twell_pack_<index>` (one block per row) filling them. `op` stays
/// until its users are lowered; the caller erases it.
TwellBuffers lowerTwellPackToGPU(OpBuilder &b, TwellPackOp op,
                                 KernelSink &sink, size_t index);

/// Emits a launch of `sgpu_twell_down_t_<index>` writing `op`'s down
/// projection Wd [d, F] transposed, [F, d], into a new buffer, which it
/// returns. The launch is a prepare-stage step (run when the params are
/// bound) when Wd is a constant or an argument read only as the down
/// projection of TwELL consumers, and it is then placed where Wd is
/// defined, and reused by every consumer of the same Wd through `atBind`;
/// otherwise it runs before `op`. `count` numbers the kernels.
/// (TwellTransposeGPU.cpp)
Value transposeTwellDown(OpBuilder &b, TwellFFNOp op,
                         DenseMap<Value, Value> &atBind, KernelSink &sink,
                         size_t &count);

/// The automatic pass count of the CUDA-core consumer (measured on an H200,
/// bf16, M = 16384, docs/performance.md "Passes over the neurons"): more
/// than one pass only for rows of at most kTwellPassMaxRowBytes whose
/// weights (Wu and WdT rows) exceed kTwellPassMinWeightBytes, then enough
/// that each pass visits at most kTwellPassWeightBytes. At d = 2048,
/// F = 14336 (117 MB) three passes were 18% (0.5% active) and 27% (2%)
/// faster than one; 46 MB (d = 2048, F = 5632) and d = 4096 lost with more
/// passes at 0.5% (the f32 partial sums, M * d * 8 bytes per extra pass,
/// cost more than the L2 hits gain).
constexpr int64_t kTwellPassMaxRowBytes = 4096;
constexpr int64_t kTwellPassMinWeightBytes = 64 << 20;
constexpr int64_t kTwellPassWeightBytes = 40 << 20;

/// The passes of `op`'s CUDA-core consumer over its tiles: `requested`
/// (capped at the tile count) when positive, else the automatic count
/// above. (TwellConsumerGPU.cpp)
int64_t twellConsumerPasses(TwellFFNOp op, int64_t requested);

/// At `b`: `passes` launches of `sgpu_twell_ffn_<index>` (one
/// block per row) reading the concrete parts of its packed operand and
/// `downT`, the down projection transposed by transposeTwellDown. Each pass
/// visits a range of the tiles; with several, the rows' f32 partial sums
/// wait in a buffer of the program between them. (TwellConsumerGPU.cpp)
Value lowerTwellFFNToGPU(OpBuilder &b, TwellFFNOp op,
                         const TwellBuffers &packed, Value downT,
                         KernelSink &sink, size_t index, int64_t passes = 1);

/// Elements per load of H when the consumer reads it (16 bytes): the pack
/// is fused into its consumer only when F is a multiple of it.
constexpr int64_t kTwellFromHVector = 8;

/// The pack fused into its only consumer (convert-sgpu-to-gpu
/// twell-pack=consumer): emits at `b` (before `pack`) its two stats (the fallback
/// rows stay 0: nothing has a capacity) and their clear kernel, and returns
/// H (the pack's input) and the nonzero stat `active`; no pack kernel runs.
/// (TwellToGPU.cpp)
std::pair<Value, Value> lowerTwellPackIntoConsumer(OpBuilder &b,
                                                   TwellPackOp pack,
                                                   KernelSink &sink,
                                                   size_t index);

/// Why the pack of `op` cannot be fused into it (empty when it can): F a
/// multiple of kTwellFromHVector and at most 8 vectors per thread of the
/// consumer (F <= 8192 at d <= 2048). (TwellConsumerGPU.cpp)
std::string whyNoTwellPackInConsumer(TwellFFNOp op);

/// At `b`: a launch of `sgpu_twell_ffn_<index>` (one block per
/// row) that finds the row's active neurons in `h` itself (a scan of the
/// row, a block-wide prefix of the counts placing the entries),
/// adds the row's count to `active` and then runs as lowerTwellFFNToGPU's
/// kernel. (TwellConsumerGPU.cpp)
Value lowerTwellFFNFromH(OpBuilder &b, TwellFFNOp op, Value h, Value active,
                         Value downT, KernelSink &sink, size_t index);

} // namespace sgpu
} // namespace mlir

#endif // SPARSEOPT_LIB_CONVERSION_TWELLTOGPU_H
