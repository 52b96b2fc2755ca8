//===- TmaConsumer.cpp - the TMA pipeline's consumer warpgroups -----------===//
//
// Warpgroups 1 and 2 (setmaxnreg.inc). Per k-tile: wait for the stage's
// `full` barrier (and the fused lift's `ready`), read its metadata words,
// run the MMA step (WgmmaStep.cpp), then wgmma.wait_group 1: the previous
// tile's group is complete, so one lane per warp releases that tile's
// stage and the producer may refill it. One wgmma group therefore stays in
// flight across k-tiles.
//
// Metadata registers of the in-flight group: ptxas treats the metadata
// operand like the other wgmma registers, and a write to it while its group
// is pending (the next tile's words loaded into the same register) makes it
// serialize every wgmma of the kernel (C7514); and once the wgmma has issued
// ptxas considers the register dead and may reuse it while the group still
// reads it (wrong results on the H200). The k-loop is therefore unrolled by
// two: consecutive tiles' words live in distinct registers (double-
// buffered), so tile i+1's loads never touch tile i's operand, and each
// tile's words are inputs of the next tile's wait_group 1, which retires
// the group that reads them, so they stay allocated until then.
//
//===----------------------------------------------------------------------===//

#include "Kernels/TmaPipeline.h"
#include "WgmmaAsm.h"

#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace mlir::sgpu;
using namespace mlir::sgpu::tma;

void TmaConsumer::build(Value y, Value c) {
  setMaxRegisters(b, loc, cfg.fusedLift ? kGatherConsumerRegs : kConsumerRegs,
                  /*increase=*/true);
  Value ctid = im.rem(k.tid, 128);
  Value warp = im.div(ctid, 32), lane = im.rem(ctid, 32);
  Value g = im.div(lane, 4), t = im.rem(lane, 4);
  // This thread's metadata words inside a stage's E box: row tile
  // 4c + w of the block, word 16 j + 2 g + (t & 1) for k32 step j.
  Value rtLocal = im.add(im.mul(c, 4), warp);
  Value eWord0 = im.add(im.mul(rtLocal, k.steps * 16),
                        im.add(im.mul(g, 2), im.rem(t, 2)));
  // Row tiles past the padded weight read zeros: use the valid encoding
  // (set per output tile).
  Value rowTileOk;
  Value isLane0 = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                        lane, im.c(0));
  mma.prepare(c);
  Value zero = arith::ConstantOp::create(b, loc, b.getF32Type(),
                                         b.getF32FloatAttr(0.0f));
  // One k-tile: wait for its stage, read its metadata words, issue its
  // wgmmas, then retire the previous tile's group and release that stage.
  // `keep`: the metadata words of the group still in flight when this
  // tile's loads run; they are inputs of this tile's wait_group 1, which
  // retires that group, so ptxas keeps them allocated and unchanged until
  // then. Returns the accumulators, then this tile's metadata words.
  // `kt` counts the k-tiles of the output tile, `itBase` the block's
  // k-tiles before it: the ring of stages runs on across tiles.
  Value itBase;
  TileCoords coords;
  auto tileStep = [&](Value kt, ValueRange acc,
                      ValueRange keep) -> SmallVector<Value> {
    Value it = im.add(itBase, kt);
    Value st = im.rem(it, cfg.stages);
    Value phase = k.toI32(im.rem(im.div(it, cfg.stages), 2));
    ring.wait(ring.full(st), phase);
    if (cfg.fusedLift)
      ring.wait(ring.ready(st), phase);
    SmallVector<Value> e =
        mma.readMetadata(st, kt, coords.kt0, eWord0, rowTileOk);
    SmallVector<Value> d = mma.issue(st, acc, e);
    d = asmOnAcc(b, loc, "wgmma.wait_group.sync.aligned 1;", keep,
                 k.metaConstraints(), d);
    // The previous tile's group is complete: release its stage.
    Value release = im.andi(
        isLane0, arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ugt, kt,
                                       im.c(0)));
    auto rel = scf::IfOp::create(b, loc, release, false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&rel.getThenRegion().front());
    Value prev = im.rem(im.add(it, cfg.stages - 1), cfg.stages);
    ring.release(ring.empty(prev));
    d.append(e.begin(), e.end());
    return d;
  };

  tiles.forEachTile([&](Value tile, Value base) {
    coords = tiles.coordinates(tile);
    itBase = base;
    rowTileOk = Value();
    if (!cfg.dense && (s.paddedN / 16) % (kBlockRows / 16) != 0)
      rowTileOk =
          im.lt(im.add(im.div(coords.aRow0, 16), rtLocal), s.paddedN / 16);
    SmallVector<Value> acc = mainloop(tileStep, zero);
    // The tile's last group is complete: release its stage for the
    // producer, which is already loading the next tile.
    auto rel = scf::IfOp::create(b, loc, isLane0, false);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(&rel.getThenRegion().front());
      Value lastSt = im.rem(im.add(itBase, k.blockTiles - 1), cfg.stages);
      ring.release(ring.empty(lastSt));
    }
    if (cfg.dense) {
      TmaFragment at{
          im.add(im.add(coords.aRow0, im.mul(c, 64)), im.mul(warp, 16)),
          coords.bRow0, g, t, lane};
      (*k.denseEpilogue)(b, acc, at, k.epilogueArgs);
      return;
    }
    if (cfg.tmaStore) {
      epilogue.storeByTma(acc, coords, c, warp, g, lane, ctid);
      return;
    }
    epilogue.storeFromRegisters(acc, coords, y, c, warp, g, t);
  });
  epilogue.finish(ctid);
}

/// One output tile's k-loop on `tileStep`; returns the accumulators once
/// every group has completed. Two k-tiles per iteration (A, B): the
/// metadata words of consecutive tiles are distinct registers, so loading
/// tile i+1's words never overwrites the operand of tile i's group, which
/// is still in flight (ptxas serializes every wgmma when it sees such a
/// write, C7514). Tile B's words are carried around the loop to tile A's
/// wait.
template <typename StepFn>
SmallVector<Value> TmaConsumer::mainloop(StepFn &tileStep, Value zero) {
  int64_t nAcc = k.nAcc, blockTiles = k.blockTiles;
  SmallVector<Value> init(nAcc, zero);
  for (int64_t j = 0; j < k.metaSteps; ++j)
    init.push_back(im.i32(static_cast<int32_t>(kEmptyMetadata)));
  auto pairs = scf::ForOp::create(
      b, loc, im.c(0), im.c(blockTiles / 2), im.c(1), init,
      [&](OpBuilder &, Location, Value i, ValueRange carried) {
        Value kt = im.mul(i, 2);
        SmallVector<Value> a = tileStep(kt, carried.take_front(nAcc),
                                        carried.drop_front(nAcc));
        SmallVector<Value> d =
            tileStep(im.add(kt, 1), ArrayRef<Value>(a).take_front(nAcc),
                     ArrayRef<Value>(a).drop_front(nAcc));
        scf::YieldOp::create(b, loc, d);
      });
  SmallVector<Value> last(pairs.getResults());
  if (blockTiles % 2)
    last = tileStep(im.c(blockTiles - 1),
                    ArrayRef<Value>(last).take_front(nAcc),
                    ArrayRef<Value>(last).drop_front(nAcc));
  return asmOnAcc(b, loc, "wgmma.wait_group.sync.aligned 0;",
                  ArrayRef<Value>(last).drop_front(nAcc), k.metaConstraints(),
                  ArrayRef<Value>(last).take_front(nAcc));
}
