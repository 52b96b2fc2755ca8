//===- CacheUpdateToGPU.cpp - sgpu.cache_update as a scatter kernel -------===//
//
// One thread per element of the update (sequence b, head h, new token s,
// column c), 256 threads per block, consecutive threads on consecutive
// columns: thread (b, h, s, c) reads p = positions[b, s] and, when
// 0 <= p < T, writes cache[b, h, p, c]. The kernel writes the cache
// argument's own buffer: the verifier made the cache a state argument that
// nothing else reads, so the op's result is that argument, updated in
// place, and every later reader (the attention over the cache) is a later
// step of the program. With rope tables the thread writes the rotated
// element instead (ropeElement, ModelElements.h: the partner element and
// the tables read from flat views of the update and the tables), so a
// RoPE that only the cache write read costs no kernel of its own.
//
//===----------------------------------------------------------------------===//

#include "GPUKernel.h"
#include "IndexMath.h"
#include "ModelElements.h"
#include "ModelOpsToGPU.h"

using namespace mlir;
using namespace mlir::sgpu;

namespace {

struct CacheUpdateToGPU : OpConversionPattern<CacheUpdateOp> {
  KernelSink &sink;
  CacheUpdateToGPU(MLIRContext *ctx, KernelSink &sink)
      : OpConversionPattern(ctx), sink(sink) {}

  LogicalResult
  matchAndRewrite(CacheUpdateOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto ut = op.getUpdate().getType();
    auto ct = op.getCache().getType();
    int64_t heads = ut.getDimSize(1), s = ut.getDimSize(2),
            d = ut.getDimSize(3), capacity = ct.getDimSize(2);
    int64_t elems = ut.getNumElements();
    int64_t threads = launchThreads(op);
    if (elems != 0) {
      OpBuilder kb = sink.builder();
      IndexMath im{kb, loc};
      bool rope = bool(op.getRopeCos());
      auto flat = [](RankedTensorType t) {
        return MemRefType::get({t.getNumElements()}, t.getElementType());
      };
      SmallVector<Type> argTypes = {memrefTypeOf(ct), memrefTypeOf(ut),
                                    memrefTypeOf(op.getPositions().getType())};
      if (rope) {
        argTypes.push_back(flat(ut));
        argTypes.push_back(
            flat(op.getRopeCos().getType()));
        argTypes.push_back(
            flat(op.getRopeSin().getType()));
      }
      auto func = createKernel(kb, loc, sink.symbols,
                               sink.name(rope ? "sgpu_cache_update_rope"
                                              : "sgpu_cache_update"),
                               argTypes, {}, threads);
      Value cache = func.getArgument(0), update = func.getArgument(1),
            positions = func.getArgument(2);
      Value e = im.add(
          im.mul(gpu::BlockIdOp::create(kb, loc, gpu::Dimension::x), threads),
          gpu::ThreadIdOp::create(kb, loc, gpu::Dimension::x));
      im.ifThen(im.lt(e, elems), [&] {
        Value c = im.rem(e, d), row = im.div(e, d);
        Value t = im.rem(row, s), bh = im.div(row, s);
        Value h = im.rem(bh, heads), b = im.div(bh, heads);
        Value p = im.loadPosition(positions, b, t);
        // One statement each: the IR's order whatever the compiler's
        // argument evaluation order.
        Value notBelow = im.sge(p, im.c(0));
        Value inside = im.andi(notBelow, im.slt(p, im.c(capacity)));
        im.ifThen(inside, [&] {
          if (rope) {
            Value v = ropeElement(
                im, func.getArgument(3), func.getArgument(4),
                func.getArgument(5), ut.getShape(),
                op.getRopeCos().getType().getShape(),
                op.getRopeSin().getType().getShape(),
                e);
            im.storeRounded(v, cache, {b, h, p, c});
            return;
          }
          Value v =
              memref::LoadOp::create(kb, loc, update, ValueRange{b, h, t, c});
          memref::StoreOp::create(kb, loc, v, cache, ValueRange{b, h, p, c});
        });
      });
      finishKernel(kb, loc, func);
      SmallVector<Value> args = {
          readBuffer(rewriter, loc, adaptor.getCache()),
          readBuffer(rewriter, loc, adaptor.getUpdate()),
          readBuffer(rewriter, loc, adaptor.getPositions())};
      if (rope)
        for (Value t :
             {adaptor.getUpdate(), adaptor.getRopeCos(), adaptor.getRopeSin()})
          args.push_back(
              flatView(rewriter, loc, readBuffer(rewriter, loc, t)));
      launchKernel(rewriter, loc, func, (elems + threads - 1) / threads,
                   threads, args);
    }
    rewriter.replaceOp(op, adaptor.getCache());
    return success();
  }
};

} // namespace

void mlir::sgpu::populateCacheUpdateToGPUPatterns(RewritePatternSet &patterns,
                                                  KernelSink &sink) {
  patterns.add<CacheUpdateToGPU>(patterns.getContext(), sink);
}
