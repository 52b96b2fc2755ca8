//===- TwellSelection.h - the TwELL choices of one module -------*- C++ -*-===//
//
// Policy apart from mechanism for TwELL FFNs: the choices of
// convert-sgpu-to-gpu's twell-producer, twell-consumer and twell-pack
// options (with auto resolved against the target and the packs'
// calibration), made here with the remarks that say why, and recorded for
// the lowerings (SGPUToGPU.cpp, TwellToGPU.h) to build.
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

  /// twell-producer=fused: the packs produced by the fused GEMM, and the
  /// matmuls it replaces.
  DenseMap<Operation *, MatmulOp> producerOfPack;
  DenseSet<Operation *> fusedProducerOf;

  /// Records `pack` and its producing matmul for the fused producer where
  /// it applies; otherwise a remark says why the library path stays.
  void chooseProducer(TwellPackOp pack) {
    std::string why;
    auto matmul = pack.getInput().getDefiningOp<MatmulOp>();
    if (!target.hasSparseWGMMA())
      why = "the target has no wgmma (sm_90a with PTX ISA 8.2 or later)";
    else if (!matmul)
      why = "the packed value is not produced by sgpu.matmul";
    else
      why = whyNoFusedTwellProducer(matmul, pack);
    if (!why.empty()) {
      pack.emitRemark() << "TwELL producer: the library GEMM and the pack "
                           "kernel, not the fused producer: "
                        << why;
      return;
    }
    producerOfPack[pack] = matmul;
    fusedProducerOf.insert(matmul);
  }
  /// The packs whose consumers run on tensor cores (block form).
  DenseSet<Operation *> tensorCorePacks;

  /// Whether `pack` is fused into its consumer (twell-pack=consumer, and
  /// auto, where it measured 2-3% faster than the pack kernel on the H200):
  /// the library producer's H read by the one CUDA-core consumer of the
  /// pack in one pass. Where consumer was asked for and cannot apply, a
  /// remark says why; auto falls back to the pack kernel silently.
  bool packIntoConsumer(TwellPackOp pack) {
    if (choices.twellPack == TwellPack::Kernel)
      return false;
    std::string why;
    auto users = llvm::to_vector(pack->getUsers());
    // (Packs of the tensor-core consumer are lowered before this is asked.)
    if (producerOfPack.count(pack))
      why = "the fused producer packs it";
    else if (users.size() != 1)
      why = "it has more than one consumer";
    else if (twellConsumerPasses(cast<TwellFFNOp>(users.front()),
                                 twellPasses) != 1)
      why = "its consumer runs in passes";
    else
      why = whyNoTwellPackInConsumer(cast<TwellFFNOp>(users.front()));
    if (!why.empty()) {
      if (choices.twellPack == TwellPack::Consumer)
        pack.emitRemark() << "TwELL pack: a pack kernel, not fused into the "
                             "consumer: "
                          << why;
      return false;
    }
    return true;
  }

  /// Whether `ffn` runs on the tensor-core consumer: twell-consumer, with
  /// auto resolved by the pack's `sgpu.twell_consumer`; records its pack.
  /// Every consumer of a pack must agree (the pack has one form); where
  /// the tensor cores were asked for and cannot run, a remark says why.
  bool chooseConsumer(TwellFFNOp ffn) {
    auto pack = ffn.getPacked().getDefiningOp<TwellPackOp>();
    bool wanted = choices.twellConsumer == TwellConsumer::TensorCores;
    if (choices.twellConsumer == TwellConsumer::Auto)
      if (auto choice = pack->getAttrOfType<StringAttr>(
              SGPUDialect::kTwellConsumerAttr))
        wanted = choice.getValue() == "tensor-cores";
    if (!wanted)
      return false;
    std::string why = whyNoTwellTensorCores(
        ffn, target, choices.twellProducer == TwellProducer::Fused &&
                 producerOfPack.count(pack));
    for (Operation *user : pack->getUsers())
      if (user != ffn.getOperation() && why.empty() &&
          !whyNoTwellTensorCores(cast<TwellFFNOp>(user), target, false)
               .empty())
        why = "another consumer of the same pack cannot run on them";
    if (!why.empty()) {
      ffn.emitRemark() << "TwELL consumer: CUDA cores, not tensor cores: "
                       << why;
      return false;
    }
    tensorCorePacks.insert(pack);
    return true;
  }

private:
  GPULoweringChoices choices;
  int64_t twellPasses;
  TargetInfo target;
};

} // namespace sgpu
} // namespace mlir

#endif // SPARSEOPT_CONVERSION_TWELLSELECTION_H
