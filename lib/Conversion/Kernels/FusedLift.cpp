//===- FusedLift.cpp - the fused 6:8 lift's gather in shared memory -------===//
//
// Producer warps 1..3 build each stage's step-2 operand once its TMA loads
// landed. The tiled window order puts, per 64 columns of X, window 1 of
// group g (original columns 8g+2 .. 8g+5) at lifted columns 64 + 4g ..
// 64 + 4g + 3: 8 bytes from the middle of every 16-byte chunk of the X row.
// A unit of work is (row r, destination chunk c): read X chunks 2c and
// 2c+1 (at their 128B-swizzled places, chunk q ^ (r & 7)), keep words 1
// and 2 of each and store the four words as chunk c of the row's 64-byte O
// row (64B swizzle: c ^ ((r >> 1) & 3)).
//
// Thread e (0..95; lane l, warp w) takes c = l / 8 and the rows r0 + 24i,
// r0 = 8w + l % 8: eight consecutive lanes read eight rows of one chunk
// (eight distinct 16-byte bank groups per quarter-warp), and since 24i
// keeps r & 7 and (r >> 1) & 3, every address of the thread is a constant
// offset from its first (+3072 B per row step in X, +1536 B in O). The
// units are unrolled in groups of kGatherBatch, each one asm statement
// with all its loads before its stores (ptxas cannot move a load above a
// store it cannot prove disjoint). Then fence.proxy.async (generic stores
// read by wgmma) and one arrival per thread on the stage's `ready` barrier.
//
//===----------------------------------------------------------------------===//

#include "Kernels/TmaPipeline.h"
#include "WgmmaAsm.h"

#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace mlir::sgpu;
using namespace mlir::sgpu::tma;

/// The asm statement of one batch of `count` units from unit `first`:
/// unit i uses registers t[8i .. 8i+7]; $0 and $1 are the thread's first X
/// chunks, $2 its first O chunk.
static std::string gatherBatchAsm(int64_t first, int64_t count) {
  auto reg = [](int64_t i, int64_t j) {
    return "t" + std::to_string(8 * i + j);
  };
  std::string text = "{\n.reg .b32 t<" + std::to_string(8 * count) + ">;\n";
  for (int64_t i = 0; i < count; ++i) {
    std::string off = std::to_string(3072 * (first + i));
    text += "ld.shared.v4.b32 {" + reg(i, 0) + ", " + reg(i, 1) + ", " +
            reg(i, 2) + ", " + reg(i, 3) + "}, [$0+" + off + "];\n";
    text += "ld.shared.v4.b32 {" + reg(i, 4) + ", " + reg(i, 5) + ", " +
            reg(i, 6) + ", " + reg(i, 7) + "}, [$1+" + off + "];\n";
  }
  for (int64_t i = 0; i < count; ++i)
    text += "st.shared.v4.b32 [$2+" + std::to_string(1536 * (first + i)) +
            "], {" + reg(i, 1) + ", " + reg(i, 2) + ", " + reg(i, 5) + ", " +
            reg(i, 6) + "};\n";
  return text + "}";
}

void TmaProducer::buildFusedLiftGather() {
  Value isGather = im.lt(im.c(31), k.tid);
  auto only = scf::IfOp::create(b, loc, isGather, false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(&only.getThenRegion().front());
  Value e = im.sub(k.tid, im.c(32));
  Value lane = im.rem(e, 32), l8 = im.rem(lane, 8);
  Value c = im.div(lane, 8);
  Value r0 = im.add(im.mul(im.div(e, 32), 8), l8);
  auto xorI = [&](Value a, Value v) -> Value {
    return arith::XOrIOp::create(b, loc, a, v);
  };
  Value c2 = im.mul(c, 2);
  Value src0 = im.add(im.mul(r0, 128), im.mul(xorI(c2, l8), 16));
  Value src1 = im.add(im.mul(r0, 128), im.mul(xorI(im.add(c2, 1), l8), 16));
  Value dst = im.add(im.mul(r0, 64),
                     im.mul(xorI(c, im.rem(im.div(r0, 2), 4)), 16));
  int64_t bn = cfg.tokensPerBlock;
  int64_t units = (bn + 23) / 24;
  // Units valid for every thread (r0 <= 23), then the guarded tail.
  int64_t always = 0;
  while (always < units && 24 * always + 23 < bn)
    ++always;
  tiles.forEachTile([&](Value, Value itBase) {
    scf::ForOp::create(
        b, loc, im.c(0), im.c(k.blockTiles), im.c(1), ValueRange{},
        [&](OpBuilder &, Location, Value kt, ValueRange) {
          Value it = im.add(itBase, kt);
          Value st = im.rem(it, cfg.stages);
          ring.wait(ring.full(st),
                    k.toI32(im.rem(im.div(it, cfg.stages), 2)));
          Value xs0 = k.smemAddr(im.add(k.stageOffset(st, layout.x), src0));
          Value xs1 = k.smemAddr(im.add(k.stageOffset(st, layout.x), src1));
          Value od = k.smemAddr(im.add(k.stageOffset(st, layout.o), dst));
          auto batch = [&](int64_t first, int64_t count) {
            asmVoid(b, loc, gatherBatchAsm(first, count), {xs0, xs1, od},
                    "r,r,r");
          };
          for (int64_t u = 0; u < always; u += kGatherBatch)
            batch(u, std::min(kGatherBatch, always - u));
          for (int64_t u = always; u < units; ++u) {
            auto tail = scf::IfOp::create(
                b, loc, im.lt(im.add(r0, 24 * u), bn), false);
            OpBuilder::InsertionGuard g(b);
            b.setInsertionPointToStart(&tail.getThenRegion().front());
            batch(u, 1);
          }
          asmVoid(b, loc, "fence.proxy.async.shared::cta;", {}, "");
          asmVoid(b, loc, "mbarrier.arrive.shared::cta.b64 _, [$0];",
                  {ring.ready(st)}, "r");
          scf::YieldOp::create(b, loc);
        });
  });
}
