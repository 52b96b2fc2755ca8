//===- SliceToGPU.cpp - tensor.extract_slice / tensor.concat as kernels ---===//
//
// Slices and concatenations that no importer pattern absorbed (a fused QKV
// projection split into q, k and v; a torch.cat outside RoPE) would
// bufferize into subviews and copies on the host, which the runtime
// program cannot run. Each becomes a copy kernel instead: one thread per
// result element (256 per block), which splits its index row-major into
// the result's indices and reads the source element
//   extract_slice: source[offset_k + index_k * stride_k] (dropped unit
//                  dimensions at their offset);
//   concat:        input j at the concatenated dimension's index minus the
//                  sizes of the inputs before j, j found by comparisons.
//
//===----------------------------------------------------------------------===//

#include "TensorKernel.h"
#include "ModelOpsToGPU.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace mlir::sgpu;

namespace {

constexpr int64_t kThreads = 256;

/// The row-major multi-index of `e` in `shape`.
SmallVector<Value> unflatten(IndexMath &im, Value e, ArrayRef<int64_t> shape) {
  SmallVector<Value> idx(shape.size());
  int64_t stride = 1;
  for (int64_t k = int64_t(shape.size()) - 1; k >= 0; --k) {
    Value q = stride == 1 ? e : im.div(e, stride);
    idx[k] = shape[k] == 1 ? im.c(0) : k == 0 ? q : im.rem(q, shape[k]);
    stride *= shape[k];
  }
  return idx;
}

/// Emits the kernel `name(args..., out)` with one thread per element of
/// `resultType`, whose body `element(e, idx)` stores element e (index
/// idx), and its launch; replaces `op` by the result's tensor.
void emitCopyKernel(ConversionPatternRewriter &rewriter, KernelSink &sink,
                    Operation *op, StringRef name, ValueRange tensors,
                    RankedTensorType resultType,
                    function_ref<void(IndexMath &, gpu::GPUFuncOp,
                                      ArrayRef<Value>)>
                        element) {
  Location loc = op->getLoc();
  int64_t total = resultType.getNumElements();
  Value result = kernelOnTensors(
      rewriter, loc, sink, sink.name(name), tensors,
      resultType, kThreads, (total + kThreads - 1) / kThreads,
      [&](OpBuilder &kb, gpu::GPUFuncOp func) {
        IndexMath im{kb, loc};
        Value e = im.add(
            im.mul(gpu::BlockIdOp::create(kb, loc, gpu::Dimension::x),
                   kThreads),
            gpu::ThreadIdOp::create(kb, loc, gpu::Dimension::x));
        im.ifThen(im.lt(e, total), [&] {
          element(im, func, unflatten(im, e, resultType.getShape()));
        });
        finishKernel(kb, loc, func);
      });
  rewriter.replaceOp(op, result);
}

struct ExtractSliceToGPU : OpConversionPattern<tensor::ExtractSliceOp> {
  KernelSink &sink;
  ExtractSliceToGPU(MLIRContext *ctx, KernelSink &sink)
      : OpConversionPattern(ctx), sink(sink) {}

  LogicalResult
  matchAndRewrite(tensor::ExtractSliceOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    if (!isStaticSlice(op))
      return rewriter.notifyMatchFailure(op, "dynamic slice");
    ArrayRef<int64_t> offsets = op.getStaticOffsets(),
                      strides = op.getStaticStrides();
    llvm::SmallBitVector dropped = op.getDroppedDims();
    emitCopyKernel(
        rewriter, sink, op, "sgpu_slice", ValueRange{adaptor.getSource()},
        op.getType(),
        [&](IndexMath &im, gpu::GPUFuncOp func, ArrayRef<Value> idx) {
          SmallVector<Value> src;
          size_t k = 0;
          for (size_t d = 0; d < offsets.size(); ++d) {
            if (dropped.test(d)) {
              src.push_back(im.c(offsets[d]));
              continue;
            }
            Value i = strides[d] == 1 ? idx[k] : im.mul(idx[k], strides[d]);
            src.push_back(im.add(i, offsets[d]));
            ++k;
          }
          Value v = memref::LoadOp::create(im.b, im.loc, func.getArgument(0),
                                           src);
          memref::StoreOp::create(im.b, im.loc, v, func.getArgument(1), idx);
        });
    return success();
  }
};

struct ConcatToGPU : OpConversionPattern<tensor::ConcatOp> {
  KernelSink &sink;
  ConcatToGPU(MLIRContext *ctx, KernelSink &sink)
      : OpConversionPattern(ctx), sink(sink) {}

  LogicalResult
  matchAndRewrite(tensor::ConcatOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    if (!op.getResultType().hasStaticShape())
      return rewriter.notifyMatchFailure(op, "dynamic concat");
    int64_t dim = op.getDim();
    SmallVector<int64_t> starts;
    int64_t start = 0;
    for (Value in : op.getInputs()) {
      starts.push_back(start);
      start += cast<RankedTensorType>(in.getType()).getDimSize(dim);
    }
    emitCopyKernel(
        rewriter, sink, op, "sgpu_concat", adaptor.getInputs(),
        op.getResultType(),
        [&](IndexMath &im, gpu::GPUFuncOp func, ArrayRef<Value> idx) {
          OpBuilder &b = im.b;
          Location loc = im.loc;
          size_t n = starts.size();
          Value out = func.getArgument(n);
          // Input j holds indices [starts[j], starts[j + 1]) of `dim`.
          std::function<void(size_t)> pick = [&](size_t j) {
            auto copyFrom = [&] {
              SmallVector<Value> src(idx.begin(), idx.end());
              src[dim] = im.sub(idx[dim], im.c(starts[j]));
              Value v = memref::LoadOp::create(b, loc, func.getArgument(j), src);
              memref::StoreOp::create(b, loc, v, out, idx);
            };
            if (j + 1 == n)
              return copyFrom();
            im.ifThen(im.lt(idx[dim], starts[j + 1]), copyFrom,
                      [&] { pick(j + 1); });
          };
          pick(0);
        });
    return success();
  }
};

} // namespace

bool mlir::sgpu::isStaticSlice(tensor::ExtractSliceOp op) {
  return op.getType().hasStaticShape() &&
         op.getSourceType().hasStaticShape() &&
         !ShapedType::isDynamicShape(op.getStaticOffsets()) &&
         !ShapedType::isDynamicShape(op.getStaticStrides());
}

void mlir::sgpu::populateSliceToGPUPatterns(RewritePatternSet &patterns,
                                            KernelSink &sink) {
  patterns.add<ExtractSliceToGPU, ConcatToGPU>(patterns.getContext(), sink);
}
