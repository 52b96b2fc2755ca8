//===- DeviceInfo.h - the GPU parts the compiler tunes for ------*- C++ -*-===//
//
// One chip name does not say everything a kernel configuration depends on:
// sm_90a covers the H100 PCIe (114 multiprocessors) and the H100 SXM and
// H200 (132). The compiler's facts about each part it tunes for (the
// multiprocessor count that sizes persistent and split-K grids, the
// shared memory a block can opt in to, which sizes pipeline depths) live
// in one table here; the `device` option of the passes and of
// sgpu-compile names the part, and by default the chip's reference part
// (the one the cost model's tables were measured on) is used.
//
//===----------------------------------------------------------------------===//

#ifndef SPARSEOPT_CONVERSION_DEVICEINFO_H
#define SPARSEOPT_CONVERSION_DEVICEINFO_H

#include "mlir/Support/LLVM.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include <cstdint>
#include <string>

namespace mlir {
namespace sgpu {

struct DeviceInfo {
  llvm::StringRef name;    ///< "h200", "h100-sxm", "h100-pcie", "a100", ...
  int smVersion;           ///< 90 for H100/H200
  int64_t numSMs;          ///< multiprocessors
  int64_t sharedPerBlock;  ///< dynamic shared memory a block can opt in to
  int64_t registersPerSM;  ///< 32-bit registers per multiprocessor
  /// The part the cost model's tables were measured on (bench/results/):
  /// the reference for its chip.
  bool measured;
};

/// Every part in the table, the reference part of each chip first among
/// those of its chip.
llvm::ArrayRef<DeviceInfo> knownDevices();

/// The part named `name` for code of sm_`smVersion`: empty `name` gives
/// the chip's reference part (H200 for sm_90; for a chip without one, the
/// nearest older chip's). Fails with a message naming the known parts when
/// `name` is unknown or is a part of another chip.
FailureOr<const DeviceInfo *> resolveDevice(llvm::StringRef name,
                                            int smVersion,
                                            std::string *message);

/// What a kernel configuration may use of a device: its multiprocessors
/// less `reservedSMs` left free for other kernels (the `reserve-sms`
/// option: NCCL's kernels beside a persistent grid), and its shared memory
/// per block.
struct KernelBudget {
  int64_t numSMs;
  int64_t reservedSMs;
  int64_t sharedPerBlock;

  /// The reference sm_90a part with nothing reserved.
  KernelBudget();
  KernelBudget(const DeviceInfo &device, int64_t reservedSMs);

  /// The most blocks a persistent grid runs: one per usable multiprocessor.
  int64_t persistentBlocks() const { return numSMs - reservedSMs; }
};

} // namespace sgpu
} // namespace mlir

#endif // SPARSEOPT_CONVERSION_DEVICEINFO_H
