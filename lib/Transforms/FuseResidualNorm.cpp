//===- FuseResidualNorm.cpp - a residual add into the norm of its sum ------===//
//
// add + rms_norm -> sgpu.add_rms_norm: the residual stream's sum and its
// normalization from one kernel (see the pass description in Passes.td).
//
//===----------------------------------------------------------------------===//

#include "sparse-opt/Dialect/SGPU/SGPU.h"
#include "sparse-opt/Transforms/Passes.h"

#include "ElementwiseMatch.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Dominance.h"

namespace mlir {
namespace sgpu {
#define GEN_PASS_DEF_SGPUFUSERESIDUALNORM
#include "sparse-opt/Transforms/Passes.h.inc"
} // namespace sgpu
} // namespace mlir

using namespace mlir;
using namespace mlir::sgpu;

namespace {

/// The add `x + r` that `op` computes (identity maps, inputs of the result's
/// type, body addf of its two block arguments), or null.
linalg::GenericOp residualAdd(Value v) {
  auto add = v.getDefiningOp<linalg::GenericOp>();
  if (!add || !isPlainElementwise(add, 2))
    return {};
  Type t = add.getResult(0).getType();
  if (add.getDpsInputs()[0].getType() != t ||
      add.getDpsInputs()[1].getType() != t)
    return {};
  Value y = yielded(add);
  auto addf = y ? y.getDefiningOp<arith::AddFOp>() : nullptr;
  Block &body = add.getRegion().front();
  if (!addf || addf->getBlock() != &body || body.getOperations().size() != 2)
    return {};
  Value a = body.getArgument(0), b = body.getArgument(1);
  bool operands = (addf.getLhs() == a && addf.getRhs() == b) ||
                  (addf.getLhs() == b && addf.getRhs() == a);
  return operands ? add : linalg::GenericOp();
}

struct FuseResidualNormPass
    : public sgpu::impl::SGPUFuseResidualNormBase<FuseResidualNormPass> {
  void runOnOperation() override {
    SmallVector<RMSNormOp> norms;
    getOperation().walk([&](RMSNormOp op) { norms.push_back(op); });
    DominanceInfo dominance(getOperation());
    for (RMSNormOp norm : norms) {
      linalg::GenericOp add = residualAdd(norm.getInput());
      if (!add || !dominance.properlyDominates(norm.getWeight(), add))
        continue;
      OpBuilder b(add);
      Type t = add.getResult(0).getType();
      auto fused = AddRMSNormOp::create(
          b, norm.getLoc(), TypeRange{t, norm.getResult().getType()},
          add.getDpsInputs()[0], add.getDpsInputs()[1], norm.getWeight(),
          norm.getEpsilonAttr());
      norm.getResult().replaceAllUsesWith(fused.getResult());
      norm.erase();
      Value init = add.getDpsInits()[0];
      add.getResult(0).replaceAllUsesWith(fused.getSum());
      add.erase();
      if (Operation *def = init.getDefiningOp())
        if (def->use_empty() && isa<tensor::EmptyOp>(def))
          def->erase();
    }
  }
};

} // namespace
