//===- DeviceInfoTest.cpp - the table of GPU parts ------------------------===//
//
// The device option resolves to a part of the chip (the chip's reference
// part when empty); unknown names and parts of another chip are errors
// that say which parts exist. (TmaConfigTest checks that the kernel
// configurations size their grids by the part.)
//
//===----------------------------------------------------------------------===//

#include "sparse-opt/Conversion/DeviceInfo.h"

#include <gtest/gtest.h>

using namespace mlir;
using namespace mlir::sgpu;

namespace {

const DeviceInfo &resolved(StringRef name, int sm) {
  std::string message;
  FailureOr<const DeviceInfo *> d = resolveDevice(name, sm, &message);
  EXPECT_TRUE(succeeded(d)) << message;
  return **d;
}

TEST(DeviceInfo, TheReferencePartOfEachChip) {
  EXPECT_EQ(resolved("", 90).name, "h200");
  EXPECT_TRUE(resolved("", 90).measured);
  EXPECT_EQ(resolved("", 80).name, "a100");
  EXPECT_EQ(resolved("", 86).name, "a100"); // the nearest older chip's
  EXPECT_EQ(resolved("", 100).name, "h200");
}

TEST(DeviceInfo, OneChipNameCoversPartsOfDifferentSizes) {
  EXPECT_EQ(resolved("h200", 90).numSMs, 132);
  EXPECT_EQ(resolved("h100-sxm", 90).numSMs, 132);
  EXPECT_EQ(resolved("h100-pcie", 90).numSMs, 114);
  EXPECT_EQ(resolved("h100-pcie", 90).sharedPerBlock, 227 * 1024);
}

TEST(DeviceInfo, UnknownOrForeignPartsAreErrors) {
  std::string message;
  EXPECT_TRUE(failed(resolveDevice("h300", 90, &message)));
  EXPECT_NE(message.find("unknown device 'h300' (known: h200, h100-sxm"),
            std::string::npos)
      << message;
  EXPECT_TRUE(failed(resolveDevice("a100", 90, &message)));
  EXPECT_EQ(message, "device 'a100' is an sm_80 part, not sm_90");
}

} // namespace
