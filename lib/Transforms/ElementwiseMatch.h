//===- ElementwiseMatch.h - recognizing element-wise linalg ops -*- C++ -*-===//
//
// Importers write element-wise tensor math (ReLU, bias adds, products) as
// all-parallel linalg.generic ops with a one-op body. sgpu-fuse-epilogue
// (which folds them into GEMM epilogues) and sgpu-sparsify-ffn (which finds
// the ReLU FFNs that TwELL packing applies to) read them through these
// matchers, so both passes accept exactly the same forms.
//
//===----------------------------------------------------------------------===//

#ifndef SPARSEOPT_LIB_TRANSFORMS_ELEMENTWISEMATCH_H
#define SPARSEOPT_LIB_TRANSFORMS_ELEMENTWISEMATCH_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/Matchers.h"

namespace mlir {
namespace sgpu {

/// Whether `v` is the float constant zero (+0 or -0).
inline bool isZeroFloat(Value v) { return matchPattern(v, m_AnyZeroFloat()); }

/// An all-parallel linalg.generic with tensor semantics, one init that the
/// body does not read, and `numInputs` inputs.
inline bool isElementwiseShape(linalg::GenericOp op, unsigned numInputs) {
  return op.getNumDpsInputs() == numInputs && op.getNumDpsInits() == 1 &&
         op.hasPureTensorSemantics() &&
         !op.payloadUsesValueFromOperand(op.getDpsInitOperand(0)) &&
         llvm::all_of(op.getIteratorTypesArray(), [](utils::IteratorType t) {
           return t == utils::IteratorType::parallel;
         });
}

/// An element-wise op whose operands and result all use identity maps (no
/// broadcast), with `numInputs` inputs.
inline bool isPlainElementwise(linalg::GenericOp op, unsigned numInputs) {
  return isElementwiseShape(op, numInputs) &&
         llvm::all_of(op.getIndexingMapsArray(),
                      [](AffineMap m) { return m.isIdentity(); });
}

/// The value yielded by the single-result body of `op`.
inline Value yielded(linalg::GenericOp op) {
  auto yield = cast<linalg::YieldOp>(op.getRegion().front().getTerminator());
  return yield.getNumOperands() == 1 ? yield.getOperand(0) : Value();
}

/// Whether `op` is max(in, 0) on its single input: arith.maximumf /
/// arith.maxnumf against zero, or select(cmpf ogt/oge/ugt/uge(in, 0), in, 0).
inline bool isRelu(linalg::GenericOp op) {
  if (!isPlainElementwise(op, 1))
    return false;
  Value in = op.getRegion().front().getArgument(0);
  Value out = yielded(op);
  Operation *def = out ? out.getDefiningOp() : nullptr;
  if (!def)
    return false;
  if (isa<arith::MaximumFOp, arith::MaxNumFOp>(def)) {
    Value l = def->getOperand(0), r = def->getOperand(1);
    return (l == in && isZeroFloat(r)) || (r == in && isZeroFloat(l));
  }
  if (auto sel = dyn_cast<arith::SelectOp>(def)) {
    auto cmp = sel.getCondition().getDefiningOp<arith::CmpFOp>();
    if (!cmp || sel.getTrueValue() != in || !isZeroFloat(sel.getFalseValue()))
      return false;
    using P = arith::CmpFPredicate;
    P p = cmp.getPredicate();
    return (p == P::OGT || p == P::OGE || p == P::UGT || p == P::UGE) &&
           cmp.getLhs() == in && isZeroFloat(cmp.getRhs());
  }
  return false;
}

/// If `op` adds a row-broadcast 1-D vector to `y` (maps (d0,d1)->(d0,d1) for
/// y and (d0,d1)->(d1) for the vector, body addf), returns the vector.
inline Value matchBiasAdd(linalg::GenericOp op, Value y) {
  if (!isElementwiseShape(op, 2))
    return {};
  auto maps = op.getIndexingMapsArray();
  MLIRContext *ctx = op.getContext();
  AffineMap row = AffineMap::get(2, 0, {getAffineDimExpr(1, ctx)}, ctx);
  int yIdx = op.getDpsInputOperand(0)->get() == y   ? 0
             : op.getDpsInputOperand(1)->get() == y ? 1
                                                    : -1;
  if (yIdx < 0 || !maps[yIdx].isIdentity() || maps[1 - yIdx] != row ||
      !maps[2].isIdentity())
    return {};
  Block &body = op.getRegion().front();
  auto add = dyn_cast_or_null<arith::AddFOp>(
      yielded(op) ? yielded(op).getDefiningOp() : nullptr);
  if (!add)
    return {};
  Value a = body.getArgument(0), b = body.getArgument(1);
  bool ok = (add.getLhs() == a && add.getRhs() == b) ||
            (add.getLhs() == b && add.getRhs() == a);
  return ok ? op.getDpsInputOperand(1 - yIdx)->get() : Value();
}

} // namespace sgpu
} // namespace mlir

#endif // SPARSEOPT_LIB_TRANSFORMS_ELEMENTWISEMATCH_H
