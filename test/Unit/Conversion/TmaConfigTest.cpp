//===- TmaConfigTest.cpp - the TMA spmm kernel's tile table ----------------===//
//
// The shared-memory budget of getTmaSpmmConfig with the TMA-store epilogue:
// every configuration the overrides accept fits in a block's shared memory,
// the staging never costs a pipeline stage where a smaller box avoids it,
// the box sizes of the measured layers, whyNoTmaStore's reasons, the stages
// of the gathered mode (the tensor-core TwELL consumer) and the reasons
// against clusters of four.
//
//===----------------------------------------------------------------------===//

#include "SpmmTMA.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>

using namespace mlir;
using namespace mlir::sgpu;

namespace {

class TmaConfig : public ::testing::Test {
protected:
  MLIRContext ctx;
  Builder b{&ctx};

  /// The part named `name` (its chip's reference part when empty) with
  /// `reserved` multiprocessors left free.
  static KernelBudget reserving(int64_t reserved, StringRef name = "") {
    std::string message;
    return KernelBudget(**resolveDevice(name, 90, &message), reserved);
  }

  SpmmShape shape(int64_t m, int64_t n, int64_t k, Type result = {}) {
    SpmmShape s;
    s.m = m;
    s.n = n;
    s.k = k;
    s.paddedN = (n + 15) / 16 * 16;
    s.paddedK = (k + 31) / 32 * 32;
    s.elementType = b.getF16Type();
    s.resultType = result ? result : b.getF16Type();
    s.activation = Activation::none;
    s.hasBias = false;
    return s;
  }
};

TEST_F(TmaConfig, EveryAcceptedOverrideFitsWithTheStaging) {
  for (int64_t tileN : {16, 32, 64, 128, 256})
    for (int64_t stages = 0; stages <= 16; ++stages) {
      if (!verifyTmaSpmmOverrides(tileN, stages).empty())
        continue;
      TmaSpmmConfig c = getTmaSpmmConfig(shape(4096, 4096, 4096), tileN,
                                         stages, 1, true, KernelBudget(), false, 1, true);
      EXPECT_LE(c.dynamicSharedBytes, KernelBudget().sharedPerBlock)
          << "tile-n=" << tileN << " stages=" << stages;
      if (!c.tmaStore)
        continue;
      // The staging boxes start 1024-aligned (the 128B swizzle pattern)
      // right after the stages, and the barriers follow them.
      int64_t staging = c.barriersOffset - c.stagingBytes;
      EXPECT_EQ(staging % 1024, 0) << tileN << " " << stages;
      EXPECT_EQ(c.stagingBytes, 2 * c.yBox[0] * 128);
      EXPECT_EQ(c.yBox[1], 64);
      EXPECT_GE(c.yBox[0], 16);
      EXPECT_LE(c.yBox[0], std::min<int64_t>(tileN, 128));
    }
}

TEST_F(TmaConfig, TheStagingNeverCostsAStage) {
  for (int64_t m : {16, 128, 512, 4096, 16384})
    for (auto [n, k] : {std::pair<int64_t, int64_t>{14336, 4096},
                        {4096, 14336},
                        {18944, 3584}}) {
      SpmmShape s = shape(m, n, k);
      TmaSpmmConfig regs = getTmaSpmmConfig(s, 0, 0, 0, true, KernelBudget(), false, 2,
                                            /*tmaStore=*/false);
      TmaSpmmConfig tma = getTmaSpmmConfig(s, 0, 0, 0, true, KernelBudget(), false, 2,
                                           /*tmaStore=*/true);
      EXPECT_EQ(tma.stages, regs.stages) << m << " x " << n << " x " << k;
      EXPECT_EQ(tma.tokensPerBlock, regs.tokensPerBlock);
      EXPECT_EQ(tma.gridSize, regs.gridSize);
      EXPECT_LE(tma.dynamicSharedBytes, KernelBudget().sharedPerBlock);
      // Split-K grids keep the register epilogue (f32 partial sums).
      EXPECT_EQ(tma.tmaStore, regs.splits == 1) << m << " x " << n;
    }
}

TEST_F(TmaConfig, BoxesOfTheMeasuredLayers) {
  // 256-token tiles: 4 stages beside 128-token boxes.
  TmaSpmmConfig big = getTmaSpmmConfig(shape(4096, 14336, 4096), 0, 0, 0,
                                       true, KernelBudget(), false, 2, true);
  EXPECT_EQ(big.tokensPerBlock, 256);
  EXPECT_EQ(big.stages, 4);
  EXPECT_EQ(big.yBox[0], 128);
  // 128-token tiles with 8 stages: only 64-token boxes fit.
  TmaSpmmConfig mid = getTmaSpmmConfig(shape(512, 4096, 14336), 0, 0, 0, true,
                                       KernelBudget(), false, 1, true);
  EXPECT_EQ(mid.tokensPerBlock, 128);
  EXPECT_EQ(mid.stages, 8);
  EXPECT_EQ(mid.yBox[0], 64);
  // 16-token tiles: one box of 16.
  TmaSpmmConfig decode = getTmaSpmmConfig(shape(16, 14336, 4096), 0, 0, 0,
                                          true, KernelBudget(), false, 1, true);
  EXPECT_EQ(decode.tokensPerBlock, 16);
  EXPECT_EQ(decode.yBox[0], 16);
}

TEST_F(TmaConfig, WhyNoTmaStore) {
  TmaSpmmConfig c = getTmaSpmmConfig(shape(4096, 4096, 4096));
  EXPECT_EQ(whyNoTmaStore(shape(4096, 4096, 4096), c), "");
  EXPECT_NE(whyNoTmaStore(shape(4096, 4096, 4096, b.getF32Type()), c)
                .find("the result type is f32, not 16-bit"),
            std::string::npos);
  EXPECT_NE(whyNoTmaStore(shape(4096, 4100, 4096), c).find("N = 4100"),
            std::string::npos);
  TmaSpmmConfig split = getTmaSpmmConfig(shape(16, 4096, 14336));
  ASSERT_GT(split.splits, 1);
  EXPECT_NE(whyNoTmaStore(shape(16, 4096, 14336), split).find("split along K"),
            std::string::npos);
  // Nine 128-token stages leave no room even for 16-token boxes.
  TmaSpmmConfig full = getTmaSpmmConfig(shape(4096, 4096, 4096), 128, 9);
  EXPECT_NE(whyNoTmaStore(shape(4096, 4096, 4096), full, 9).find("no room"),
            std::string::npos);
}


// The gathered mode of the tensor-core TwELL consumer: 40 KiB stages (a
// 64-row A box, 256 gathered B rows of 128 B), as many as fit (at most 5),
// at least 2 even with one k-tile (a tile's k-tile count is known only at
// run time), every configuration within a block's shared memory, a
// persistent grid of at most 132 blocks.
TEST_F(TmaConfig, GatheredStagesFit) {
  for (TmaGatherKind kind : {TmaGatherKind::rows, TmaGatherKind::kRows})
    for (int64_t k : {8, 64, 200, 2048, 5632, 16384}) {
      TmaSpmmConfig cfg = getTmaGatherConfig(kind, 256, 5632, k);
      EXPECT_TRUE(cfg.dense);
      EXPECT_EQ(cfg.gather, kind);
      EXPECT_GE(cfg.stages, 2) << k;
      EXPECT_LE(cfg.stages, 5) << k;
      EXPECT_LE(cfg.dynamicSharedBytes, KernelBudget().sharedPerBlock) << k;
      EXPECT_EQ(cfg.aBox[0], kTmaGatherRows);
      EXPECT_EQ(cfg.aBox[1], 64);
      EXPECT_EQ(cfg.gridX, 22);
      EXPECT_EQ(cfg.gridSize, 132);
    }
  EXPECT_EQ(getTmaGatherConfig(TmaGatherKind::kRows, 256, 2048, 5632).stages, 5);
  // One block of 64 rows and one column tile: a grid of one.
  EXPECT_EQ(getTmaGatherConfig(TmaGatherKind::rows, 1, 100, 64).gridSize, 1);
}

// Clusters of four need the feature blocks in groups of four and a B tile
// that splits into four boxes of at least 8 rows.
TEST_F(TmaConfig, WhyNoClusterOfFour) {
  TmaSpmmConfig four = getTmaSpmmConfig(shape(4096, 4096, 4096));
  EXPECT_EQ(whyNoTmaCluster(four, KernelBudget(), 4), "");
  TmaSpmmConfig three = getTmaSpmmConfig(shape(4096, 384, 4096));
  EXPECT_EQ(whyNoTmaCluster(three, KernelBudget(), 4),
            "the 3 blocks of 128 A rows do not form groups of 4");
  EXPECT_EQ(whyNoTmaCluster(three, KernelBudget(), 2), "the 3 blocks of 128 A rows do not pair up");
  TmaSpmmConfig small = getTmaSpmmConfig(shape(16, 4096, 4096), 16, 0, 1);
  EXPECT_NE(whyNoTmaCluster(small, KernelBudget(), 4).find("does not split into 4 boxes"),
            std::string::npos);
  EXPECT_EQ(whyNoTmaCluster(four, reserving(129), 4),
            "reserve-sms=129 leaves fewer than the 4 multiprocessors of a cluster");
  TmaSpmmConfig applied = getTmaSpmmConfig(shape(4096, 4096, 4096), 0, 0, 0, true, KernelBudget(),
                                           false, 4);
  EXPECT_EQ(applied.cluster, 4);
  EXPECT_EQ(applied.bBox[0], applied.tokensPerBlock / 4);
  EXPECT_EQ(applied.gridSize % 4, 0);
}

// The persistent grid is one block per multiprocessor the part has, less
// those reserved; sm_90a covers parts with 132 and with 114.
TEST_F(TmaConfig, PersistentGridOfTheDevice) {
  SpmmShape s = shape(4096, 4096, 4096);
  EXPECT_EQ(getTmaSpmmConfig(s, 0, 0, 0, true, reserving(0)).gridSize, 132);
  EXPECT_EQ(getTmaSpmmConfig(s, 0, 0, 0, true, reserving(0, "h100-pcie")).gridSize,
            114);
  EXPECT_EQ(getTmaSpmmConfig(s, 0, 0, 0, true, reserving(14, "h100-pcie")).gridSize,
            100);
  EXPECT_EQ(getTmaDenseConfig(4096, 4096, 4096, 128, reserving(0, "h100-pcie"))
                .gridSize,
            114);
  EXPECT_EQ(verifyTmaSpmmOverrides(0, 0, 0, reserving(114, "h100-pcie")),
            "reserve-sms=114 is not 0 to 113");
}


/// Every field a kernel or its launch reads.
static void expectSameConfig(const TmaSpmmConfig &a, const TmaSpmmConfig &b,
                             const std::string &what) {
  EXPECT_EQ(a.tokensPerBlock, b.tokensPerBlock) << what;
  EXPECT_EQ(a.stages, b.stages) << what;
  EXPECT_EQ(a.threads, b.threads) << what;
  EXPECT_EQ(a.gridX, b.gridX) << what;
  EXPECT_EQ(a.gridY, b.gridY) << what;
  EXPECT_EQ(a.splits, b.splits) << what;
  EXPECT_EQ(a.kTilesPerSplit, b.kTilesPerSplit) << what;
  EXPECT_EQ(a.persistent, b.persistent) << what;
  EXPECT_EQ(a.gridSize, b.gridSize) << what;
  EXPECT_EQ(a.dynamicSharedBytes, b.dynamicSharedBytes) << what;
  EXPECT_EQ(a.barriersOffset, b.barriersOffset) << what;
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(a.bBox[i], b.bBox[i]) << what;
    EXPECT_EQ(a.aBox[i], b.aBox[i]) << what;
    EXPECT_EQ(a.metaBox[i], b.metaBox[i]) << what;
    EXPECT_EQ(a.a2Box[i], b.a2Box[i]) << what;
    EXPECT_EQ(a.yBox[i], b.yBox[i]) << what;
  }
  EXPECT_EQ(a.bSwizzle, b.bSwizzle) << what;
  EXPECT_EQ(a.aSwizzle, b.aSwizzle) << what;
  EXPECT_EQ(a.a2Swizzle, b.a2Swizzle) << what;
  EXPECT_EQ(a.fusedLift, b.fusedLift) << what;
  EXPECT_EQ(a.liftByTma, b.liftByTma) << what;
  EXPECT_EQ(a.steps, b.steps) << what;
  EXPECT_EQ(a.cluster, b.cluster) << what;
  EXPECT_EQ(a.tmaStore, b.tmaStore) << what;
  EXPECT_EQ(a.stagingBytes, b.stagingBytes) << what;
}

