//===- SpmmSelection.cpp - the choices of one spmm's lowering -------------===//

#include "SpmmSelection.h"

using namespace mlir;
using namespace mlir::sgpu;

namespace {
/// cluster=0 pairs the TMA spmm's blocks from this many tokens.
constexpr int64_t kClusterMinTokens = 4096;
} // namespace

/// Why `lift` (one spmm's, lowered for the TMA kernel) cannot take the
/// lowering `mode` asks for, fused (inside the operand loads) or split.
static std::string whyNoTiledLift(LiftOp lift, StringRef mode, int64_t xCols) {
  NMSparsityAttr p = lift.getPattern();
  if (p.getM() != 8)
    return "the pattern is " + std::to_string(p.getN()) + ":" +
           std::to_string(p.getM()) + "; only 6:8 has these lifts";
  int64_t want = mode == "fused" ? kFusedLiftTileGroups : kSplitLiftTileGroups;
  int64_t have = getTileGroups(lift);
  if (have != want)
    return "its window order is " +
           (have ? "tile_groups = " + std::to_string(have)
                 : std::string("the plain one")) +
           " and lift=" + mode.str() +
           " needs tile_groups = " + std::to_string(want) +
           " (sgpu-slide-sparse lift=" + mode.str() + ")";
  return "K = " + std::to_string(xCols) +
         " is not a multiple of 8 (TMA needs 16-byte row pitches)";
}

FailureOr<SpmmPlan> mlir::sgpu::planSpmm(SpmmOp spmm,
                                         const SpmmSelectionOptions &o) {
  auto xType = cast<RankedTensorType>(spmm.getInput().getType());
  CompressedType wType = spmm.getWeight().getType();
  auto yType = cast<RankedTensorType>(spmm.getResult().getType());
  SpmmShape shape{xType.getDimSize(0),  wType.getRows(),
                  xType.getDimSize(1),  wType.getPaddedRows(),
                  wType.getPaddedCols(), xType.getElementType(),
                  yType.getElementType(), spmm.getActivationOrNone(),
                  static_cast<bool>(spmm.getBias())};
  // The kernel: on sm_90a with aligned activation rows the TMA kernel
  // (SpmmTMA.cpp), else the kernel option's.
  // A lift that only feeds this spmm is gathered into rows of the
  // weight's padded K (64-byte multiples: TMA streams rows whose pitch is
  // only 16-byte aligned about 30% slower, measured at K' = 5464), which
  // also makes any lifted K TMA-loadable.
  auto lift = spmm.getInput().getDefiningOp<LiftOp>();
  bool padLift = o.useWgmma && lift && lift->hasOneUse();
  // The fused lift: a 6:8 lift in the tiled window order that only this
  // spmm reads is done inside the kernel's operand loads, from X itself
  // (the shape's K is then X's own).
  // Where the fused lift applies it measured 1.0-1.1x of the gather
  // kernel path at 16 tokens but 0.65-0.75x at 128 and more (the gather's
  // shared-memory traffic competes with wgmma's operand reads, H200,
  // docs/performance.md): lift=auto fuses only up to 16 tokens.
  // The split lift (a lift in the order of tile_groups 16): the kernel
  // runs over the lifted K' but loads each k-tile from where its columns
  // already are, X for two of three and, for the third, the shared
  // windows that a small kernel copies into W1 [M, K'/3] (a third of the
  // full lift's writes). Which order a 6:8 lift has is sgpu-slide-sparse's
  // choice (lift=auto: 8 up to 16 tokens, else 16); `lift` here picks the
  // lowering: auto follows the order, fused and split ask for one (a
  // remark where the order does not allow it), separate is the gather
  // kernel.
  SpmmShape fusedShape = shape;
  int64_t xCols = 0;
  if (lift) {
    xCols = cast<RankedTensorType>(lift.getInput().getType()).getDimSize(1);
    fusedShape.k = xCols;
  }
  bool sixEight = padLift && lift.getPattern().getM() == 8;
  bool gatherLift = sixEight && getTileGroups(lift) == kFusedLiftTileGroups &&
                    tmaFusedLiftApplies(fusedShape) &&
                    (o.liftMode == "fused" ||
                     (o.liftMode == "auto" && shape.m <= kFusedLiftMaxTokens));
  bool splitLift = sixEight && getTileGroups(lift) == kSplitLiftTileGroups &&
                   tmaSplitLiftApplies(shape, xCols) &&
                   (o.liftMode == "split" || o.liftMode == "auto");
  if (padLift && ((o.liftMode == "fused" && !gatherLift) ||
                  (o.liftMode == "split" && !splitLift)))
    spmm.emitRemark() << "lift=" << o.liftMode
                      << " not used for this spmm, a gather kernel lifts "
                         "X: "
                      << whyNoTiledLift(lift, o.liftMode, xCols);
  bool fused = gatherLift;
  if (fused) {
    shape = fusedShape;
    xType = cast<RankedTensorType>(lift.getInput().getType());
    padLift = false;
  }
  bool useTma = o.useWgmma && (tmaSpmmApplies(shape) || padLift || fused);
  // cluster=0: pairs of blocks from kClusterMinTokens tokens, where the
  // H200 measured them 4-21% faster (2:4; 6:8 up to 8%); 5-16% slower at
  // 512 tokens (docs/performance.md, "Clusters of two").
  int64_t blocksPerCluster =
      o.cluster ? o.cluster : shape.m >= kClusterMinTokens ? 2 : 1;
  TmaSpmmConfig tma = getTmaSpmmConfig(
      shape, o.tileN, o.stages, o.splitK, o.persistent, o.budget, fused,
      blocksPerCluster, o.epilogue != SpmmEpilogue::Registers, splitLift);
  if (useTma && o.epilogue == SpmmEpilogue::Tma && !tma.tmaStore)
    spmm.emitRemark() << "epilogue=tma not used for this spmm: "
                      << whyNoTmaStore(shape, tma, o.stages, o.budget);
  // The TMA kernel writes Y through a tensor map (after the operands'
  // maps) instead of taking the buffer.
  bool yByTma = useTma && tma.tmaStore;
  if (useTma && o.cluster > 1 && tma.cluster == 1)
    spmm.emitRemark() << "cluster=" << o.cluster
                      << " not used for this spmm: "
                      << whyNoTmaCluster(tma, o.budget, o.cluster);
  if (fused && tma.dynamicSharedBytes > o.budget.sharedPerBlock) {
    spmm.emitError() << "stages=" << tma.stages << " with "
                     << tma.tokensPerBlock
                     << "-token tiles and the fused 6:8 lift needs "
                     << tma.dynamicSharedBytes
                     << " bytes of shared memory; a block has "
                     << o.budget.sharedPerBlock;
    return failure();
  }
  SpmmPlan plan;
  plan.shape = shape;
  plan.xType = xType;
  plan.lift = lift;
  plan.padLift = padLift;
  plan.fused = fused;
  plan.splitLift = splitLift;
  plan.useTma = useTma;
  plan.yByTma = yByTma;
  plan.tma = tma;
  return plan;
}
