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

/// The GEMM shape of `spmm` as the op states it (K of its input).
static SpmmShape shapeOf(SpmmOp spmm) {
  auto xType = cast<RankedTensorType>(spmm.getInput().getType());
  CompressedType wType = spmm.getWeight().getType();
  auto yType = cast<RankedTensorType>(spmm.getResult().getType());
  return SpmmShape{xType.getDimSize(0),  wType.getRows(),
                   xType.getDimSize(1),  wType.getPaddedRows(),
                   wType.getPaddedCols(), xType.getElementType(),
                   yType.getElementType(), spmm.getActivationOrNone(),
                   static_cast<bool>(spmm.getBias())};
}

FailureOr<SpmmPlan> mlir::sgpu::planSpmm(SpmmOp spmm,
                                         const SpmmSelectionOptions &o) {
  auto xType = cast<RankedTensorType>(spmm.getInput().getType());
  SpmmShape shape = shapeOf(spmm);
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
  plan.kernel = useTma       ? SpmmKernelKind::tma
                : o.useWgmma ? SpmmKernelKind::wgmma
                             : SpmmKernelKind::mma;
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

SpmmConfigAttr mlir::sgpu::recordSpmmPlan(MLIRContext *ctx,
                                          const SpmmPlan &plan) {
  if (!plan.useTma)
    return SpmmConfigAttr::get(ctx, plan.kernel, LiftLowering::separate, 0,
                               0, 1, 1, 0, true);
  LiftLowering lift = plan.fused       ? LiftLowering::fused
                      : plan.splitLift ? LiftLowering::split
                      : plan.padLift   ? LiftLowering::padded
                                       : LiftLowering::separate;
  TmaSpmmTiling t = getTmaSpmmTiling(plan.tma);
  return SpmmConfigAttr::get(ctx, SpmmKernelKind::tma, lift, t.tileN,
                             t.stages, t.splits, t.cluster, t.storeBox,
                             t.persistent);
}

std::string mlir::sgpu::whyNoSpmmKernel(SpmmKernelKind kernel,
                                        const TargetInfo &target,
                                        StringRef chip, StringRef features) {
  auto ptx = [&] {
    return std::to_string(target.ptxVersion / 10) + "." +
           std::to_string(target.ptxVersion % 10);
  };
  if (kernel != SpmmKernelKind::mma && !target.hasSparseWGMMA()) {
    if (target.smVersion != 90 || !target.archSpecific)
      return "sgpu.spmm with kernel=wgmma uses wgmma.mma_async.sp, which "
             "needs chip sm_90a; chip '" +
             chip.str() + "' has none (use kernel=mma)";
    return "sgpu.spmm with kernel=wgmma uses wgmma.mma_async.sp, which "
           "needs PTX ISA 8.2; features '" +
           features.str() + "' give PTX ISA " + ptx() +
           " (use features=+ptx82 or later)";
  }
  if (!target.hasSparseMMA())
    return "sgpu.spmm needs sparse tensor cores (mma.sp, sm_80 or newer); "
           "chip '" +
           chip.str() + "' has none";
  if (kernel == SpmmKernelKind::mma && !target.hasOrderedMetadata())
    return "sgpu.spmm uses mma.sp::ordered_metadata, which needs PTX ISA "
           "8.5; features '" +
           features.str() + "' give PTX ISA " + ptx() +
           " (use features=+ptx85 or later)";
  return "";
}

/// Why `config` cannot be built for `spmm` (empty when it can); `plan`
/// holds what it describes.
static std::string whyNotBuildable(SpmmOp spmm, SpmmConfigAttr config,
                                   const KernelBudget &budget,
                                   SpmmPlan &plan) {
  plan.shape = shapeOf(spmm);
  plan.xType = cast<RankedTensorType>(spmm.getInput().getType());
  plan.lift = spmm.getInput().getDefiningOp<LiftOp>();
  plan.kernel = config.getKernel();
  LiftLowering lift = config.getLift();
  if (config.getKernel() != SpmmKernelKind::tma)
    return "";
  plan.useTma = true;
  LiftOp liftOp = plan.lift;
  if (config.liftsInside() && !(liftOp && liftOp->hasOneUse()))
    return "lift = " + stringifyLiftLowering(lift).str() +
           " needs an sgpu.lift read only by this op";
  int64_t xCols =
      liftOp ? cast<RankedTensorType>(liftOp.getInput().getType())
                   .getDimSize(1)
             : 0;
  bool sixEight = liftOp && liftOp.getPattern().getM() == 8;
  if (lift == LiftLowering::fused) {
    SpmmShape fusedShape = plan.shape;
    fusedShape.k = xCols;
    if (!sixEight || getTileGroups(liftOp) != kFusedLiftTileGroups ||
        !tmaFusedLiftApplies(fusedShape))
      return "lift = fused needs a 6:8 lift with tile_groups = " +
             std::to_string(kFusedLiftTileGroups) +
             " and K a multiple of 8";
    plan.shape = fusedShape;
    plan.xType = cast<RankedTensorType>(liftOp.getInput().getType());
    plan.fused = true;
  } else if (lift == LiftLowering::split) {
    if (!sixEight || getTileGroups(liftOp) != kSplitLiftTileGroups ||
        !tmaSplitLiftApplies(plan.shape, xCols))
      return "lift = split needs a 6:8 lift with tile_groups = " +
             std::to_string(kSplitLiftTileGroups) +
             " and K a multiple of 8";
    plan.splitLift = true;
  } else if (lift == LiftLowering::padded) {
    plan.padLift = true;
  } else if (!tmaSpmmApplies(plan.shape)) {
    return "kernel = tma needs K a multiple of 8 (TMA needs 16-byte row "
           "pitches), K = " +
           std::to_string(plan.shape.k);
  }
  TmaSpmmTiling tiling{config.getTileN(),   config.getStages(),
                       config.getSplits(),  config.getCluster(),
                       config.getStoreBox(), config.getPersistent()};
  plan.tma = buildTmaSpmmConfig(plan.shape, tiling, budget, plan.fused,
                                plan.splitLift);
  plan.yByTma = plan.tma.tmaStore;
  const TmaSpmmConfig &tma = plan.tma;
  if (tiling.cluster > 1 && tma.cluster != tiling.cluster)
    return "cluster = " + std::to_string(tiling.cluster) + ": " +
           whyNoTmaCluster(tma, budget, tiling.cluster);
  if (tiling.storeBox) {
    std::string why = whyNoTmaStore(plan.shape, tma, 0, budget);
    if (!why.empty())
      return "store_box = " + std::to_string(tiling.storeBox) + ": " + why;
  }
  if (tma.stages < 2 && tma.kTilesPerSplit > 1)
    return "stages = 1 with " + std::to_string(tma.kTilesPerSplit) +
           " k-tiles per block: the consumers release a stage one k-tile "
           "late, so one stage would wait on itself";
  if (tma.dynamicSharedBytes > budget.sharedPerBlock)
    return std::to_string(tma.stages) + " stages of " +
           std::to_string(tma.tokensPerBlock) + "-token tiles need " +
           std::to_string(tma.dynamicSharedBytes) +
           " bytes of shared memory; a block has " +
           std::to_string(budget.sharedPerBlock);
  return "";
}

FailureOr<SpmmPlan> mlir::sgpu::planFromConfig(SpmmOp spmm,
                                               SpmmConfigAttr config,
                                               const KernelBudget &budget) {
  SpmmPlan plan;
  std::string why = whyNotBuildable(spmm, config, budget, plan);
  if (!why.empty()) {
    spmm.emitError() << "sgpu.config " << config
                     << " cannot be built for this op: " << why;
    return failure();
  }
  return plan;
}
