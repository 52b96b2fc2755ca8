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
/// value `v` and stores it at y[tok, feat]; `zero` is an f32 0. Guards the
/// store with tok < M (unless `fullM`) and feat < N (unless `fullN`).
inline void storeEpilogueValue(OpBuilder &b, Location loc, IndexMath &im,
                               const SpmmShape &s, Value v, Value biasF32,
                               Value zero, Value y, Value tok, Value feat,
                               bool fullM, bool fullN) {
  if (biasF32)
    v = arith::AddFOp::create(b, loc, v, biasF32);
  if (s.activation == Activation::relu)
    v = arith::MaximumFOp::create(b, loc, v, zero);
  if (s.resultType != b.getF32Type())
    v = arith::TruncFOp::create(b, loc, s.resultType, v);
  Value ok = im.andi(fullM ? Value() : im.lt(tok, s.m),
                     fullN ? Value() : im.lt(feat, s.n));
  if (!ok) {
    memref::StoreOp::create(b, loc, v, y, ValueRange{tok, feat});
    return;
  }
  auto guard = scf::IfOp::create(b, loc, ok, /*withElseRegion=*/false);
  OpBuilder::InsertionGuard ig(b);
  b.setInsertionPointToStart(&guard.getThenRegion().front());
  memref::StoreOp::create(b, loc, v, y, ValueRange{tok, feat});
}

} // namespace sgpu
} // namespace mlir

#endif // SPARSEOPT_LIB_CONVERSION_SPMMEPILOGUE_H
