//===- TileEpilogue.cpp - the TMA pipeline's output-tile epilogues --------===//
//
// A consumer warpgroup's accumulators hold features 64c .. 64c + 63 of the
// tile by its BN tokens (Y^T). Two ways out:
//  * from registers (SpmmEpilogue.h): bias and activation applied, stored
//    into Y, or the raw f32 partial sums into the split-K workspace;
//  * by TMA (cfg.tmaStore, the default where it applies): box by box of
//    yBox[0] tokens into a 128B-swizzled staging box with stmatrix .trans,
//    fenced for the async proxy, and one thread's bulk tensor store into
//    Y's tensor map (tails clipped by TMA). That thread waits for the store
//    to have read the box before the box is written again and before the
//    block exits.
//
//===----------------------------------------------------------------------===//

#include "Kernels/TmaPipeline.h"
#include "SpmmEpilogue.h"
#include "WgmmaAsm.h"

#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace mlir::sgpu;
using namespace mlir::sgpu::tma;

/// The warpgroup thread that issues (and waits for) its bulk stores:
/// bulk async-groups belong to the thread that commits them.
Value TileEpilogue::isStoreIssuer(Value ctid) {
  return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, ctid,
                               im.c(0));
}

/// The 128 threads of consumer warpgroup `c` (named barrier 1 + c;
/// barrier 0 is the block's). The NVVM op, whose intrinsic is
/// convergent: it follows issuer-only code, and LLVM must not sink or
/// duplicate it into that branch.
void TileEpilogue::warpgroupBarrier(Value c) {
  NVVM::BarrierOp::create(b, loc, Type(), k.toI32(im.add(c, 1)), im.i32(128),
                          NVVM::BarrierReductionAttr(), Value());
}

