//===- LiftToGPU.cpp - sgpu.lift as a generated gather kernel -------------===//
//
// The activation lift of the sliding-window decomposition as its own kernel:
// out[m, c'] = x[m, src(c')] with src(g*4(N-1) + 4j + l) = g*2N + 2j + l (or
// the tiled order's map, SlideIndex.h), and zero where src >= K. This is the separate pass over the activations that
// the fused lift (inside the GEMM's operand loads) is meant to replace; it is
// the correct, simple path every chip can run. Feeding the TMA spmm, it
// writes rows padded to the weight's padded K (lowerLiftToGPUPadded): the
// formula already gives zeros past K', and the 64-byte row pitch keeps the
// TMA loads of the GEMM at full speed.
//
//===----------------------------------------------------------------------===//

#include "LiftToGPU.h"
#include "GPUKernel.h"
#include "IndexMath.h"
#include "SlideIndex.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace mlir::sgpu;

static constexpr int64_t kThreads = 256;

/// Builds the gather kernel and its launch before `op` into a new
/// `M x pitch` buffer (pitch 0: the lifted width), which it returns.
static Value buildLift(LiftOp op, int64_t pitch, gpu::GPUModuleOp gpuModule,
                       SymbolTable &symbols, size_t index) {
  Location loc = op.getLoc();
  auto xt = cast<RankedTensorType>(op.getInput().getType());
  auto lifted = cast<RankedTensorType>(op.getResult().getType());
  if (pitch == 0)
    pitch = lifted.getDimSize(1);
  auto yt = RankedTensorType::get({xt.getDimSize(0), pitch},
                                  lifted.getElementType());
  int64_t m = xt.getDimSize(0), k = xt.getDimSize(1), kl = pitch;
  int64_t fam = op.getPattern().getFamilyN();
  int64_t total = m * kl;
  auto xm = MemRefType::get(xt.getShape(), xt.getElementType());
  auto ym = MemRefType::get(yt.getShape(), yt.getElementType());

  // The kernel.
  OpBuilder b(gpuModule.getBodyRegion());
  b.setInsertionPointToEnd(gpuModule.getBody());
  auto func = createKernel(b, loc, symbols, "sgpu_lift_" + std::to_string(index),
                           {xm, ym}, {}, kThreads);
  Block &entry = func.getBody().front();
  IndexMath im{b, loc};
  Value x = entry.getArgument(0), y = entry.getArgument(1);
  Value tid = im.add(im.mul(gpu::BlockIdOp::create(b, loc, gpu::Dimension::x),
                            kThreads),
                     gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x));
  auto guard = scf::IfOp::create(b, loc, im.lt(tid, total), false);
  b.setInsertionPointToStart(&guard.getThenRegion().front());
  Value row = im.div(tid, kl), col = im.rem(tid, kl);
  Value src = liftedSourceIndex(im, col, fam, getTileGroups(op));
  Value inK = im.lt(src, k);
  Value v = memref::LoadOp::create(b, loc, x, ValueRange{row, im.clamp(src, inK)});
  Value zero = arith::ConstantOp::create(b, loc, xt.getElementType(),
                                         b.getZeroAttr(xt.getElementType()));
  v = arith::SelectOp::create(b, loc, inK, v, zero);
  memref::StoreOp::create(b, loc, v, y, ValueRange{row, col});
  b.setInsertionPointToEnd(&entry);
  gpu::ReturnOp::create(b, loc);

  // The host launch.
  b.setInsertionPoint(op);
  Value xb = bufferization::ToBufferOp::create(b, loc, xm, op.getInput(),
                                               b.getUnitAttr());
  Value yb = memref::AllocOp::create(b, loc, ym);
  launchKernel(b, loc, func, (total + kThreads - 1) / kThreads, kThreads,
               ValueRange{xb, yb});
  return yb;
}

void mlir::sgpu::lowerLiftToGPU(LiftOp op, gpu::GPUModuleOp gpuModule,
                                SymbolTable &symbols, size_t index) {
  Value yb = buildLift(op, 0, gpuModule, symbols, index);
  OpBuilder b(op);
  Value t = bufferization::ToTensorOp::create(
      b, op.getLoc(), op.getResult().getType(), yb, b.getUnitAttr(),
      b.getUnitAttr());
  op.getResult().replaceAllUsesWith(t);
  op.erase();
}

Value mlir::sgpu::lowerLiftToGPUPadded(LiftOp op, int64_t pitch,
                                       gpu::GPUModuleOp gpuModule,
                                       SymbolTable &symbols, size_t index) {
  return buildLift(op, pitch, gpuModule, symbols, index);
}
