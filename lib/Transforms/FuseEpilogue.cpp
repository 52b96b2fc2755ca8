//===- FuseEpilogue.cpp - bias and ReLU into the GEMM epilogues -----------===//

#include "sparse-opt/Dialect/SGPU/SGPU.h"
#include "sparse-opt/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Matchers.h"

namespace mlir {
namespace sgpu {
#define GEN_PASS_DEF_SGPUFUSEEPILOGUE
#include "sparse-opt/Transforms/Passes.h.inc"
} // namespace sgpu
} // namespace mlir

using namespace mlir;
using namespace mlir::sgpu;

namespace {

/// Whether `v` is the float constant zero (+0 or -0).
static bool isZero(Value v) { return matchPattern(v, m_AnyZeroFloat()); }

/// An all-parallel linalg.generic with tensor semantics, one init that the
/// body does not read, and `numInputs` inputs.
static bool isElementwiseShape(linalg::GenericOp op, unsigned numInputs) {
  return op.getNumDpsInputs() == numInputs && op.getNumDpsInits() == 1 &&
         op.hasPureTensorSemantics() &&
         !op.payloadUsesValueFromOperand(op.getDpsInitOperand(0)) &&
         llvm::all_of(op.getIteratorTypesArray(), [](utils::IteratorType t) {
           return t == utils::IteratorType::parallel;
         });
}

/// The value yielded by the single-result body of `op`.
static Value yielded(linalg::GenericOp op) {
  auto yield = cast<linalg::YieldOp>(op.getRegion().front().getTerminator());
  return yield.getNumOperands() == 1 ? yield.getOperand(0) : Value();
}

/// Whether `op` is max(in, 0) on its single input: arith.maximumf /
/// arith.maxnumf against zero, or select(cmpf ogt/oge/ugt/uge(in, 0), in, 0).
static bool isRelu(linalg::GenericOp op) {
  if (!isElementwiseShape(op, 1) ||
      !llvm::all_of(op.getIndexingMapsArray(),
                    [](AffineMap m) { return m.isIdentity(); }))
    return false;
  Value in = op.getRegion().front().getArgument(0);
  Value out = yielded(op);
  Operation *def = out ? out.getDefiningOp() : nullptr;
  if (!def)
    return false;
  if (isa<arith::MaximumFOp, arith::MaxNumFOp>(def)) {
    Value l = def->getOperand(0), r = def->getOperand(1);
    return (l == in && isZero(r)) || (r == in && isZero(l));
  }
  if (auto sel = dyn_cast<arith::SelectOp>(def)) {
    auto cmp = sel.getCondition().getDefiningOp<arith::CmpFOp>();
    if (!cmp || sel.getTrueValue() != in || !isZero(sel.getFalseValue()))
      return false;
    using P = arith::CmpFPredicate;
    P p = cmp.getPredicate();
    return (p == P::OGT || p == P::OGE || p == P::UGT || p == P::UGE) &&
           cmp.getLhs() == in && isZero(cmp.getRhs());
  }
  return false;
}

/// If `op` adds a row-broadcast 1-D vector to `y` (maps (d0,d1)->(d0,d1) for
/// y and (d0,d1)->(d1) for the vector, body addf), returns the vector.
static Value matchBiasAdd(linalg::GenericOp op, Value y) {
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

/// Erases `op` and the tensor.empty feeding its init if nothing else uses it.
static void eraseWithInit(linalg::GenericOp op) {
  Value init = op.getDpsInitOperand(0)->get();
  op.erase();
  if (Operation *def = init.getDefiningOp())
    if (def->use_empty() && isa<tensor::EmptyOp>(def))
      def->erase();
}

/// Folds the bias add and the ReLU that follow a GEMM op (sgpu.spmm or
/// sgpu.matmul: both carry an optional bias and activation) into the op.
struct FuseEpiloguePass
    : public sgpu::impl::SGPUFuseEpilogueBase<FuseEpiloguePass> {
  void runOnOperation() override {
    SmallVector<Operation *> gemms;
    getOperation().walk([&](Operation *op) {
      if (isa<SpmmOp, MatmulOp>(op))
        gemms.push_back(op);
    });
    for (Operation *op : gemms) {
      if (auto spmm = dyn_cast<SpmmOp>(op)) {
        fuseBias(spmm);
        fuseRelu(spmm);
      } else {
        auto matmul = cast<MatmulOp>(op);
        fuseBias(matmul);
        fuseRelu(matmul);
      }
    }
  }

  template <typename GemmOp>
  void fuseBias(GemmOp op) {
    Value y = op.getResult();
    if (op.getBias() || op.getActivationOrNone() != Activation::none ||
        !y.hasOneUse())
      return;
    auto add = dyn_cast<linalg::GenericOp>(*y.getUsers().begin());
    if (!add || add.getResult(0).getType() != y.getType())
      return;
    Value bias = matchBiasAdd(add, y);
    if (!bias)
      return;
    // The bias must be available where the GEMM is.
    if (Operation *def = bias.getDefiningOp())
      if (def->getBlock() == op->getBlock() && op->isBeforeInBlock(def))
        def->moveBefore(op);
    op.getBiasMutable().assign(bias);
    add.getResult(0).replaceAllUsesWith(y);
    eraseWithInit(add);
  }

  template <typename GemmOp>
  void fuseRelu(GemmOp op) {
    Value y = op.getResult();
    if (op.getActivationOrNone() != Activation::none || !y.hasOneUse())
      return;
    Operation *user = *y.getUsers().begin();
    // Look through one reshape: relu(reshape(y)) == reshape(relu(y)).
    Value seen = y;
    if (isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp>(user)) {
      seen = user->getResult(0);
      if (!seen.hasOneUse())
        return;
      user = *seen.getUsers().begin();
    }
    auto relu = dyn_cast<linalg::GenericOp>(user);
    if (!relu || !isRelu(relu) ||
        relu.getDpsInputOperand(0)->get() != seen ||
        relu.getResult(0).getType() != seen.getType())
      return;
    op.setActivationAttr(ActivationAttr::get(op.getContext(), Activation::relu));
    relu.getResult(0).replaceAllUsesWith(seen);
    eraseWithInit(relu);
  }
};

} // namespace
