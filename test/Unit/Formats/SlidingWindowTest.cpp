//===- SlidingWindowTest.cpp - Tests for (2N-2):2N window decomposition ---===//
//
// Part of the SparseOpt project.
//
//===----------------------------------------------------------------------===//
//
// Expected lifted columns and window assignments are taken from the contract
// in include/sparse-opt/Formats/SlidingWindow.h: hand-written tables for
// small cases, and a direct transcription of the contract's formulas and
// greedy rule (not the implementation's helpers) for the exhaustive checks.
//
//===----------------------------------------------------------------------===//

#include "sparse-opt/Formats/SlidingWindow.h"
#include "sparse-opt-c/Formats.h"
#include "sparse-opt/Formats/Float16.h"
#include "sparse-opt/Formats/Sparse24.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

using namespace sparseopt;

namespace {

using Bits = std::vector<uint16_t>;

bool isZeroBits(uint16_t bits) { return (bits & 0x7fffu) == 0; }

uint16_t h(float value) { return floatToHalf(value); }

//===----------------------------------------------------------------------===//
// The contract, transcribed.
//===----------------------------------------------------------------------===//

/// K' for K columns: ceil(K / 2N) * 4(N-1).
int64_t contractLiftedCols(int64_t cols, int n) {
  return (cols + 2 * n - 1) / (2 * n) * 4 * (n - 1);
}

/// Lifted column c' = g*4(N-1) + 4j + l  ->  original column g*2N + 2j + l.
int64_t contractSource(int64_t lifted, int n) {
  int64_t g = lifted / (4 * (n - 1));
  int64_t j = lifted % (4 * (n - 1)) / 4;
  int64_t l = lifted % 4;
  return g * 2 * n + 2 * j + l;
}

/// The greedy of the contract on one group given as a bit mask of its
/// nonzero positions. Returns the window of every position (-1 for zeros),
/// or an empty vector if some nonzero finds no window.
std::vector<int> referenceWindows(unsigned mask, int n) {
  std::vector<int> window(2 * n, -1);
  std::vector<int> load(n - 1, 0);
  for (int p = 0; p < 2 * n; ++p) {
    if (!(mask & (1u << p)))
      continue;
    for (int j : {p / 2 - 1, p / 2}) {
      if (j < 0 || j > n - 2 || load[j] == 2)
        continue;
      window[p] = j;
      ++load[j];
      break;
    }
    if (window[p] < 0)
      return {};
  }
  return window;
}

int popcount(unsigned mask) {
  int count = 0;
  for (; mask; mask &= mask - 1)
    ++count;
  return count;
}

//===----------------------------------------------------------------------===//
// Checks shared by the tests.
//===----------------------------------------------------------------------===//

/// W' (rows x K') is a correct expansion of W (rows x cols):
///  - every 4-column chunk of W' holds <= 2 nonzeros (2:4);
///  - every nonzero of W' sits at a lifted column whose source is a real
///    column holding the same bits, and every zero of W' is +0;
///  - every nonzero of W appears exactly once in W';
///  - along a row, lifted columns keep the order of the original columns.
testing::AssertionResult isExpansionOf(const Bits &expanded, const Bits &dense,
                                       int64_t rows, int64_t cols, int n) {
  const int64_t lc = contractLiftedCols(cols, n);
  if (static_cast<int64_t>(expanded.size()) != rows * lc)
    return testing::AssertionFailure() << "expanded has the wrong size";
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<int> seen(cols, 0);
    int64_t lastSource = -1;
    for (int64_t c = 0; c < lc; ++c) {
      uint16_t v = expanded[r * lc + c];
      if (c % 4 == 0) {
        int chunkNonzeros = 0;
        for (int i = 0; i < 4; ++i)
          chunkNonzeros += isZeroBits(expanded[r * lc + c + i]) ? 0 : 1;
        if (chunkNonzeros > 2)
          return testing::AssertionFailure()
                 << "row " << r << " chunk " << c / 4 << " has "
                 << chunkNonzeros << " nonzeros";
      }
      if (isZeroBits(v)) {
        if (v != 0)
          return testing::AssertionFailure()
                 << "row " << r << " lifted " << c << ": zero is not +0";
        continue;
      }
      int64_t source = contractSource(c, n);
      if (source >= cols)
        return testing::AssertionFailure()
               << "row " << r << " lifted " << c << ": nonzero in padding";
      if (dense[r * cols + source] != v)
        return testing::AssertionFailure()
               << "row " << r << " lifted " << c << " holds " << v
               << " but its source column " << source << " holds "
               << dense[r * cols + source];
      if (source <= lastSource)
        return testing::AssertionFailure()
               << "row " << r << ": lifted order breaks at column " << c;
      lastSource = source;
      ++seen[source];
    }
    for (int64_t k = 0; k < cols; ++k) {
      int want = isZeroBits(dense[r * cols + k]) ? 0 : 1;
      if (seen[k] != want)
        return testing::AssertionFailure()
               << "row " << r << " column " << k << " appears " << seen[k]
               << " times in W' (want " << want << ")";
    }
  }
  return testing::AssertionSuccess();
}

/// y[r][t] = sum_k A[r][k] * B[t][k] over fp16 bits, in float. With small
/// integer inputs every partial sum is exact, so results compare with ==.
std::vector<float> matmulNT(const Bits &a, const Bits &b, int64_t rows,
                            int64_t tokens, int64_t k) {
  std::vector<float> y(rows * tokens, 0.0f);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t t = 0; t < tokens; ++t)
      for (int64_t i = 0; i < k; ++i)
        y[r * tokens + t] +=
            halfToFloat(a[r * k + i]) * halfToFloat(b[t * k + i]);
  return y;
}

/// Random fp16 small integers in [-8, 8] (exact; products and sums too).
Bits randomSmallInts(int64_t count, std::mt19937 &rng) {
  std::uniform_int_distribution<int> dist(-8, 8);
  Bits out(count);
  for (auto &v : out)
    v = h(static_cast<float>(dist(rng)));
  return out;
}

