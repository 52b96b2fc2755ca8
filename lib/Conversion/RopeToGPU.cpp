//===- RopeToGPU.cpp - sgpu.rope as an element-wise kernel ----------------===//
//
// Over the flat views of x, cos, sin and y, 256 threads per block, with the
// CPU reference's formula (ropeElement, ModelElements.h):
//
// - chunked, where the half row D/2 is a multiple of one 16-byte chunk V of
//   x and both tables span the whole last dimension: thread t computes the
//   V elements from V t, in one half of one row, from four vector loads
//   (x's chunk, its partner chunk D/2 away, and the tables' chunks at the
//   broadcast index of the first element) and one vector store. A prefill
//   of the 8B-shaped model ropes 16 MiB of q per layer: memory-bound, and
//   2-byte loads (one element per thread) left it at a third of the
//   bandwidth;
// - else one thread per element: the partner element is a second
//   coalesced load of the same warp's row.
//
//===----------------------------------------------------------------------===//

#include "GPUKernel.h"
#include "ModelElements.h"
#include "ModelOpsToGPU.h"

#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::sgpu;

namespace {

/// Elements per thread: one 16-byte chunk of x where the half row is a
/// whole number of chunks and both tables span the last dimension (so a
/// chunk's table elements are consecutive too), else 1.
int64_t ropeChunk(RopeOp op) {
  auto xt = op.getInput().getType();
  int64_t d = xt.getShape().back();
  int64_t vec = 16 / (xt.getElementTypeBitWidth() / 8);
  if (d % (2 * vec) != 0 || op.getCos().getType().getShape().back() != d ||
      op.getSin().getType().getShape().back() != d)
    return 1;
  return vec;
}

/// The alignment of a run of `n` elements of `et` that starts at a multiple
/// of `n` (16-byte loads at most).
llvm::Align runAlignment(Type et, int64_t n) {
  return llvm::Align(std::min<int64_t>(16, n * et.getIntOrFloatBitWidth() / 8));
}

/// The `n` elements of the flat buffer `mem` from `at` (a multiple of n),
/// one vector load, in f32.
SmallVector<Value> loadRun(IndexMath &im, Value mem, Value at, int64_t n) {
  Type et = cast<MemRefType>(mem.getType()).getElementType();
  Value v = vector::LoadOp::create(im.b, im.loc, VectorType::get({n}, et), mem,
                                   ValueRange{at}, /*nontemporal=*/false,
                                   runAlignment(et, n));
  SmallVector<Value> lanes;
  for (int64_t i = 0; i < n; ++i)
    lanes.push_back(im.toF32(
        vector::ExtractOp::create(im.b, im.loc, v, ArrayRef<int64_t>{i})));
  return lanes;
}

/// Elements e .. e + vec - 1 of the rope (one half of one row): ropeElement's
/// formula on four vector loads, one vector store of the rounded results.
void buildRopeChunk(IndexMath &im, RopeOp op, int64_t vec,
                    gpu::GPUFuncOp func, Value e) {
  OpBuilder &b = im.b;
  Location loc = im.loc;
  ArrayRef<int64_t> shape = op.getInput().getType().getShape();
  int64_t half = shape.back() / 2;
  Value x = func.getArgument(0), y = func.getArgument(3);
  Value firstHalf = im.lt(im.rem(e, 2 * half), half);
  Value partner = arith::SelectOp::create(b, loc, firstHalf, im.add(e, half),
                                          im.sub(e, im.c(half)));
  SmallVector<Value> xs = loadRun(im, x, e, vec);
  SmallVector<Value> ps = loadRun(im, x, partner, vec);
  SmallVector<Value> cs = loadRun(
      im, func.getArgument(1),
      broadcastIndex(im, e, shape, op.getCos().getType().getShape()), vec);
  SmallVector<Value> ss = loadRun(
      im, func.getArgument(2),
      broadcastIndex(im, e, shape, op.getSin().getType().getShape()), vec);
  Type et = cast<MemRefType>(y.getType()).getElementType();
  SmallVector<Value> out;
  for (int64_t i = 0; i < vec; ++i) {
    Value v = ropeCombine(im, firstHalf, xs[i], ps[i], cs[i], ss[i]);
    out.push_back(et == v.getType() ? v
                                    : arith::TruncFOp::create(b, loc, et, v));
  }
  vector::StoreOp::create(
      b, loc,
      vector::FromElementsOp::create(b, loc, VectorType::get({vec}, et), out),
      y, ValueRange{e}, /*nontemporal=*/false, runAlignment(et, vec));
}

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
      Value t = im.add(
          im.mul(gpu::BlockIdOp::create(kb, loc, gpu::Dimension::x), threads),
          gpu::ThreadIdOp::create(kb, loc, gpu::Dimension::x));
      int64_t vec = ropeChunk(op);
      im.ifThen(im.lt(t, elems / vec), [&] {
        if (vec == 1) {
          im.storeRounded(ropeElement(im, func.getArgument(0),
                                      func.getArgument(1), func.getArgument(2),
                                      xt.getShape(), ct.getShape(),
                                      st.getShape(), t),
                          func.getArgument(3), {t});
          return;
        }
        buildRopeChunk(im, op, vec, func, im.mul(t, vec));
      });
      finishKernel(kb, loc, func);

      auto view = [&](Value tensor) {
        return flatView(rewriter, loc, readBuffer(rewriter, loc, tensor));
      };
      SmallVector<Value> args = {view(adaptor.getInput()),
                                 view(adaptor.getCos()), view(adaptor.getSin()),
                                 flatView(rewriter, loc, out)};
      int64_t units = elems / ropeChunk(op);
      launchKernel(rewriter, loc, func, (units + threads - 1) / threads,
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
