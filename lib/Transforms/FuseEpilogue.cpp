//===- FuseActivation.cpp - ReLU into the sgpu.spmm epilogue --------------===//

#include "sparse-opt/Dialect/SGPU/SGPU.h"
#include "sparse-opt/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Matchers.h"

namespace mlir {
namespace sgpu {
#define GEN_PASS_DEF_SGPUFUSEACTIVATION
#include "sparse-opt/Transforms/Passes.h.inc"
} // namespace sgpu
} // namespace mlir

using namespace mlir;
using namespace mlir::sgpu;

namespace {

/// Whether `v` is the float constant zero (+0 or -0).
static bool isZero(Value v) { return matchPattern(v, m_AnyZeroFloat()); }

/// Whether the body of a one-input element-wise generic computes
/// max(in, 0): arith.maximumf / arith.maxnumf against zero, or
/// select(cmpf ogt/oge/ugt/uge(in, 0), in, 0).
static bool isReluBody(linalg::GenericOp op) {
  Block &body = op.getRegion().front();
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  if (yield.getNumOperands() != 1)
    return false;
  Value in = body.getArgument(0);
  Operation *def = yield.getOperand(0).getDefiningOp();
  if (!def)
    return false;
  auto isInAndZero = [&](Value l, Value r) {
    return (l == in && isZero(r)) || (r == in && isZero(l));
  };
  if (isa<arith::MaximumFOp, arith::MaxNumFOp>(def))
    return isInAndZero(def->getOperand(0), def->getOperand(1));
  if (auto sel = dyn_cast<arith::SelectOp>(def)) {
    auto cmp = sel.getCondition().getDefiningOp<arith::CmpFOp>();
    if (!cmp || sel.getTrueValue() != in || !isZero(sel.getFalseValue()))
      return false;
    using P = arith::CmpFPredicate;
    P p = cmp.getPredicate();
    bool gt = p == P::OGT || p == P::OGE || p == P::UGT || p == P::UGE;
    return gt && cmp.getLhs() == in && isZero(cmp.getRhs());
  }
  return false;
}

/// Whether `op` is an element-wise ReLU of its single input.
static bool isElementwiseRelu(linalg::GenericOp op) {
  if (op.getNumDpsInputs() != 1 || op.getNumDpsInits() != 1 ||
      !op.hasPureTensorSemantics())
    return false;
  if (!llvm::all_of(op.getIndexingMapsArray(),
                    [](AffineMap m) { return m.isIdentity(); }))
    return false;
  if (!llvm::all_of(op.getIteratorTypesArray(), [](utils::IteratorType t) { return t == utils::IteratorType::parallel; }))
    return false;
  // The init value must not be read.
  if (op.payloadUsesValueFromOperand(op.getDpsInitOperand(0)))
    return false;
  return isReluBody(op);
}

struct FuseActivationPass
    : public sgpu::impl::SGPUFuseActivationBase<FuseActivationPass> {
  void runOnOperation() override {
    SmallVector<std::pair<SpmmOp, linalg::GenericOp>> fusions;
    getOperation().walk([&](SpmmOp spmm) {
      if (spmm.getActivationOrNone() != Activation::none ||
          !spmm.getResult().hasOneUse())
        return;
      auto generic =
          dyn_cast<linalg::GenericOp>(*spmm.getResult().getUsers().begin());
      if (!generic || !isElementwiseRelu(generic) ||
          generic.getDpsInputOperand(0)->get() != spmm.getResult() ||
          generic.getResult(0).getType() != spmm.getResult().getType())
        return;
      fusions.emplace_back(spmm, generic);
    });
    for (auto [spmm, generic] : fusions) {
      spmm.setActivationAttr(
          ActivationAttr::get(spmm.getContext(), Activation::relu));
      generic.getResult(0).replaceAllUsesWith(spmm.getResult());
      Value init = generic.getDpsInitOperand(0)->get();
      generic.erase();
      if (Operation *def = init.getDefiningOp())
        if (def->use_empty() && isa<tensor::EmptyOp>(def))
          def->erase();
    }
  }
};

} // namespace
