//===- TwellPatterns.cpp - TwELL packs and consumers as patterns ----------===//
//
// Each pattern reads its op's recorded configuration (sgpu-select-kernels)
// and builds that form or consumer; the kernels are TwellToGPU.cpp (pack),
// TwellProducerGPU.cpp (the fused producer), TwellTensorCoreGPU.cpp (the
// block form and the tensor-core consumer) and TwellConsumerGPU.cpp (the
// CUDA-core consumer).
//
//===----------------------------------------------------------------------===//

#include "TwellPatterns.h"
#include "TwellSelection.h"

using namespace mlir;
using namespace mlir::sgpu;

namespace {

struct TwellPackToGPU : StatefulKernelPattern<TwellPackOp, TwellLowering> {
  using StatefulKernelPattern::StatefulKernelPattern;

  LogicalResult
  matchAndRewrite(TwellPackOp pack, OpAdaptor,
                  ConversionPatternRewriter &rewriter) const override {
    TwellPackConfigAttr config = getTwellPackConfig(pack);
    size_t index = state.packs++;
    Value value = pack.getResult();
    switch (config.getForm()) {
    case TwellPackForm::blocks:
      state.blocks[value] =
          lowerTwellPackToBlocks(rewriter, pack, sink, index);
      break;
    case TwellPackForm::in_consumer:
      state.fromH[value] =
          lowerTwellPackIntoConsumer(rewriter, pack, sink, index);
      break;
    case TwellPackForm::fused_producer: {
      auto matmul = pack.getInput().getDefiningOp<MatmulOp>();
      state.concrete[value] =
          lowerFusedTwellProducer(rewriter, matmul, pack, sink, index,
                                  sink.budget, config.getCluster());
      // The producer computes the matmul: it goes with the pack.
      rewriter.eraseOp(pack);
      rewriter.eraseOp(matmul);
      return success();
    }
    case TwellPackForm::kernel:
      state.concrete[value] = lowerTwellPackToGPU(rewriter, pack, sink, index);
      break;
    }
    // The consumers read the buffers recorded above; none reads the pack
    // once they are converted.
    rewriter.eraseOp(pack);
    return success();
  }
};

struct TwellFFNToGPU : StatefulKernelPattern<TwellFFNOp, TwellLowering> {
  using StatefulKernelPattern::StatefulKernelPattern;

  LogicalResult
  matchAndRewrite(TwellFFNOp ffn, OpAdaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto config =
        ffn->getAttrOfType<TwellFFNConfigAttr>(SGPUDialect::kConfigAttr);
    if (!config)
      return rewriter.notifyMatchFailure(ffn, "no #sgpu.twell_ffn_config");
    Value downT = transposeTwellDown(rewriter, ffn, state.downAtBind, sink,
                                     state.transposes);
    Value packed = ffn.getPacked();
    size_t index = state.consumers++;
    Value result;
    if (auto h = state.fromH.find(packed); h != state.fromH.end())
      result = lowerTwellFFNFromH(rewriter, ffn, h->second.first,
                                  h->second.second, downT, sink, index);
    else if (auto b = state.blocks.find(packed); b != state.blocks.end())
      result = lowerTwellFFNToTensorCores(rewriter, ffn, b->second, downT,
                                          sink, index, sink.budget,
                                          config.getTmaGather());
    else
      result = lowerTwellFFNToGPU(rewriter, ffn, state.concrete.lookup(packed),
                                  downT, sink, index, config.getPasses());
    rewriter.replaceOp(ffn, result);
    return success();
  }
};

} // namespace

void mlir::sgpu::populateTwellToGPUPatterns(RewritePatternSet &patterns,
                                            KernelSink &sink,
                                            TwellLowering &state) {
  patterns.add<TwellPackToGPU, TwellFFNToGPU>(patterns.getContext(), sink,
                                              state);
}
