//===- RopeToGPU.cpp - sgpu.rope as an element-wise kernel ----------------===//
//
// One thread per result element over the flat views of x, cos, sin and y,
// 256 threads per block; the element is ropeElement (ModelElements.h), the
// CPU reference's formula. The partner element (D/2 away in the same row)
// is a second coalesced load of the same warp's row.
//
//===----------------------------------------------------------------------===//

#include "GPUKernel.h"
#include "ModelElements.h"
#include "ModelOpsToGPU.h"

using namespace mlir;
using namespace mlir::sgpu;

namespace {

struct RopeToGPU : OpConversionPattern<RopeOp> {
  KernelSink &sink;
  RopeToGPU(MLIRContext *ctx, KernelSink &sink)
      : OpConversionPattern(ctx), sink(sink) {}

  LogicalResult
  matchAndRewrite(RopeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto xt = op.getInput().getType();
    auto ct = op.getCos().getType(), st = op.getSin().getType();
    int64_t elems = xt.getNumElements();
    int64_t threads = launchThreads(op);
    Value out = memref::AllocOp::create(rewriter, loc, memrefTypeOf(xt));
    if (elems != 0) {
      OpBuilder kb = sink.builder();
      IndexMath im{kb, loc};
      Type et = xt.getElementType();
      auto flat = [&](int64_t n) { return MemRefType::get({n}, et); };
      auto func = createKernel(
          kb, loc, sink.symbols, sink.name("sgpu_rope"),
          {flat(elems), flat(ct.getNumElements()), flat(st.getNumElements()),
           flat(elems)},
          {}, threads);
      Value e = im.add(
          im.mul(gpu::BlockIdOp::create(kb, loc, gpu::Dimension::x), threads),
          gpu::ThreadIdOp::create(kb, loc, gpu::Dimension::x));
      im.ifThen(im.lt(e, elems), [&] {
        im.storeRounded(ropeElement(im, func.getArgument(0),
                                    func.getArgument(1), func.getArgument(2),
                                    xt.getShape(), ct.getShape(),
                                    st.getShape(), e),
                        func.getArgument(3), {e});
      });
      finishKernel(kb, loc, func);

      auto view = [&](Value tensor) {
        return flatView(rewriter, loc, readBuffer(rewriter, loc, tensor));
      };
      SmallVector<Value> args = {view(adaptor.getInput()),
                                 view(adaptor.getCos()), view(adaptor.getSin()),
                                 flatView(rewriter, loc, out)};
      launchKernel(rewriter, loc, func, (elems + threads - 1) / threads,
                   threads, args);
    }
    rewriter.replaceOpWithNewOp<bufferization::ToTensorOp>(
        op, xt, out, /*restrict=*/rewriter.getUnitAttr(),
        /*writable=*/rewriter.getUnitAttr());
    return success();
  }
};

} // namespace

void mlir::sgpu::populateRopeToGPUPatterns(RewritePatternSet &patterns,
                                           KernelSink &sink) {
  patterns.add<RopeToGPU>(patterns.getContext(), sink);
}
