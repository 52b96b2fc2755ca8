//===- FoldUnitTransposes.cpp - transposes of size-1 dimensions as views
//---===//
//
// A transpose whose permutation keeps the dimensions larger than 1 in order
// moves no element: reading the input and the result in row-major order
// gives the same sequence. Such a transpose becomes a reshape (collapse to
// one dimension, expand to the result's shape), which bufferizes to a view.
//
//===----------------------------------------------------------------------===//

#include "sparse-opt/Transforms/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir {
namespace sgpu {
#define GEN_PASS_DEF_SGPUFOLDUNITTRANSPOSES
#include "sparse-opt/Transforms/Passes.h.inc"
} // namespace sgpu
} // namespace mlir

using namespace mlir;

namespace {

/// True when `perm` applied to `shape` keeps the dimensions larger than 1
/// in their input order (the row-major element order is unchanged).
bool movesOnlyUnitDims(ArrayRef<int64_t> shape, ArrayRef<int64_t> perm) {
  int64_t last = -1;
  for (int64_t from : perm) {
    if (shape[from] == 1)
      continue;
    if (from < last)
      return false;
    last = from;
  }
  return true;
}

struct UnitTransposeToReshape : OpRewritePattern<linalg::TransposeOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(linalg::TransposeOp op,
                                PatternRewriter &rewriter) const override {
    if (!op.hasPureTensorSemantics())
      return rewriter.notifyMatchFailure(op, "not on tensors");
    auto in = dyn_cast<RankedTensorType>(op.getInput().getType());
    auto out = dyn_cast<RankedTensorType>(op.getInit().getType());
    if (!in || !out || !in.hasStaticShape() || in.getEncoding() ||
        out.getEncoding())
      return rewriter.notifyMatchFailure(op, "needs static plain tensors");
    if (!movesOnlyUnitDims(in.getShape(), op.getPermutation()))
      return rewriter.notifyMatchFailure(op, "reorders elements");
    // Rank 0 and 1 have only the identity permutation: the input itself.
    Value v = op.getInput();
    if (in.getRank() > 1) {
      // Through one dimension: every dimension reassociated into it.
      ReassociationIndices all;
      for (int64_t i = 0; i < in.getRank(); ++i)
        all.push_back(i);
      auto flat =
          RankedTensorType::get({in.getNumElements()}, in.getElementType());
      Location loc = op.getLoc();
      v = tensor::CollapseShapeOp::create(rewriter, loc, flat, v,
                                          ArrayRef<ReassociationIndices>{all});
      v = tensor::ExpandShapeOp::create(rewriter, loc, out, v,
                                        ArrayRef<ReassociationIndices>{all});
    }
    rewriter.replaceOp(op, v);
    return success();
  }
};

struct FoldUnitTransposesPass
    : public sgpu::impl::SGPUFoldUnitTransposesBase<FoldUnitTransposesPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<UnitTransposeToReshape>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
