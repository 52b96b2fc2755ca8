//===- ReductionToGPU.cpp - reducing linalg ops as kernels ----------------===//
//
// Thread t (256 per block) owns result element t (row-major): its parallel
// loop indices come from the result's indexing map, the reduction loops run
// as a nest of scf.for in loop order, and each iteration clones the op's
// body with the inputs read at their maps and the running accumulator in
// place of the init's block argument. The accumulator starts from the init
// buffer (the fill the importers put there), so the kernel computes exactly
// the loops of the CPU reference.
//
//===----------------------------------------------------------------------===//

#include "ReductionToGPU.h"
#include "ElementwiseToGPU.h"
#include "TensorKernel.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"

using namespace mlir;
using namespace mlir::sgpu;

namespace {

constexpr int64_t kThreads = 256;
constexpr int64_t kMaxReductionIterations = int64_t(1) << 24;

/// The product of the static sizes of the reduction loops of `op`.
int64_t reductionIterations(linalg::LinalgOp op) {
  int64_t n = 1;
  for (auto [size, type] :
       llvm::zip(op.getStaticLoopRanges(), op.getIteratorTypesArray()))
    if (type == utils::IteratorType::reduction)
      n *= size;
  return n;
}

struct ReductionKernelBuilder {
  OpBuilder &b;
  Location loc;
  IndexMath im;
  linalg::GenericOp op;

  /// The indices of `map`'s results for the loop indices `loops` (a zero
  /// result, a broadcast size-1 dimension, reads index 0).
  SmallVector<Value> indices(AffineMap map, ArrayRef<Value> loops) {
    SmallVector<Value> idx;
    for (AffineExpr e : map.getResults()) {
      auto dim = dyn_cast<AffineDimExpr>(e);
      idx.push_back(dim ? loops[dim.getPosition()] : im.c(0));
    }
    return idx;
  }

  /// Arguments of `func`: the input buffers `argOf` numbers, the init
  /// buffer, then the result.
  void build(gpu::GPUFuncOp func, const DenseMap<Value, unsigned> &argOf,
             unsigned initArg) {
    auto resultType = cast<RankedTensorType>(op->getResult(0).getType());
    int64_t total = resultType.getNumElements();
    Block &entry = func.getBody().front();
    b.setInsertionPointToStart(&entry);
    Value tid = im.add(
        im.mul(gpu::BlockIdOp::create(b, loc, gpu::Dimension::x), kThreads),
        gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x));
    im.ifThen(im.lt(tid, total), [&] {
      // The result's multi-index (row-major) and the parallel loops.
      ArrayRef<int64_t> shape = resultType.getShape();
      SmallVector<Value> outIdx;
      int64_t stride = total;
      for (auto [k, size] : llvm::enumerate(shape)) {
        stride /= size;
        Value q = stride == 1 ? tid : im.div(tid, stride);
        outIdx.push_back(size == 1 ? im.c(0) : k == 0 ? q : im.rem(q, size));
      }
      OpOperand *init = op.getDpsInitOperand(0);
      AffineMap outMap = op.getMatchingIndexingMap(init);
      SmallVector<Value> loops(op.getNumLoops());
      for (auto [k, e] : llvm::enumerate(outMap.getResults()))
        if (auto dim = dyn_cast<AffineDimExpr>(e))
          loops[dim.getPosition()] = outIdx[k];
      Value acc = memref::LoadOp::create(
          b, loc, func.getArgument(initArg), indices(outMap, loops));

      // Constants the body captures, cloned once.
      Block &body = op.getRegion().front();
      IRMapping constants;
      body.walk([&](Operation *inner) {
        for (Value v : inner->getOperands())
          if (!op.getRegion().isAncestor(v.getParentRegion()) &&
              !constants.contains(v)) {
            Operation *copy = b.clone(*v.getDefiningOp());
            constants.map(v, copy->getResult(0));
          }
      });
      for (OpOperand *in : op.getDpsInputOperands())
        if (!isa<RankedTensorType>(in->get().getType()))
          constants.map(body.getArgument(in->getOperandNumber()),
                        b.clone(*in->get().getDefiningOp())->getResult(0));

      // The reduction loops, outermost first, carrying the accumulator.
      SmallVector<int64_t> ranges = op.getStaticLoopRanges();
      SmallVector<unsigned> reduced;
      for (auto [i, type] : llvm::enumerate(op.getIteratorTypesArray()))
        if (type == utils::IteratorType::reduction)
          reduced.push_back(i);
      auto yield = cast<linalg::YieldOp>(body.getTerminator());
      std::function<Value(size_t, Value)> nest = [&](size_t level,
                                                     Value running) -> Value {
        if (level == reduced.size()) {
          IRMapping mapping = constants;
          for (OpOperand *in : op.getDpsInputOperands()) {
            if (!isa<RankedTensorType>(in->get().getType()))
              continue;
            Value buf = func.getArgument(argOf.lookup(in->get()));
            mapping.map(body.getArgument(in->getOperandNumber()),
                        memref::LoadOp::create(
                            b, loc, buf,
                            indices(op.getMatchingIndexingMap(in), loops)));
          }
          mapping.map(body.getArgument(init->getOperandNumber()), running);
          for (Operation &inner : body.without_terminator())
            b.clone(inner, mapping);
          return mapping.lookupOrDefault(yield.getOperand(0));
        }
        unsigned loop = reduced[level];
        return im.reduce(im.c(0), im.c(ranges[loop]), im.c(1), running,
                         [&](Value i, Value carried) {
                           loops[loop] = i;
                           return nest(level + 1, carried);
                         });
      };
      Value result = nest(0, acc);
      memref::StoreOp::create(b, loc, result, func.getArguments().back(),
                              outIdx);
    });
    b.setInsertionPointToEnd(&entry);
    gpu::ReturnOp::create(b, loc);
  }
};

} // namespace