/// A random weight that satisfies (2N-2):2N: each group gets a random number
/// (0 .. min(real columns, 2N-2)) of nonzeros at random real positions.
/// Values are arbitrary nonzero bit patterns, or nonzero small integers.
Bits randomSlidingMatrix(int64_t rows, int64_t cols, int n, std::mt19937 &rng,
                         bool smallInts) {
  Bits dense(rows * cols, 0);
  std::uniform_int_distribution<int> value(1, 8);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t start = 0; start < cols; start += 2 * n) {
      int real = static_cast<int>(std::min<int64_t>(2 * n, cols - start));
      std::vector<int> positions(real);
      for (int i = 0; i < real; ++i)
        positions[i] = i;
      std::shuffle(positions.begin(), positions.end(), rng);
      int count = static_cast<int>(rng() % (std::min(real, 2 * n - 2) + 1));
      for (int i = 0; i < count; ++i) {
        uint16_t bits;
        if (smallInts) {
          float v = static_cast<float>(value(rng));
          bits = h(rng() % 2 ? v : -v);
        } else {
          bits = static_cast<uint16_t>(rng());
          if (isZeroBits(bits))
            bits |= 0x3c00u;
        }
        dense[r * cols + start + positions[i]] = bits;
      }
    }
  return dense;
}

/// Lifted activations through the library.
Bits lift(const Bits &x, int64_t m, int64_t k, int n) {
  Bits out(m * contractLiftedCols(k, n), 0x5555);
  liftActivations(x.data(), m, k, n, out.data());
  return out;
}

//===----------------------------------------------------------------------===//
// Shapes and the lifted column map.
//===----------------------------------------------------------------------===//

TEST(SlidingShape, GroupsAndLiftedColumns) {
  SlideShape s = getSlideShape(7, 100, 4); // 6:8
  EXPECT_EQ(s.rows, 7);
  EXPECT_EQ(s.cols, 100);
  EXPECT_EQ(s.n, 4);
  EXPECT_EQ(s.groups, 13);      // ceil(100 / 8)
  EXPECT_EQ(s.liftedCols, 156); // 13 * 12

  // N = 2 (2:4) is the identity up to rounding K to a multiple of 4.
  EXPECT_EQ(getSlideShape(1, 100, 2).groups, 25);
  EXPECT_EQ(getSlideShape(1, 100, 2).liftedCols, 100);
  EXPECT_EQ(getSlideShape(1, 101, 2).liftedCols, 104);
  EXPECT_EQ(getSlideShape(1, 1, 2).liftedCols, 4);

  // One exact group per family: 2N columns -> 4(N-1).
  for (int n = 2; n <= 8; ++n) {
    SlideShape one = getSlideShape(3, 2 * n, n);
    EXPECT_EQ(one.groups, 1) << n;
    EXPECT_EQ(one.liftedCols, 4 * (n - 1)) << n;
    SlideShape over = getSlideShape(3, 2 * n + 1, n);
    EXPECT_EQ(over.groups, 2) << n;
    EXPECT_EQ(over.liftedCols, 8 * (n - 1)) << n;
  }
  EXPECT_EQ(getSlideShape(2, 6, 3).liftedCols, 8);    // 4:6
  EXPECT_EQ(getSlideShape(2, 16, 8).liftedCols, 28);  // 14:16
  EXPECT_EQ(getSlideShape(2, 70, 5).liftedCols, 112); // 7 groups of 16

  // Empty K.
  EXPECT_EQ(getSlideShape(4, 0, 3).groups, 0);
  EXPECT_EQ(getSlideShape(4, 0, 3).liftedCols, 0);

  // Large but representable.
  SlideShape big = getSlideShape(1, int64_t(1) << 40, 4);
  EXPECT_EQ(big.groups, int64_t(1) << 37);
  EXPECT_EQ(big.liftedCols, 12 * (int64_t(1) << 37));
}

TEST(SlidingShape, InvalidFamiliesAndSizes) {
  for (int n : {-1, 0, 1, 9, 16}) {
    EXPECT_FALSE(isSupportedFamily(n)) << n;
    SlideShape s = getSlideShape(4, 100, n);
    EXPECT_EQ(s.groups, 0) << n;
    EXPECT_EQ(s.liftedCols, 0) << n;
    EXPECT_EQ(s.rows, 4);
    EXPECT_EQ(s.cols, 100);
  }
  for (int n = 2; n <= 8; ++n)
    EXPECT_TRUE(isSupportedFamily(n)) << n;

  EXPECT_EQ(getSlideShape(-1, 100, 3).groups, 0);
  EXPECT_EQ(getSlideShape(4, -100, 3).groups, 0);
  // K' would overflow int64_t.
  const int64_t maxValue = std::numeric_limits<int64_t>::max();
  EXPECT_EQ(getSlideShape(1, maxValue, 2).groups, 0);
  EXPECT_EQ(getSlideShape(1, maxValue, 8).liftedCols, 0);
  // The boundary for 2:4: roundUp(K, 4) must fit.
  EXPECT_EQ(getSlideShape(1, maxValue - 3, 2).liftedCols, maxValue - 3);
  EXPECT_EQ(getSlideShape(1, maxValue - 2, 2).liftedCols, 0);
  // 14:16 grows K by 7/4; K = 2^62 - 1 gives ceil(K / 16) = 2^58 groups.
  EXPECT_EQ(getSlideShape(1, maxValue / 2, 8).liftedCols,
            (int64_t(1) << 58) * 28);
  EXPECT_EQ(getSlideShape(1, maxValue / 7 * 5, 8).liftedCols, 0);
}

