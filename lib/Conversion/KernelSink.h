//===- KernelSink.h - where conversion patterns put their kernels -*- C++ -*-===//
//
// The GPU lowerings of convert-sgpu-to-gpu are OpConversionPatterns that
// replace an op of the host function by a launch and write the kernel it
// launches into the module's gpu.module. A KernelSink is that gpu.module,
// with unique kernel names per family and what the device gives the
// kernels.
//
//===----------------------------------------------------------------------===//

#ifndef SPARSEOPT_LIB_CONVERSION_KERNELSINK_H
#define SPARSEOPT_LIB_CONVERSION_KERNELSINK_H

#include "sparse-opt/Conversion/DeviceInfo.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Transforms/DialectConversion.h"
#include "llvm/ADT/StringMap.h"

#include <string>

namespace mlir {
namespace sgpu {

/// Where the patterns put their kernels: the gpu.module, its symbol table
/// and a counter per kernel family for unique names; and what the device
/// gives the kernels that size their grids by it.
struct KernelSink {
  gpu::GPUModuleOp module;
  SymbolTable &symbols;
  llvm::StringMap<size_t> counts;
  KernelBudget budget;
  /// Whether `auto` may give sgpu.attention to cuDNN (the attention-library
  /// option).
  bool attentionLibrary = true;
  /// The program is compiled for programmatic launches
  /// (sgpu-programmatic-launch): kernels may place their own grid-dependency
  /// wait after loads of run-invariant data (TmaSpmmConfig::prefetchWeights).
  bool programmaticLaunch = false;
  /// A fused sibling GEMM stored by TMA writes its column slices through
  /// one tensor map each (the sliced-tma-store option; SpmmToGPU.cpp).
  bool slicedTmaStore = false;

  KernelSink(gpu::GPUModuleOp module, SymbolTable &symbols)
      : module(module), symbols(symbols) {}
  /// `base_<n>`, n counting the kernels of that family.
  std::string name(StringRef base) {
    return (base + "_" + std::to_string(counts[base]++)).str();
  }
  /// A builder at the end of the gpu.module's body.
  OpBuilder builder() {
    OpBuilder kb(module.getBodyRegion());
    kb.setInsertionPointToEnd(module.getBody());
    return kb;
  }
};

/// A lowering pattern of `OpTy` that writes its kernels into `sink` and
/// shares `state` with the other patterns of its family.
template <typename OpTy, typename State>
struct StatefulKernelPattern : OpConversionPattern<OpTy> {
  StatefulKernelPattern(MLIRContext *ctx, KernelSink &sink, State &state)
      : OpConversionPattern<OpTy>(ctx), sink(sink), state(state) {}

  KernelSink &sink;
  State &state;
};

/// The pattern of a lowering that replaces an `OpTy` by one value: `build`
/// writes the kernel into the sink and its launch at the rewriter (before
/// the op) and returns the value replacing the op's result. Where
/// `applies` is given, only the ops it accepts match.
template <typename OpTy>
class KernelLaunchPattern : public OpConversionPattern<OpTy> {
public:
  using Build = Value (*)(OpBuilder &, OpTy, KernelSink &);
  using Applies = bool (*)(OpTy);

  KernelLaunchPattern(MLIRContext *ctx, KernelSink &sink, Build build,
                      Applies applies = nullptr)
      : OpConversionPattern<OpTy>(ctx), sink(sink), build(build),
        applies(applies) {}

  LogicalResult
  matchAndRewrite(OpTy op, typename OpTy::Adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    if (applies && !applies(op))
      return rewriter.notifyMatchFailure(op, "not this lowering's op");
    rewriter.replaceOp(op, build(rewriter, op, sink));
    return success();
  }

private:
  KernelSink &sink;
  Build build;
  Applies applies;
};

} // namespace sgpu
} // namespace mlir

#endif // SPARSEOPT_LIB_CONVERSION_KERNELSINK_H
