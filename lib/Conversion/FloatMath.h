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
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/Builders.h"

#include <limits>

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
  /// x * y + z in one rounding (fma.rn.f32): the backend does not contract
  /// a separate multiply and add.
  Value fma(Value x, Value y, Value z) {
    return math::FmaOp::create(b, loc, x, y, z);
  }
  Value maxf(Value x, Value y) {
    return arith::MaximumFOp::create(b, loc, x, y);
  }
  Value exp(Value x) { return math::ExpOp::create(b, loc, x); }
  /// 2^x in one instruction (ex2.approx.f32, about 2 ulp; -inf gives 0),
  /// where math.exp would become libdevice's expf of about ten: the
  /// softmax of the attention kernels works in base 2 with log2(e) folded
  /// into its scale, as flash attention does.
  Value exp2Approx(Value x) {
    return LLVM::CallIntrinsicOp::create(
               b, loc, b.getF32Type(),
               b.getStringAttr("llvm.nvvm.ex2.approx.f32"), ValueRange{x})
        .getResult(0);
  }
  /// 2^(x - base) for an online softmax in base 2, where base = -inf
  /// (nothing seen yet) gives 0 for x = -inf instead of NaN.
  Value exp2Above(Value x, Value base) {
    Value negInf = f32(-std::numeric_limits<double>::infinity());
    Value none = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ,
                                       base, negInf);
    Value safe = arith::SelectOp::create(b, loc, none, f32(0), base);
    return exp2Approx(subf(x, safe));
  }
};

} // namespace sgpu
} // namespace mlir

#endif // SPARSEOPT_LIB_CONVERSION_FLOATMATH_H