TEST(SlidingShape, LiftedSourceColumnTable) {
  // N = 3 (4:6): groups of 6 columns, 2 windows, 8 lifted columns per group.
  const int64_t n3[24] = {0,  1,  2,  3,  2,  3,  4,  5,   // group 0
                          6,  7,  8,  9,  8,  9,  10, 11,  // group 1
                          12, 13, 14, 15, 14, 15, 16, 17}; // group 2
  for (int64_t c = 0; c < 24; ++c)
    EXPECT_EQ(liftedSourceColumn(c, 3), n3[c]) << "c' = " << c;

  // N = 4 (6:8): groups of 8 columns, 3 windows, 12 lifted columns per group.
  const int64_t n4[24] = {0, 1, 2,  3,  2,  3,  4,  5,  4,  5,  6,  7,
                          8, 9, 10, 11, 10, 11, 12, 13, 12, 13, 14, 15};
  for (int64_t c = 0; c < 24; ++c)
    EXPECT_EQ(liftedSourceColumn(c, 4), n4[c]) << "c' = " << c;

  // N = 2: the identity.
  for (int64_t c = 0; c < 64; ++c)
    EXPECT_EQ(liftedSourceColumn(c, 2), c);

  // Every family agrees with the contract formula.
  for (int n = 2; n <= 8; ++n)
    for (int64_t c = 0; c < 200; ++c)
      ASSERT_EQ(liftedSourceColumn(c, n), contractSource(c, n))
          << "n " << n << " c' " << c;

  // Far out: group 1000 of N = 5 (16 lifted, 10 original per group),
  // window 3, lane 2 -> 10000 + 6 + 2.
  EXPECT_EQ(liftedSourceColumn(1000 * 16 + 3 * 4 + 2, 5), 10008);

  EXPECT_EQ(liftedSourceColumn(-1, 3), -1);
  EXPECT_EQ(liftedSourceColumn(5, 1), -1);
  EXPECT_EQ(liftedSourceColumn(5, 9), -1);
}

//===----------------------------------------------------------------------===//
// Decomposition by hand.
//===----------------------------------------------------------------------===//

TEST(SlidingDecompose, HandExamples) {
  const uint16_t a = h(1), b = h(-2), c = h(3), d = h(-4), e = h(5), f = h(-6);
  struct Case {
    int n;
    Bits dense;    // One row, one group.
    Bits expanded; // Hand-derived from the greedy.
  };
  const Case cases[] = {
      // 6:8, positions 1,2,3,4,6,7 (the header's example): 1,2 -> w0;
      // 3 -> w1 (w0 full); 4 -> w1; 6,7 -> w2 (the only window there).
      {4, {0, a, b, c, d, 0, e, f}, {0, a, b, 0, 0, c, d, 0, 0, 0, e, f}},
      // 6:8, positions 0..5: w0 = {0,1}, w1 = {2,3}, w2 = {4,5}; each lands
      // at lanes 0,1 of its window.
      {4, {a, b, c, d, e, f, 0, 0}, {a, b, 0, 0, c, d, 0, 0, e, f, 0, 0}},
      // 6:8, positions 2..7: lanes 2,3 of every window.
      {4, {0, 0, a, b, c, d, e, f}, {0, 0, a, b, 0, 0, c, d, 0, 0, e, f}},
      // 6:8, only positions 6,7: windows 0 and 1 stay empty.
      {4, {0, 0, 0, 0, 0, 0, a, b}, {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, a, b}},
      // 6:8, positions 2,3 and 5: 2,3 -> w0 (first covering window); 5 -> w1.
      {4, {0, 0, a, b, 0, c, 0, 0}, {0, 0, a, b, 0, 0, 0, c, 0, 0, 0, 0}},
      // 4:6, positions 0,2,3,4: 0,2 -> w0; 3 -> w1 (w0 full); 4 -> w1.
      {3, {a, 0, b, c, d, 0}, {a, 0, b, 0, 0, c, d, 0}},
      // 4:6, positions 1,3,5: 1,3 -> w0; 5 -> w1 at lane 3.
      {3, {0, a, 0, b, 0, c}, {0, a, 0, b, 0, 0, 0, c}},
      // 2:4: the identity.
      {2, {0, a, 0, b}, {0, a, 0, b}},
  };
  for (const Case &k : cases) {
    SCOPED_TRACE(testing::Message() << "n = " << k.n);
    const int64_t cols = static_cast<int64_t>(k.dense.size());
    ASSERT_EQ(getSlideShape(1, cols, k.n).liftedCols,
              static_cast<int64_t>(k.expanded.size()));
    Bits out(k.expanded.size(), 0xabcd);
    ASSERT_FALSE(
        decomposeSliding(k.dense.data(), 1, cols, k.n, out.data()).has_value());
    EXPECT_EQ(out, k.expanded);
  }
}

TEST(SlidingDecompose, Family2IsTheIdentity) {
  std::mt19937 rng(11u);
  for (int64_t cols : {4, 7, 32, 70}) {
    const int64_t rows = 9;
    Bits dense = randomSlidingMatrix(rows, cols, 2, rng, false);
    const int64_t lc = contractLiftedCols(cols, 2);
    Bits out(rows * lc, 0xabcd);
    ASSERT_FALSE(
        decomposeSliding(dense.data(), rows, cols, 2, out.data()).has_value());
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < lc; ++c)
        ASSERT_EQ(out[r * lc + c], c < cols ? dense[r * cols + c] : 0)
            << "cols " << cols << " row " << r << " col " << c;
  }
}

//===----------------------------------------------------------------------===//
// Exhaustive: every mask of one group, N = 2..6.
//===----------------------------------------------------------------------===//

