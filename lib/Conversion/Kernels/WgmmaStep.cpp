//===- WgmmaStep.cpp - the TMA pipeline's MMA step ------------------------===//
//
// One stage's wgmmas for a consumer warpgroup (features 64c .. 64c + 63 of
// the block, all BN tokens; the accumulator is Y^T):
//  * sparse: two wgmma.mma_async.sp m64nBNk32, one per k32 step, with this
//    thread's metadata word of each step (the fused lift adds a third on
//    the gathered step-2 operands);
//  * dense: four wgmma.mma_async m64nBNk16.
// Descriptors: A (SW64, K-major): SBO 512 B (8 rows x 64 B), k32 step
// +32 B, warpgroup c +4096 B; B (SW128, K-major): SBO 1024 B, k32 step
// +64 B; dense A and B both SW128 (SBO 1024 B, k16 step +32 B, warpgroup c
// at +8 KiB of A). LBO is unused for swizzled K-major layouts (encoded 1).
//
//===----------------------------------------------------------------------===//

#include "Kernels/TmaPipeline.h"
#include "WgmmaAsm.h"

using namespace mlir;
using namespace mlir::sgpu;
using namespace mlir::sgpu::tma;

void WgmmaStep::prepare(Value c) {
  // Descriptors of stage 0: A at the warpgroup's 64 rows, B.
  Value base64 = arith::IndexCastUIOp::create(b, loc, b.getI64Type(),
                                              k.baseIdx);
  // Warpgroup c's 64 rows of A: 64 B rows of compressed values, or in
  // dense mode 128 B rows (SW128, SBO 8 rows x 128 B).
  int64_t aRowBytes = cfg.dense ? kKTile * 2 : kKTile;
  Value aAddr = arith::AddIOp::create(
      b, loc, base64,
      arith::MulIOp::create(
          b, loc, arith::IndexCastUIOp::create(b, loc, b.getI64Type(), c),
          im.i64(64 * aRowBytes)));
  descA0 = cfg.dense
               ? smemDescriptor(b, loc, aAddr, 16, 1024, SmemSwizzle::B128)
               : smemDescriptor(b, loc, aAddr, 16, 8 * kKTile,
                                SmemSwizzle::B64);
  descB0 = smemDescriptor(
      b, loc, arith::AddIOp::create(b, loc, base64, im.i64(layout.x)), 16,
      1024, SmemSwizzle::B128);
  if (!cfg.fusedLift)
    return;
  // Fused lift, step 2: A from its 32-byte rows (SBO 8 rows x 32 B,
  // warpgroup c at +64 rows), B from the gathered 64-byte O rows.
  Value a2Addr = arith::AddIOp::create(
      b, loc, base64,
      arith::AddIOp::create(
          b, loc, im.i64(layout.a2),
          arith::MulIOp::create(
              b, loc,
              arith::IndexCastUIOp::create(b, loc, b.getI64Type(), c),
              im.i64(64 * 32))));
  descA20 = smemDescriptor(b, loc, a2Addr, 16, 256, SmemSwizzle::B32);
  descO0 = smemDescriptor(
      b, loc, arith::AddIOp::create(b, loc, base64, im.i64(layout.o)), 16,
      512, SmemSwizzle::B64);
}

SmallVector<Value> WgmmaStep::readMetadata(Value st, Value kt, Value kt0,
                                           Value eWord0, Value rowTileOk) {
  SmallVector<Value> e;
  for (int64_t j = 0; j < k.metaSteps; ++j) {
    Value idx =
        im.add(im.add(k.padWords, im.div(k.stageOffset(st, layout.e), 4)),
               im.add(eWord0, j * 16));
    Value w = memref::LoadOp::create(b, loc, k.words, ValueRange{idx});
    Value ok = rowTileOk;
    // Steps past the weight read zeros: an odd step count leaves the
    // last tile's second step out, and the last split may run past K.
    if ((cfg.splits * cfg.kTilesPerSplit - 1) * k.steps + j >= k.kSteps32)
      ok = im.andi(ok, im.lt(im.add(im.mul(im.add(kt0, kt), k.steps), j),
                             k.kSteps32));
    if (ok)
      w = arith::SelectOp::create(
          b, loc, ok, w, im.i32(static_cast<int32_t>(kEmptyMetadata)));
    e.push_back(w);
  }
  return e;
}

SmallVector<Value> WgmmaStep::issue(Value st, ValueRange acc,
                                    ArrayRef<Value> meta) {
  Value stOff64 = arith::IndexCastUIOp::create(b, loc, b.getI64Type(),
                                               im.mul(st, k.stride / 16));
  Value descA = arith::AddIOp::create(b, loc, descA0, stOff64);
  Value descB = arith::AddIOp::create(b, loc, descB0, stOff64);
  SmallVector<Value> d =
      asmOnAcc(b, loc, "wgmma.fence.sync.aligned;", {}, "", acc);
  // Dense: four k16 steps of 32 bytes in both operands' rows.
  for (int64_t j = 0; cfg.dense && j < kKTile / 16; ++j)
    d = denseWgmma(b, loc, s.elementType,
                   arith::AddIOp::create(b, loc, descA, im.i64(j * 32 / 16)),
                   arith::AddIOp::create(b, loc, descB, im.i64(j * 32 / 16)),
                   d);
  for (int64_t j = 0; !cfg.dense && j < kSteps; ++j)
    d = sparseWgmma(b, loc, s.elementType,
                    arith::AddIOp::create(b, loc, descA, im.i64(j * 32 / 16)),
                    arith::AddIOp::create(b, loc, descB, im.i64(j * 64 / 16)),
                    meta[j], d);
  if (cfg.fusedLift)
    d = sparseWgmma(b, loc, s.elementType,
                    arith::AddIOp::create(b, loc, descA20, stOff64),
                    arith::AddIOp::create(b, loc, descO0, stOff64), meta[2],
                    d);
  asmVoid(b, loc, "wgmma.commit_group.sync.aligned;", {}, "");
  return d;
}
