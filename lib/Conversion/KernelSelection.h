//===- KernelSelection.h - every kernel choice of a module ------*- C++ -*-===//
//
// Policy apart from mechanism: sgpu-select-kernels (and convert-sgpu-to-gpu,
// for ops that arrive without one) records on every sgpu.spmm,
// sgpu.twell_pack, sgpu.twell_ffn and sgpu.attention the typed
// configuration of its lowering (`sgpu.config`: #sgpu.spmm_config,
// #sgpu.twell_pack_config, #sgpu.twell_ffn_config, #sgpu.attention_config),
// with a remark wherever an asked-for choice does not apply. The lowerings
// read only those attributes.
//
//===----------------------------------------------------------------------===//

#ifndef SPARSEOPT_CONVERSION_KERNELSELECTION_H
#define SPARSEOPT_CONVERSION_KERNELSELECTION_H

#include "GPULoweringOptions.h"
#include "sparse-opt/Conversion/DeviceInfo.h"
#include "sparse-opt/Conversion/TargetInfo.h"

#include "mlir/IR/BuiltinOps.h"

#include <string>

namespace mlir {
namespace sgpu {

/// The selection options as both passes spell them (Passes.td's
/// KernelSelectionOptions).
struct KernelSelectionOptions {
  std::string chip, features, device, kernel, lift, epilogue, twellProducer,
      twellConsumer, twellGather, twellPack;
  int64_t tileN, stages, splitK, reserveSMs, cluster, twellPasses;
  bool persistent, attentionLibrary;
};

/// The options of a pass that declares KernelSelectionOptions.
template <typename PassT>
KernelSelectionOptions selectionOptionsOf(const PassT &p) {
  return {p.chip,       p.features,      p.device,       p.kernel,
          p.lift,       p.epilogue,      p.twellProducer, p.twellConsumer,
          p.twellGather, p.twellPack,    p.tileN,        p.stages,
          p.splitK,     p.reserveSMs,    p.cluster,      p.twellPasses,
          p.persistent, p.attentionLibrary};
}

/// The options parsed and resolved against the target and the device.
struct KernelSelection {
  KernelSelectionOptions spelled;
  TargetInfo target;
  KernelBudget budget;
  GPULoweringChoices choices;
  /// kernel, with auto resolved: the warpgroup kernels where the target
  /// has them.
  bool useWgmma = false;

  /// Parses `options`; on a bad value, an error at `module` naming
  /// `passName`'s option.
  static FailureOr<KernelSelection> parse(const KernelSelectionOptions &options,
                                          ModuleOp module,
                                          StringRef passName);

  /// Checks the buffer limits (BufferLimits.h), then records the
  /// configuration of every sgpu.spmm and sgpu.attention, and of every TwELL
  /// pack with its consumers, that has no `sgpu.config` (a pack and its
  /// consumers are configured together: where one of them has a
  /// configuration, the others are left alone). Fails after an error at
  /// each op no configuration can run on the target.
  LogicalResult select(ModuleOp module) const;
};

} // namespace sgpu
} // namespace mlir

#endif // SPARSEOPT_CONVERSION_KERNELSELECTION_H
