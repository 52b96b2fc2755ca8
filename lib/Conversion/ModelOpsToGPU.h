//===- ModelOpsToGPU.h - conversion patterns for model-block ops -*- C++
//-*-===//
//
// The GPU lowerings of the ops that whole models add around the GEMMs
// (sgpu.embedding, sgpu.rope, sgpu.attention, sgpu.cache_update), as
// OpConversionPatterns run by convert-sgpu-to-gpu with applyPartialConversion.
// Each pattern writes its kernel into the pass's gpu.module through a
// KernelSink and replaces the op by a launch on the host plus the tensor of the
// buffer it writes. Choices a pattern makes (block shape, ...) come from the
// op's typed `sgpu.config` (#sgpu.attention_config, #sgpu.launch_config) when
// present, else from the pattern's default.
//
//===----------------------------------------------------------------------===//

#ifndef SPARSEOPT_LIB_CONVERSION_MODELOPSTOGPU_H
#define SPARSEOPT_LIB_CONVERSION_MODELOPSTOGPU_H

#include "KernelSink.h"
#include "sparse-opt/Dialect/SGPU/SGPU.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/DialectConversion.h"

#include <string>

namespace mlir {
namespace sgpu {

/// `op`'s #sgpu.attention_config, or the one with every default.
AttentionConfigAttr attentionConfig(AttentionOp op);
/// The configuration `op` is lowered with on a device of `numSMs`
/// multiprocessors: its #sgpu.attention_config with `kernel = auto`
/// resolved and every parameter of the resolved kernel that was left to
/// the lowering (0) chosen. sgpu-select-kernels records it; the lowering
/// records it first on an op that arrives without one. `op` must have a
/// kernel (whyNoAttentionKernel empty). `allowLibrary` false keeps `auto`
/// on the generated kernels (the attention-library option).
AttentionConfigAttr resolveAttentionConfig(AttentionOp op, int64_t numSMs,
                                           bool allowLibrary = true);
/// The threads per block of embedding, RoPE and the cache update (one
/// thread per element, grid-strided) when no #sgpu.launch_config says
/// otherwise: sgpu-select-kernels records it, the lowerings fall back to it.
constexpr int64_t kDefaultLaunchThreads = 256;
/// The threads per block of `op`'s #sgpu.launch_config, else
/// kDefaultLaunchThreads.
int64_t launchThreads(Operation *op);

/// Why sgpu.attention `op` has no GPU kernel (empty when it has one).
std::string whyNoAttentionKernel(AttentionOp op);

void populateEmbeddingToGPUPatterns(RewritePatternSet &patterns,
                                    KernelSink &sink);
void populateRopeToGPUPatterns(RewritePatternSet &patterns, KernelSink &sink);
void populateCacheUpdateToGPUPatterns(RewritePatternSet &patterns,
                                      KernelSink &sink);
void populateAttentionToGPUPatterns(RewritePatternSet &patterns,
                                    KernelSink &sink);
/// tensor.extract_slice (static) and tensor.concat of host functions as
/// copy kernels (SliceToGPU.cpp).
void populateSliceToGPUPatterns(RewritePatternSet &patterns,
                                KernelSink &sink);
/// Whether `op` has static offsets, sizes and strides (then it has a copy
/// kernel).
bool isStaticSlice(tensor::ExtractSliceOp op);

/// Runs the patterns over `module`: every sgpu.embedding, sgpu.rope,
/// sgpu.attention and sgpu.cache_update, and every static tensor.extract_slice / tensor.concat
/// of a host function, becomes a kernel launch.
LogicalResult convertModelOpsToGPU(ModuleOp module, KernelSink &sink);

} // namespace sgpu
} // namespace mlir

#endif // SPARSEOPT_LIB_CONVERSION_MODELOPSTOGPU_H
