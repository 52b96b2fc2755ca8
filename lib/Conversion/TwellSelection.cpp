//===- TwellSelection.cpp - the TwELL choices of one module ---------------===//

#include "TwellSelection.h"

using namespace mlir;
using namespace mlir::sgpu;

void TwellSelection::chooseProducer(TwellPackOp pack) {
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
}

bool TwellSelection::packIntoConsumer(TwellPackOp pack) {
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

bool TwellSelection::chooseConsumer(TwellFFNOp ffn) {
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

TwellPackConfigAttr mlir::sgpu::getTwellPackConfig(TwellPackOp pack) {
  return pack->getAttrOfType<TwellPackConfigAttr>(SGPUDialect::kConfigAttr);
}

std::string mlir::sgpu::whyNoTwellLowering(TwellPackOp pack,
                                           const TargetInfo &target) {
  TwellPackConfigAttr config = getTwellPackConfig(pack);
  if (!config)
    return "sgpu.twell_pack has no #sgpu.twell_pack_config (its "
           "sgpu.config); configure a pack and its consumers together";
  std::string form = stringifyTwellPackForm(config.getForm()).str();
  SmallVector<std::pair<TwellFFNOp, TwellFFNConfigAttr>> consumers;
  for (Operation *user : pack->getUsers()) {
    auto ffn = cast<TwellFFNOp>(user);
    auto ffnConfig =
        ffn->getAttrOfType<TwellFFNConfigAttr>(SGPUDialect::kConfigAttr);
    if (!ffnConfig)
      return "a consumer of this pack has no #sgpu.twell_ffn_config (its "
             "sgpu.config); configure a pack and its consumers together";
    consumers.push_back({ffn, ffnConfig});
  }
  bool blocks = config.getForm() == TwellPackForm::blocks;
  for (auto [ffn, ffnConfig] : consumers) {
    bool tensorCores =
        ffnConfig.getConsumer() == TwellConsumerKind::tensor_cores;
    if (tensorCores != blocks)
      return "form = " + form + " and a consumer with consumer = " +
             stringifyTwellConsumerKind(ffnConfig.getConsumer()).str() +
             ": the block form is the tensor-core consumer's, and only its";
    if (tensorCores) {
      std::string why = whyNoTwellTensorCores(ffn, target, false);
      if (!why.empty())
        return "consumer = tensor_cores: " + why;
    }
  }
  if (config.getForm() == TwellPackForm::in_consumer) {
    if (consumers.size() != 1)
      return "form = in_consumer needs exactly one consumer";
    if (consumers.front().second.getPasses() != 1)
      return "form = in_consumer needs a consumer in one pass";
    std::string why = whyNoTwellPackInConsumer(consumers.front().first);
    if (!why.empty())
      return "form = in_consumer: " + why;
  }
  if (config.getForm() == TwellPackForm::fused_producer) {
    if (!target.hasSparseWGMMA())
      return "form = fused_producer: the target has no wgmma (sm_90a with "
             "PTX ISA 8.2 or later)";
    auto matmul = pack.getInput().getDefiningOp<MatmulOp>();
    if (!matmul)
      return "form = fused_producer: the packed value is not produced by "
             "sgpu.matmul";
    std::string why = whyNoFusedTwellProducer(matmul, pack);
    if (!why.empty())
      return "form = fused_producer: " + why;
  }
  return "";
}
