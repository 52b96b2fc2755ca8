//===- ModelOpsToGPU.cpp - running the model-block patterns ---------------===//
//
// The driver of ModelOpsToGPU.h: one partial conversion in which the
// model-block ops are illegal and everything else is left as it is.
//
//===----------------------------------------------------------------------===//

#include "ModelOpsToGPU.h"

using namespace mlir;
using namespace mlir::sgpu;

int64_t mlir::sgpu::configInt(Operation *op, StringRef key, int64_t fallback) {
  auto config = op->getAttrOfType<DictionaryAttr>("sgpu.config");
  if (!config)
    return fallback;
  auto value = config.getAs<IntegerAttr>(key);
  return value ? value.getInt() : fallback;
}

StringRef mlir::sgpu::configString(Operation *op, StringRef key,
                                  StringRef fallback) {
  auto config = op->getAttrOfType<DictionaryAttr>("sgpu.config");
  if (!config)
    return fallback;
  auto value = config.getAs<StringAttr>(key);
  return value ? value.getValue() : fallback;
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
