//===- TmaProducer.cpp - the TMA pipeline's producer and loaders ----------===//
//
// One thread of warpgroup 0 issues, per k-tile, the stage's TMA loads into
// the next free stage, all completing on that stage's `full` mbarrier
// (expect_tx with the stage's byte count first). Out-of-bounds boxes read
// as zeros, so M, N and K tails need no masks.
//
//===----------------------------------------------------------------------===//

#include "Kernels/TmaPipeline.h"
#include "WgmmaAsm.h"

#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace mlir::sgpu;
using namespace mlir::sgpu::tma;

void TmaProducer::build(Value isThread0) {
  setMaxRegisters(b, loc, cfg.fusedLift ? kGatherProducerRegs : kProducerRegs,
                  /*increase=*/false);
  auto only = scf::IfOp::create(b, loc, isThread0, false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(&only.getThenRegion().front());
  SmallVector<Value> maps = {k.tmB, k.tmA, k.tmA2, k.tmO, k.tmE};
  maps.append(k.tmYSlices.begin(), k.tmYSlices.end());
  for (Value tm : maps)
    if (tm)
      asmVoid(b, loc, "prefetch.tensormap [$0];", {tm}, "l");
  int64_t prefetched = prefetchWeights();
  tiles.forEachTile([&](Value tile, Value itBase) {
    TileCoords at = tiles.coordinates(tile);
    Value rowTile0 = k.toI32(im.div(at.aRow0, 16));
    Value featRow0 = k.toI32(at.aRow0);
    Value tokRow0 = k.toI32(at.bRow0);
    scf::ForOp::create(
        b, loc, im.c(0), im.c(k.blockTiles), im.c(1), ValueRange{},
        [&](OpBuilder &, Location, Value kt, ValueRange) {
          Value it = im.add(itBase, kt);
          Value st = im.rem(it, cfg.stages);
          // Coordinates of the tile's global k-tile.
          auto kTile32 = [&] { return k.toI32(im.add(at.kt0, kt)); };
          auto whole = [&] {
            Value full = beginStage(it, st);
            loadStage(st, kTile32(), featRow0, rowTile0, tokRow0, full);
          };
          if (prefetched == 0) {
            whole();
          } else {
            // The block's first `prefetched` stages already hold their
            // weight parts: only X is left to load into them.
            Value early = arith::CmpIOp::create(
                b, loc, arith::CmpIPredicate::ult, it, im.c(prefetched));
            auto split = scf::IfOp::create(b, loc, early, /*else=*/true);
            OpBuilder::InsertionGuard inner(b);
            b.setInsertionPointToStart(&split.getThenRegion().front());
            loadX(st, kTile32(), tokRow0, ring.full(st));
            b.setInsertionPointToStart(&split.getElseRegion().front());
            whole();
          }
          scf::YieldOp::create(b, loc);
        });
  });
}

/// Waits until stage `st` (iteration `it`) is free and arms its `full`
/// barrier with the stage's byte count; returns the barrier.
Value TmaProducer::beginStage(Value it, Value st) {
  // Free once the consumers released it; the first pass over the stages
  // waits on the parity of the phase before the first (complete from the
  // start).
  Value parity = k.toI32(im.rem(im.add(im.div(it, cfg.stages), 1), 2));
  ring.wait(ring.empty(st), parity);
  Value full = ring.full(st);
  asmVoid(b, loc, "mbarrier.arrive.expect_tx.shared::cta.b64 _, [$0], $1;",
          {full, im.i32(layout.txBytes)}, "r,r");
  return full;
}

/// With cfg.prefetchWeights: arms the first min(stages, k-tiles) stages and
/// loads the weight's values and metadata of the block's first tile into
/// them, then waits for the kernel before this one (its X) and lets the
/// kernel after this one launch. Returns how many stages it filled (0
/// without prefetch: the kernel's entry waits, sgpu-programmatic-launch).
///
/// Only this thread waits. The other threads stay ordered after the kernel
/// before because each stage's `full` barrier also counts X's bytes, loaded
/// after the wait, and they touch global memory (bias, epilogue stores,
/// split-K partials) only after their first `full` wait: keep it so.
int64_t TmaProducer::prefetchWeights() {
  if (!cfg.prefetchWeights)
    return 0;
  int64_t count = std::min(cfg.stages, k.blockTiles);
  Value first = k.bid; // one block per cluster: the block's first tile
  TileCoords at = tiles.coordinates(first);
  Value rowTile0 = k.toI32(im.div(at.aRow0, 16));
  Value featRow0 = k.toI32(at.aRow0);
  for (int64_t i = 0; i < count; ++i) {
    Value st = im.c(i);
    Value full = beginStage(st, st);
    Value kt32 = k.toI32(im.add(at.kt0, im.c(i)));
    loadValues(st, kt32, featRow0, full);
    loadMetadata(st, kt32, rowTile0, full);
  }
  NVVM::GriddepcontrolOp::create(b, loc, NVVM::GridDepActionKind::wait);
  NVVM::GriddepcontrolOp::create(b, loc,
                                 NVVM::GridDepActionKind::launch_dependents);
  return count;
}

/// Values: 16 per k32 step and row; X: 64 original columns (the lifted
/// ones of the fused lift's step 2 are gathered from them); metadata: 16
/// words per step and row tile. Dense: A's 128 rows and B's BN rows, 64
/// columns of each.
void TmaProducer::loadStage(Value st, Value kt32, Value featRow0,
                            Value rowTile0, Value tokRow0, Value full) {
  auto mul32 = [&](Value v, int64_t c) {
    return arith::MulIOp::create(b, loc, v, im.i32(c)).getResult();
  };
  if (cfg.dense) {
    Value col = mul32(kt32, kKTile);
    k.load2d(k.smemAddr(k.stageOffset(st, layout.a)), k.tmA, col, featRow0,
           full);
    loadB(st, col, tokRow0, full);
    return;
  }
  Value valCol = loadValues(st, kt32, featRow0, full);
  if (cfg.fusedLift)
    k.load2d(k.smemAddr(k.stageOffset(st, layout.a2)), k.tmA2,
           arith::AddIOp::create(b, loc, valCol, im.i32(32)), featRow0, full);
  loadX(st, kt32, tokRow0, full);
  loadMetadata(st, kt32, rowTile0, full);
}

/// Sparse modes: stage `st`'s box of the weight's values for global k-tile
/// `kt32` (i32); returns its first column.
Value TmaProducer::loadValues(Value st, Value kt32, Value featRow0,
                              Value full) {
  Value valCol = arith::MulIOp::create(b, loc, kt32, im.i32(k.steps * 16));
  k.load2d(k.smemAddr(k.stageOffset(st, layout.a)), k.tmA, valCol, featRow0,
           full);
  return valCol;
}

/// Sparse modes: stage `st`'s metadata words for global k-tile `kt32`.
void TmaProducer::loadMetadata(Value st, Value kt32, Value rowTile0,
                               Value full) {
  k.load2d(k.smemAddr(k.stageOffset(st, layout.e)), k.tmE,
           arith::MulIOp::create(b, loc, kt32, im.i32(k.steps * 16)),
           rowTile0, full);
}

/// Sparse modes: stage `st`'s X part of global k-tile `kt32` (i32), X's
/// columns or, with the split lift, X's or W1's.
void TmaProducer::loadX(Value st, Value kt32, Value tokRow0, Value full) {
  if (cfg.liftByTma)
    loadSplitLiftB(st, kt32, tokRow0, full);
  else
    loadB(st, arith::MulIOp::create(b, loc, kt32, im.i32(kKTile)), tokRow0,
          full);
}

/// The B tile of stage `st` (rows from `row0`, columns from `col`): one
/// load, or with a cluster this block's part of the rows, multicast into
/// every block at the same offset (each block's `full` barrier counts the
/// whole tile's bytes).
void TmaProducer::loadB(Value st, Value col, Value row0, Value full) {
  loadBFrom(k.tmB, st, col, row0, full);
}

/// The split lift's B tile of global k-tile `kt32` (i32), kt32 = 3T + r:
/// X's columns 128T + 64r for r < 2, else W1's columns 64T (the map and
/// the column are selected at run time).
void TmaProducer::loadSplitLiftB(Value st, Value kt32, Value row0,
                                 Value full) {
  auto i32 = [&](int64_t v) { return im.i32(v); };
  Value t = arith::DivUIOp::create(b, loc, kt32, i32(3));
  Value r = arith::RemUIOp::create(b, loc, kt32, i32(3));
  Value inX =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, r, i32(2));
  Value xCol = arith::AddIOp::create(
      b, loc, arith::MulIOp::create(b, loc, t, i32(2 * kKTile)),
      arith::MulIOp::create(b, loc, r, i32(kKTile)));
  Value wCol = arith::MulIOp::create(b, loc, t, i32(kKTile));
  loadBFrom(arith::SelectOp::create(b, loc, inX, k.tmB, k.tmO), st,
            arith::SelectOp::create(b, loc, inX, xCol, wCol), row0, full);
}

/// loadB from the tensor map `tmap` (X's, or the split lift's W1).
void TmaProducer::loadBFrom(Value tmap, Value st, Value col, Value row0,
                            Value full) {
  Value dst = k.smemAddr(k.stageOffset(st, layout.x));
  if (cfg.cluster == 1) {
    k.load2d(dst, tmap, col, row0, full);
    return;
  }
  int64_t half = cfg.tokensPerBlock / cfg.cluster;
  Value rank32 = k.toI32(k.rank);
  Value offset = arith::MulIOp::create(b, loc, rank32, im.i32(half * 128));
  Value rowOffset = arith::MulIOp::create(b, loc, rank32, im.i32(half));
  asmVoid(b, loc,
          "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::"
          "complete_tx::bytes.multicast::cluster [$0], [$1, {$2, $3}], "
          "[$4], $5;",
          {arith::AddIOp::create(b, loc, dst, offset), tmap, col,
           arith::AddIOp::create(b, loc, row0, rowOffset), full,
           arith::ConstantIntOp::create(b, loc, b.getIntegerType(16),
                                        (1 << cfg.cluster) - 1)},
          "r,l,r,r,r,h");
}
