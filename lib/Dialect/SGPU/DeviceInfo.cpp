//===- DeviceInfo.cpp - the table of GPU parts ----------------------------===//

#include "sparse-opt/Conversion/DeviceInfo.h"
#include "sparseopt/launch_limits.h"

#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace mlir::sgpu;

namespace {
// Hopper's opt-in shared memory per block is the most CUDA allows any
// block (the runtime's launch limit).
constexpr int64_t kHopperShared = SPARSEOPT_MAX_SHARED_BYTES;
constexpr int64_t kAmpereShared = 163 * 1024; // A100
constexpr int64_t kRegisters = 64 * 1024;

const DeviceInfo &referenceFor(int smVersion) {
  // The newest reference part not newer than the chip; H200 for anything
  // newer than every entry, and for chips older than every entry too (its
  // figures were the compiler's only ones before the table).
  llvm::ArrayRef<DeviceInfo> devices = knownDevices();
  const DeviceInfo *best = nullptr;
  for (const DeviceInfo &d : devices)
    if (d.smVersion <= smVersion && (!best || d.smVersion > best->smVersion))
      best = &d;
  return best ? *best : devices.front();
}
} // namespace

llvm::ArrayRef<DeviceInfo> mlir::sgpu::knownDevices() {
  // A function-local table: namespace-scope objects of other files (a
  // KernelBudget constant) may read it during their own initialization.
  static const DeviceInfo devices[] = {
      // name        sm  SMs  shared/block   registers  measured
      {"h200",       90, 132, kHopperShared, kRegisters, true},
      {"h100-sxm",   90, 132, kHopperShared, kRegisters, false},
      {"h100-pcie",  90, 114, kHopperShared, kRegisters, false},
      {"a100",       80, 108, kAmpereShared, kRegisters, false},
  };
  return devices;
}

FailureOr<const DeviceInfo *>
mlir::sgpu::resolveDevice(llvm::StringRef name, int smVersion,
                          std::string *message) {
  if (name.empty())
    return &referenceFor(smVersion);
  llvm::ArrayRef<DeviceInfo> devices = knownDevices();
  const DeviceInfo *found = llvm::find_if(
      devices, [&](const DeviceInfo &d) { return d.name == name; });
  if (found == devices.end()) {
    std::string known;
    for (const DeviceInfo &d : devices)
      known += (known.empty() ? "" : ", ") + d.name.str();
    *message = "unknown device '" + name.str() + "' (known: " + known + ")";
    return failure();
  }
  if (found->smVersion != smVersion) {
    *message = "device '" + name.str() + "' is an sm_" +
               std::to_string(found->smVersion) + " part, not sm_" +
               std::to_string(smVersion);
    return failure();
  }
  return found;
}

KernelBudget::KernelBudget() : KernelBudget(referenceFor(90), 0) {}

KernelBudget::KernelBudget(const DeviceInfo &device, int64_t reservedSMs)
    : numSMs(device.numSMs), reservedSMs(reservedSMs),
      sharedPerBlock(device.sharedPerBlock) {}
