//===- SpmmTMA.h - the warp-specialized TMA GEMM kernels (sm_90a) -*- C++ -*-===//
//
// Y[M, N] = X[M, K] . W[N, K]^T with W 2:4-compressed, on
// wgmma.mma_async.sp fed by TMA through an mbarrier pipeline. See
// SpmmTMA.cpp for the kernel, SpmmTMAConfig.cpp for the tile table and
// docs/design.md for the measurements behind it.
//
// The same pipeline also runs dense: D[M, N] = A[M, K] . B[N, K]^T on
// wgmma.mma_async (no metadata) with an epilogue the caller builds; the
// TwELL producer (TwellProducerGPU.cpp) packs its output there.
//
//===----------------------------------------------------------------------===//

#ifndef SPARSEOPT_LIB_CONVERSION_SPMMTMA_H
#define SPARSEOPT_LIB_CONVERSION_SPMMTMA_H

#include "SpmmWGMMA.h"
#include "sparse-opt/Conversion/DeviceInfo.h"

#include <functional>
#include <string>

namespace mlir {
namespace gpu {
class GPUFuncOp;
} // namespace gpu

namespace sgpu {

/// How the gathered mode (TmaSpmmConfig::gather) picks B. In both, A is
/// 64 rows (one block of tokens, shared by the two consumer warpgroups,
/// each of which takes half of the block's 256 B columns, m64n128k16), and
/// block b's list is idx[b, 0 .. count[b]) (padded with valid rows to a
/// multiple of 256):
///  * rows: D[64, 256] = A[64, K] . S[idx[b, 256 t + j], K]^T: the B rows
///    (the N of the GEMM) are rows of the source S [R, K], K-major;
///    tiles t with 256 t >= count[b] are skipped.
///  * kRows: D[64, 256] = A[64, count[b]] . S[idx[b, k], 256 t + j]: the
///    K rows of B are rows of S [R, N] (N contiguous: an MN-major operand),
///    ceil(count[b] / 64) k-tiles; a block with count 0 stores zeros.
enum class TmaGatherKind { none, rows, kRows };

/// Launch configuration of the TMA kernel for one problem.
struct TmaSpmmConfig {
  int64_t tokensPerBlock; ///< BN: tokens per block, the N of m64nNk32.
  int64_t stages;         ///< shared-memory pipeline stages
  int64_t threads;        ///< 384: one producer and two consumer warpgroups
  int64_t gridX;          ///< token blocks
  int64_t gridY;          ///< feature blocks (128 weight rows each)
  /// Split-K: the k-tiles are cut into `splits` ranges of `kTilesPerSplit`
  /// (the last may run past K: it reads zeros), one block per range. With
  /// more than one split the kernel writes f32 partial sums to a workspace
  /// [splits, M, N] and a reduce kernel (buildSplitKReduceKernel) adds them
  /// and applies the epilogue.
  int64_t splits;
  int64_t kTilesPerSplit;
  /// Persistent grid: gridSize = min(tiles, multiprocessors - reserved)
  /// blocks, each walking tiles blockIdx, blockIdx + grid, ...; otherwise
  /// one block per tile (gridSize = gridX * gridY * splits).
  bool persistent;
  int64_t gridSize;
  /// Whether blocks loop over tiles (a persistent grid smaller than the
  /// tiles on the compile's device). Such a kernel strides by its launch's
  /// grid, which the runtime sizes on the device the program loads on
  /// (sgpu.persistent_grid); a grid of one block per tile stays fixed, its
  /// loop a single iteration the compiler folds.
  bool loopsOverTiles() const {
    return persistent && gridSize < gridX * gridY * splits;
  }
  /// The launch is one-dimensional, gridSize blocks; tiles are numbered in
  /// grouped order within each split (see SpmmTMA.cpp).
  int64_t dynamicSharedBytes;
  /// Byte offset (after the 1024-aligned base) of the mbarriers: past the
  /// stages and the TMA-store staging boxes.
  int64_t barriersOffset;
  /// Box shapes of the tensor maps, outermost first: the B operand (X,
  /// [BN, 64]), the A operand (compressed values, [128, 32]; dense: A's
  /// rows, [128, 64]), metadata words [8, 16 * steps] and, with the fused
  /// lift, the values of the third step [128, 16]. With liftByTma the B
  /// box is also W1's.
  int64_t bBox[2], aBox[2], metaBox[2], a2Box[2];
  /// Swizzle (bytes) of the B, A and A2 maps; the metadata map has none.
  int64_t bSwizzle, aSwizzle, a2Swizzle;
  /// The fused 6:8 lift (weights in the tiled window order, tile_groups 8):
  /// X is the original [M, K] activation; each stage holds 64 columns of
  /// it (k32 steps 0 and 1, in place) and the producer warps gather the
  /// 32 lifted columns of step 2 into shared memory.
  bool fusedLift = false;
  /// The split 6:8 lift (weights in the window order of tile_groups 16;
  /// not with fusedLift): the kernel runs over the lifted K' as with a
  /// lifted X, but loads each stage's B tile from where those lifted
  /// columns already are: k-tile 3T + r is X's columns 128T + 64r for
  /// r = 0, 1 and, for r = 2, W1's columns 64T, where W1 [M, K'/3] holds
  /// the shared windows (W1[m, 4g + l] = X[m, 8g + 2 + l]) that the split
  /// lift kernel writes. A fourth tensor map (W1's, the same box as X's)
  /// follows the values' map.
  bool liftByTma = false;
  /// k32 wgmma steps per stage: 2, or 3 with the fused lift.
  int64_t steps = 2;
  /// Dense mode (getTmaDenseConfig): A is a dense [M, K] matrix (128 rows
  /// per block, two warpgroups of 64), B a dense [N, K] one (BN rows per
  /// block, in tokensPerBlock), four wgmma.mma_async m64nBNk16 per stage,
  /// no metadata and no split-K; the epilogue is the caller's.
  bool dense = false;
  /// Blocks per cluster, 1, 2 or 4. With c > 1, the blocks of a cluster
  /// compute the A blocks cp .. cp + c - 1 of one B block and each loads
  /// 1/c of the B tile, multicast into all (the B box is [BN/c, 64]): 1/c
  /// of the L2 reads of B. Needs gridY a multiple of c, one split and no
  /// fused lift.
  int64_t cluster = 1;
  /// The epilogue stages each warpgroup's 64 x BN output tile in shared
  /// memory (stmatrix, 128B-swizzled) and writes it with TMA bulk tensor
  /// stores of [yBox[0] tokens, 64 features] boxes, which also clip the M
  /// and N tails; yBox[0] is min(BN, 128), halved (down to 16) while the
  /// staging would cost a pipeline stage. Needs a 16-bit result, one split and
  /// N % 8 == 0 (the tensor map's 16-byte row pitch); see whyNoTmaStore.
  /// The staging buffer (stagingBytes, both warpgroups) sits between the
  /// stages and the barriers.
  bool tmaStore = false;
  int64_t yBox[2] = {0, 0};
  /// With tmaStore: Y is several buffers, the column slices of Y starting
  /// at these features (the first 0, each a multiple of 64, so that every
  /// 64-feature box lies in one slice), one tensor map each; empty: one Y.
  /// The siblings that sgpu-fuse-sibling-spmm fused into one GEMM.
  SmallVector<int64_t, 4> ySliceStarts;
  int64_t stagingBytes = 0;
  /// Gathered mode (getTmaGatherConfig; implies dense): the B operand's
  /// rows are picked through an index list, copied by the producer
  /// warpgroup's 128 threads with cp.async, and a tile's k-tile count and
  /// liveness come from a per-block count read at run time. See
  /// TmaGatherKind.
  TmaGatherKind gather = TmaGatherKind::none;
  /// Gathered mode: B's rows by TMA instead of cp.async, one box of one row
  /// and 64 columns (128 B, 128B swizzle) per row and 64 columns, issued by
  /// the producer warpgroup's threads into the same places; the source is
  /// then a tensor map.
  bool gatherByTma = false;
  /// The weight's values and metadata do not change between runs (a
  /// constant, or prepared when the params are bound): the producer loads
  /// them for the block's first `min(stages, k-tiles)` k-tiles before it
  /// waits for the kernel before it (`griddepcontrol.wait`), so under a
  /// programmatic launch the weight stream starts while that kernel ends.
  /// Plain sparse mode only (no dense, gathered or fused-lift mode, one
  /// block per cluster); set by the spmm lowering (weightIsRunInvariant).
  bool prefetchWeights = false;
};

/// Where one consumer thread's accumulators sit in a dense-mode output tile,
/// in the fragment order of SpmmEpilogue.h: element 4q + e is
/// D[rowBase + g + 8(e/2)][colBase + 8q + 2t + e%2]. All index values.
struct TmaFragment {
  Value rowBase; ///< the warp's first row: tile row + 64 warpgroup + 16 warp
  Value colBase; ///< the tile's first column
  Value g, t;    ///< lane / 4 and lane % 4
  Value lane;    ///< lane in the warp
};

/// Builds a dense-mode epilogue at the builder's insertion point (inside
/// each consumer thread, once per output tile): `args` are the kernel's
/// arguments after the two tensor maps.
using TmaDenseEpilogue = std::function<void(
    OpBuilder &b, ArrayRef<Value> acc, const TmaFragment &at,
    ValueRange args)>;

/// Whether the TMA kernel takes the problem: TMA needs 16-byte aligned row
/// pitches, so K must be a multiple of 8 (16-bit activations).
bool tmaSpmmApplies(const SpmmShape &s);

/// Whether the fused 6:8 lift can be used for `s` (its k is the original
/// K of X, paddedK the tiled K' of the weight): K a multiple of 8 and K'
/// of 96 per 64 columns.
bool tmaFusedLiftApplies(const SpmmShape &s);

/// Whether the split 6:8 lift can be used for `s` (the lifted shape: its
/// paddedK is the weight's K') with X of `xCols` columns: K a multiple of 8
/// (16-byte row pitches) and K' of 192 per 128 columns of X (tile_groups
/// 16).
bool tmaSplitLiftApplies(const SpmmShape &s, int64_t xCols);

/// The tile table: the block's token count BN and the stages that fit.
/// `tileN` / `stages` other than 0 override the table's choice (a tile
/// sweep), as does `splitK` other than 0 for the split count; check them
/// first with verifyTmaSpmmOverrides.
TmaSpmmConfig getTmaSpmmConfig(const SpmmShape &s, int64_t tileN = 0,
                               int64_t stages = 0, int64_t splitK = 0,
                               bool persistent = true,
                               const KernelBudget &budget = KernelBudget(),
                               bool fusedLift = false, int64_t cluster = 1,
                               bool tmaStore = false, bool liftByTma = false);

/// The resolved choices of one TMA spmm configuration, as
/// #sgpu.spmm_config records them: what getTmaSpmmConfig decided, from
/// which buildTmaSpmmConfig derives the rest (grid, boxes, the
/// shared-memory layout).
struct TmaSpmmTiling {
  int64_t tileN;     ///< tokens per block
  int64_t stages;    ///< shared-memory stages
  int64_t splits;    ///< split-K blocks per tile (1: none)
  int64_t cluster;   ///< blocks per cluster
  int64_t storeBox;  ///< TMA-store box tokens (0: stores from registers)
  bool persistent;
};

/// The choices `cfg` made.
TmaSpmmTiling getTmaSpmmTiling(const TmaSpmmConfig &cfg);

/// The configuration of `tiling` for `s` (with the fused or split lift);
/// for a tiling taken from getTmaSpmmConfig, the same configuration.
TmaSpmmConfig buildTmaSpmmConfig(const SpmmShape &s,
                                 const TmaSpmmTiling &tiling,
                                 const KernelBudget &budget, bool fusedLift,
                                 bool liftByTma);

/// Why the output tiles of `cfg` cannot be written by TMA stores (empty
/// when they can): see TmaSpmmConfig::tmaStore. `forcedStages` is the
/// stages override (0: the table's), which may leave no room for the
/// staging buffer.
std::string whyNoTmaStore(const SpmmShape &s, const TmaSpmmConfig &cfg,
                          int64_t forcedStages = 0,
                          const KernelBudget &budget = KernelBudget());

/// Why the configuration cannot run in clusters of `cluster` (2 or 4; empty when it
/// can): see TmaSpmmConfig::cluster. A configuration asked for a cluster
/// of two keeps cluster = 1 when this is not empty.
std::string whyNoTmaCluster(const TmaSpmmConfig &cfg,
                            const KernelBudget &budget = KernelBudget(),
                            int64_t cluster = 2);

/// Why the overrides cannot be used (empty when they can): tileN must be 0
/// or a power of two in [16, 256]; stages 0 or at least 2, and the stages
/// must fit in the budget's shared memory; splitK from 0 to 32; the
/// reserved multiprocessors fewer than the device has.
std::string verifyTmaSpmmOverrides(int64_t tileN, int64_t stages,
                                   int64_t splitK = 0,
                                   const KernelBudget &budget = KernelBudget());

/// Builds the kernel body into `func`, whose arguments are: the tensor maps
/// of X, of the compressed values, (with the fused lift) of the values of
/// the third step, (cfg.liftByTma) of the shared windows W1, and of the
/// metadata (as !llvm.ptr, listed in the
/// function's `sgpu.tensor_map_args`), then (cfg.tmaStore) the tensor map
/// of Y (one per slice with cfg.ySliceStarts), then the bias memref when the
/// spmm has one, then Y (without cfg.tmaStore). With cfg.splits > 1: the three maps, then the f32
/// workspace memref [splits, M, N] (no bias: the reduce kernel adds it).
void buildTmaSpmmKernel(OpBuilder &b, Location loc, const SpmmShape &s,
                        const TmaSpmmConfig &cfg, gpu::GPUFuncOp func);

/// The dense configuration for D[m, n] = A[m, k] . B[n, k]^T with BN =
/// `tileN` columns per block (64, 128 or 256): stages as many as fit (at
/// most 4), a persistent grid of at most budget.persistentBlocks(), in
/// clusters of `cluster` (1, 2 or 4) where whyNoTmaCluster allows.
TmaSpmmConfig getTmaDenseConfig(int64_t m, int64_t n, int64_t k,
                                int64_t tileN,
                                const KernelBudget &budget = KernelBudget(),
                                int64_t cluster = 1);

/// The gathered configuration (see TmaGatherKind) for `blocks` blocks of 64
/// rows of A, `n` columns of D (tiles of 256) and at most `k` of K (A's
/// columns; the k-tiles of `rows` mode), a persistent grid of at most
/// budget.persistentBlocks() blocks.
TmaSpmmConfig getTmaGatherConfig(TmaGatherKind kind, int64_t blocks,
                                 int64_t n, int64_t k,
                                 const KernelBudget &budget = KernelBudget(),
                                 bool byTma = false);

/// The rows of A and the columns of D per tile in gathered mode.
inline constexpr int64_t kTmaGatherRows = 64, kTmaGatherCols = 256;

/// Builds a dense-mode kernel (getTmaDenseConfig or getTmaGatherConfig)
/// into `func`, with `epilogue` run for each output tile.
///  * Dense: the arguments are the tensor maps of A (box [128, 64], 128B
///    swizzle) and of B (box [BN, 64], 128B swizzle) as !llvm.ptr, then
///    those the epilogue reads. `s` gives m, n, k and the element type.
///  * Gathered (cfg.gather): the tensor map of A (box [64, 64], 128B
///    swizzle) as !llvm.ptr, the source S of B's rows (memref [R, C] of the
///    element type; with cfg.gatherByTma its tensor map, box [1, 64], 128B
///    swizzle), idx (memref [blocks, L] i32), count (memref [blocks] i32),
///    then those the epilogue reads. `s` gives the element type and s.k the
///    row length C of S (K for rows mode, N for kRows). The epilogue runs
///    for live tiles only; TmaFragment's rowBase is the warp's first row of
///    A (64 b + 16 w) and colBase the first column of D of the consumer
///    warpgroup (256 t + 128 c).
void buildTmaDenseKernel(OpBuilder &b, Location loc, const SpmmShape &s,
                         const TmaSpmmConfig &cfg, gpu::GPUFuncOp func,
                         const TmaDenseEpilogue &epilogue);

/// The split-K reduce kernel: Y[m, n] = act(sum_s W[s, m, n] + bias[n]),
/// rounded once. Arguments: the workspace, the bias memref when the spmm
/// has one, Y. One thread per output element, kSplitKReduceThreads per
/// block. With `columns` (widths summing to N) Y is that many buffers
/// instead, the j-th [M, columns[j]] holding Y's columns from the sum of the
/// widths before it on (the slices of sibling GEMMs fused into one,
/// sgpu-fuse-sibling-spmm).
void buildSplitKReduceKernel(OpBuilder &b, Location loc, const SpmmShape &s,
                             int64_t splits, gpu::GPUFuncOp func,
                             ArrayRef<int64_t> columns = {});
inline constexpr int64_t kSplitKReduceThreads = 256;

} // namespace sgpu
} // namespace mlir

#endif // SPARSEOPT_LIB_CONVERSION_SPMMTMA_H
