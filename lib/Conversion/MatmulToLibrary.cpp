//===- MatmulToLibrary.cpp - sgpu.matmul as sgpu.gemm_call ----------------===//
//
// A dense GEMM is no generated kernel: the runtime calls cuBLASLt for it,
// with the bias and activation as the library's epilogue.
//
//===----------------------------------------------------------------------===//

#include "MatmulToLibrary.h"
#include "IndexMath.h"
#include "sparse-opt/Dialect/SGPU/SGPU.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

using namespace mlir;
using namespace mlir::sgpu;

namespace {

struct MatmulToLibrary : OpConversionPattern<MatmulOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(MatmulOp op, OpAdaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto yType = cast<RankedTensorType>(op.getResult().getType());
    Value x = readBuffer(rewriter, loc, op.getInput());
    Value w = readBuffer(rewriter, loc, op.getWeight());
    Value bias =
        op.getBias() ? readBuffer(rewriter, loc, op.getBias()) : Value();
    Value y = memref::AllocOp::create(rewriter, loc, memrefTypeOf(yType));
    GemmCallOp::create(rewriter, loc, x, w, bias, y, op.getActivationAttr());
    rewriter.replaceOpWithNewOp<bufferization::ToTensorOp>(
        op, yType, y, /*restrict=*/rewriter.getUnitAttr(),
        /*writable=*/rewriter.getUnitAttr());
    return success();
  }
};

} // namespace

void mlir::sgpu::populateMatmulToLibraryPatterns(RewritePatternSet &patterns) {
  patterns.add<MatmulToLibrary>(patterns.getContext());
}
