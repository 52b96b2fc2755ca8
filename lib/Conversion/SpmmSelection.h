//===- SpmmSelection.h - the choices of one spmm's lowering -----*- C++ -*-===//
//
// Policy apart from mechanism: every choice convert-sgpu-to-gpu makes for
// one sgpu.spmm (the TMA kernel or not, the lift inside the kernel, split
// or by a gather kernel, the tile table's configuration, clusters, the
// TMA-store epilogue), made here with the remarks that say why; the
// lowering (the SpmmToGPU pattern, SpmmToGPU.cpp) only builds what the
// plan says.
//
//===----------------------------------------------------------------------===//

#ifndef SPARSEOPT_CONVERSION_SPMMSELECTION_H
#define SPARSEOPT_CONVERSION_SPMMSELECTION_H

#include "GPULoweringOptions.h"
#include "SpmmTMA.h"
#include "sparse-opt/Conversion/TargetInfo.h"
#include "sparse-opt/Dialect/SGPU/SGPU.h"

namespace mlir {
namespace sgpu {

/// The options of convert-sgpu-to-gpu the spmm choices read.
struct SpmmSelectionOptions {
  bool useWgmma;              ///< the warpgroup kernel (kernel option)
  llvm::StringRef liftMode;   ///< lift: auto, fused, split or separate
  int64_t cluster;            ///< 0 (auto), 1, 2 or 4
  int64_t tileN, stages, splitK; ///< tile-table overrides (0: the table's)
  bool persistent;
  SpmmEpilogue epilogue;
  KernelBudget budget;        ///< the device's multiprocessors and memory
};

/// What the lowering builds for one spmm.
struct SpmmPlan {
  SpmmKernelKind kernel = SpmmKernelKind::mma; ///< the kernel family
  SpmmShape shape;           ///< the kernel's (K of X itself when fused)
  RankedTensorType xType;    ///< the activation the kernel reads
  LiftOp lift;               ///< the lift feeding the spmm, if any
  bool padLift = false;      ///< a gather kernel lifts into padded rows
  bool fused = false;        ///< the 6:8 lift inside the operand loads
  bool splitLift = false;    ///< the split 6:8 lift (shared windows only)
  bool useTma = false;       ///< the TMA warpgroup kernel (SpmmTMA.cpp)
  bool yByTma = false;       ///< Y written by TMA stores
  TmaSpmmConfig tma;         ///< its configuration (when useTma)
};

/// Chooses how `spmm` is lowered, with a remark for each asked-for choice
/// that does not apply. Fails (after an error at the spmm) when the
/// choices cannot fit the device.
FailureOr<SpmmPlan> planSpmm(SpmmOp spmm, const SpmmSelectionOptions &o);

/// What `plan` chose, as the op's sgpu.config records it.
SpmmConfigAttr recordSpmmPlan(MLIRContext *ctx, const SpmmPlan &plan);

/// The plan `config` (an op's recorded or hand-written sgpu.config)
/// describes for `spmm`, checked against the op and the device (the
/// target is whyNoSpmmKernel's): an error at the op where it cannot be
/// built.
FailureOr<SpmmPlan> planFromConfig(SpmmOp spmm, SpmmConfigAttr config,
                                   const KernelBudget &budget);

/// Why `target` (chip `chip`, features `features`) cannot run `kernel`
/// (empty when it can).
std::string whyNoSpmmKernel(SpmmKernelKind kernel, const TargetInfo &target,
                            StringRef chip, StringRef features);

} // namespace sgpu
} // namespace mlir

#endif // SPARSEOPT_CONVERSION_SPMMSELECTION_H
