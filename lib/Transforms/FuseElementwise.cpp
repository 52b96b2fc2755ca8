//===- FuseElementwise.cpp - chains of element-wise generics as one op -----===//
//
// A producer linalg.generic fuses into its consumer when both have only
// parallel loops and the consumer is the producer's only user, so the
// intermediate never leaves registers: one element-wise kernel instead of
// one per op of the chain.
//
//===----------------------------------------------------------------------===//

#include "sparse-opt/Transforms/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir {
namespace sgpu {
#define GEN_PASS_DEF_SGPUFUSEELEMENTWISE
#include "sparse-opt/Transforms/Passes.h.inc"
} // namespace sgpu
} // namespace mlir

using namespace mlir;

namespace {

bool isElementwise(linalg::GenericOp op) {
  return op && op.getNumLoops() == op.getNumParallelLoops();
}

struct FuseElementwisePass
    : public sgpu::impl::SGPUFuseElementwiseBase<FuseElementwisePass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    linalg::populateElementwiseOpsFusionPatterns(
        patterns, [](OpOperand *use) {
          auto producer = use->get().getDefiningOp<linalg::GenericOp>();
          auto consumer = dyn_cast<linalg::GenericOp>(use->getOwner());
          return isElementwise(producer) && isElementwise(consumer) &&
                 producer->hasOneUse();
        });
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