// The group under test is group 1 of row 1 in a 3 x 3-group matrix; all other
// groups hold a fixed legal pattern (2N-2 nonzeros: all but the first two
// positions), so the group under test is the only possible violation.
TEST(SlidingDecompose, ExhaustiveGroupMasks) {
  std::mt19937 rng(2024u);
  int64_t checkedLegal = 0, checkedIllegal = 0;
  for (int n = 2; n <= 6; ++n) {
    const int width = 2 * n;
    const int64_t rows = 3, cols = 3 * width, tokens = 2;
    const int64_t lc = contractLiftedCols(cols, n);
    const int64_t targetRow = 1, targetGroup = 1;
    int legalMasks = 0;
    for (unsigned mask = 0; mask < (1u << width); ++mask) {
      SCOPED_TRACE(testing::Message() << "n = " << n << " mask = " << mask);
      Bits dense(rows * cols, 0);
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t g = 0; g < 3; ++g) {
          bool target = r == targetRow && g == targetGroup;
          for (int p = 0; p < width; ++p) {
            bool on = target ? (mask >> p) & 1u : p >= 2;
            float v = static_cast<float>((p + 1) * (p % 2 ? -1 : 1));
            if (on)
              dense[r * cols + g * width + p] = h(target ? v : v + 0.5f);
          }
        }
      const int count = popcount(mask);
      Bits out(rows * lc, 0xabcd);
      std::optional<PatternViolation> found =
          findSlidingViolation(dense.data(), rows, cols, n);
      std::optional<PatternViolation> result =
          decomposeSliding(dense.data(), rows, cols, n, out.data());

      if (count > width - 2) {
        ++checkedIllegal;
        ASSERT_TRUE(found.has_value());
        EXPECT_EQ(found->row, targetRow);
        EXPECT_EQ(found->group, targetGroup);
        EXPECT_EQ(found->nonzeros, count);
        ASSERT_TRUE(result.has_value());
        EXPECT_EQ(result->row, targetRow);
        EXPECT_EQ(result->group, targetGroup);
        EXPECT_EQ(result->nonzeros, count);
        // The reference greedy fails too: the bound is exact.
        EXPECT_TRUE(referenceWindows(mask, n).empty());
        // Nothing written.
        ASSERT_TRUE(std::all_of(out.begin(), out.end(),
                                [](uint16_t v) { return v == 0xabcd; }));
        continue;
      }
      ++legalMasks;
      ++checkedLegal;
      ASSERT_FALSE(found.has_value());
      ASSERT_FALSE(result.has_value());
      ASSERT_TRUE(isExpansionOf(out, dense, rows, cols, n));
      // W' also passes the library's own 2:4 check.
      ASSERT_FALSE(findSparse24Violation(out.data(), rows, lc).has_value());

      // The exact windows chosen are the contract's greedy.
      std::vector<int> window = referenceWindows(mask, n);
      ASSERT_FALSE(window.empty()) << "the greedy failed on a legal group";
      for (int p = 0; p < width; ++p) {
        if (window[p] < 0)
          continue;
        int64_t lifted =
            targetGroup * 4 * (n - 1) + 4 * window[p] + (p - 2 * window[p]);
        ASSERT_EQ(out[targetRow * lc + lifted],
                  dense[targetRow * cols + targetGroup * width + p])
            << "position " << p << " window " << window[p];
      }

      // The lifted product equals the dense one, exactly.
      Bits x = randomSmallInts(tokens * cols, rng);
      Bits xl = lift(x, tokens, cols, n);
      ASSERT_EQ(matmulNT(out, xl, rows, tokens, lc),
                matmulNT(dense, x, rows, tokens, cols));
    }
    // sum_{k <= 2N-2} C(2N, k) = 2^(2N) - C(2N, 2N-1) - C(2N, 2N).
    EXPECT_EQ(legalMasks, (1 << width) - width - 1) << "n = " << n;
  }
  // 2:4 .. 10:12 -> 11 + 57 + 247 + 1013 + 4083 legal masks.
  EXPECT_EQ(checkedLegal, 11 + 57 + 247 + 1013 + 4083);
  EXPECT_EQ(checkedIllegal, 5 + 7 + 9 + 11 + 13);
}

//===----------------------------------------------------------------------===//
// Random matrices, K not a multiple of 2N.
//===----------------------------------------------------------------------===//

TEST(SlidingDecompose, RandomMatricesOddK) {
  std::mt19937 rng(77u);
  for (int n = 2; n <= 8; ++n) {
    const int64_t shapes[][2] = {{1, 1},   {5, 7},          {3, 2 * n - 1},
                                 {9, 100}, {17, 6 * n + 1}, {4, 2 * n + 3}};
    for (const auto &shape : shapes) {
      const int64_t rows = shape[0], cols = shape[1];
      SCOPED_TRACE(testing::Message()
                   << "n = " << n << " " << rows << "x" << cols);
      const int64_t lc = getSlideShape(rows, cols, n).liftedCols;
      ASSERT_EQ(lc, contractLiftedCols(cols, n));

      // Arbitrary bit patterns: structure only.
      Bits dense = randomSlidingMatrix(rows, cols, n, rng, false);
      Bits out(rows * lc, 0xabcd);
      ASSERT_FALSE(decomposeSliding(dense.data(), rows, cols, n, out.data())
                       .has_value());
      EXPECT_TRUE(isExpansionOf(out, dense, rows, cols, n));

      // Small integers: the product too.
      const int64_t tokens = 3;
      Bits w = randomSlidingMatrix(rows, cols, n, rng, true);
      ASSERT_FALSE(
          decomposeSliding(w.data(), rows, cols, n, out.data()).has_value());
      EXPECT_TRUE(isExpansionOf(out, w, rows, cols, n));
      Bits x = randomSmallInts(tokens * cols, rng);
      EXPECT_EQ(matmulNT(out, lift(x, tokens, cols, n), rows, tokens, lc),
                matmulNT(w, x, rows, tokens, cols));
    }
  }
}

//===----------------------------------------------------------------------===//
// Through the 2:4 compressed format: decompose, compressSparse24, then a
// reference spmm that only reads values + metadata and the lifted x.
//===----------------------------------------------------------------------===//

TEST(SlidingDecompose, ThroughSparse24Compression) {
  std::mt19937 rng(31u);
  const int64_t rows = 37, cols = 75, tokens = 5; // 75 is no multiple of 2N.
  for (int n : {2, 3, 4, 5, 8}) {
    SCOPED_TRACE(testing::Message() << "n = " << n);
    Bits w = randomSmallInts(rows * cols, rng);
    pruneToSliding(w.data(), rows, cols, n, /*isBF16=*/false);
    ASSERT_FALSE(findSlidingViolation(w.data(), rows, cols, n).has_value());

    const int64_t lc = getSlideShape(rows, cols, n).liftedCols;
    Bits expanded(rows * lc);
    ASSERT_FALSE(
        decomposeSliding(w.data(), rows, cols, n, expanded.data()).has_value());
    Sparse24Shape s = getSparse24Shape(rows, lc);
    std::vector<uint16_t> values(s.numValues());
    std::vector<uint32_t> meta(s.numMetaWords());
    ASSERT_FALSE(
        compressSparse24(expanded.data(), rows, lc, values.data(), meta.data())
            .has_value());

    Bits x = randomSmallInts(tokens * cols, rng);
    Bits xl = lift(x, tokens, cols, n);
    // y[r][t] = sum_i values[r][i] * x'[t][logicalColumn(r, i)], with x'
    // zero-padded to paddedCols.
    const int64_t valuesPerRow = s.paddedCols / 2;
    std::vector<float> ySparse(rows * tokens, 0.0f);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t i = 0; i < valuesPerRow; ++i) {
        float v = halfToFloat(values[r * valuesPerRow + i]);
        int64_t k = sparse24LogicalColumn(meta.data(), s, r, i);
        if (k >= lc) {
          ASSERT_EQ(v, 0.0f); // Padding never carries a value.
          continue;
        }
        for (int64_t t = 0; t < tokens; ++t)
          ySparse[r * tokens + t] += v * halfToFloat(xl[t * lc + k]);
      }
    std::vector<float> yDense = matmulNT(w, x, rows, tokens, cols);
    EXPECT_EQ(ySparse, yDense);
    EXPECT_GT(std::count_if(yDense.begin(), yDense.end(),
                            [](float v) { return v != 0.0f; }),
              0);
  }
}

