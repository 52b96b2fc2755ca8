//===- TwellSelection.h - the TwELL choices of one module -------*- C++ -*-===//
//
// Policy apart from mechanism for TwELL FFNs: the choices of
// convert-sgpu-to-gpu's twell-producer, twell-consumer and twell-pack
// options (with auto resolved against the target and the packs'
// calibration), made here with the remarks that say why; KernelSelection
// records them as the ops' sgpu.config, which the lowerings (SGPUToGPU.cpp,
// TwellToGPU.h) build after whyNoTwellLowering.
//
//===----------------------------------------------------------------------===//

#ifndef SPARSEOPT_CONVERSION_TWELLSELECTION_H
#define SPARSEOPT_CONVERSION_TWELLSELECTION_H

#include "GPULoweringOptions.h"
#include "TwellToGPU.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

namespace mlir {
namespace sgpu {

class TwellSelection {
public:
  TwellSelection(const GPULoweringChoices &choices, int64_t twellPasses,
                 const TargetInfo &target)
      : choices(choices), twellPasses(twellPasses), target(target) {}

  /// Records `pack` and its producing matmul for the fused producer where
  /// it applies; otherwise a remark says why the library path stays.
  void chooseProducer(TwellPackOp pack);

  /// Whether `pack` is fused into its consumer (twell-pack=consumer, and
  /// auto, where it measured 2-3% faster than the pack kernel on the H200):
  /// the library producer's H read by the one CUDA-core consumer of the
  /// pack in one pass. Where consumer was asked for and cannot apply, a
  /// remark says why; auto falls back to the pack kernel silently.
  bool packIntoConsumer(TwellPackOp pack);

  /// Whether `ffn` runs on the tensor-core consumer: twell-consumer, with
  /// auto resolved by the pack's `sgpu.twell_consumer`; records its pack.
  /// Every consumer of a pack must agree (the pack has one form); where
  /// the tensor cores were asked for and cannot run, a remark says why.
  bool chooseConsumer(TwellFFNOp ffn);

  // What the choices recorded, for KernelSelection to write on the ops.
  /// twell-producer=fused: the packs produced by the fused GEMM, with the
  /// matmul it replaces.
  DenseMap<Operation *, MatmulOp> producerOfPack;
  /// The packs whose consumers run on tensor cores (block form).
  DenseSet<Operation *> tensorCorePacks;

private:
  GPULoweringChoices choices;
  int64_t twellPasses;
  TargetInfo target;
};

/// `pack`'s #sgpu.twell_pack_config (checked by whyNoTwellLowering).
TwellPackConfigAttr getTwellPackConfig(TwellPackOp pack);

/// Why the recorded configurations of `pack` and its consumers (their
/// sgpu.config, every user an sgpu.twell_ffn) cannot be built on `target`
/// (empty when they can): each has one, they agree (the block form and
/// only the tensor-core consumers), and each form applies to its ops.
std::string whyNoTwellLowering(TwellPackOp pack, const TargetInfo &target);

} // namespace sgpu
} // namespace mlir

#endif // SPARSEOPT_CONVERSION_TWELLSELECTION_H
