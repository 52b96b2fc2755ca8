//===- FloatMath.h - f32 arithmetic for generated kernels -------*- C++ -*-===//
//
// Shorthand for the f32 scalar arithmetic the kernel builders emit (softmax
// running maxima, sums and rescalings), so a builder's formulas read like
// the comments beside them. A builder derives from it for `b` and `loc`.
//
//===----------------------------------------------------------------------===//

#ifndef SPARSEOPT_LIB_CONVERSION_FLOATMATH_H
#define SPARSEOPT_LIB_CONVERSION_FLOATMATH_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/Builders.h"

namespace mlir {
namespace sgpu {

struct FloatMath {
  OpBuilder &b;
  Location loc;

  Value f32(double v) {
    return arith::ConstantOp::create(b, loc, b.getF32Type(),
                                     b.getF32FloatAttr(v));
  }
  Value addf(Value x, Value y) { return arith::AddFOp::create(b, loc, x, y); }
  Value subf(Value x, Value y) { return arith::SubFOp::create(b, loc, x, y); }
  Value mulf(Value x, Value y) { return arith::MulFOp::create(b, loc, x, y); }
  Value divf(Value x, Value y) { return arith::DivFOp::create(b, loc, x, y); }
  Value maxf(Value x, Value y) {
    return arith::MaximumFOp::create(b, loc, x, y);
  }
  Value exp(Value x) { return math::ExpOp::create(b, loc, x); }
};

} // namespace sgpu
} // namespace mlir

#endif // SPARSEOPT_LIB_CONVERSION_FLOATMATH_H