//===----------------------------------------------------------------------===//
// The tiled window order (tileGroups > 0, SlidingWindow.h section 7).
//===----------------------------------------------------------------------===//

TEST(SlidingTiledOrder, ChunkMapIsABijectionAndSourceItsInverse) {
  for (int n = 2; n <= 8; ++n)
    for (int64_t tile : {1, 3, 8}) {
      SCOPED_TRACE(testing::Message() << "n = " << n << " tile " << tile);
      const int64_t cols = 7 * 2 * n + 3; // 8 groups, the last one partial
      SlideShape shape = getSlideShape(1, cols, n, tile);
      ASSERT_EQ(shape.groups % tile, 0);
      ASSERT_GE(shape.groups, 8);
      ASSERT_LT(shape.groups, 8 + tile);
      ASSERT_EQ(shape.liftedCols, shape.groups * 4 * (n - 1));
      std::vector<int> seen(shape.liftedCols / 4, 0);
      for (int64_t g = 0; g < shape.groups; ++g)
        for (int64_t j = 0; j < n - 1; ++j) {
          int64_t chunk = liftedChunk(g, j, n, tile);
          ASSERT_GE(chunk, 0);
          ASSERT_LT(chunk, shape.liftedCols / 4);
          // A chunk stays in its group's tile.
          EXPECT_EQ(chunk / (tile * (n - 1)), g / tile);
          ++seen[chunk];
          for (int64_t l = 0; l < 4; ++l)
            EXPECT_EQ(liftedSourceColumn(4 * chunk + l, n, tile),
                      g * 2 * n + 2 * j + l);
        }
      EXPECT_TRUE(std::all_of(seen.begin(), seen.end(),
                              [](int c) { return c == 1; }));
    }
  EXPECT_EQ(liftedSourceColumn(0, 4, -1), -1);
}

TEST(SlidingTiledOrder, SixEightKeepsEachTilesColumnsInPlace) {
  // 6:8, 8 groups per tile: lifted columns 96t .. 96t+63 are original
  // columns 64t .. 64t+63, then window 1 of each group (positions 2..5).
  for (int64_t t = 0; t < 3; ++t) {
    for (int64_t c = 0; c < 64; ++c)
      EXPECT_EQ(liftedSourceColumn(96 * t + c, 4, 8), 64 * t + c);
    for (int64_t g = 0; g < 8; ++g)
      for (int64_t l = 0; l < 4; ++l)
        EXPECT_EQ(liftedSourceColumn(96 * t + 64 + 4 * g + l, 4, 8),
                  64 * t + 8 * g + 2 + l);
  }
  EXPECT_EQ(getSlideShape(3, 100, 4, 8).liftedCols, 192); // 13 -> 16 groups
  EXPECT_EQ(getSlideShape(3, 100, 4).liftedCols, 156);
  EXPECT_EQ(getSlideShape(3, 100, 4, -1).liftedCols, 0);
}

TEST(SlidingTiledOrder, SixEightSplitLiftOrder) {
  // 6:8, 16 groups per tile (the split lift): lifted columns 192t ..
  // 192t+127 are original columns 128t .. 128t+127 in place, and the last
  // 64 are the shared windows, column 4g + l of the tile's W1 part copying
  // 128t + 8g + 2 + l: the split lift's W1[m, 64t + 4g + l], i.e. W1 holds
  // x[m, 8G + 2 + l] at column 4G + l for every group G.
  for (int64_t t = 0; t < 3; ++t) {
    for (int64_t c = 0; c < 128; ++c)
      EXPECT_EQ(liftedSourceColumn(192 * t + c, 4, 16), 128 * t + c);
    for (int64_t g = 0; g < 16; ++g)
      for (int64_t l = 0; l < 4; ++l) {
        int64_t w1Col = 64 * t + 4 * g + l, group = w1Col / 4;
        EXPECT_EQ(liftedSourceColumn(192 * t + 128 + 4 * g + l, 4, 16),
                  8 * group + 2 + l);
      }
  }
  // 13 groups -> 16, K' = 192: one tile, W1 of 64 columns (K' / 3).
  EXPECT_EQ(getSlideShape(3, 100, 4, 16).liftedCols, 192);
  EXPECT_EQ(getSlideShape(3, 1000, 4, 16).liftedCols, 8 * 192);
}

TEST(SlidingTiledOrder, ProductsThroughSparse24Compression) {
  std::mt19937 rng(53u);
  const int64_t rows = 21, cols = 131, tokens = 4;
  for (int n : {2, 3, 4, 5, 8})
    for (int64_t tile : {3, 8, 16}) {
      SCOPED_TRACE(testing::Message() << "n = " << n << " tile " << tile);
      Bits w = randomSmallInts(rows * cols, rng);
      pruneToSliding(w.data(), rows, cols, n, /*isBF16=*/false);
      const int64_t lc = getSlideShape(rows, cols, n, tile).liftedCols;
      Bits expanded(rows * lc, 0xabcd);
      ASSERT_FALSE(decomposeSliding(w.data(), rows, cols, n, expanded.data(),
                                    tile)
                       .has_value());
      Sparse24Shape s = getSparse24Shape(rows, lc);
      std::vector<uint16_t> values(s.numValues());
      std::vector<uint32_t> meta(s.numMetaWords());
      ASSERT_FALSE(compressSparse24(expanded.data(), rows, lc, values.data(),
                                    meta.data())
                       .has_value());
      Bits x = randomSmallInts(tokens * cols, rng);
      Bits xl(tokens * lc, 0xabcd);
      liftActivations(x.data(), tokens, cols, n, xl.data(), tile);
      EXPECT_EQ(matmulNT(expanded, xl, rows, tokens, lc),
                matmulNT(w, x, rows, tokens, cols));
      // The C API gives the same bits.
      int64_t capiCols = 0;
      ASSERT_EQ(sparseopt_sliding_shape(rows, cols, n, tile, &capiCols), 0);
      ASSERT_EQ(capiCols, lc);
      Bits capiW(rows * lc), capiX(tokens * lc);
      int64_t r = 0, g = 0;
      ASSERT_EQ(sparseopt_sliding_decompose(w.data(), rows, cols, n, tile,
                                            capiW.data(), &r, &g),
                0);
      ASSERT_EQ(sparseopt_sliding_lift(x.data(), tokens, cols, n, tile,
                                       capiX.data()),
                0);
      EXPECT_EQ(capiW, expanded);
      EXPECT_EQ(capiX, xl);
    }
  int64_t lc = 0;
  EXPECT_EQ(sparseopt_sliding_shape(4, 16, 4, -1, &lc), 2);
}

