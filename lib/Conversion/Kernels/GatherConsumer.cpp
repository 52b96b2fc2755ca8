//===- GatherConsumer.cpp - the gathered modes' consumer warpgroups -------===//
//
// Consumer warpgroup `c` takes columns 128c .. 128c + 127 of the tile, all
// 64 rows: per k-tile wait `full`, fence the cp.async writes for the async
// proxy, four wgmma m64n128k16 (A K-major SW128; B K-major SW128 in rows
// mode, MN-major SW128 with LBO 8 KiB between the atom columns and SBO
// 1 KiB between groups of 8 K rows in kRows mode), commit, wait_group 1,
// release the previous k-tile's stage. A tile ends in the caller's dense
// epilogue.
//
//===----------------------------------------------------------------------===//

#include "Kernels/TmaPipeline.h"
#include "WgmmaAsm.h"

#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace mlir::sgpu;
using namespace mlir::sgpu::tma;

void GatherConsumer::build(Value c) {
  setMaxRegisters(b, loc, kGatherConsumerRegs, /*increase=*/true);
  Value ctid = im.rem(k.tid, 128);
  Value warp = im.div(ctid, 32), lane = im.rem(ctid, 32);
  Value g = im.div(lane, 4), t = im.rem(lane, 4);
  Value isLane0 = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                        lane, im.c(0));
  Type i64 = b.getI64Type();
  Value base64 = arith::IndexCastUIOp::create(b, loc, i64, k.baseIdx);
  Value c64 = arith::IndexCastUIOp::create(b, loc, i64, c);
  Value descA0 = smemDescriptor(b, loc, base64, 16, 1024, SmemSwizzle::B128);
  bool rows = k.gatherRows();
  int64_t half =
      rows ? (kTmaGatherCols / 2) * 128 : 2 * kGatherAtomColumnBytes;
  Value bAddr = arith::AddIOp::create(
      b, loc, base64,
      arith::AddIOp::create(b, loc, im.i64(layout.x),
                            arith::MulIOp::create(b, loc, c64, im.i64(half))));
  Value descB0 =
      rows ? smemDescriptor(b, loc, bAddr, 16, 1024, SmemSwizzle::B128)
           : smemDescriptor(b, loc, bAddr, kGatherAtomColumnBytes, 1024,
                            SmemSwizzle::B128);
  // k16 steps: 32 bytes along a K-major row, 16 K rows (2 KiB) MN-major.
  int64_t bStep = rows ? 32 / 16 : 2048 / 16;
  int64_t nAcc = kTmaGatherCols / 2 / 2;
  Value zero = arith::ConstantOp::create(b, loc, b.getF32Type(),
                                         b.getF32FloatAttr(0.0f));
  tiles.forEachGatherTile([&](Value blk, Value nt, Value nk, Value it) {
    auto tileBody = [&] {
      SmallVector<Value> init(nAcc, zero);
      auto loop = scf::ForOp::create(
          b, loc, im.c(0), nk, im.c(1), init,
          [&](OpBuilder &, Location, Value kt, ValueRange acc) {
            Value itk = im.add(it, kt);
            Value st = im.rem(itk, cfg.stages);
            ring.wait(ring.full(st),
                      k.toI32(im.rem(im.div(itk, cfg.stages), 2)));
            // cp.async writes are the generic proxy's; TMA's are not.
            if (!cfg.gatherByTma)
              asmVoid(b, loc, "fence.proxy.async.shared::cta;", {}, "");
            Value stOff = arith::IndexCastUIOp::create(
                b, loc, i64, im.mul(st, k.stride / 16));
            Value descA = arith::AddIOp::create(b, loc, descA0, stOff);
            Value descB = arith::AddIOp::create(b, loc, descB0, stOff);
            SmallVector<Value> d =
                asmOnAcc(b, loc, "wgmma.fence.sync.aligned;", {}, "", acc);
            for (int64_t j = 0; j < kKTile / 16; ++j)
              d = denseWgmma(
                  b, loc, s.elementType,
                  arith::AddIOp::create(b, loc, descA, im.i64(j * 32 / 16)),
                  arith::AddIOp::create(b, loc, descB, im.i64(j * bStep)), d,
                  /*transB=*/!rows);
            asmVoid(b, loc, "wgmma.commit_group.sync.aligned;", {}, "");
            d = asmOnAcc(b, loc, "wgmma.wait_group.sync.aligned 1;", {}, "",
                         d);
            im.ifThen(im.andi(isLane0, arith::CmpIOp::create(
                                           b, loc, arith::CmpIPredicate::ugt,
                                           kt, im.c(0))),
                      [&] {
                        ring.release(ring.empty(
                            im.rem(im.add(itk, cfg.stages - 1), cfg.stages)));
                      });
            scf::YieldOp::create(b, loc, d);
          });
      SmallVector<Value> acc =
          asmOnAcc(b, loc, "wgmma.wait_group.sync.aligned 0;", {}, "",
                   SmallVector<Value>(loop.getResults()));
      im.ifThen(im.andi(isLane0,
                        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ugt,
                                              nk, im.c(0))),
                [&] {
                  ring.release(ring.empty(
                      im.rem(im.add(it, im.sub(nk, im.c(1))), cfg.stages)));
                });
      TmaFragment at{im.add(im.mul(blk, kTmaGatherRows), im.mul(warp, 16)),
                     im.add(im.mul(nt, kTmaGatherCols), im.mul(c, 128)), g, t,
                     lane};
      (*k.denseEpilogue)(b, acc, at, k.epilogueArgs);
    };
    if (rows)
      im.ifThen(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ugt, nk,
                                      im.c(0)),
                tileBody);
    else
      tileBody();
  });
}
