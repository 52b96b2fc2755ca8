//===- SpmmTMAConfig.cpp - the TMA kernel's tile table --------------------===//
//
// Tile table (getTmaSpmmConfig), from the H200 sweeps in
// docs/performance.md: BN starts at the power of two >= M (16 .. 256) and
// halves, down to 64, while the grid has fewer blocks than half the
// multiprocessors (the device's, DeviceInfo.h: 132 on H100 SXM/H200); 256
// becomes 128 where the 128-token tiles' waves cost less (a mostly empty
// last wave); stages are as many as fit in a block's shared memory (227
// KiB on sm_90), at most 8 (4 for BN = 256) and at most the number of
// k-tiles. Also the configurations of the dense and gathered modes, the
// overrides' checks and the reasons against clusters and the TMA store.
//
//===----------------------------------------------------------------------===//

#include "SpmmTMA.h"
#include "SpmmTMALayout.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::sgpu;
using namespace mlir::sgpu::tma;

bool mlir::sgpu::tmaSpmmApplies(const SpmmShape &s) { return s.k % 8 == 0; }

bool mlir::sgpu::tmaFusedLiftApplies(const SpmmShape &s) {
  return s.k % 8 == 0 && s.paddedK == (s.k + kKTile - 1) / kKTile * 96;
}

bool mlir::sgpu::tmaSplitLiftApplies(const SpmmShape &s, int64_t xCols) {
  return xCols % 8 == 0 &&
         s.paddedK == (xCols + 2 * kKTile - 1) / (2 * kKTile) * 3 * kKTile;
}

std::string mlir::sgpu::verifyTmaSpmmOverrides(int64_t tileN, int64_t stages,
                                               int64_t splitK,
                                               const KernelBudget &budget) {
  int64_t reserveSMs = budget.reservedSMs;
  if (reserveSMs < 0 || reserveSMs >= budget.numSMs)
    return "reserve-sms=" + std::to_string(reserveSMs) + " is not 0 to " +
           std::to_string(budget.numSMs - 1);
  if (tileN != 0 && (tileN < 16 || tileN > 256 || (tileN & (tileN - 1))))
    return "tile-n=" + std::to_string(tileN) +
           " is not 0 or a power of two from 16 to 256";
  if (stages == 1 || stages < 0)
    return "stages=" + std::to_string(stages) + " is not 0 or at least 2";
  if (splitK < 0 || splitK > kMaxSplits)
    return "split-k=" + std::to_string(splitK) + " is not 0 to " +
           std::to_string(kMaxSplits);
  int64_t bytes = stages * stageBytes(tileN ? tileN : 256) + 16 * stages +
                  kAlignSlack;
  if (stages && bytes > budget.sharedPerBlock)
    return "stages=" + std::to_string(stages) + " with " +
           std::to_string(tileN ? tileN : 256) + "-token tiles needs " +
           std::to_string(bytes) + " bytes of shared memory; a block has " +
           std::to_string(budget.sharedPerBlock);
  return "";
}

std::string mlir::sgpu::whyNoTmaCluster(const TmaSpmmConfig &cfg,
                                        const KernelBudget &budget,
                                        int64_t cluster) {
  std::string n = std::to_string(cluster);
  if (cfg.persistent && budget.persistentBlocks() < cluster)
    return "reserve-sms=" + std::to_string(budget.reservedSMs) +
           " leaves fewer than the " + n + " multiprocessors of a cluster";
  if (cfg.splits > 1)
    return "the grid is split along K";
  if (cfg.fusedLift)
    return "the 6:8 lift is fused into the kernel";
  if (cfg.gridY % cluster)
    return "the " + std::to_string(cfg.gridY) + " blocks of 128 A rows " +
           (cluster == 2 ? std::string("do not pair up")
                         : "do not form groups of " + n);
  if (cfg.tokensPerBlock % cluster || cfg.tokensPerBlock / cluster < 8)
    return "a " + std::to_string(cfg.tokensPerBlock) +
           "-row B tile does not split into " + n + " boxes of 8 rows or more";
  return "";
}