//===----------------------------------------------------------------------===//
// Violations and zeros.
//===----------------------------------------------------------------------===//

TEST(SlidingViolation, FirstInRowMajorOrder) {
  const int n = 3; // 4:6: at most 4 nonzeros per group of 6.
  const int64_t rows = 4, cols = 18;
  Bits dense(rows * cols, 0);
  auto fill = [&](int64_t r, int64_t group, int count) {
    for (int i = 0; i < count; ++i)
      dense[r * cols + group * 6 + i] = h(static_cast<float>(1 + i));
  };
  fill(3, 0, 6);
  fill(2, 2, 6);
  fill(2, 1, 5);
  fill(1, 2, 4); // Legal.
  fill(0, 0, 4); // Legal.

  std::optional<PatternViolation> v =
      findSlidingViolation(dense.data(), rows, cols, n);
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->row, 2);
  EXPECT_EQ(v->group, 1);
  EXPECT_EQ(v->nonzeros, 5);

  Bits out(rows * 24, 0x1234);
  v = decomposeSliding(dense.data(), rows, cols, n, out.data());
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->row, 2);
  EXPECT_EQ(v->group, 1);
  EXPECT_EQ(v->nonzeros, 5);
  EXPECT_TRUE(std::all_of(out.begin(), out.end(),
                          [](uint16_t x) { return x == 0x1234; }));

  dense[2 * cols + 6] = 0; // (2,1) now has 4.
  v = findSlidingViolation(dense.data(), rows, cols, n);
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->row, 2);
  EXPECT_EQ(v->group, 2);
  EXPECT_EQ(v->nonzeros, 6);

  dense[2 * cols + 12] = dense[2 * cols + 13] = 0;
  v = findSlidingViolation(dense.data(), rows, cols, n);
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->row, 3);
  EXPECT_EQ(v->group, 0);
  EXPECT_EQ(v->nonzeros, 6);

  dense[3 * cols + 0] = dense[3 * cols + 5] = 0;
  EXPECT_FALSE(findSlidingViolation(dense.data(), rows, cols, n).has_value());
  EXPECT_FALSE(
      decomposeSliding(dense.data(), rows, cols, n, out.data()).has_value());
  EXPECT_TRUE(isExpansionOf(out, dense, rows, cols, n));
}

TEST(SlidingViolation, TrailingPartialGroup) {
  const int n = 4; // 6:8.
  // cols = 15: group 1 has 7 real columns and can hold a violation.
  Bits a(15, h(1));
  for (int i = 0; i < 8; i += 4)
    a[i] = 0; // Group 0: 6 nonzeros, legal.
  std::optional<PatternViolation> v = findSlidingViolation(a.data(), 1, 15, n);
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->row, 0);
  EXPECT_EQ(v->group, 1);
  EXPECT_EQ(v->nonzeros, 7);
  a[10] = 0; // 6 left: legal.
  EXPECT_FALSE(findSlidingViolation(a.data(), 1, 15, n).has_value());
  Bits out(24);
  ASSERT_FALSE(decomposeSliding(a.data(), 1, 15, n, out.data()).has_value());
  EXPECT_TRUE(isExpansionOf(out, a, 1, 15, n));

  // cols = 14: group 1 has only 6 real columns and can never be violated.
  Bits b(14, h(2));
  b[0] = b[1] = 0;
  EXPECT_FALSE(findSlidingViolation(b.data(), 1, 14, n).has_value());
  ASSERT_FALSE(decomposeSliding(b.data(), 1, 14, n, out.data()).has_value());
  EXPECT_TRUE(isExpansionOf(out, b, 1, 14, n));
}

TEST(SlidingViolation, NegativeZeroIsZero) {
  const uint16_t nz = 0x8000, one = h(1);
  // 4:6, one group: 4 nonzeros and two -0.
  Bits dense = {one, nz, one, one, nz, one};
  EXPECT_FALSE(findSlidingViolation(dense.data(), 1, 6, 3).has_value());
  Bits out(8, 0xffff);
  ASSERT_FALSE(decomposeSliding(dense.data(), 1, 6, 3, out.data()).has_value());
  // 0, 2 -> w0; 3 -> w1 (w0 full); 5 -> w1. No 0x8000 survives.
  const Bits want = {one, 0, one, 0, 0, one, 0, one};
  EXPECT_EQ(out, want);

  // The smallest negative subnormal is not zero: 5 nonzeros.
  dense[1] = 0x8001;
  std::optional<PatternViolation> v =
      findSlidingViolation(dense.data(), 1, 6, 3);
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->nonzeros, 5);
}

//===----------------------------------------------------------------------===//
// Activation lifting.
//===----------------------------------------------------------------------===//

