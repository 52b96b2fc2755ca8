//===- TwellPatterns.h - TwELL packs and consumers as patterns --*- C++ -*-===//
//
// The conversion patterns of the TwELL ops. A pack has no value of its own
// on the GPU: its pattern emits the buffers of the form its
// #sgpu.twell_pack_config names (the concrete form, the block form, or
// only H and the stats when the consumer packs) and records them here;
// each sgpu.twell_ffn reading it then becomes the consumer its
// #sgpu.twell_ffn_config names, over those buffers. Both run in one
// conversion, in program order (a pack before its consumers), and the
// pack and the matmul a fused producer replaces are erased with them.
//
//===----------------------------------------------------------------------===//

#ifndef SPARSEOPT_LIB_CONVERSION_TWELLPATTERNS_H
#define SPARSEOPT_LIB_CONVERSION_TWELLPATTERNS_H

#include "KernelSink.h"
#include "TwellToGPU.h"

#include "mlir/Transforms/DialectConversion.h"
#include "llvm/ADT/DenseMap.h"

namespace mlir {
namespace sgpu {

/// What the TwELL patterns share: the buffers of each lowered pack (keyed
/// by its value), the transposed down projections made at bind time, and
/// the kernel counters (one index per pack, per consumer, per transpose).
struct TwellLowering {
  llvm::DenseMap<Value, TwellBuffers> concrete;
  llvm::DenseMap<Value, TwellBlocks> blocks;
  /// Packs fused into their consumer: H and the nonzero stat.
  llvm::DenseMap<Value, std::pair<Value, Value>> fromH;
  llvm::DenseMap<Value, Value> downAtBind;
  size_t packs = 0, consumers = 0, transposes = 0;
};

/// The patterns of sgpu.twell_pack and sgpu.twell_ffn (their forms and
/// kernels: TwellToGPU.h).
void populateTwellToGPUPatterns(RewritePatternSet &patterns, KernelSink &sink,
                                TwellLowering &state);

} // namespace sgpu
} // namespace mlir

#endif // SPARSEOPT_LIB_CONVERSION_TWELLPATTERNS_H