std::string mlir::sgpu::whyNoTmaStore(const SpmmShape &s,
                                      const TmaSpmmConfig &cfg,
                                      int64_t forcedStages,
                                      const KernelBudget &budget) {
  if (cfg.dense)
    return "the kernel is in dense mode";
  if (cfg.splits > 1)
    return "the grid is split along K (f32 partial sums)";
  if (s.resultType.getIntOrFloatBitWidth() != 16) {
    std::string type;
    llvm::raw_string_ostream os(type);
    os << s.resultType;
    return "the result type is " + type + ", not 16-bit";
  }
  if (s.n % 8)
    return "N = " + std::to_string(s.n) +
           " is not a multiple of 8 (a tensor map needs 16-byte row pitches)";
  // The smallest boxes' staging (getTmaSpmmConfig takes larger ones
  // where they fit).
  int64_t staging = 2 * std::min<int64_t>(cfg.tokensPerBlock, kMinYBox) * 128;
  int64_t stages = forcedStages ? forcedStages : 2;
  int64_t bytes = stages * stageBytes(cfg.tokensPerBlock, cfg.fusedLift) +
                  staging +
                  (cfg.fusedLift ? 24 : 16) * std::max(stages, kMaxStages) +
                  kAlignSlack;
  if (bytes > budget.sharedPerBlock)
    return "stages=" + std::to_string(stages) + " leave no room for the " +
           std::to_string(staging) + "-byte staging buffer";
  return "";
}

/// Sets the stage count (as many stages of `stageBytes` as fit beside
/// `barrierBytes` of mbarriers per stage and cfg.stagingBytes of TMA-store
/// staging, at most `maxStages` and the k-tiles of a block; `forced` when
/// not 0) and the shared-memory layout: the stages, the staging buffer,
/// then the barriers, plus the alignment slack.
static void placeStages(TmaSpmmConfig &cfg, const KernelBudget &budget,
                        int64_t stageBytes, int64_t barrierBytes,
                        int64_t maxStages, int64_t forced = 0) {
  cfg.stages = std::min<int64_t>(
      {maxStages, cfg.kTilesPerSplit,
       (budget.sharedPerBlock - kAlignSlack - barrierBytes * kMaxStages -
        cfg.stagingBytes) /
           stageBytes});
  if (forced)
    cfg.stages = forced;
  cfg.barriersOffset = cfg.stages * stageBytes + cfg.stagingBytes;
  cfg.dynamicSharedBytes =
      cfg.barriersOffset + barrierBytes * cfg.stages + kAlignSlack;
}

/// The spmm's TMA boxes and swizzles (before any cluster splits the B
/// box).
static void setTmaSpmmBoxes(TmaSpmmConfig &cfg) {
  cfg.bBox[0] = cfg.tokensPerBlock;
  cfg.bBox[1] = kKTile;
  cfg.aBox[0] = kBlockRows;
  cfg.aBox[1] = kKTile / 2;
  cfg.metaBox[0] = kBlockRows / 16;
  cfg.metaBox[1] = cfg.steps * 16;
  cfg.a2Box[0] = kBlockRows;
  cfg.a2Box[1] = 16;
  cfg.bSwizzle = 128;
  cfg.aSwizzle = 64;
  cfg.a2Swizzle = 32;
}

/// Groups the blocks into clusters of `cluster` (2 or 4) where
/// whyNoTmaCluster allows (see TmaSpmmConfig::cluster): the grid becomes a
/// whole number of clusters and each block loads 1/cluster of the B box.
static void applyCluster(TmaSpmmConfig &cfg, int64_t cluster,
                         const KernelBudget &budget) {
  if (cluster < 2 || !whyNoTmaCluster(cfg, budget, cluster).empty())
    return;
  cfg.cluster = cluster;
  int64_t groups = cfg.gridX * cfg.gridY / cluster;
  cfg.gridSize =
      cluster * (cfg.persistent
                     ? std::min(groups, budget.persistentBlocks() / cluster)
                     : groups);
  cfg.bBox[0] = cfg.tokensPerBlock / cluster;
}

/// What every spmm configuration starts from: the threads, the lift's
/// k32 steps per k-tile and the blocks of 128 weight rows.
static TmaSpmmConfig startTmaSpmmConfig(const SpmmShape &s, bool fusedLift,
                                        bool liftByTma) {
  TmaSpmmConfig cfg;
  cfg.threads = kThreads;
  cfg.fusedLift = fusedLift;
  cfg.liftByTma = liftByTma && !fusedLift;
  cfg.steps = fusedLift ? kFusedLiftSteps : kSteps;
  cfg.gridY = (s.paddedN + kBlockRows - 1) / kBlockRows;
  return cfg;
}

