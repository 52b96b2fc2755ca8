//===- ModelOpsToGPU.cpp - running the model-block patterns ---------------===//
//
// The driver of ModelOpsToGPU.h: one partial conversion in which the
// model-block ops are illegal and everything else is left as it is.
//
//===----------------------------------------------------------------------===//

#include "ModelOpsToGPU.h"

using namespace mlir;
using namespace mlir::sgpu;

AttentionConfigAttr mlir::sgpu::attentionConfig(AttentionOp op) {
  if (auto config =
          op->getAttrOfType<AttentionConfigAttr>(SGPUDialect::kConfigAttr))
    return config;
  return AttentionConfigAttr::get(op.getContext(), AttentionKernelKind::chosen,
                                  /*rows_per_block=*/0, /*warps=*/4,
                                  /*min_blocks_per_sm=*/0, /*splits=*/0,
                                  /*unroll=*/0, /*lanes_per_key=*/0);
}

int64_t mlir::sgpu::launchThreads(Operation *op) {
  auto config = op->getAttrOfType<LaunchConfigAttr>(SGPUDialect::kConfigAttr);
  return config ? config.getThreads() : kDefaultLaunchThreads;
}

LogicalResult mlir::sgpu::convertModelOpsToGPU(ModuleOp module,
                                               KernelSink &sink) {
  MLIRContext *ctx = module.getContext();
  RewritePatternSet patterns(ctx);
  populateEmbeddingToGPUPatterns(patterns, sink);
  populateRopeToGPUPatterns(patterns, sink);
  populateCacheUpdateToGPUPatterns(patterns, sink);
  populateAttentionToGPUPatterns(patterns, sink);
  populateSliceToGPUPatterns(patterns, sink);
  ConversionTarget target(*ctx);
  target.addIllegalOp<EmbeddingOp, RopeOp, AttentionOp, CacheUpdateOp>();
  // Slices of host functions (the gpu.module has no tensors).
  target.addDynamicallyLegalOp<tensor::ExtractSliceOp>(
      [](tensor::ExtractSliceOp op) { return !isStaticSlice(op); });
  target.addDynamicallyLegalOp<tensor::ConcatOp>([](tensor::ConcatOp op) {
    return !op.getResultType().hasStaticShape();
  });
  target.markUnknownOpDynamicallyLegal([](Operation *) { return true; });
  return applyPartialConversion(module, target, std::move(patterns));
}
