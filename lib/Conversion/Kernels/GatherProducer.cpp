//===- GatherProducer.cpp - the gathered modes' operand loaders -----------===//
//
// Gathered modes (the TwELL tensor-core consumer): thread 0 of warpgroup 0
// loads each stage's A box by TMA; B's rows are picked by index lists and
// land at their 128B-swizzled places (16-byte chunk q of smem row r at
// q ^ (r % 8)), by cp.async or by one-row TMA boxes.
//
//===----------------------------------------------------------------------===//

#include "Kernels/TmaPipeline.h"
#include "WgmmaAsm.h"

#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace mlir::sgpu;
using namespace mlir::sgpu::tma;

void GatherProducer::build(Value isThread0) {
  setMaxRegisters(b, loc, kGatherProducerRegs, /*increase=*/false);
  im.ifThen(isThread0, [&] {
    asmVoid(b, loc, "prefetch.tensormap [$0];", {k.tmA}, "l");
    if (k.tmS)
      asmVoid(b, loc, "prefetch.tensormap [$0];", {k.tmS}, "l");
  });
  if (cfg.gatherByTma)
    buildByTma(isThread0);
  else
    buildByCopies(isThread0);
}

/// cp.async of 16 bytes from global `src` (i64) to shared `dst` (i32),
/// zero-filled when `valid` is false (source size 0).
void GatherProducer::copy16(Value dst, Value src, Value valid) {
  Value size = arith::SelectOp::create(b, loc, valid, im.i32(16), im.i32(0));
  asmVoid(b, loc, "cp.async.cg.shared.global [$0], [$1], 16, $2;",
          {dst, src, size}, "r,l,r");
}

/// Waits until stage `st` (the block's k-tile `itk`, the tile's `kt`) is
/// free, then thread 0 expects `txBytes` on its `full` barrier and loads the
/// A box of block `blk`; returns that barrier.
Value GatherProducer::beginStage(Value itk, Value st, Value kt, Value blk,
                                 Value isThread0, int64_t txBytes) {
  ring.wait(ring.empty(st),
            k.toI32(im.rem(im.add(im.div(itk, cfg.stages), 1), 2)));
  Value full = ring.full(st);
  im.ifThen(isThread0, [&] {
    asmVoid(b, loc, "mbarrier.arrive.expect_tx.shared::cta.b64 _, [$0], $1;",
            {full, im.i32(txBytes)}, "r,r");
    k.load2d(k.smemAddr(k.stageOffset(st, layout.a)), k.tmA,
             k.toI32(im.mul(kt, kKTile)), k.toI32(im.mul(blk, kTmaGatherRows)),
             full);
  });
  return full;
}

