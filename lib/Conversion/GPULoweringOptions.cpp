//===- GPULoweringOptions.cpp - convert-sgpu-to-gpu's typed choices -------===//

#include "GPULoweringOptions.h"

#include "sparse-opt/Dialect/SGPU/SGPU.h"

#include "llvm/ADT/ArrayRef.h"

using namespace mlir;
using namespace mlir::sgpu;

namespace {
/// `value`'s position among `names` (the enum's order), or a message
/// naming the option and the known spellings.
template <typename Enum>
bool parseChoice(llvm::StringRef option, llvm::StringRef value,
                 llvm::ArrayRef<llvm::StringRef> names, Enum &out,
                 std::string *message) {
  for (auto [index, name] : llvm::enumerate(names))
    if (value == name) {
      out = static_cast<Enum>(index);
      return true;
    }
  *message = "unknown " + option.str() + " '" + value.str() + "'; expected ";
  for (auto [index, name] : llvm::enumerate(names))
    *message += (index == 0                  ? ""
                 : index + 1 == names.size() ? " or "
                                             : ", ") +
                name.str();
  return false;
}
} // namespace

FailureOr<GPULoweringChoices>
mlir::sgpu::parseGPULoweringChoices(const GPULoweringSpelling &spelled,
                                    StringRef passName, std::string *message) {
  GPULoweringChoices c;
  if (!parseChoice("epilogue", spelled.epilogue, {"auto", "tma", "registers"},
                   c.epilogue, message) ||
      !parseChoice("twell-producer", spelled.twellProducer,
                   {"auto", "fused", "library"}, c.twellProducer, message) ||
      !parseChoice("twell-consumer", spelled.twellConsumer,
                   {"auto", "cuda-cores", "tensor-cores"}, c.twellConsumer,
                   message) ||
      !parseChoice("twell-gather", spelled.twellGather, {"cp-async", "tma"},
                   c.twellGather, message) ||
      !parseChoice("twell-pack", spelled.twellPack,
                   {"auto", "kernel", "consumer"}, c.twellPack, message) ||
      !parseChoice("kernel", spelled.kernel, {"auto", "mma", "wgmma"},
                   c.kernel, message))
    return failure();
  if (spelled.twellPasses < 0 || spelled.twellPasses > TwellFFNConfigAttr::kMaxPasses) {
    *message = "invalid " + passName.str() + " option: twell-passes=" +
               std::to_string(spelled.twellPasses) +
               " is not 0 (auto) or 1.." +
               std::to_string(TwellFFNConfigAttr::kMaxPasses);
    return failure();
  }
  if (spelled.cluster < 0 || spelled.cluster == 3 || spelled.cluster > 4) {
    *message = "invalid " + passName.str() + " option: cluster=" +
               std::to_string(spelled.cluster) + " is not 0, 1, 2 or 4";
    return failure();
  }
  return c;
}
