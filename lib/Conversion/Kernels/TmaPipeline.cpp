//===- TmaPipeline.cpp - the TMA pipeline kernel's shared state -----------===//

#include "Kernels/TmaPipeline.h"
#include "WgmmaAsm.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

using namespace mlir;
using namespace mlir::sgpu;
using namespace mlir::sgpu::tma;

TmaPipeline::TmaPipeline(OpBuilder &b, Location loc, const SpmmShape &s,
                         const TmaSpmmConfig &cfg)
    : b(b), loc(loc), s(s), cfg(cfg), im{b, loc},
      nAcc(cfg.tokensPerBlock / 2), kSteps32(s.paddedK / 32),
      blockTiles(cfg.kTilesPerSplit), steps(cfg.steps),
      metaSteps(cfg.dense ? 0 : cfg.steps),
      layout(stageLayout(cfg.tokensPerBlock, cfg.fusedLift, cfg.dense,
                         cfg.gather != TmaGatherKind::none)),
      stride(layout.stride) {}

Value TmaPipeline::smemAddr(Value offset) {
  return arith::IndexCastUIOp::create(b, loc, b.getI32Type(),
                                      im.add(baseIdx, offset));
}

Value TmaPipeline::stageOffset(Value st, int64_t within) {
  return im.add(im.mul(st, stride), within);
}

Value TmaPipeline::toI64Ptr(Value ptr) {
  return LLVM::PtrToIntOp::create(b, loc, b.getI64Type(), ptr);
}

Value TmaPipeline::toI32(Value index) {
  return arith::IndexCastUIOp::create(b, loc, b.getI32Type(), index);
}

void TmaPipeline::clusterBarrier() {
  NVVM::ClusterArriveOp::create(b, loc, b.getUnitAttr());
  NVVM::ClusterWaitOp::create(b, loc, b.getUnitAttr());
}

std::string TmaPipeline::metaConstraints() const {
  std::string c;
  for (int64_t j = 0; j < metaSteps; ++j)
    c += j ? ",r" : "r";
  return c;
}

void TmaPipeline::load2d(Value dst, Value tmap, Value c0, Value c1,
                         Value bar) {
  asmVoid(b, loc,
          "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::"
          "complete_tx::bytes [$0], [$1, {$2, $3}], [$4];",
          {dst, tmap, c0, c1, bar}, "r,l,r,r,r");
}
