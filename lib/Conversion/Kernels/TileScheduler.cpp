//===- TileScheduler.cpp - the TMA pipeline's output tiles ----------------===//
//
// A block's tiles are tile = blockIdx, blockIdx + grid, ...: one iteration
// for a grid of one block per tile, a loop over tiles for a persistent
// grid (its stride read from the launch, sized at load time), the split as
// the slowest index under split-K, and pairs (or fours) of A blocks per
// tile with a cluster.
//
//===----------------------------------------------------------------------===//

#include "Kernels/TmaPipeline.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace mlir::sgpu;
using namespace mlir::sgpu::tma;

/// With a cluster the loop runs over the cluster's tiles, clusterIdx,
/// clusterIdx + clusters, ..., the same in all its blocks (they exchange B
/// parts at every k-tile). A grid that loops over tiles strides by the
/// launch's grid (gpu.grid_dim); a fixed one by its compile-time size,
/// which the compiler folds into a single iteration.
void TileScheduler::forEachTile(
    function_ref<void(Value tile, Value itBase)> body) {
  int64_t blockTiles = k.blockTiles;
  int64_t total = cfg.gridX * cfg.gridY * cfg.splits / cfg.cluster;
  Value first = cfg.cluster > 1 ? im.div(k.bid, cfg.cluster) : k.bid;
  if (!cfg.loopsOverTiles()) {
    int64_t step = cfg.gridSize / cfg.cluster;
    scf::ForOp::create(
        b, loc, first, im.c(total), im.c(step), ValueRange{},
        [&](OpBuilder &, Location, Value tile, ValueRange) {
          Value ordinal = im.div(im.sub(tile, first), step);
          body(tile, im.mul(ordinal, blockTiles));
          scf::YieldOp::create(b, loc);
        });
    return;
  }
  Value step = im.div(gpu::GridDimOp::create(b, loc, gpu::Dimension::x),
                      cfg.cluster);
  scf::ForOp::create(
      b, loc, first, im.c(total), step, ValueRange{im.c(0)},
      [&](OpBuilder &, Location, Value tile, ValueRange itBase) {
        body(tile, itBase[0]);
        scf::YieldOp::create(b, loc, im.add(itBase[0], blockTiles));
      });
}

/// Tile order: a one-dimensional index walked in groups of kGroup token
/// blocks, feature blocks fastest inside a group, so that the tiles in
/// flight at one time share a few token blocks of X and a band of W in L2
/// (row-major order re-streams all of X for every pair of feature blocks
/// once X outgrows L2). Split-K: the split is the slowest index.
TileCoords TileScheduler::coordinates(Value tile) {
  TileCoords at;
  Value lin = tile;
  if (cfg.splits > 1) {
    int64_t perSplit = cfg.gridX * cfg.gridY;
    at.split = im.div(lin, perSplit);
    lin = im.rem(lin, perSplit);
    at.kt0 = im.mul(at.split, cfg.kTilesPerSplit);
  } else {
    at.kt0 = im.c(0);
  }
  // With a cluster, `tile` numbers pairs of A blocks (2p, 2p + 1) of one
  // B block; the block of rank r takes A block 2p + r.
  int64_t gridY = cfg.gridY / cfg.cluster;
  int64_t perGroup = kGroup * gridY;
  Value inGroup = im.rem(lin, perGroup);
  Value first = im.mul(im.div(lin, perGroup), kGroup);
  Value rows = arith::MinUIOp::create(b, loc, im.sub(im.c(cfg.gridX), first),
                                      im.c(kGroup));
  Value bx = im.add(first, arith::RemUIOp::create(b, loc, inGroup, rows));
  Value by = arith::DivUIOp::create(b, loc, inGroup, rows);
  if (cfg.cluster > 1)
    by = im.add(im.mul(by, cfg.cluster), k.rank);
  at.aRow0 = im.mul(by, kBlockRows);
  at.bRow0 = im.mul(bx, cfg.tokensPerBlock);
  return at;
}

void TileScheduler::forEachKTile(
    Value count, Value before,
    function_ref<void(Value kt, Value it, Value st)> body) {
  scf::ForOp::create(b, loc, im.c(0), count, im.c(1), ValueRange{},
                     [&](OpBuilder &, Location, Value kt, ValueRange) {
                       Value it = im.add(before, kt);
                       body(kt, it, im.rem(it, cfg.stages));
                       scf::YieldOp::create(b, loc);
                     });
}

/// tile = blockIdx, blockIdx + grid, ... (the compile-time grid: the order
/// below is tuned to it). The tile's k-tile count is 0 for a skipped tile
/// (rows) or follows the block's count (kRows); the loop carries the
/// block's k-tiles before the tile.
void TileScheduler::forEachGatherTile(
    function_ref<void(Value blk, Value nt, Value nk, Value it)> body) {
  int64_t total = cfg.gridX * cfg.gridY;
  scf::ForOp::create(
      b, loc, k.bid, im.c(total), im.c(cfg.gridSize), ValueRange{im.c(0)},
      [&](OpBuilder &, Location, Value tile, ValueRange carried) {
        // Block-major: the column tiles of a block run at the same time
        // on neighbouring blocks of the grid, sharing its A rows in L2.
        // rows: the column tile is skewed by the block (nt = (tile + blk)
        // mod gridX): the live tiles are each block's first ones, and
        // with a grid stride that is a multiple of gridX (132 = 6 x 22 at
        // F = 5632) a block of the grid would otherwise always get the
        // same column tile, live for every block or for none.
        Value blk = im.div(tile, cfg.gridX);
        Value nt = im.rem(tile, cfg.gridX);
        if (k.gatherRows())
          nt = im.rem(im.add(nt, blk), cfg.gridX);
        Value count = arith::IndexCastOp::create(
            b, loc, b.getIndexType(),
            memref::LoadOp::create(b, loc, k.gatherCount, ValueRange{blk}));
        Value nk;
        if (k.gatherRows())
          nk = arith::SelectOp::create(
              b, loc, im.lt(im.mul(nt, kTmaGatherCols), count),
              im.c(cfg.kTilesPerSplit), im.c(0));
        else
          nk = im.div(im.add(count, kKTile - 1), kKTile);
        body(blk, nt, nk, carried[0]);
        scf::YieldOp::create(b, loc, ValueRange{im.add(carried[0], nk)});
      });
}