/// All 128 threads copy the stage's B rows with cp.async and arrive on the
/// stage's `full` barrier when their copies land
/// (cp.async.mbarrier.arrive.noinc: the barrier counts 1 + 128).
///  * rows: thread p copies chunk p % 8 (8 columns of K) of the tile's
///    rows p / 8 + 16 i; their source rows are read once per tile.
///  * kRows: thread p copies chunk p % 32 (8 columns of N) of K rows
///    p / 32 + 4 i: a warp reads 512 contiguous bytes of one source row.
///    Chunk q lands in MN atom column q / 8 (8 KiB each: 64 K rows of
///    128 B) at chunk (q % 8) ^ (k % 8) of row k.
void GatherProducer::buildByCopies(Value isThread0) {
  Type i64 = b.getI64Type();
  auto toI64 = [&](Value v) -> Value {
    return arith::IndexCastUIOp::create(b, loc, i64, v);
  };
  Value srcBase = toI64(
      memref::ExtractAlignedPointerAsIndexOp::create(b, loc, k.gatherSource));
  int64_t rowBytes = s.k * 2;
  auto xorI = [&](Value a, Value v) -> Value {
    return arith::XOrIOp::create(b, loc, a, v);
  };
  auto rowOffset = [&](Value blk, Value pos) -> Value {
    Value n = memref::LoadOp::create(b, loc, k.gatherIdx, ValueRange{blk, pos});
    return arith::MulIOp::create(b, loc, arith::ExtUIOp::create(b, loc, i64, n),
                                 im.i64(rowBytes));
  };
  Value ptid = k.tid;
  bool rows = k.gatherRows();
  tiles.forEachGatherTile([&](Value blk, Value nt, Value nk, Value it) {
    // rows: the thread's 16 source rows, fixed for the tile.
    SmallVector<Value> tileRows;
    Value chunk, r0;
    if (rows) {
      chunk = im.rem(ptid, 8);
      r0 = im.div(ptid, 8);
      for (int64_t i = 0; i < kGatherCopiesPerThread; ++i)
        tileRows.push_back(rowOffset(
            blk, im.add(im.mul(nt, kTmaGatherCols), im.add(r0, 16 * i))));
    }
    tiles.forEachKTile(nk, it, [&](Value kt, Value itk, Value st) {
      // kRows: this k-tile's 16 source rows, read before the wait.
      SmallVector<Value> kRowsOff;
      Value q = im.rem(ptid, 32), k0 = im.div(ptid, 32);
      if (!rows)
        for (int64_t i = 0; i < kGatherCopiesPerThread; ++i)
          kRowsOff.push_back(
              rowOffset(blk, im.add(im.mul(kt, kKTile), im.add(k0, 4 * i))));
      Value full = beginStage(itk, st, kt, blk, isThread0, layout.txBytes);
      Value stB = k.stageOffset(st, layout.x);
      if (rows) {
        Value col = im.add(im.mul(kt, kKTile), im.mul(chunk, 8));
        Value valid = im.lt(col, s.k);
        Value colBytes = toI64(
            arith::SelectOp::create(b, loc, valid, im.mul(col, 2), im.c(0)));
        Value dst0 =
            im.add(stB, im.add(im.mul(r0, 128),
                               im.mul(xorI(chunk, im.rem(r0, 8)), 16)));
        for (int64_t i = 0; i < kGatherCopiesPerThread; ++i)
          copy16(k.smemAddr(im.add(dst0, 2048 * i)),
                 arith::AddIOp::create(
                     b, loc, srcBase,
                     arith::AddIOp::create(b, loc, tileRows[i], colBytes)),
                 valid);
      } else {
        Value feat = im.add(im.mul(nt, kTmaGatherCols), im.mul(q, 8));
        Value valid = im.lt(feat, s.k);
        Value featBytes = toI64(
            arith::SelectOp::create(b, loc, valid, im.mul(feat, 2), im.c(0)));
        Value atom = im.mul(im.div(q, 8), kGatherAtomColumnBytes);
        Value cc = im.rem(q, 8);
        for (int64_t i = 0; i < kGatherCopiesPerThread; ++i) {
          Value kr = im.add(k0, 4 * i);
          Value dst = im.add(
              stB, im.add(atom, im.add(im.mul(kr, 128),
                                       im.mul(xorI(cc, im.rem(kr, 8)), 16))));
          copy16(k.smemAddr(dst),
                 arith::AddIOp::create(
                     b, loc, srcBase,
                     arith::AddIOp::create(b, loc, kRowsOff[i], featBytes)),
                 valid);
        }
      }
      asmVoid(b, loc, "cp.async.mbarrier.arrive.noinc.shared::cta.b64 [$0];",
              {full}, "r");
    });
  });
}

/// Thread 0 expects the stage's A and B bytes and loads A; every producer
/// thread loads its B rows as TMA boxes of one row and 64 columns into the
/// places the cp.async path fills (the 128B swizzle follows the
/// destination address), completing on the stage's `full` barrier.
///  * rows: thread p takes rows p and p + 128 of the tile (their source
///    rows read once per tile), one box per k-tile each.
///  * kRows: thread p takes K row p % 64 and the atom columns 2 (p / 64)
///    and 2 (p / 64) + 1 (64 columns each).
void GatherProducer::buildByTma(Value isThread0) {
  Value ptid = k.tid;
  auto idxAt = [&](Value blk, Value pos) -> Value {
    return memref::LoadOp::create(b, loc, k.gatherIdx, ValueRange{blk, pos});
  };
  int64_t txBytes = kGatherABytes + kGatherBBytes;
  bool rows = k.gatherRows();
  tiles.forEachGatherTile([&](Value blk, Value nt, Value nk, Value it) {
    SmallVector<Value> tileRows;
    if (rows)
      for (int64_t i = 0; i < 2; ++i)
        tileRows.push_back(idxAt(
            blk, im.add(im.mul(nt, kTmaGatherCols), im.add(ptid, 128 * i))));
    tiles.forEachKTile(nk, it, [&](Value kt, Value itk, Value st) {
      Value kr = im.rem(ptid, kKTile), pair = im.div(ptid, kKTile);
      Value kRow;
      if (!rows)
        kRow = idxAt(blk, im.add(im.mul(kt, kKTile), kr));
      Value full = beginStage(itk, st, kt, blk, isThread0, txBytes);
      Value stB = k.stageOffset(st, layout.x);
      if (rows) {
        for (int64_t i = 0; i < 2; ++i)
          k.load2d(k.smemAddr(im.add(stB, im.mul(im.add(ptid, 128 * i), 128))),
                   k.tmS, k.toI32(im.mul(kt, kKTile)), tileRows[i], full);
      } else {
        for (int64_t j = 0; j < 2; ++j) {
          Value atom = im.add(im.mul(pair, 2), im.c(j));
          k.load2d(
              k.smemAddr(
                  im.add(stB, im.add(im.mul(atom, kGatherAtomColumnBytes),
                                     im.mul(kr, 128)))),
              k.tmS,
              k.toI32(im.add(im.mul(nt, kTmaGatherCols), im.mul(atom, 64))),
              kRow, full);
        }
      }
    });
  });
}