TmaSpmmConfig mlir::sgpu::getTmaSpmmConfig(const SpmmShape &s, int64_t tileN,
                                           int64_t stages, int64_t splitK,
                                           bool persistent,
                                           const KernelBudget &budget,
                                           bool fusedLift, int64_t cluster,
                                           bool tmaStore, bool liftByTma) {
  const int64_t numSMs = budget.numSMs;
  TmaSpmmConfig cfg = startTmaSpmmConfig(s, fusedLift, liftByTma);
  int64_t bn = 16;
  while (bn < 256 && bn < s.m)
    bn *= 2;
  while (bn > 64 && ((s.m + bn - 1) / bn) * cfg.gridY < numSMs / 2)
    bn /= 2;
  // Waves: every block of the grid walks ceil(tiles / SMs) tiles, so a
  // last wave that is mostly empty costs a whole one. 128-token tiles
  // take 0.54-0.60 of a 256-token tile's time (H200, 512 tokens,
  // bench/results/spmm_mid_*_h200.json): take them where their waves cost
  // less (512 x 18944: 5 x 0.57 < 3 waves, 1.05-1.12x faster; 512 x
  // 14336: 4 x 0.57 > 2, kept).
  auto waves = [&](int64_t tokens) {
    int64_t tiles = ((s.m + tokens - 1) / tokens) * cfg.gridY;
    return (tiles + numSMs - 1) / numSMs;
  };
  if (bn == 256 && waves(128) * kHalfTileCost < waves(256))
    bn = 128;
  if (tileN)
    bn = tileN;
  cfg.tokensPerBlock = bn;
  cfg.gridX = (s.m + bn - 1) / bn;
  int64_t kTiles = kTilesOf(s.paddedK, cfg.steps);
  // Split-K where the grid cannot fill half the multiprocessors
  // (SplitKRule.h).
  int64_t splits = splitKCount(cfg.gridX * cfg.gridY, kTiles, numSMs);
  if (splitK)
    splits = std::min(splitK, kTiles);
  cfg.kTilesPerSplit = (kTiles + splits - 1) / splits;
  cfg.splits = (kTiles + cfg.kTilesPerSplit - 1) / cfg.kTilesPerSplit;
  // Persistent: one block per multiprocessor walks the tiles, so the
  // producer loads the next tile while the consumers store this one.
  int64_t tiles = cfg.gridX * cfg.gridY * cfg.splits;
  cfg.persistent = persistent;
  // Multiprocessors left free keep NCCL's kernels from waiting behind a
  // grid that occupies every one (tensor-parallel overlap).
  cfg.gridSize =
      persistent ? std::min(tiles, budget.persistentBlocks()) : tiles;
  // full and empty barriers per stage, and with the fused lift `ready`.
  auto place = [&] {
    placeStages(cfg, budget, stageBytes(bn, fusedLift), fusedLift ? 24 : 16,
                bn == 256 ? kMaxStages256 : kMaxStages, stages);
  };
  place();
  if (tmaStore && whyNoTmaStore(s, cfg, stages, budget).empty()) {
    // Boxes of up to 128 tokens x 64 features (128 B rows), one staging
    // box per consumer warpgroup, halved (more boxes per tile, down to 16
    // tokens) while the staging would cost a stage: at 128-token tiles 8
    // stages leave room for 64-token boxes only.
    int64_t fullStages = cfg.stages;
    cfg.tmaStore = true;
    cfg.yBox[1] = 64;
    for (cfg.yBox[0] = std::min<int64_t>(bn, 128);; cfg.yBox[0] /= 2) {
      cfg.stagingBytes = 2 * cfg.yBox[0] * 128;
      place();
      bool fits = cfg.dynamicSharedBytes <= budget.sharedPerBlock;
      if ((fits && cfg.stages >= fullStages) || cfg.yBox[0] <= kMinYBox)
        break;
    }
  }
  setTmaSpmmBoxes(cfg);
  applyCluster(cfg, cluster, budget);
  return cfg;
}

TmaSpmmTiling mlir::sgpu::getTmaSpmmTiling(const TmaSpmmConfig &cfg) {
  return {cfg.tokensPerBlock, cfg.stages,
          cfg.splits,         cfg.cluster,
          cfg.tmaStore ? cfg.yBox[0] : 0, cfg.persistent};
}

