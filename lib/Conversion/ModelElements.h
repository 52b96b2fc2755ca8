//===- ModelElements.h - per-element math of the model-block ops -*- C++ -*-===//
//
// The value of one result element of sgpu.embedding and sgpu.rope, built as
// IR at the current insertion point from flat (rank-1) views of the
// operands. The CPU reference (BlocksToLoops.cpp) and the GPU kernels
// (EmbeddingToGPU.cpp, RopeToGPU.cpp) call the same functions, so both
// compute exactly one formula; only the loop around it differs.
//
//===----------------------------------------------------------------------===//

#ifndef SPARSEOPT_LIB_CONVERSION_MODELELEMENTS_H
#define SPARSEOPT_LIB_CONVERSION_MODELELEMENTS_H

#include "IndexMath.h"

namespace mlir {
namespace sgpu {

/// `buf` (identity layout) viewed as one dimension. The runtime program
/// treats the reshape as the buffer itself.
inline Value flatView(OpBuilder &b, Location loc, Value buf) {
  auto t = cast<MemRefType>(buf.getType());
  if (t.getRank() == 1)
    return buf;
  if (t.getRank() == 0)
    return memref::ExpandShapeOp::create(
        b, loc, MemRefType::get({1}, t.getElementType()), buf,
        ArrayRef<ReassociationIndices>{});
  ReassociationIndices all;
  for (int64_t i = 0; i < t.getRank(); ++i)
    all.push_back(i);
  return memref::CollapseShapeOp::create(b, loc, buf,
                                         ArrayRef<ReassociationIndices>{all});
}

/// Element (t, c) of an embedding, in f32: table[ids[t], c] for an id in
/// [0, V), else 0 (never a read outside the table). `table` is [V, D],
/// `ids` flat.
inline Value embeddingElement(IndexMath &im, Value table, Value ids, Value t,
                              Value c) {
  OpBuilder &b = im.b;
  Location loc = im.loc;
  int64_t rows = cast<MemRefType>(table.getType()).getDimSize(0);
  Value id = memref::LoadOp::create(b, loc, ids, ValueRange{t});
  Type idType = id.getType();
  Value lo = arith::CmpIOp::create(
      b, loc, arith::CmpIPredicate::sge, id,
      arith::ConstantIntOp::create(b, loc, idType, 0));
  Value hi = arith::CmpIOp::create(
      b, loc, arith::CmpIPredicate::slt, id,
      arith::ConstantIntOp::create(b, loc, idType, rows));
  Value valid = arith::AndIOp::create(b, loc, lo, hi);
  Value row = im.clamp(
      arith::IndexCastOp::create(b, loc, b.getIndexType(), id), valid);
  Value v = im.loadF32(table, {row, c});
  Value zero = arith::ConstantOp::create(b, loc, b.getF32Type(),
                                         b.getF32FloatAttr(0));
  return arith::SelectOp::create(b, loc, valid, v, zero);
}

/// The flat index into a table of shape `table` (each dimension equal to
/// `shape`'s or 1) of the element of `shape` at the flat index `e`.
inline Value broadcastIndex(IndexMath &im, Value e, ArrayRef<int64_t> shape,
                            ArrayRef<int64_t> table) {
  Value idx = im.c(0);
  int64_t outer = 1, tableStride = 1;
  for (int64_t i = int64_t(shape.size()) - 1; i >= 0; --i) {
    if (table[i] != 1 && shape[i] != 1) {
      Value coord = im.rem(outer == 1 ? e : im.div(e, outer), shape[i]);
      idx = im.add(idx, tableStride == 1 ? coord : im.mul(coord, tableStride));
    }
    outer *= shape[i];
    tableStride *= table[i];
  }
  return idx;
}

/// sgpu.rope's formula for one element, in f32: x * c + r * s with
/// r = -partner in the first half of the last dimension (`firstHalf`) and
/// partner in the second, partner the element D/2 away.
inline Value ropeCombine(IndexMath &im, Value firstHalf, Value x,
                         Value partner, Value c, Value s) {
  OpBuilder &b = im.b;
  Location loc = im.loc;
  Value r = arith::SelectOp::create(b, loc, firstHalf,
                                    arith::NegFOp::create(b, loc, partner),
                                    partner);
  Value xc = arith::MulFOp::create(b, loc, x, c);
  return arith::AddFOp::create(b, loc, xc, arith::MulFOp::create(b, loc, r, s));
}

/// Element `e` of sgpu.rope over flat views, in f32:
/// x[e] * cos[e'] + r * sin[e'], with r = -x[e + D/2] in the first half of
/// the last dimension and x[e - D/2] in the second, and e' the broadcast
/// index of e into each table.
inline Value ropeElement(IndexMath &im, Value x, Value cos, Value sin,
                         ArrayRef<int64_t> shape, ArrayRef<int64_t> cosShape,
                         ArrayRef<int64_t> sinShape, Value e) {
  OpBuilder &b = im.b;
  Location loc = im.loc;
  int64_t half = shape.back() / 2;
  Value firstHalf = im.lt(im.rem(e, 2 * half), half);
  Value partner = arith::SelectOp::create(b, loc, firstHalf, im.add(e, half),
                                          im.sub(e, im.c(half)));
  Value r = im.loadF32(x, {partner});
  Value c = im.loadF32(cos, {broadcastIndex(im, e, shape, cosShape)});
  Value s = im.loadF32(sin, {broadcastIndex(im, e, shape, sinShape)});
  return ropeCombine(im, firstHalf, im.loadF32(x, {e}), r, c, s);
}

} // namespace sgpu
} // namespace mlir

#endif // SPARSEOPT_LIB_CONVERSION_MODELELEMENTS_H
