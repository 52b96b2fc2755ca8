//===- TargetInfo.h - what a chip/feature pair can express ------*- C++ -*-===//
//
// The NVPTX backend aborts ("Cannot select") on instructions the chosen chip
// or PTX ISA version cannot express. The compiler checks the pair itself and
// reports a diagnostic instead.
//
//===----------------------------------------------------------------------===//

#ifndef SPARSEOPT_CONVERSION_TARGETINFO_H
#define SPARSEOPT_CONVERSION_TARGETINFO_H

#include "mlir/Support/LLVM.h"
#include "llvm/ADT/StringRef.h"
#include <string>

namespace mlir {
namespace sgpu {

struct TargetInfo {
  int smVersion = 0;       ///< 90 for sm_90 / sm_90a.
  bool archSpecific = false; ///< The `a` suffix (wgmma, setmaxnreg, ...).
  int ptxVersion = 0;      ///< 85 for +ptx85.

  bool hasSparseMMA() const { return smVersion >= 80; }
  bool hasOrderedMetadata() const { return hasSparseMMA() && ptxVersion >= 85; }
  bool hasSparseWGMMA() const {
    return smVersion == 90 && archSpecific && ptxVersion >= 82;
  }
};

/// Oldest and newest PTX ISA the NVPTX backend of LLVM 22 can be asked for.
constexpr int kMinPTXVersion = 60;
constexpr int kMaxPTXVersion = 88;

/// Parses `sm_<NN>[a]` and a feature string `+ptx<NN>` (empty = the backend
/// default for the chip). Returns a message on malformed or unsupported
/// input.
FailureOr<TargetInfo> parseTarget(llvm::StringRef chip,
                                  llvm::StringRef features,
                                  std::string *message);

} // namespace sgpu
} // namespace mlir

#endif // SPARSEOPT_CONVERSION_TARGETINFO_H