TmaSpmmConfig mlir::sgpu::buildTmaSpmmConfig(const SpmmShape &s,
                                             const TmaSpmmTiling &tiling,
                                             const KernelBudget &budget,
                                             bool fusedLift, bool liftByTma) {
  TmaSpmmConfig cfg = startTmaSpmmConfig(s, fusedLift, liftByTma);
  int64_t bn = tiling.tileN;
  cfg.tokensPerBlock = bn;
  cfg.gridX = (s.m + bn - 1) / bn;
  int64_t kTiles = (s.paddedK / 32 + cfg.steps - 1) / cfg.steps;
  int64_t splits = std::min(tiling.splits, kTiles);
  cfg.kTilesPerSplit = (kTiles + splits - 1) / splits;
  cfg.splits = (kTiles + cfg.kTilesPerSplit - 1) / cfg.kTilesPerSplit;
  int64_t tiles = cfg.gridX * cfg.gridY * cfg.splits;
  cfg.persistent = tiling.persistent;
  cfg.gridSize =
      tiling.persistent ? std::min(tiles, budget.persistentBlocks()) : tiles;
  if (tiling.storeBox) {
    cfg.tmaStore = true;
    cfg.yBox[0] = tiling.storeBox;
    cfg.yBox[1] = 64;
    cfg.stagingBytes = 2 * cfg.yBox[0] * 128;
  }
  placeStages(cfg, budget, stageBytes(bn, fusedLift), fusedLift ? 24 : 16,
              bn == 256 ? kMaxStages256 : kMaxStages, tiling.stages);
  setTmaSpmmBoxes(cfg);
  applyCluster(cfg, tiling.cluster, budget);
  return cfg;
}

/// The start of a dense-mode configuration (dense wgmma, k16 steps): a
/// `tileN`-column B tile, `gridX` x `gridY` tiles of one split, `kTiles`
/// k-tiles each, on a persistent grid.
static TmaSpmmConfig startDenseConfig(int64_t tileN, int64_t gridX,
                                      int64_t gridY, int64_t kTiles,
                                      const KernelBudget &budget) {
  TmaSpmmConfig cfg;
  cfg.threads = kThreads;
  cfg.dense = true;
  cfg.steps = kKTile / 16;
  cfg.tokensPerBlock = tileN;
  cfg.gridX = gridX;
  cfg.gridY = gridY;
  cfg.splits = 1;
  cfg.kTilesPerSplit = kTiles;
  cfg.persistent = true;
  cfg.gridSize = std::min(cfg.gridX * cfg.gridY, budget.persistentBlocks());
  return cfg;
}

TmaSpmmConfig mlir::sgpu::getTmaDenseConfig(int64_t m, int64_t n, int64_t k,
                                            int64_t tileN,
                                            const KernelBudget &budget,
                                            int64_t cluster) {
  TmaSpmmConfig cfg =
      startDenseConfig(tileN, (n + tileN - 1) / tileN,
                       (m + kBlockRows - 1) / kBlockRows,
                       (k + kKTile - 1) / kKTile, budget);
  placeStages(cfg, budget, stageBytes(tileN, false, true), 16, kMaxStages256);
  // A single stage only where a tile has a single k-tile: the consumers
  // release a stage one k-tile late, so one stage would wait on itself.
  assert((cfg.stages >= 2 || cfg.kTilesPerSplit == 1) &&
         "one stage with several k-tiles would deadlock");
  cfg.aBox[0] = kBlockRows;
  cfg.aBox[1] = kKTile;
  cfg.bBox[0] = tileN;
  cfg.bBox[1] = kKTile;
  cfg.aSwizzle = cfg.bSwizzle = 128;
  applyCluster(cfg, cluster, budget);
  return cfg;
}

TmaSpmmConfig mlir::sgpu::getTmaGatherConfig(TmaGatherKind kind,
                                             int64_t blocks, int64_t n,
                                             int64_t k,
                                             const KernelBudget &budget,
                                             bool byTma) {
  TmaSpmmConfig cfg = startDenseConfig(
      kTmaGatherCols, (n + kTmaGatherCols - 1) / kTmaGatherCols, blocks,
      std::max<int64_t>(1, (k + kKTile - 1) / kKTile), budget);
  cfg.gather = kind;
  cfg.gatherByTma = byTma;
  placeStages(cfg, budget, kGatherABytes + kGatherBBytes, 16, kGatherMaxStages);
  // Two stages at least: a tile's k-tile count is known only at run time.
  if (cfg.stages < 2)
    placeStages(cfg, budget, kGatherABytes + kGatherBBytes, 16,
                kGatherMaxStages, 2);
  cfg.aBox[0] = kTmaGatherRows;
  cfg.aBox[1] = kKTile;
  cfg.aSwizzle = 128;
  return cfg;
}
