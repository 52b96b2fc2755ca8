//===- TargetInfo.cpp - chip/feature parsing ------------------------------===//

#include "sparse-opt/Conversion/TargetInfo.h"

#include "llvm/ADT/SmallVector.h"

using namespace mlir;
using namespace mlir::sgpu;

FailureOr<TargetInfo> mlir::sgpu::parseTarget(llvm::StringRef chip,
                                              llvm::StringRef features,
                                              std::string *message) {
  TargetInfo info;
  llvm::StringRef rest = chip;
  if (!rest.consume_front("sm_")) {
    *message = "chip '" + chip.str() + "' is not of the form sm_<NN>[a]";
    return failure();
  }
  if (rest.consume_back("a"))
    info.archSpecific = true;
  if (rest.getAsInteger(10, info.smVersion) || info.smVersion < 50 ||
      info.smVersion > 120) {
    *message = "chip '" + chip.str() + "' is not a known NVIDIA architecture";
    return failure();
  }
  // LLVM's default PTX ISA per chip, used when no +ptxNN is given: the
  // oldest version that knows the chip.
  info.ptxVersion = info.smVersion >= 100 ? 86
                    : info.smVersion >= 90 ? 78
                    : info.smVersion >= 89 ? 78
                    : info.smVersion >= 80 ? 70
                                           : 60;
  llvm::SmallVector<llvm::StringRef> parts;
  features.split(parts, ',', -1, /*KeepEmpty=*/false);
  for (llvm::StringRef f : parts) {
    f = f.trim();
    llvm::StringRef v = f;
    int version = 0;
    if (!v.consume_front("+ptx") || v.getAsInteger(10, version)) {
      *message = "unsupported target feature '" + f.str() +
                 "'; expected +ptx<NN> (e.g. +ptx85)";
      return failure();
    }
    if (version < kMinPTXVersion || version > kMaxPTXVersion) {
      *message = "PTX ISA feature '" + f.str() +
                 "' is outside what the NVPTX backend emits (+ptx" +
                 std::to_string(kMinPTXVersion) + " .. +ptx" +
                 std::to_string(kMaxPTXVersion) + ")";
      return failure();
    }
    info.ptxVersion = version;
  }
  return info;
}
