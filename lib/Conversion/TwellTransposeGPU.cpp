//===- TwellTransposeGPU.cpp - the TwELL down projection transposed -------===//
//
// sgpu_twell_down_t_<i>: Wd [d, F] transposed into WdT [F, d] through a
// 32x32 shared-memory tile, so that a neuron's down-projection row is
// contiguous for the TwELL consumers. When Wd is a constant or a function
// argument read by TwELL consumers only, the launch is a prepare-stage
// step: it runs once, when the runtime binds the params, and Wd becomes a
// param. Otherwise it runs before every consumer that reads it.
//
//===----------------------------------------------------------------------===//

#include "GPUKernel.h"
#include "IndexMath.h"
#include "TwellToGPU.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace mlir::sgpu;

namespace {

/// The transpose kernel's tile edge and block (32 x 8 threads).
constexpr int64_t kTransposeTile = 32;
constexpr int64_t kTransposeThreads = 256;

/// Builds the transpose kernel's body: WdT[j, n] = Wd[n, j], one 32x32 tile
/// per block through shared memory (padded rows: no bank conflicts).
void buildTransposeKernel(OpBuilder &b, Location loc, gpu::GPUFuncOp func,
                          int64_t rows, int64_t cols) {
  IndexMath im{b, loc};
  Value in = func.getArgument(0), out = func.getArgument(1);
  Value tileBuf = func.getWorkgroupAttributions()[0];
  constexpr int64_t t = kTransposeTile, pitch = kTransposeTile + 1;
  constexpr int64_t passes = t * t / kTransposeThreads;
  int64_t colTiles = (cols + t - 1) / t;
  Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  Value block = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  Value r0 = im.mul(im.div(block, colTiles), t);
  Value c0 = im.mul(im.rem(block, colTiles), t);
  Value tx = im.rem(tid, t), ty = im.div(tid, t);
  int64_t step = kTransposeThreads / t;
  for (int64_t p = 0; p < passes; ++p) {
    Value r = im.add(ty, p * step);
    Value gr = im.add(r0, r), gc = im.add(c0, tx);
    Value ok = im.andi(im.lt(gr, rows), im.lt(gc, cols));
    im.ifThen(ok, [&] {
      Value v = memref::LoadOp::create(b, loc, in, ValueRange{gr, gc});
      memref::StoreOp::create(b, loc, v, tileBuf,
                              ValueRange{im.add(im.mul(r, pitch), tx)});
    });
  }
  gpu::BarrierOp::create(b, loc);
  for (int64_t p = 0; p < passes; ++p) {
    Value r = im.add(ty, p * step);
    // Output row c0 + r holds input column c0 + r.
    Value gr = im.add(c0, r), gc = im.add(r0, tx);
    Value ok = im.andi(im.lt(gr, cols), im.lt(gc, rows));
    im.ifThen(ok, [&] {
      Value v = memref::LoadOp::create(
          b, loc, tileBuf, ValueRange{im.add(im.mul(tx, pitch), r)});
      memref::StoreOp::create(b, loc, v, out, ValueRange{gr, gc});
    });
  }
}

/// Whether `down` can be transposed once, at bind time: a constant, or an
/// argument of the host function that only TwELL consumers read as their
/// down projection (it then becomes a param of the program).
bool transposeAtBind(Value down) {
  if (down.getDefiningOp<arith::ConstantOp>())
    return true;
  auto arg = dyn_cast<BlockArgument>(down);
  if (!arg || !isa<func::FuncOp>(arg.getOwner()->getParentOp()))
    return false;
  return llvm::all_of(arg.getUses(), [](OpOperand &use) {
    auto ffn = dyn_cast<TwellFFNOp>(use.getOwner());
    return ffn && use.get() == ffn.getDown() && use.getOperandNumber() == 1;
  });
}

} // namespace

Value mlir::sgpu::transposeTwellDown(OpBuilder &b, TwellFFNOp op,
                                     DenseMap<Value, Value> &atBind,
                                     KernelSink &sink, size_t &count) {
  Location loc = op.getLoc();
  Value down = op.getDown();
  if (Value done = atBind.lookup(down))
    return done;
  size_t index = count++;
  auto dt = cast<RankedTensorType>(down.getType());
  int64_t rows = dt.getDimSize(0), cols = dt.getDimSize(1);
  Type et = dt.getElementType();
  auto outType = MemRefType::get({cols, rows}, et);

  OpBuilder kb = sink.builder();
  auto func = createKernel(
      kb, loc, sink.symbols, "sgpu_twell_down_t_" + std::to_string(index),
      {memrefTypeOf(dt), outType},
      {workgroupBuffer(kb, kTransposeTile * (kTransposeTile + 1), et)},
      kTransposeThreads);
  buildTransposeKernel(kb, loc, func, rows, cols);
  finishKernel(kb, loc, func);

  // At bind time the transpose goes right after the weight is defined (the
  // function's entry for an argument), so that every consumer can read it.
  OpBuilder::InsertionGuard guard(b);
  bool once = transposeAtBind(down);
  if (once) {
    if (Operation *def = down.getDefiningOp())
      b.setInsertionPointAfter(def);
    else
      b.setInsertionPointToStart(cast<BlockArgument>(down).getOwner());
  }
  Value in = readBuffer(b, loc, down);
  Value out = memref::AllocOp::create(b, loc, outType);
  int64_t blocks = ((rows + kTransposeTile - 1) / kTransposeTile) *
                   ((cols + kTransposeTile - 1) / kTransposeTile);
  auto launch =
      launchKernel(b, loc, func, blocks, kTransposeThreads, {in, out});
  if (once) {
    launch->setAttr(SGPUDialect::kStageAttr, b.getStringAttr("prepare"));
    atBind[down] = out;
  }
  return out;
}

