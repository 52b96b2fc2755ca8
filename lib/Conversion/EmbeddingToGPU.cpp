//===- EmbeddingToGPU.cpp - sgpu.embedding as a gather kernel -------------===//
//
// One thread per result element (token t, column c), 256 threads per
// block: consecutive threads read consecutive columns of one table row, so
// a warp's loads are coalesced. The element is embeddingElement
// (ModelElements.h), the CPU reference's formula.
//
//===----------------------------------------------------------------------===//

#include "GPUKernel.h"
#include "ModelElements.h"
#include "ModelOpsToGPU.h"

using namespace mlir;
using namespace mlir::sgpu;

namespace {

struct EmbeddingToGPU : OpConversionPattern<EmbeddingOp> {
  KernelSink &sink;
  EmbeddingToGPU(MLIRContext *ctx, KernelSink &sink)
      : OpConversionPattern(ctx), sink(sink) {}

  LogicalResult
  matchAndRewrite(EmbeddingOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto rt = op.getResult().getType();
    auto tableType = op.getTable().getType();
    int64_t d = rt.getShape().back();
    int64_t tokens = op.getIds().getType().getNumElements();
    int64_t elems = tokens * d;
    int64_t threads = launchThreads(op);

    Value out = memref::AllocOp::create(rewriter, loc, memrefTypeOf(rt));
    if (elems != 0) {
      OpBuilder kb = sink.builder();
      IndexMath im{kb, loc};
      auto idsType =
          MemRefType::get({tokens}, op.getIds().getType().getElementType());
      auto rowsType = MemRefType::get({tokens, d}, rt.getElementType());
      auto func = createKernel(kb, loc, sink.symbols, sink.name("sgpu_embedding"),
                               {memrefTypeOf(tableType), idsType, rowsType},
                               {}, threads);
      Value table = func.getArgument(0), ids = func.getArgument(1),
            y = func.getArgument(2);
      Value e = im.add(
          im.mul(gpu::BlockIdOp::create(kb, loc, gpu::Dimension::x), threads),
          gpu::ThreadIdOp::create(kb, loc, gpu::Dimension::x));
      im.ifThen(im.lt(e, elems), [&] {
        Value t = im.div(e, d), c = im.rem(e, d);
        im.storeRounded(embeddingElement(im, table, ids, t, c), y, {t, c});
      });
      finishKernel(kb, loc, func);

      SmallVector<Value> args = {
          readBuffer(rewriter, loc, adaptor.getTable()),
          flatView(rewriter, loc, readBuffer(rewriter, loc, adaptor.getIds())),
          viewAsRows(rewriter, loc, out)};
      launchKernel(rewriter, loc, func, (elems + threads - 1) / threads,
                   threads, args);
    }
    rewriter.replaceOpWithNewOp<bufferization::ToTensorOp>(
        op, rt, out, /*restrict=*/rewriter.getUnitAttr(),
        /*writable=*/rewriter.getUnitAttr());
    return success();
  }
};

} // namespace

void mlir::sgpu::populateEmbeddingToGPUPatterns(RewritePatternSet &patterns,
                                                KernelSink &sink) {
  patterns.add<EmbeddingToGPU>(patterns.getContext(), sink);
}