TEST(SlidingLift, HandExampleAndPadding) {
  // 4:6, K = 8: groups cover 0..5 and 6..11 (10, 11 are padding), K' = 16.
  Bits x(2 * 8);
  for (int i = 0; i < 8; ++i) {
    x[i] = h(static_cast<float>(i + 1));
    x[8 + i] = h(static_cast<float>(-(i + 1)));
  }
  x[3] = 0x8000; // Bits are copied as they are, -0 and NaN included.
  x[8 + 7] = 0x7e01;
  Bits out = lift(x, 2, 8, 3);
  const Bits want0 = {h(1), h(2), h(3), 0x8000, h(3), 0x8000, h(5), h(6),
                      h(7), h(8), 0,    0,      0,    0,      0,    0};
  const Bits want1 = {h(-1), h(-2),  h(-3), h(-4), h(-3), h(-4), h(-5), h(-6),
                      h(-7), 0x7e01, 0,     0,     0,     0,     0,     0};
  EXPECT_EQ(Bits(out.begin(), out.begin() + 16), want0);
  EXPECT_EQ(Bits(out.begin() + 16, out.end()), want1);

  // 2:4 is the identity, zero-padded to a multiple of 4.
  Bits y = {h(1), h(2), h(3), h(4), h(5)};
  const Bits wantY = {h(1), h(2), h(3), h(4), h(5), 0, 0, 0};
  EXPECT_EQ(lift(y, 1, 5, 2), wantY);

  // Every family: every lifted column copies its contract source.
  std::mt19937 rng(4u);
  for (int n = 2; n <= 8; ++n) {
    const int64_t m = 3, k = 4 * n + 3;
    Bits z(m * k);
    for (auto &v : z)
      v = static_cast<uint16_t>(rng());
    Bits lz = lift(z, m, k, n);
    const int64_t lc = contractLiftedCols(k, n);
    for (int64_t t = 0; t < m; ++t)
      for (int64_t c = 0; c < lc; ++c) {
        int64_t source = contractSource(c, n);
        ASSERT_EQ(lz[t * lc + c], source < k ? z[t * k + source] : 0)
            << "n " << n << " token " << t << " c' " << c;
      }
  }
}

//===----------------------------------------------------------------------===//
// Pruning.
//===----------------------------------------------------------------------===//

/// Checks that `pruned` keeps, per group of 2N, exactly the 2N-2 largest
/// magnitudes of `original` (ties -> lower index) and zeroes the others.
void expectTopKept(const Bits &original, const Bits &pruned, int64_t rows,
                   int64_t cols, int n, float (*decode)(uint16_t)) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t start = 0; start < cols; start += 2 * n) {
      int64_t width = std::min<int64_t>(2 * n, cols - start);
      std::vector<int64_t> order;
      for (int64_t i = 0; i < width; ++i)
        order.push_back(i);
      std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
        return std::fabs(decode(original[r * cols + start + a])) >
               std::fabs(decode(original[r * cols + start + b]));
      });
      for (int64_t rank = 0; rank < width; ++rank) {
        int64_t idx = r * cols + start + order[rank];
        uint16_t expected = rank < 2 * n - 2 ? original[idx] : uint16_t(0);
        EXPECT_EQ(pruned[idx], expected)
            << "n " << n << " row " << r << " col " << (start + order[rank]);
      }
    }
}

TEST(SlidingPrune, Fp16KeepsLargestMagnitudes) {
  std::mt19937 rng(99u);
  std::uniform_real_distribution<float> dist(-100.0f, 100.0f);
  for (int n = 2; n <= 8; ++n) {
    const int64_t rows = 7, cols = 5 * n + 3;
    Bits dense(rows * cols);
    for (auto &x : dense)
      x = h(dist(rng));
    Bits pruned = dense;
    pruneToSliding(pruned.data(), rows, cols, n, /*isBF16=*/false);
    EXPECT_FALSE(
        findSlidingViolation(pruned.data(), rows, cols, n).has_value());
    expectTopKept(dense, pruned, rows, cols, n, halfToFloat);
  }

  // Hand-checked 4:6 groups: ties keep the lower index, NaN is largest.
  // Group 0: five |1| -> drop 0.5 and the last 1 (column 5).
  // Group 1: NaN counts as largest -> drop 0.25 and -0.5.
  // Group 2: a partial group of 5 -> drop the smallest, 5.
  Bits t = {
      h(1), h(-1),  h(1),  h(1),     h(0.5f), h(-1),    //
      h(2), 0x7e00, h(-3), h(0.25f), h(4),    h(-0.5f), //
      h(9), h(8),   h(7),  h(6),     h(5),              //
  };
  pruneToSliding(t.data(), 1, 17, 3, false);
  const Bits want = {
      h(1), h(-1),  h(1),  h(1), 0,    0, //
      h(2), 0x7e00, h(-3), 0,    h(4), 0, //
      h(9), h(8),   h(7),  h(6), 0,       //
  };
  EXPECT_EQ(t, want);

  // A trailing group with <= 2N-2 real columns is never touched.
  Bits narrow = {h(1), h(2), h(3), h(4), h(5), h(6), h(7), h(8), h(9), h(10)};
  pruneToSliding(narrow.data(), 1, 10, 3, false);
  const Bits narrowWant = {0,    0,    h(3), h(4), h(5),
                           h(6), h(7), h(8), h(9), h(10)};
  EXPECT_EQ(narrow, narrowWant);
}

TEST(SlidingPrune, Bf16KeepsLargestMagnitudes) {
  auto b = [](float v) { return floatToBF16(v); };
  // 6:8: drop the two smallest of each group.
  Bits t = {b(3), b(-5), b(2), b(4), b(-0.25f), b(1e30f), b(-1e-30f), b(7)};
  pruneToSliding(t.data(), 1, 8, 4, /*isBF16=*/true);
  const Bits want = {b(3), b(-5), b(2), b(4), 0, b(1e30f), 0, b(7)};
  EXPECT_EQ(t, want);

  std::mt19937 rng(5u);
  std::uniform_real_distribution<float> dist(-1.0e6f, 1.0e6f);
  for (int n = 2; n <= 8; ++n) {
    const int64_t rows = 5, cols = 3 * n + 1;
    Bits dense(rows * cols);
    for (auto &x : dense)
      x = b(dist(rng));
    Bits pruned = dense;
    pruneToSliding(pruned.data(), rows, cols, n, /*isBF16=*/true);
    EXPECT_FALSE(
        findSlidingViolation(pruned.data(), rows, cols, n).has_value());
    expectTopKept(dense, pruned, rows, cols, n, bf16ToFloat);
  }
}

//===----------------------------------------------------------------------===//
// C API.
//===----------------------------------------------------------------------===//

