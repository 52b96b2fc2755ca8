//===- IndexMath.h - index arithmetic for generated loops -------*- C++ -*-===//
//
// Shorthand for the index computations the lowerings emit (tile offsets,
// metadata word indices, bounds checks), so the generated code reads like the
// formulas in the comments beside it.
//
//===----------------------------------------------------------------------===//

#ifndef SPARSEOPT_LIB_CONVERSION_INDEXMATH_H
#define SPARSEOPT_LIB_CONVERSION_INDEXMATH_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"

namespace mlir {
namespace sgpu {

struct IndexMath {
  OpBuilder &b;
  Location loc;

  Value c(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  Value i32(int64_t v) {
    return arith::ConstantIntOp::create(b, loc, b.getI32Type(), v);
  }
  Value i64(int64_t v) {
    return arith::ConstantIntOp::create(b, loc, b.getI64Type(), v);
  }
  Value add(Value x, Value y) { return arith::AddIOp::create(b, loc, x, y); }
  Value add(Value x, int64_t y) { return y ? add(x, c(y)) : x; }
  Value sub(Value x, Value y) { return arith::SubIOp::create(b, loc, x, y); }
  Value mul(Value x, int64_t y) {
    return arith::MulIOp::create(b, loc, x, c(y));
  }
  Value div(Value x, int64_t y) {
    return arith::DivUIOp::create(b, loc, x, c(y));
  }
  Value rem(Value x, int64_t y) {
    return arith::RemUIOp::create(b, loc, x, c(y));
  }
  /// x < y (unsigned).
  Value lt(Value x, Value y) {
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, x, y);
  }
  Value lt(Value x, int64_t y) { return lt(x, c(y)); }
  /// Conjunction that treats a null condition as "true".
  Value andi(Value x, Value y) {
    if (!x)
      return y;
    if (!y)
      return x;
    return arith::AndIOp::create(b, loc, x, y);
  }
  /// `x` when `inBounds` (null: always), else 0: keeps a masked load's
  /// address valid.
  Value clamp(Value x, Value inBounds) {
    return inBounds
               ? arith::SelectOp::create(b, loc, inBounds, x, c(0)).getResult()
               : x;
  }
  /// Extends a 16-bit float to f32 (f32 passes through).
  Value toF32(Value v) {
    return v.getType().isF32()
               ? v
               : arith::ExtFOp::create(b, loc, b.getF32Type(), v).getResult();
  }
  /// An integer element of `mem` (i32 or i64) as a signed index.
  Value load(Value mem, ValueRange idx) {
    return memref::LoadOp::create(b, loc, mem, idx);
  }
  void store(Value v, Value mem, ValueRange idx) {
    memref::StoreOp::create(b, loc, v, mem, idx);
  }
  Value loadIndex(Value mem, ValueRange idx) {
    Value v = memref::LoadOp::create(b, loc, mem, idx);
    return arith::IndexCastOp::create(b, loc, b.getIndexType(), v);
  }
  /// The position of token `s` of sequence `b` in a KV-cache positions
  /// buffer: `B x S`, or `S` (one set of positions for every sequence).
  Value loadPosition(Value positions, Value b, Value s) {
    if (cast<MemRefType>(positions.getType()).getRank() == 1)
      return loadIndex(positions, {s});
    return loadIndex(positions, {b, s});
  }
  /// x >= y and x < y on signed indices.
  Value sge(Value x, Value y) {
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, x, y);
  }
  Value slt(Value x, Value y) {
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, x, y);
  }
  /// An element of `mem`, widened to f32.
  Value loadF32(Value mem, ValueRange idx) {
    return toF32(memref::LoadOp::create(b, loc, mem, idx));
  }
  /// Stores the f32 `v` rounded to the element type of `mem`.
  void storeRounded(Value v, Value mem, ValueRange idx) {
    Type et = cast<MemRefType>(mem.getType()).getElementType();
    if (et != v.getType())
      v = arith::TruncFOp::create(b, loc, et, v);
    memref::StoreOp::create(b, loc, v, mem, idx);
  }

  // Structured control flow for the generated loops and kernels.

  /// for i = lo; i < hi; i += step: body(i).
  void forEach(Value lo, Value hi, Value step, function_ref<void(Value)> body) {
    scf::ForOp::create(b, loc, lo, hi, step, ValueRange{},
                       [&](OpBuilder &, Location, Value i, ValueRange) {
                         body(i);
                         scf::YieldOp::create(b, loc);
                       });
  }
  /// acc = init; for i = lo; i < hi; i += step: acc = body(i, acc).
  Value reduce(Value lo, Value hi, Value step, Value init,
               function_ref<Value(Value, Value)> body) {
    auto f = scf::ForOp::create(
        b, loc, lo, hi, step, ValueRange{init},
        [&](OpBuilder &, Location, Value i, ValueRange acc) {
          scf::YieldOp::create(b, loc, body(i, acc[0]));
        });
    return f.getResult(0);
  }
  /// if (cond) then(); [else otherwise();]. A null `cond` (a guard that
  /// is statically true, as IndexMath::andi leaves it) runs `then` inline.
  void ifThen(Value cond, function_ref<void()> then,
              function_ref<void()> otherwise = nullptr) {
    if (!cond) {
      then();
      return;
    }
    auto thenBody = [&](OpBuilder &, Location) {
      then();
      scf::YieldOp::create(b, loc);
    };
    if (!otherwise) {
      scf::IfOp::create(b, loc, cond, thenBody);
      return;
    }
    scf::IfOp::create(b, loc, cond, thenBody, [&](OpBuilder &, Location) {
      otherwise();
      scf::YieldOp::create(b, loc);
    });
  }
};

/// The identity-layout memref type of a ranked tensor type: the buffers the
/// lowerings read and write.
inline MemRefType memrefTypeOf(Type tensor) {
  auto t = cast<RankedTensorType>(tensor);
  return MemRefType::get(t.getShape(), t.getElementType());
}

/// A read-only buffer of `tensor` (bufferization.to_buffer) at `b`.
inline Value readBuffer(OpBuilder &b, Location loc, Value tensor) {
  return bufferization::ToBufferOp::create(
      b, loc, memrefTypeOf(tensor.getType()), tensor,
      /*read_only=*/b.getUnitAttr());
}

/// `buf` viewed as [rows, last dim]: the leading dimensions collapsed into
/// one (a rank-1 buffer is one row). The normalizations work on this view;
/// the runtime program treats the reshape as the buffer itself.
inline Value viewAsRows(OpBuilder &b, Location loc, Value buf) {
  auto t = cast<MemRefType>(buf.getType());
  if (t.getRank() == 2)
    return buf;
  if (t.getRank() == 1)
    return memref::ExpandShapeOp::create(
        b, loc, MemRefType::get({1, t.getDimSize(0)}, t.getElementType()),
        buf, ArrayRef<ReassociationIndices>{{0, 1}});
  ReassociationIndices lead;
  for (int64_t i = 0; i + 1 < t.getRank(); ++i)
    lead.push_back(i);
  SmallVector<ReassociationIndices> groups = {lead, {t.getRank() - 1}};
  return memref::CollapseShapeOp::create(b, loc, buf, groups);
}

} // namespace sgpu
} // namespace mlir

#endif // SPARSEOPT_LIB_CONVERSION_INDEXMATH_H
