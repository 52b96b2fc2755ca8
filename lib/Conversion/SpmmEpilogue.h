//===- SpmmEpilogue.h - the sgpu.spmm epilogue, shared by its kernels -*- C++ -*-===//
//
// Both spmm kernels (warp-level mma.sp and warpgroup wgmma.sp) end the same
// way: each f32 accumulator element gets the bias of its feature and the
// activation, is rounded once to the result type and stored at
// Y[token][feature], guarded where the tile runs past M or N.
//
//===----------------------------------------------------------------------===//

#ifndef SPARSEOPT_LIB_CONVERSION_SPMMEPILOGUE_H
#define SPARSEOPT_LIB_CONVERSION_SPMMEPILOGUE_H

#include "IndexMath.h"
#include "SpmmWGMMA.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

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
  if (!ok) {
    memref::StoreOp::create(b, loc, v, y, at);
    return;
  }
  auto guard = scf::IfOp::create(b, loc, ok, /*withElseRegion=*/false);
  OpBuilder::InsertionGuard ig(b);
  b.setInsertionPointToStart(&guard.getThenRegion().front());
  memref::StoreOp::create(b, loc, v, y, at);
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

} // namespace sgpu
} // namespace mlir

#endif // SPARSEOPT_LIB_CONVERSION_SPMMEPILOGUE_H
