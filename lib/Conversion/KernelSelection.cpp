//===- KernelSelection.cpp - every kernel choice of a module --------------===//

#include "KernelSelection.h"
#include "ModelOpsToGPU.h"
#include "SpmmSelection.h"
#include "TwellSelection.h"
#include "sparse-opt/Dialect/SGPU/BufferLimits.h"

using namespace mlir;
using namespace mlir::sgpu;

FailureOr<KernelSelection>
KernelSelection::parse(const KernelSelectionOptions &options, ModuleOp module,
                       StringRef passName) {
  KernelSelection s;
  s.spelled = options;
  std::string message;
  FailureOr<TargetInfo> target =
      parseTarget(options.chip, options.features, &message);
  if (failed(target)) {
    module.emitError() << message;
    return failure();
  }
  s.target = *target;
  FailureOr<const DeviceInfo *> part =
      resolveDevice(options.device, target->smVersion, &message);
  if (failed(part)) {
    module.emitError() << "invalid " << passName << " option: " << message;
    return failure();
  }
  s.budget = KernelBudget(**part, options.reserveSMs);
  if (!isLiftMode(options.lift)) {
    module.emitError() << "unknown lift '" << options.lift << "'; expected "
                       << kLiftModes;
    return failure();
  }
  FailureOr<GPULoweringChoices> parsed = parseGPULoweringChoices(
      {options.kernel, options.epilogue, options.twellProducer,
       options.twellConsumer, options.twellGather, options.twellPack,
       options.twellPasses, options.cluster},
      passName, &message);
  if (failed(parsed)) {
    module.emitError() << message;
    return failure();
  }
  s.choices = *parsed;
  // auto: the warpgroup kernel where the target can express it.
  s.useWgmma = s.choices.kernel == SpmmKernel::Wgmma ||
               (s.choices.kernel == SpmmKernel::Auto &&
                target->hasSparseWGMMA());
  std::string overrides = verifyTmaSpmmOverrides(
      options.tileN, options.stages, options.splitK, s.budget);
  if (!overrides.empty()) {
    module.emitError() << "invalid " << passName << " option: " << overrides;
    return failure();
  }
  return s;
}

LogicalResult KernelSelection::select(ModuleOp module) const {
  // Shapes no GPU program can hold fail here, before any kernel arithmetic
  // divides by them.
  if (failed(checkBufferLimits(module)))
    return failure();
  MLIRContext *ctx = module.getContext();
  auto configured = [](Operation *op) {
    return op->hasAttr(SGPUDialect::kConfigAttr);
  };
  // A pack and its consumers are chosen together (the pack has one form
  // for all of them), and only where all of them can be lowered at all.
  auto selectable = [&](TwellPackOp pack) {
    if (configured(pack))
      return false;
    return llvm::all_of(pack->getUsers(), [&](Operation *user) {
      return isa<TwellFFNOp>(user) && !configured(user);
    });
  };
  bool failedAny = false;
  TwellSelection twell(choices, spelled.twellPasses, target);
  SmallVector<TwellPackOp> packs;
  SmallVector<std::pair<TwellFFNOp, bool>> ffns;
  module.walk([&](Operation *op) {
    if (auto spmm = dyn_cast<SpmmOp>(op)) {
      if (configured(spmm))
        return;
      std::string why = whyNoSpmmKernel(
          useWgmma ? SpmmKernelKind::wgmma : SpmmKernelKind::mma, target,
          spelled.chip, spelled.features);
      if (!why.empty()) {
        spmm.emitError() << why;
        failedAny = true;
        return;
      }
      FailureOr<SpmmPlan> plan = planSpmm(
          spmm, {useWgmma, spelled.lift, spelled.cluster, spelled.tileN,
                 spelled.stages, spelled.splitK, spelled.persistent,
                 choices.epilogue, budget});
      if (failed(plan)) {
        failedAny = true;
        return;
      }
      spmm->setAttr(SGPUDialect::kConfigAttr,
                    recordSpmmPlan(ctx, *plan));
      return;
    }
    if (auto pack = dyn_cast<TwellPackOp>(op)) {
      if (!selectable(pack))
        return;
      packs.push_back(pack);
      if (choices.twellProducer == TwellProducer::Fused)
        twell.chooseProducer(pack);
      return;
    }
    if (auto ffn = dyn_cast<TwellFFNOp>(op)) {
      auto pack = ffn.getPacked().getDefiningOp<TwellPackOp>();
      if (pack && selectable(pack))
        ffns.push_back({ffn, twell.chooseConsumer(ffn)});
      return;
    }
    // Attention: the kernel and its parameters. An op no kernel runs is
    // convert-sgpu-to-gpu's error, with the reason, at the op.
    if (auto attention = dyn_cast<AttentionOp>(op))
      if (!configured(attention) && whyNoAttentionKernel(attention).empty())
        attention->setAttr(SGPUDialect::kConfigAttr,
                           resolveAttentionConfig(attention, budget.numSMs,
                                                  spelled.attentionLibrary));
    // Embedding, RoPE and the cache update: their one launch choice.
    if (isa<EmbeddingOp, RopeOp, CacheUpdateOp>(op) &&
        !op->hasAttr(SGPUDialect::kConfigAttr))
      op->setAttr(SGPUDialect::kConfigAttr,
                  LaunchConfigAttr::get(ctx, kDefaultLaunchThreads));
  });
  for (auto [ffn, tensorCores] : ffns)
    ffn->setAttr(SGPUDialect::kConfigAttr,
                 TwellFFNConfigAttr::get(
                     ctx,
                     tensorCores ? TwellConsumerKind::tensor_cores
                                 : TwellConsumerKind::cuda_cores,
                     tensorCores ? 1
                                 : twellConsumerPasses(ffn,
                                                       spelled.twellPasses),
                     tensorCores && choices.twellGather == TwellGather::Tma));
  for (TwellPackOp pack : packs) {
    TwellPackForm form = TwellPackForm::kernel;
    if (twell.tensorCorePacks.contains(pack))
      form = TwellPackForm::blocks;
    else if (twell.packIntoConsumer(pack))
      form = TwellPackForm::in_consumer;
    else if (twell.producerOfPack.count(pack))
      form = TwellPackForm::fused_producer;
    int64_t cluster = form == TwellPackForm::fused_producer && spelled.cluster
                          ? spelled.cluster
                          : 1;
    pack->setAttr(SGPUDialect::kConfigAttr,
                  TwellPackConfigAttr::get(ctx, form, cluster));
  }
  return failure(failedAny);
}