/// Per box of cfg.yBox[0] tokens: wait until the previous bulk store has
/// read the staging buffer, write the box's values (bias and activation in
/// f32, rounded once) with stmatrix .trans, which turns the accumulator
/// fragment (features x tokens) into Y's token-major rows, then fence the
/// generic writes for the async proxy and let one thread issue the bulk
/// tensor store; the consumers go on to the next tile while the copy
/// engine writes.
///
/// Staging layout, per warpgroup: box-token rows of 128 B (its 64
/// features), 128B-swizzled as the tensor map expects: the 16-byte chunk of
/// features 8u..8u+7 of token row r sits at chunk u ^ (r % 8). One
/// stmatrix.x4 stores the 8x8 matrices (q, h) for token groups q, q + 1 and
/// feature halves h = 0, 1 of the warp's 16 features (registers: acc
/// 4q + 2h + {0, 1} as a 16-bit pair); lane l gives the address of row
/// l % 8 of matrix l / 8, so the eight rows of a matrix land in eight
/// distinct chunks (no bank conflicts), and instruction i is 16 rows
/// (2048 B) after instruction 0. The staging boxes follow the stages.
void TileEpilogue::storeByTma(ArrayRef<Value> acc, const TileCoords &tile,
                              Value c, Value warp, Value g, Value lane,
                              Value ctid) {
  Type i32 = b.getI32Type();
  Value featBase =
      im.add(im.add(tile.aRow0, im.mul(c, 64)), im.mul(warp, 16));
  SmallVector<Value> vals = applyBiasAndActivation(
      b, loc, im, s, acc, k.bias, featBase, g, s.n % kBlockRows == 0);
  auto pairType = VectorType::get({2}, s.resultType);
  auto wordType = VectorType::get({1}, i32);
  auto pack = [&](int64_t i) -> Value {
    Value lo = arith::TruncFOp::create(b, loc, s.resultType, vals[i]);
    Value hi = arith::TruncFOp::create(b, loc, s.resultType, vals[i + 1]);
    Value pair = vector::FromElementsOp::create(b, loc, pairType,
                                                ValueRange{lo, hi});
    Value word = vector::BitCastOp::create(b, loc, wordType, pair);
    return vector::ExtractOp::create(b, loc, word, ArrayRef<int64_t>{0});
  };
  int64_t boxT = cfg.yBox[0];
  int64_t boxBytes = boxT * 128;
  Value stage = im.add(im.c(cfg.stages * k.stride), im.mul(c, boxBytes));
  Value m = im.div(lane, 8), j = im.rem(lane, 8);
  Value row = im.add(im.mul(im.div(m, 2), 8), j);
  Value chunk = im.add(im.mul(warp, 2), im.rem(m, 2));
  Value swizzled = arith::XOrIOp::create(b, loc, chunk, j);
  Value rowAddr = k.smemAddr(
      im.add(stage, im.add(im.mul(row, 128), im.mul(swizzled, 16))));
  Value stageAddr = k.smemAddr(stage);
  Value issuer = isStoreIssuer(ctid);
  Value feat0 = k.toI32(im.add(tile.aRow0, im.mul(c, 64)));
  // A sliced Y: the box's 64 features lie in one slice (its start a
  // multiple of 64); store into that slice's map at the slice's column.
  Value tmY = k.tmY;
  for (size_t j = 1; j < cfg.ySliceStarts.size(); ++j) {
    Value start = im.i32(cfg.ySliceStarts[j]);
    Value past = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge,
                                       feat0, start);
    tmY = arith::SelectOp::create(b, loc, past, k.tmYSlices[j], tmY);
  }
  if (cfg.ySliceStarts.size() > 1) {
    Value base = im.i32(0);
    for (size_t j = 1; j < cfg.ySliceStarts.size(); ++j) {
      Value start = im.i32(cfg.ySliceStarts[j]);
      Value past = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge,
                                         feat0, start);
      base = arith::SelectOp::create(b, loc, past, start, base);
    }
    feat0 = arith::SubIOp::create(b, loc, feat0, base);
  }
  for (int64_t box = 0; box < cfg.tokensPerBlock / boxT; ++box) {
    im.ifThen(issuer, [&] {
      asmVoid(b, loc, "cp.async.bulk.wait_group.read 0;", {}, "");
    });
    warpgroupBarrier(c);
    for (int64_t i = 0; i < boxT / 16; ++i) {
      int64_t q = box * (boxT / 8) + 2 * i;
      Value addr = arith::AddIOp::create(b, loc, rowAddr, im.i32(2048 * i));
      asmVoid(b, loc,
              "stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [$0], "
              "{$1, $2, $3, $4};",
              {addr, pack(4 * q), pack(4 * q + 2), pack(4 * q + 4),
               pack(4 * q + 6)},
              "r,r,r,r,r");
    }
    asmVoid(b, loc, "fence.proxy.async.shared::cta;", {}, "");
    warpgroupBarrier(c);
    Value tok0 = k.toI32(im.add(tile.bRow0, box * boxT));
    im.ifThen(issuer, [&] {
      asmVoid(b, loc,
              "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group "
              "[$0, {$1, $2}], [$3];",
              {tmY, feat0, tok0, stageAddr}, "l,r,r,r");
      asmVoid(b, loc, "cp.async.bulk.commit_group;", {}, "");
    });
  }
}

void TileEpilogue::finish(Value ctid) {
  if (cfg.tmaStore)
    im.ifThen(isStoreIssuer(ctid), [&] {
      asmVoid(b, loc, "cp.async.bulk.wait_group.read 0;", {}, "");
    });
}

void TileEpilogue::storeFromRegisters(ArrayRef<Value> acc,
                                      const TileCoords &tile, Value y,
                                      Value c, Value warp, Value g, Value t) {
  Value featBase =
      im.add(im.add(tile.aRow0, im.mul(c, 64)), im.mul(warp, 16));
  Value row0 = im.add(featBase, g);
  bool fullM = s.m % cfg.tokensPerBlock == 0;
  bool fullN = s.n % kBlockRows == 0;
  // Split-K: the raw f32 partial sums go to the workspace.
  SpmmShape out = s;
  Value outBias = k.bias;
  if (cfg.splits > 1) {
    out.hasBias = false;
    out.activation = Activation::none;
    out.resultType = b.getF32Type();
    outBias = Value();
  }
  // Pairs of adjacent features per store where rows allow 4-byte stores.
  if (s.n % 2 == 0) {
    buildSpmmEpiloguePaired(b, loc, im, out, acc, outBias, y, featBase, g, t,
                            tile.bRow0, fullM, fullN, tile.split);
    return;
  }
  buildSpmmEpilogue(b, loc, im, out, acc, outBias, y, row0, tile.bRow0, t,
                    fullM, fullN, tile.split);
}
