//===- GPULoweringTarget.cpp - what convert-sgpu-to-gpu leaves ------------===//

#include "GPULoweringTarget.h"
#include "WeightPrepare.h"
#include "sparse-opt/Dialect/SGPU/SGPU.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"

using namespace mlir;
using namespace mlir::sgpu;

void mlir::sgpu::addLoweredOpsIllegal(ConversionTarget &target) {
  target.addIllegalOp<SpmmOp, LiftOp, MatmulOp, RMSNormOp, AddRMSNormOp, LayerNormOp,
                      TwellPackOp, TwellFFNOp, AllReduceOp, AllReduceStartOp,
                      AllReduceWaitOp, EmbeddingOp, RopeOp, AttentionOp,
                      CacheUpdateOp>();
  target.addDynamicallyLegalOp<CompressOp, NMDecomposeOp>(
      [](Operation *op) { return !isPreparableWeight(op); });
  // Linalg ops of the host functions (the gpu.module has none).
  target.addDynamicallyLegalDialect<linalg::LinalgDialect>(
      [](Operation *op) { return !op->getParentOfType<func::FuncOp>(); });
}