TEST(SlidingCAPI, ShapeDecomposeLiftPrune) {
  const int64_t rows = 6, cols = 21;
  const int n = 4;
  int64_t lc = -1;
  ASSERT_EQ(sparseopt_sliding_shape(rows, cols, n, 0, &lc), 0);
  EXPECT_EQ(lc, 36); // 3 groups of 8 -> 3 * 12.
  ASSERT_EQ(sparseopt_sliding_shape(1, 100, 4, 0, &lc), 0);
  EXPECT_EQ(lc, 156);

  std::mt19937 rng(8u);
  Bits w = randomSmallInts(rows * cols, rng);
  Bits x = randomSmallInts(2 * cols, rng);
  Bits expanded(rows * 36, 0xabcd), xl(2 * 36, 0xabcd);
  int64_t badRow = 123, badGroup = 456;

  // Too dense: violation, reported where the first bad group is.
  w[0] = w[1] = w[2] = w[3] = w[4] = w[5] = w[6] = h(1);
  EXPECT_EQ(sparseopt_sliding_decompose(w.data(), rows, cols, n, 0,
                                        expanded.data(), &badRow, &badGroup),
            1);
  EXPECT_EQ(badRow, 0);
  EXPECT_EQ(badGroup, 0);
  EXPECT_EQ(expanded[0], 0xabcd);
  EXPECT_EQ(sparseopt_sliding_decompose(w.data(), rows, cols, n, 0,
                                        expanded.data(), nullptr, nullptr),
            1);

  // Prune, then it decomposes and the product matches.
  ASSERT_EQ(sparseopt_sliding_prune(w.data(), rows, cols, n, 0), 0);
  EXPECT_EQ(sparseopt_sliding_decompose(w.data(), rows, cols, n, 0,
                                        expanded.data(), &badRow, &badGroup),
            0);
  EXPECT_EQ(badRow, -1);
  EXPECT_EQ(badGroup, -1);
  EXPECT_TRUE(isExpansionOf(expanded, w, rows, cols, n));
  ASSERT_EQ(sparseopt_sliding_lift(x.data(), 2, cols, n, 0, xl.data()), 0);
  EXPECT_EQ(matmulNT(expanded, xl, rows, 2, 36), matmulNT(w, x, rows, 2, cols));

  // bf16 pruning through the C API.
  Bits bf = {floatToBF16(1), floatToBF16(-4), floatToBF16(3),
             floatToBF16(2), floatToBF16(5),  floatToBF16(-6)};
  ASSERT_EQ(sparseopt_sliding_prune(bf.data(), 1, 6, 3, 1), 0);
  const Bits bfWant = {0, floatToBF16(-4), floatToBF16(3),
                       0, floatToBF16(5),  floatToBF16(-6)};
  EXPECT_EQ(bf, bfWant);
}

TEST(SlidingCAPI, BadArguments) {
  Bits dense(4 * 16, 0), out(4 * 24, 0);
  int64_t lc = 0, r = 0, g = 0;
  const int64_t maxValue = std::numeric_limits<int64_t>::max();
  // shape
  EXPECT_EQ(sparseopt_sliding_shape(4, 16, 4, 0, nullptr), 2);
  EXPECT_EQ(sparseopt_sliding_shape(0, 16, 4, 0, &lc), 2);
  EXPECT_EQ(sparseopt_sliding_shape(4, 0, 4, 0, &lc), 2);
  EXPECT_EQ(sparseopt_sliding_shape(4, -8, 4, 0, &lc), 2);
  EXPECT_EQ(sparseopt_sliding_shape(4, 16, 1, 0, &lc), 2);
  EXPECT_EQ(sparseopt_sliding_shape(4, 16, 9, 0, &lc), 2);
  EXPECT_EQ(sparseopt_sliding_shape(4, 16, 0, 0, &lc), 2);
  EXPECT_EQ(sparseopt_sliding_shape(1, maxValue, 2, 0, &lc), 2);
  EXPECT_EQ(sparseopt_sliding_shape(int64_t(1) << 32, int64_t(1) << 32, 4, 0, &lc),
            2);
  // decompose
  EXPECT_EQ(sparseopt_sliding_decompose(nullptr, 4, 16, 4, 0, out.data(), &r, &g),
            2);
  EXPECT_EQ(
      sparseopt_sliding_decompose(dense.data(), 4, 16, 4, 0, nullptr, &r, &g), 2);
  EXPECT_EQ(
      sparseopt_sliding_decompose(dense.data(), -1, 16, 4, 0, out.data(), &r, &g),
      2);
  EXPECT_EQ(
      sparseopt_sliding_decompose(dense.data(), 4, 0, 4, 0, out.data(), &r, &g),
      2);
  EXPECT_EQ(
      sparseopt_sliding_decompose(dense.data(), 4, 16, 1, 0, out.data(), &r, &g),
      2);
  EXPECT_EQ(
      sparseopt_sliding_decompose(dense.data(), 4, 16, 9, 0, out.data(), &r, &g),
      2);
  // lift
  EXPECT_EQ(sparseopt_sliding_lift(nullptr, 4, 16, 4, 0, out.data()), 2);
  EXPECT_EQ(sparseopt_sliding_lift(dense.data(), 4, 16, 4, 0, nullptr), 2);
  EXPECT_EQ(sparseopt_sliding_lift(dense.data(), 0, 16, 4, 0, out.data()), 2);
  EXPECT_EQ(sparseopt_sliding_lift(dense.data(), 4, -1, 4, 0, out.data()), 2);
  EXPECT_EQ(sparseopt_sliding_lift(dense.data(), 4, 16, 10, 0, out.data()), 2);
  // prune
  EXPECT_EQ(sparseopt_sliding_prune(nullptr, 4, 16, 4, 0), 2);
  EXPECT_EQ(sparseopt_sliding_prune(dense.data(), 4, 0, 4, 0), 2);
  EXPECT_EQ(sparseopt_sliding_prune(dense.data(), 0, 16, 4, 1), 2);
  EXPECT_EQ(sparseopt_sliding_prune(dense.data(), 4, 16, -2, 0), 2);
  EXPECT_EQ(sparseopt_sliding_prune(dense.data(), 4, 16, 9, 0), 2);
  // Nothing was written by the rejected calls.
  EXPECT_TRUE(
      std::all_of(out.begin(), out.end(), [](uint16_t v) { return v == 0; }));
}

} // namespace
