//===- SparseCostModelTest.cpp - the sparse-or-dense rules ----------------===//
//
// Each measured regime of docs/performance.md gives the choice the rules
// must make; shapes and chips outside the measurements keep the declared
// sparsity.
//
//===----------------------------------------------------------------------===//

#include "SparseCostModel.h"
#include "sparse-opt/Conversion/DeviceInfo.h"

#include <gtest/gtest.h>

using mlir::sgpu::chooseSparseOrDense;

namespace {

// The measured part's multiprocessors (H200).
const int64_t kSMs = mlir::sgpu::KernelBudget().numSMs;

bool dense(const char *chip, int64_t m, int64_t n, int64_t k, unsigned p,
           int64_t sms = kSMs) {
  return chooseSparseOrDense(chip, sms, m, n, k, p).dense;
}

// The three measured layers.
constexpr int64_t kWideN = 14336, kWideK = 4096;   // 112 blocks
constexpr int64_t kNarrowN = 4096, kNarrowK = 14336; // 32 blocks
constexpr int64_t kTwoWaveN = 18944, kTwoWaveK = 3584; // 148 blocks

TEST(SparseCostModel, TwoFourAlwaysKeepsTheSparseKernel) {
  for (int64_t m : {1, 16, 128, 512, 4096, 16384}) {
    EXPECT_FALSE(dense("sm_90a", m, kWideN, kWideK, 4));
    EXPECT_FALSE(dense("sm_90a", m, kNarrowN, kNarrowK, 4));
    EXPECT_FALSE(dense("sm_90a", m, kTwoWaveN, kTwoWaveK, 4));
  }
}

TEST(SparseCostModel, FourSixAndSixEightWinAtDecodeOnOneWaveAndInPrefill) {
  // The split-K grid (32 blocks): 4:6 won, 6:8 tied.
  EXPECT_FALSE(dense("sm_90a", 16, kNarrowN, kNarrowK, 6));
  EXPECT_FALSE(dense("sm_90a", 1, kNarrowN, kNarrowK, 6));
  EXPECT_TRUE(dense("sm_90a", 16, kNarrowN, kNarrowK, 8));
  for (unsigned p : {6u, 8u}) {
    EXPECT_FALSE(dense("sm_90a", 16, kWideN, kWideK, p));
    // Two waves of blocks.
    auto c = chooseSparseOrDense("sm_90a", kSMs, 16, kTwoWaveN, kTwoWaveK, p);
    EXPECT_TRUE(c.dense);
    EXPECT_NE(c.reason.find("148 blocks"), std::string::npos) << c.reason;
    for (int64_t m : {17, 128, 512, 4095}) {
      EXPECT_TRUE(dense("sm_90a", m, kWideN, kWideK, p)) << m;
      EXPECT_TRUE(dense("sm_90a", m, kNarrowN, kNarrowK, p)) << m;
    }
    // From 4096 tokens: kept where N > K, the library GEMM on the layer
    // with N < K.
    for (int64_t m : {4096, 16384}) {
      EXPECT_FALSE(dense("sm_90a", m, kWideN, kWideK, p)) << m;
      EXPECT_FALSE(dense("sm_90a", m, kTwoWaveN, kTwoWaveK, p)) << m;
      auto c = chooseSparseOrDense("sm_90a", kSMs, m, kNarrowN, kNarrowK, p);
      EXPECT_TRUE(c.dense) << m;
      EXPECT_NE(c.reason.find("M >= 4096 with N > K"), std::string::npos)
          << c.reason;
    }
  }
}

TEST(SparseCostModel, EightTenAndWiderGoDense) {
  for (unsigned p : {10u, 12u, 16u})
    for (int64_t m : {1, 16, 128, 4096}) {
      auto c = chooseSparseOrDense("sm_90a", kSMs, m, kWideN, kWideK, p);
      EXPECT_TRUE(c.dense);
      EXPECT_NE(c.reason.find("8:10"), std::string::npos) << c.reason;
    }
}

TEST(SparseCostModel, UnmeasuredChipsAndSizesKeepTheDeclaredSparsity) {
  EXPECT_FALSE(dense("sm_80", 16, kNarrowN, kNarrowK, 8));
  EXPECT_FALSE(dense("sm_100a", 4096, kWideN, kWideK, 8));
  // 4096 x 4096 = 16.8 M weights: below the measured sizes.
  EXPECT_FALSE(dense("sm_90a", 16, 4096, 4096, 8));
  EXPECT_FALSE(dense("sm_90", 4096, kWideN, kWideK, 8));
  EXPECT_TRUE(chooseSparseOrDense("sm_90a", kSMs, 16, 4096, 4096, 8).reason.empty());
}

} // namespace

namespace {

TEST(SparseCostModel, OneWaveIsTheDevicesMultiprocessorCount) {
  // 124 blocks of 128 weight rows: one wave on an H200 (132
  // multiprocessors), two on an H100 PCIe (114).
  constexpr int64_t n = 124 * 128, k = 4096;
  EXPECT_FALSE(dense("sm_90a", 16, n, k, 6));
  EXPECT_FALSE(dense("sm_90a", 16, n, k, 8));
  EXPECT_TRUE(dense("sm_90a", 16, n, k, 6, 114));
  auto c = chooseSparseOrDense("sm_90a", 114, 16, n, k, 8);
  EXPECT_TRUE(c.dense);
  EXPECT_NE(c.reason.find("6:8: 57 to 114 blocks"), std::string::npos)
      << c.reason;
}

} // namespace

namespace {

// Every timed case of the committed benchmark grid (SparseCostTables.inc,
// generated from bench/results/) against the rules on the measured part:
// where the rules keep the sparse kernel it measured at least 1.0x less the
// tie band, and where they choose the library GEMM at most 1.0x plus it.
TEST(SparseCostModel, TheRulesAgreeWithEveryMeasuredCase) {
  ASSERT_EQ(mlir::sgpu::measuredCases().size(), 120u);
  for (const mlir::sgpu::MeasuredCase &c : mlir::sgpu::measuredCases()) {
    auto choice =
        chooseSparseOrDense("sm_90a", kSMs, c.m, c.n, c.k, c.patternM);
    std::string what = std::to_string(c.patternM - 2) + ":" +
                       std::to_string(c.patternM) + " M=" +
                       std::to_string(c.m) + " N=" + std::to_string(c.n) +
                       " K=" + std::to_string(c.k) +
                       (c.bf16 ? " bf16" : " f16") + " measured " +
                       std::to_string(c.speedup);
    if (choice.dense)
      EXPECT_LE(c.speedup, 1.0 + mlir::sgpu::kMeasuredTie) << what;
    else
      EXPECT_GE(c.speedup, 1.0 - mlir::sgpu::kMeasuredTie) << what;
  }
}

// The remarks quote the committed records, not hand-copied ranges.
TEST(SparseCostModel, RemarksQuoteTheRecords) {
  auto c = chooseSparseOrDense("sm_90a", kSMs, 512, kWideN, kWideK, 10);
  EXPECT_NE(c.reason.find("the 8:10 kernel measured 0.58-1.09x of the library GEMM (median "),
            std::string::npos)
      << c.reason;
  EXPECT_NE(c.reason.find("over the 30 measured shapes"), std::string::npos)
      << c.reason;
}

} // namespace
