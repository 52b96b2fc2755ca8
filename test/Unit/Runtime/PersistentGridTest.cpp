//===- PersistentGridTest.cpp - persistent grids sized on the device ------===//
//
// persistentGridX, the load-time size of a `grid persistent:...` launch:
// one block per usable multiprocessor, whole clusters, never more blocks
// than there are units of work and never fewer than one cluster.
//
//===----------------------------------------------------------------------===//

#include "Manifest.h"

#include <gtest/gtest.h>

using namespace sparseopt;

namespace {

TEST(PersistentGrid, OneBlockPerMultiprocessor) {
  // An H200 (132) and an H100 PCIe (114): the same program, two grids.
  EXPECT_EQ(persistentGridX({1000, 1, 0}, 132), 132u);
  EXPECT_EQ(persistentGridX({1000, 1, 0}, 114), 114u);
}

TEST(PersistentGrid, NoMoreBlocksThanUnits) {
  EXPECT_EQ(persistentGridX({40, 1, 0}, 132), 40u);
  EXPECT_EQ(persistentGridX({40, 2, 0}, 132), 80u);
}

TEST(PersistentGrid, ReservedMultiprocessorsStayFree) {
  EXPECT_EQ(persistentGridX({1000, 1, 8}, 132), 124u);
}

TEST(PersistentGrid, WholeClusters) {
  EXPECT_EQ(persistentGridX({1000, 2, 0}, 132), 132u);
  EXPECT_EQ(persistentGridX({1000, 4, 0}, 114), 112u);
  EXPECT_EQ(persistentGridX({1000, 4, 3}, 114), 108u);
}

TEST(PersistentGrid, AtLeastOneCluster) {
  EXPECT_EQ(persistentGridX({1000, 4, 130}, 132), 4u);
  EXPECT_EQ(persistentGridX({1000, 1, 200}, 132), 1u);
}

} // namespace
