//===- SpmmEpilogue.h - the sgpu.spmm epilogue, shared by its kernels -*- C++ -*-===//
//
// Both spmm kernels (warp-level mma.sp and warpgroup wgmma.sp) end the same
// way: each f32 accumulator element gets the bias of its feature and the
// activation, is rounded once to the result type and stored at
// Y[token][feature], guarded where the tile runs past M or N. (The TMA
// kernel's default epilogue shares applyBiasAndActivation and leaves the
// stores and the tails to TMA, SpmmTMA.cpp.)
//
//===----------------------------------------------------------------------===//

#ifndef SPARSEOPT_LIB_CONVERSION_SPMMEPILOGUE_H
#define SPARSEOPT_LIB_CONVERSION_SPMMEPILOGUE_H

#include "IndexMath.h"
#include "SpmmWGMMA.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

namespace mlir {
namespace sgpu {

/// Applies bias (`biasF32`, null when none) and the activation to the f32
/// value `v` and stores it at y[tok, feat] (y[split, tok, feat] when
/// `split` is given: a split-K partial sum); `zero` is an f32 0. Guards the
/// store with tok < M (unless `fullM`) and feat < N (unless `fullN`).
inline void storeEpilogueValue(OpBuilder &b, Location loc, IndexMath &im,
                               const SpmmShape &s, Value v, Value biasF32,
                               Value zero, Value y, Value tok, Value feat,
                               bool fullM, bool fullN, Value split = {}) {
  if (biasF32)
    v = arith::AddFOp::create(b, loc, v, biasF32);
  if (s.activation == Activation::relu)
    v = arith::MaximumFOp::create(b, loc, v, zero);
  if (s.resultType != b.getF32Type())
    v = arith::TruncFOp::create(b, loc, s.resultType, v);
  Value ok = im.andi(fullM ? Value() : im.lt(tok, s.m),
                     fullN ? Value() : im.lt(feat, s.n));
  SmallVector<Value, 3> at = {tok, feat};
  if (split)
    at.insert(at.begin(), split);
  im.ifThen(ok, [&] { memref::StoreOp::create(b, loc, v, y, at); });
}

/// The whole epilogue of one thread. Both kernels hold their accumulators in
/// the same fragment order: element 4q + e is D[row0 + 8(e/2)][8q + 2t +
/// e%2], i.e. Y[tok0 + 8q + 2t + e%2][row0 + 8(e/2)], where row0 is the
/// thread's first feature row. `bias` is the bias buffer or null. With
/// `split` (a split-K kernel) `y` is the f32 workspace [S, M, N] and the
/// values go to y[split] as they are: `s` then has no bias or activation
/// and an f32 result.
inline void buildSpmmEpilogue(OpBuilder &b, Location loc, IndexMath &im,
                              const SpmmShape &s, ArrayRef<Value> acc,
                              Value bias, Value y, Value row0, Value tok0,
                              Value t, bool fullM, bool fullN,
                              Value split = {}) {
  Value zero = arith::ConstantOp::create(b, loc, b.getF32Type(),
                                         b.getF32FloatAttr(0.0f));
  // The two feature rows this thread holds, and their bias (in f32).
  Value biasOf[2];
  for (int64_t h = 0; h < 2 && bias; ++h) {
    Value feat = im.add(row0, 8 * h);
    Value inN = fullN ? Value() : im.lt(feat, s.n);
    biasOf[h] =
        im.toF32(memref::LoadOp::create(b, loc, bias, im.clamp(feat, inN)));
  }
  for (auto [i, v] : llvm::enumerate(acc)) {
    int64_t q = i / 4, e = i % 4;
    Value feat = im.add(row0, 8 * (e / 2));
    Value tok = im.add(tok0, im.add(im.mul(t, 2), 8 * q + e % 2));
    storeEpilogueValue(b, loc, im, s, v, bias ? biasOf[e / 2] : Value(), zero,
                       y, tok, feat, fullM, fullN, split);
  }
}

/// Bias (`bias`, null when none) and activation applied in f32 to one
/// thread's accumulators `acc` in the fragment order above, where the
/// thread holds features featBase + g and featBase + g + 8 (`featBase`:
/// the warp's first feature). Returns the values, not yet rounded; the
/// bias loads are clamped inside N unless `fullN`.
inline SmallVector<Value>
applyBiasAndActivation(OpBuilder &b, Location loc, IndexMath &im,
                       const SpmmShape &s, ArrayRef<Value> acc, Value bias,
                       Value featBase, Value g, bool fullN) {
  Value zero = arith::ConstantOp::create(b, loc, b.getF32Type(),
                                         b.getF32FloatAttr(0.0f));
  Value biasOf[2];
  for (int64_t h = 0; h < 2 && bias; ++h) {
    Value feat = im.add(featBase, im.add(g, 8 * h));
    Value inN = fullN ? Value() : im.lt(feat, s.n);
    biasOf[h] =
        im.toF32(memref::LoadOp::create(b, loc, bias, im.clamp(feat, inN)));
  }
  SmallVector<Value> vals;
  for (auto [i, v] : llvm::enumerate(acc)) {
    Value r = v;
    if (bias)
      r = arith::AddFOp::create(b, loc, r, biasOf[(i % 4) / 2]);
    if (s.activation == Activation::relu)
      r = arith::MaximumFOp::create(b, loc, r, zero);
    vals.push_back(r);
  }
  return vals;
}

/// The same epilogue with stores of two adjacent features (for an even N).
/// In the fragment order a warp holds, per token, 16 consecutive features
/// spread over 8 lanes (feature g and g + 8 in lane 4g + t), so direct
/// stores write 16 of every 32-byte sector per instruction (measured with
/// ncu on the H200: half of each sector used). Here each lane first gets
/// features 2g and 2g + 1 of its token from lanes 4((2g) % 8) + t and
/// 4((2g + 1) % 8) + t (warp shuffles, after bias and activation in f32),
/// then stores them as one 4-byte (8-byte for f32) vector: the 8 lanes of a
/// token write 32 contiguous bytes. `featBase` is the warp's first feature
/// (the thread's row0 without g); `g` and `t` are its lane coordinates. The shuffles run in every lane; only the stores are
/// guarded.
inline void buildSpmmEpiloguePaired(OpBuilder &b, Location loc, IndexMath &im,
                                    const SpmmShape &s, ArrayRef<Value> acc,
                                    Value bias, Value y, Value featBase,
                                    Value g, Value t, Value tok0,
                                    bool fullM, bool fullN, Value split = {}) {
  Type f32 = b.getF32Type(), i32 = b.getI32Type();
  SmallVector<Value> vals =
      applyBiasAndActivation(b, loc, im, s, acc, bias, featBase, g, fullN);
  auto toI32 = [&](Value v) -> Value {
    return arith::IndexCastUIOp::create(b, loc, i32, v);
  };
  Value t32 = toI32(t), g32 = toI32(g);
  auto srcLane = [&](int64_t plus) -> Value {
    Value f = arith::AddIOp::create(
        b, loc, arith::MulIOp::create(b, loc, g32, im.i32(2)), im.i32(plus));
    Value gs = arith::RemUIOp::create(b, loc, f, im.i32(8));
    return arith::AddIOp::create(
        b, loc, arith::MulIOp::create(b, loc, gs, im.i32(4)), t32);
  };
  Value srcLo = srcLane(0), srcHi = srcLane(1);
  Value upper = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge, g32,
                                      im.i32(4));
  Value width = im.i32(32);
  auto shuffle = [&](Value v, Value src) -> Value {
    return gpu::ShuffleOp::create(b, loc, v, src, width,
                                  gpu::ShuffleMode::IDX)
        .getShuffleResult();
  };
  Value feat = im.add(featBase, im.mul(g, 2));
  auto pairType = VectorType::get({2}, s.resultType);
  int64_t align = s.resultType.isF32() ? 8 : 4;
  for (int64_t q = 0; q < static_cast<int64_t>(acc.size()) / 4; ++q) {
    for (int64_t r = 0; r < 2; ++r) {
      Value a0 = vals[4 * q + r], a1 = vals[4 * q + 2 + r];
      Value lo = arith::SelectOp::create(b, loc, upper, shuffle(a1, srcLo),
                                         shuffle(a0, srcLo));
      Value hi = arith::SelectOp::create(b, loc, upper, shuffle(a1, srcHi),
                                         shuffle(a0, srcHi));
      if (s.resultType != f32) {
        lo = arith::TruncFOp::create(b, loc, s.resultType, lo);
        hi = arith::TruncFOp::create(b, loc, s.resultType, hi);
      }
      Value pair = vector::FromElementsOp::create(b, loc, pairType,
                                                  ValueRange{lo, hi});
      Value tok = im.add(tok0, im.add(im.mul(t, 2), 8 * q + r));
      // N is even and feat is even: feat < N covers feat + 1.
      Value ok = im.andi(fullM ? Value() : im.lt(tok, s.m),
                         fullN ? Value() : im.lt(feat, s.n));
      SmallVector<Value, 3> at = {tok, feat};
      if (split)
        at.insert(at.begin(), split);
      im.ifThen(ok, [&] {
        vector::StoreOp::create(b, loc, pair, y, at, /*nontemporal=*/false,
                                llvm::Align(align));
      });
    }
  }
}

} // namespace sgpu
} // namespace mlir

#endif // SPARSEOPT_LIB_CONVERSION_SPMMEPILOGUE_H