// What #sgpu.spmm_config records (getTmaSpmmTiling) rebuilds the table's
// configuration exactly: the selection and the lowering agree on every
// shape, override, lift and device.
TEST_F(TmaConfig, RecordedTilingRebuildsTheConfiguration) {
  int64_t cases = 0;
  for (StringRef part : {"h200", "h100-pcie"})
    for (int64_t m : {1, 16, 100, 512, 4096, 16384})
      for (auto [n, k] : {std::pair<int64_t, int64_t>{4096, 4096},
                          {14336, 4096}, {4096, 14336}, {1000, 968},
                          {128, 64}})
        for (bool fused : {false, true})
          for (bool store : {false, true})
            for (int64_t cluster : {1, 2, 4})
              for (int64_t tileN : {0, 64, 256})
                for (int64_t splitK : {0, 3})
                  for (bool persistent : {true, false}) {
                    KernelBudget budget = reserving(0, part);
                    SpmmShape s = shape(m, n, k);
                    // The fused lift's K: 64 columns of X per 96 of K'.
                    if (fused && k < 96) {
                      ++cases;
                      continue;
                    }
                    if (fused) {
                      s.k = k / 96 * 64;
                      s.paddedK = k / 96 * 96;
                    }
                    TmaSpmmConfig want =
                        getTmaSpmmConfig(s, tileN, 0, splitK, persistent,
                                         budget, fused, cluster, store);
                    TmaSpmmConfig got = buildTmaSpmmConfig(
                        s, getTmaSpmmTiling(want), budget, fused, false);
                    expectSameConfig(want, got,
                                     (part + " m=" + std::to_string(m) +
                                      " n=" + std::to_string(n) +
                                      " k=" + std::to_string(k))
                                         .str());
                    ++cases;
                  }
  EXPECT_EQ(cases, 2 * 6 * 5 * 2 * 2 * 3 * 3 * 2 * 2);
}

} // namespace