std::string mlir::sgpu::whyNotReduction(linalg::LinalgOp op) {
  std::string why = whyNotLoopKernel(op, /*reductions=*/true);
  if (!why.empty())
    return why;
  AffineMap outMap = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  for (AffineExpr e : outMap.getResults()) {
    auto dim = dyn_cast<AffineDimExpr>(e);
    if (dim && op.getIteratorTypesArray()[dim.getPosition()] !=
                   utils::IteratorType::parallel)
      return "its result is indexed by a reduction loop";
  }
  if (reductionIterations(op) > kMaxReductionIterations)
    return "it reduces " + std::to_string(reductionIterations(op)) +
           " elements per result, more than the " +
           std::to_string(kMaxReductionIterations) +
           " a thread-per-result kernel takes";
  return "";
}

namespace {

/// The generic `op` (whyNotReduction empty) as a launch at `b` of
/// `sgpu_reduction_<n>`, one thread per result element: returns the
/// result tensor.
Value buildReductionLaunch(OpBuilder &b, linalg::GenericOp op,
                           KernelSink &sink) {
  Location loc = op.getLoc();
  auto resultType = cast<RankedTensorType>(op->getResult(0).getType());
  int64_t total = resultType.getNumElements();
  OpOperand *init = op.getDpsInitOperand(0);

  // Kernel arguments: each distinct input tensor once, the init, the result.
  SmallVector<Value> tensors;
  DenseMap<Value, unsigned> argOf;
  for (OpOperand *in : op.getDpsInputOperands())
    if (isa<RankedTensorType>(in->get().getType()) &&
        argOf.try_emplace(in->get(), tensors.size()).second)
      tensors.push_back(in->get());
  unsigned initArg = tensors.size();
  tensors.push_back(init->get());

  return kernelOnTensors(
      b, loc, sink, sink.name("sgpu_reduction"), tensors, resultType,
      kThreads, (total + kThreads - 1) / kThreads,
      [&](OpBuilder &kb, gpu::GPUFuncOp func) {
        ReductionKernelBuilder{kb, loc, IndexMath{kb, loc}, op}.build(
            func, argOf, initArg);
      });
}

} // namespace

void mlir::sgpu::populateReductionToGPUPatterns(RewritePatternSet &patterns,
                                                KernelSink &sink) {
  patterns.add<KernelLaunchPattern<linalg::GenericOp>>(
      patterns.getContext(), sink, buildReductionLaunch,
      [](linalg::GenericOp op) {
        return op.getNumReductionLoops() > 0 && whyNotReduction(op).empty();
      });
}
