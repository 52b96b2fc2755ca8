//===- CollectivesToRuntime.cpp - all-reduces as runtime steps ------------===//
//
// Collectives are not kernels: the runtime program runs them with NCCL on a
// communication stream (an `allreduce` line) and joins them back into the
// compute stream where the result is first used (a `wait` line). This
// lowering puts them on buffers, ahead of bufferization:
//
//   %t = sgpu.all_reduce_start %x          %s = to_buffer %x (read-only)
//   ...                               =>   %r = memref.alloc
//   %y = sgpu.all_reduce_wait %t, %x       %t = sgpu.all_reduce_call %s into %r
//                                          ...
//                                          %s2 = to_buffer %x (read-only)
//                                          sgpu.all_reduce_sync %t, %s2
//                                          %y = to_tensor %r
//
// The second to_buffer is a read of %x at the wait, so bufferization cannot
// let any op in between write into the buffer NCCL is still reading. The
// reduction is out of place (NCCL is as fast either way), which leaves %x
// unchanged for any other reader, as the tensor semantics say.
//
//===----------------------------------------------------------------------===//

#include "CollectivesToRuntime.h"
#include "IndexMath.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

using namespace mlir;
using namespace mlir::sgpu;

namespace {

/// A collective must sit directly in a function's body: the program has no
/// control flow, and every rank must reach it.
LogicalResult checkTopLevel(Operation *op) {
  if (isa<func::FuncOp>(op->getParentOp()))
    return success();
  return op->emitError()
         << "'" << op->getName()
         << "' inside a region has no GPU lowering: the runtime program is "
            "a straight line of host steps, so collectives must be in the "
            "function body";
}

struct Started {
  AllReduceCallOp call;
  Value recv;
};

/// Starts the all-reduce of `input` before `at`.
Started start(OpBuilder &b, Location loc, Value input, ReduceKindAttr kind) {
  Value send = readBuffer(b, loc, input);
  Value recv = memref::AllocOp::create(b, loc, memrefTypeOf(input.getType()));
  auto call = AllReduceCallOp::create(b, loc, TokenType::get(b.getContext()),
                                      send, recv, kind);
  return {call, recv};
}

/// Waits for `started` before the builder's point and returns the result.
Value finish(OpBuilder &b, Location loc, Started started, Value input) {
  AllReduceSyncOp::create(b, loc, started.call.getToken(),
                          readBuffer(b, loc, input));
  return bufferization::ToTensorOp::create(
      b, loc, input.getType(), started.recv, /*restrict=*/b.getUnitAttr(),
      /*writable=*/b.getUnitAttr());
}

} // namespace

LogicalResult mlir::sgpu::checkCollectivesAtTopLevel(ModuleOp module) {
  bool failedAny = false;
  module.walk([&](Operation *op) {
    if (isa<AllReduceOp, AllReduceStartOp, AllReduceWaitOp>(op))
      failedAny |= failed(checkTopLevel(op));
  });
  return failure(failedAny);
}

namespace {

/// sgpu.all_reduce: the start and the wait back to back.
struct AllReduceToRuntime : OpConversionPattern<AllReduceOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(AllReduceOp op, OpAdaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Started s = start(rewriter, loc, op.getInput(), op.getKindAttr());
    rewriter.replaceOp(op, finish(rewriter, loc, s, op.getInput()));
    return success();
  }
};

/// sgpu.all_reduce_start with its wait (the verifier guarantees exactly
/// one, after the start): the call, and the sync where the wait was.
struct AllReduceStartToRuntime : OpConversionPattern<AllReduceStartOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(AllReduceStartOp op, OpAdaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto wait = cast<AllReduceWaitOp>(*op.getToken().getUsers().begin());
    Started s = start(rewriter, op.getLoc(), op.getInput(), op.getKindAttr());
    rewriter.setInsertionPoint(wait);
    rewriter.replaceOp(
        wait, finish(rewriter, wait.getLoc(), s, wait.getInput()));
    rewriter.eraseOp(op);
    return success();
  }
};

} // namespace

void mlir::sgpu::populateCollectivesToRuntimePatterns(
    RewritePatternSet &patterns) {
  patterns.add<AllReduceToRuntime, AllReduceStartToRuntime>(
      patterns.getContext());
}
