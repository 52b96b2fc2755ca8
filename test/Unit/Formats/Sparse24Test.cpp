//===- Sparse24Test.cpp - Tests for 2:4 weight compression ----------------===//
//
// Part of the SparseOpt project.
//
//===----------------------------------------------------------------------===//
//
// Expected metadata words in these tests are computed by hand from the layout
// contract in include/sparse-opt/Formats/Sparse24.h, not by re-using the
// implementation's index arithmetic.
//
//===----------------------------------------------------------------------===//

#include "sparse-opt/Formats/Sparse24.h"
#include "sparse-opt-c/Formats.h"
#include "sparse-opt/Formats/Float16.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

using namespace sparseopt;

namespace {

constexpr uint32_t kAllEmpty = 0x44444444u; // Every nibble = (0,1).

bool isZeroBits(uint16_t bits) { return (bits & 0x7fffu) == 0; }

uint16_t h(float value) { return floatToHalf(value); }

float floatFromBits(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

uint32_t bitsFromFloat(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

/// Compressed buffers for a rows x cols matrix.
struct Compressed {
  Sparse24Shape shape;
  std::vector<uint16_t> values;
  std::vector<uint32_t> meta;

  Compressed(int64_t rows, int64_t cols)
      : shape(getSparse24Shape(rows, cols)), values(shape.numValues(), 0xabcd),
        meta(shape.numMetaWords(), 0xdeadbeefu) {}
};

/// Random matrix that satisfies 2:4: every chunk gets one of the 11 legal
/// masks (clipped to the real columns) and random nonzero 16-bit patterns.
std::vector<uint16_t> random24Matrix(int64_t rows, int64_t cols,
                                     std::mt19937 &rng) {
  static const unsigned kLegalMasks[] = {0x0, 0x1, 0x2, 0x4, 0x8, 0x3,
                                         0x5, 0x9, 0x6, 0xa, 0xc};
  std::vector<uint16_t> dense(rows * cols, 0);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c * 4 < cols; ++c) {
      unsigned mask = kLegalMasks[rng() % 11];
      for (int i = 0; i < 4; ++i) {
        int64_t col = c * 4 + i;
        if (col >= cols || !(mask & (1u << i)))
          continue;
        uint16_t bits = static_cast<uint16_t>(rng());
        if (isZeroBits(bits))
          bits |= 0x3c00u;
        dense[r * cols + col] = bits;
      }
    }
  }
  return dense;
}

//===----------------------------------------------------------------------===//
// Shape and padding.
//===----------------------------------------------------------------------===//

TEST(Sparse24Shape, PaddingArithmetic) {
  Sparse24Shape s = getSparse24Shape(20, 40);
  EXPECT_EQ(s.rows, 20);
  EXPECT_EQ(s.cols, 40);
  EXPECT_EQ(s.paddedRows, 32);
  EXPECT_EQ(s.paddedCols, 64);
  EXPECT_EQ(s.numValues(), 32 * 32);         // 1024
  EXPECT_EQ(s.numMetaWords(), 32 * 64 / 32); // 64
  EXPECT_EQ(s.numKSteps(), 2);
  EXPECT_EQ(s.numRowTiles(), 2);

  Sparse24Shape exact = getSparse24Shape(16, 32);
  EXPECT_EQ(exact.paddedRows, 16);
  EXPECT_EQ(exact.paddedCols, 32);
  EXPECT_EQ(exact.numValues(), 256);
  EXPECT_EQ(exact.numMetaWords(), 16);

  Sparse24Shape tiny = getSparse24Shape(1, 1);
  EXPECT_EQ(tiny.paddedRows, 16);
  EXPECT_EQ(tiny.paddedCols, 32);
  EXPECT_EQ(tiny.numValues(), 256);
  EXPECT_EQ(tiny.numMetaWords(), 16);

  Sparse24Shape odd = getSparse24Shape(33, 100);
  EXPECT_EQ(odd.paddedRows, 48);
  EXPECT_EQ(odd.paddedCols, 128);
  EXPECT_EQ(odd.numValues(), 48 * 64);
  EXPECT_EQ(odd.numMetaWords(), 48 * 4);

  Sparse24Shape empty = getSparse24Shape(0, 0);
  EXPECT_EQ(empty.paddedRows, 0);
  EXPECT_EQ(empty.paddedCols, 0);
  EXPECT_EQ(empty.numValues(), 0);
  EXPECT_EQ(empty.numMetaWords(), 0);
}

//===----------------------------------------------------------------------===//
// Per-chunk encoding.
//===----------------------------------------------------------------------===//

// One chunk, placed at row 5 / group 6 (columns 24..27) of a 20x40 matrix,
// for all 16 nonzero masks. Row 5 -> row tile 0, g = 5, low half; chunk 6 ->
// 16-column group q = 1 -> k step 0, p = 1, nibble slot c' = 2. Hence the
// nibble lives in word ((0*2 + 0)*8 + 5)*2 + 1 = 11 at bits 8..11.
TEST(Sparse24Encoding, AllSixteenChunkMasks) {
  struct Expectation {
    bool legal;
    uint32_t nibble;
    int slot0; // Chunk position copied into slot 0, or -1 for +0.
    int slot1;
  };
  const Expectation table[16] = {
      /*0b0000*/ {true, 0x4, -1, -1}, // empty      -> (0,1)
      /*0b0001*/ {true, 0xC, 0, -1},  // {0}        -> (0,3), (x,0)
      /*0b0010*/ {true, 0xD, 1, -1},  // {1}        -> (1,3), (x,0)
      /*0b0011*/ {true, 0x4, 0, 1},   // {0,1}      -> (0,1)
      /*0b0100*/ {true, 0xE, 2, -1},  // {2}        -> (2,3), (x,0)
      /*0b0101*/ {true, 0x8, 0, 2},   // {0,2}      -> (0,2)
      /*0b0110*/ {true, 0x9, 1, 2},   // {1,2}      -> (1,2)
      /*0b0111*/ {false, 0, 0, 0},
      /*0b1000*/ {true, 0xC, -1, 3}, // {3}        -> (0,3), (0,x)
      /*0b1001*/ {true, 0xC, 0, 3},  // {0,3}      -> (0,3)
      /*0b1010*/ {true, 0xD, 1, 3},  // {1,3}      -> (1,3)
      /*0b1011*/ {false, 0, 0, 0},
      /*0b1100*/ {true, 0xE, 2, 3}, // {2,3}      -> (2,3)
      /*0b1101*/ {false, 0, 0, 0},
      /*0b1110*/ {false, 0, 0, 0},
      /*0b1111*/ {false, 0, 0, 0},
  };
  const int64_t rows = 20, cols = 40, row = 5, group = 6;
  const uint16_t chunkValues[4] = {h(1.0f), h(-2.0f), h(3.0f), h(-4.0f)};

  int legalCount = 0;
  for (unsigned mask = 0; mask < 16; ++mask) {
    SCOPED_TRACE(testing::Message() << "mask = " << mask);
    std::vector<uint16_t> dense(rows * cols, 0);
    int popcount = 0;
    for (int i = 0; i < 4; ++i) {
      if (mask & (1u << i)) {
        dense[row * cols + group * 4 + i] = chunkValues[i];
        ++popcount;
      }
    }
    Compressed c(rows, cols);
    std::optional<PatternViolation> found =
        findSparse24Violation(dense.data(), rows, cols);
    std::optional<PatternViolation> result = compressSparse24(
        dense.data(), rows, cols, c.values.data(), c.meta.data());
    const Expectation &e = table[mask];
    ASSERT_EQ(e.legal, popcount <= 2);

    if (!e.legal) {
      ASSERT_TRUE(found.has_value());
      EXPECT_EQ(found->row, row);
      EXPECT_EQ(found->group, group);
      EXPECT_EQ(found->nonzeros, popcount);
      ASSERT_TRUE(result.has_value());
      EXPECT_EQ(result->row, row);
      EXPECT_EQ(result->group, group);
      EXPECT_EQ(result->nonzeros, popcount);
      // Outputs are left untouched on a violation.
      EXPECT_EQ(c.values[0], 0xabcd);
      EXPECT_EQ(c.meta[0], 0xdeadbeefu);
      continue;
    }
    ++legalCount;
    EXPECT_FALSE(found.has_value());
    ASSERT_FALSE(result.has_value());

    // Values: chunk 6 of row 5 -> compressed columns 12, 13 of a 32-wide row.
    uint16_t want0 = e.slot0 < 0 ? 0 : chunkValues[e.slot0];
    uint16_t want1 = e.slot1 < 0 ? 0 : chunkValues[e.slot1];
    EXPECT_EQ(c.values[row * 32 + 12], want0);
    EXPECT_EQ(c.values[row * 32 + 13], want1);

    // Metadata: only bits 8..11 of word 11 differ from the empty encoding.
    uint32_t expectedWord = (kAllEmpty & ~0x00000f00u) | (e.nibble << 8);
    EXPECT_EQ(c.meta[11], expectedWord);
    EXPECT_EQ((c.meta[11] >> 8) & 0xfu, e.nibble);
    for (size_t w = 0; w < c.meta.size(); ++w) {
      if (w != 11) {
        EXPECT_EQ(c.meta[w], kAllEmpty) << "word " << w;
      }
    }

    // Nibbles are always ascending (ordered metadata).
    EXPECT_LT(e.nibble & 3u, e.nibble >> 2);

    // Decoded logical columns point at the kept positions.
    int p0 = static_cast<int>(e.nibble & 3u),
        p1 = static_cast<int>(e.nibble >> 2);
    EXPECT_EQ(sparse24LogicalColumn(c.meta.data(), c.shape, row, 12),
              group * 4 + p0);
    EXPECT_EQ(sparse24LogicalColumn(c.meta.data(), c.shape, row, 13),
              group * 4 + p1);

    // And the chunk round-trips.
    std::vector<uint16_t> back(rows * cols, 0x1234);
    decompressSparse24(c.values.data(), c.meta.data(), rows, cols, back.data());
    EXPECT_EQ(back, dense);
  }
  EXPECT_EQ(legalCount, 11);
}

TEST(Sparse24Encoding, NegativeZeroIsZero) {
  const uint16_t nz = 0x8000; // -0.0 in both fp16 and bf16.
  const uint16_t one = h(1.0f), two = h(2.0f);
  // 1 x 16: four chunks.
  std::vector<uint16_t> dense = {
      nz,  one, nz, two, // chunk 0: nonzeros at 1, 3      -> (1,3)
      one, nz,  nz, nz,  // chunk 1: nonzero at 0          -> (0,3), (1, +0)
      nz,  nz,  nz, nz,  // chunk 2: empty                 -> (0,1), (+0, +0)
      nz,  nz,  nz, two, // chunk 3: nonzero at 3          -> (0,3), (+0, 2)
  };
  EXPECT_FALSE(findSparse24Violation(dense.data(), 1, 16).has_value());

  Compressed c(1, 16);
  ASSERT_FALSE(
      compressSparse24(dense.data(), 1, 16, c.values.data(), c.meta.data())
          .has_value());
  // Zero slots hold canonical +0, never 0x8000.
  const uint16_t expectedValues[8] = {one, two, one, 0, 0, 0, 0, two};
  for (int j = 0; j < 8; ++j)
    EXPECT_EQ(c.values[j], expectedValues[j]) << "slot " << j;
  // Row 0, chunks 0..3 -> word 0 bits 0..15 = 0xC4CD (chunk 0 lowest).
  EXPECT_EQ(c.meta[0] & 0xffffu, 0xC4CDu);
  EXPECT_EQ(c.meta[0] >> 16, 0x4444u); // Row 8 is padding.

  // Decompression produces +0 for every zero.
  std::vector<uint16_t> back(16, 0xffff);
  decompressSparse24(c.values.data(), c.meta.data(), 1, 16, back.data());
  const std::vector<uint16_t> expectedBack = {0, one, 0, two, one, 0, 0, 0,
                                              0, 0,   0, 0,   0,   0, 0, two};
  EXPECT_EQ(back, expectedBack);

  // The smallest negative subnormal (0x8001) is *not* zero.
  std::vector<uint16_t> bad = {one, 0x8001, one, nz};
  std::optional<PatternViolation> v = findSparse24Violation(bad.data(), 1, 4);
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->row, 0);
  EXPECT_EQ(v->group, 0);
  EXPECT_EQ(v->nonzeros, 3);
}

//===----------------------------------------------------------------------===//
// Round trip.
//===----------------------------------------------------------------------===//

TEST(Sparse24RoundTrip, RandomOddShapes) {
  std::mt19937 rng(20240229u);
  const int64_t shapes[][2] = {{1, 4},   {17, 36}, {33, 100}, {64, 128},
                               {5, 3},   {16, 32}, {3, 70},   {1, 1},
                               {31, 33}, {48, 7}};
  for (const auto &shape : shapes) {
    int64_t rows = shape[0], cols = shape[1];
    SCOPED_TRACE(testing::Message() << rows << "x" << cols);
    std::vector<uint16_t> dense = random24Matrix(rows, cols, rng);
    Compressed c(rows, cols);
    ASSERT_FALSE(compressSparse24(dense.data(), rows, cols, c.values.data(),
                                  c.meta.data())
                     .has_value());
    std::vector<uint16_t> back(rows * cols, 0x5555);
    decompressSparse24(c.values.data(), c.meta.data(), rows, cols, back.data());
    EXPECT_EQ(back, dense);

    // Every padded row is fully empty.
    for (int64_t r = rows; r < c.shape.paddedRows; ++r)
      for (int64_t j = 0; j < c.shape.paddedCols / 2; ++j)
        ASSERT_EQ(c.values[r * (c.shape.paddedCols / 2) + j], 0);
    // Every kept nonzero value decodes to a real column.
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < c.shape.paddedCols / 2; ++j) {
        uint16_t v = c.values[r * (c.shape.paddedCols / 2) + j];
        int64_t col = sparse24LogicalColumn(c.meta.data(), c.shape, r, j);
        if (v != 0) {
          ASSERT_LT(col, cols);
          EXPECT_EQ(dense[r * cols + col], v);
        }
      }
  }
}

//===----------------------------------------------------------------------===//
// Metadata word layout.
//===----------------------------------------------------------------------===//

// 32 x 64 matrix: 2 row tiles (rt), 2 k steps (ks), so 64 words. All chunks
// are empty (nibble 0x4) except five hand-placed ones:
//
//  (a) row 3  chunk 5  (cols 20..23), nonzeros at 21,22 -> nibble 0x9
//      rt 0, g 3, low half; q = 1 -> ks 0, p 1, c' = 1
//      word ((0*2+0)*8+3)*2+1 = 7, bits 4..7
//  (e) row 11 chunk 4  (cols 16..19), nonzeros at 16,18 -> nibble 0x8
//      rt 0, g 3, HIGH half (row g+8); q = 1 -> ks 0, p 1, c' = 0
//      word 7 again, bits 16..19
//  (b) row 11 chunk 9  (cols 36..39), nonzero at 36      -> nibble 0xC
//      rt 0, g 3, high half; q = 2 -> ks 1, p 0, c' = 1
//      word ((0*2+1)*8+3)*2+0 = 22, bits 20..23
//  (c) row 26 chunk 15 (cols 60..63), nonzero at 63      -> nibble 0xC
//      rt 1, row-in-tile 10 -> g 2, high half; q = 3 -> ks 1, p 1, c' = 3
//      word ((1*2+1)*8+2)*2+1 = 53, bits 28..31
//  (d) row 16 chunk 0  (cols 0..3), nonzeros at 2,3      -> nibble 0xE
//      rt 1, g 0, low half; q = 0 -> ks 0, p 0, c' = 0
//      word ((1*2+0)*8+0)*2+0 = 32, bits 0..3
TEST(Sparse24Layout, MetadataWordPositions) {
  const int64_t rows = 32, cols = 64;
  std::vector<uint16_t> dense(rows * cols, 0);
  auto set = [&](int64_t r, int64_t col, float v) {
    dense[r * cols + col] = h(v);
  };
  set(3, 21, 1.0f); // (a)
  set(3, 22, 2.0f);
  set(11, 16, 3.0f); // (e)
  set(11, 18, 4.0f);
  set(11, 36, 5.0f); // (b)
  set(26, 63, 6.0f); // (c)
  set(16, 2, 7.0f);  // (d)
  set(16, 3, 8.0f);

  Compressed c(rows, cols);
  ASSERT_EQ(c.meta.size(), 64u);
  ASSERT_FALSE(
      compressSparse24(dense.data(), rows, cols, c.values.data(), c.meta.data())
          .has_value());

  EXPECT_EQ(c.meta[7], 0x44484494u);  // (a) bits 4..7 = 9, (e) bits 16..19 = 8
  EXPECT_EQ(c.meta[22], 0x44C44444u); // (b)
  EXPECT_EQ(c.meta[53], 0xC4444444u); // (c)
  EXPECT_EQ(c.meta[32], 0x4444444Eu); // (d)
  for (size_t w = 0; w < c.meta.size(); ++w) {
    if (w != 7 && w != 22 && w != 53 && w != 32) {
      EXPECT_EQ(c.meta[w], kAllEmpty) << "word " << w;
    }
  }

  // The lane view: in the (rt 0, ks 0) mma, lane 13 (g = 13>>2 = 3,
  // t = 13&3 = 1) loads word ((0*2+0)*8+3)*2 + (1&1) = 7; its low half
  // describes row 3, its high half row 11, both for columns 16..31.
  uint32_t lane13 = c.meta[7];
  EXPECT_EQ((lane13 >> 4) & 0xfu, 0x9u);  // row 3, chunk 5 = cols 20..23
  EXPECT_EQ((lane13 >> 16) & 0xfu, 0x8u); // row 11, chunk 4 = cols 16..19
  // Lane 12 (t = 0) gets columns 0..15 of the same rows: all empty.
  EXPECT_EQ(c.meta[6], kAllEmpty);

  // Values of (a): row 3, compressed columns 10, 11 (values row is 32 wide).
  EXPECT_EQ(c.values[3 * 32 + 10], h(1.0f));
  EXPECT_EQ(c.values[3 * 32 + 11], h(2.0f));
  // (c): row 26, chunk 15 -> compressed columns 30 (+0), 31 (6.0).
  EXPECT_EQ(c.values[26 * 32 + 30], 0);
  EXPECT_EQ(c.values[26 * 32 + 31], h(6.0f));

  // Decoding.
  EXPECT_EQ(sparse24LogicalColumn(c.meta.data(), c.shape, 3, 10), 21);
  EXPECT_EQ(sparse24LogicalColumn(c.meta.data(), c.shape, 3, 11), 22);
  EXPECT_EQ(sparse24LogicalColumn(c.meta.data(), c.shape, 11, 8), 16);
  EXPECT_EQ(sparse24LogicalColumn(c.meta.data(), c.shape, 11, 9), 18);
  EXPECT_EQ(sparse24LogicalColumn(c.meta.data(), c.shape, 11, 18), 36);
  EXPECT_EQ(sparse24LogicalColumn(c.meta.data(), c.shape, 11, 19), 39);
  EXPECT_EQ(sparse24LogicalColumn(c.meta.data(), c.shape, 26, 30), 60);
  EXPECT_EQ(sparse24LogicalColumn(c.meta.data(), c.shape, 26, 31), 63);
  EXPECT_EQ(sparse24LogicalColumn(c.meta.data(), c.shape, 16, 0), 2);
  EXPECT_EQ(sparse24LogicalColumn(c.meta.data(), c.shape, 16, 1), 3);
  // An empty chunk decodes to positions (0, 1).
  EXPECT_EQ(sparse24LogicalColumn(c.meta.data(), c.shape, 0, 6), 12);
  EXPECT_EQ(sparse24LogicalColumn(c.meta.data(), c.shape, 0, 7), 13);
}

// Each row tile / k step owns 16 consecutive words; check the words of a
// single nonzero placed in each (rt, ks, g, p, half) combination of a 48x96
// matrix (3 row tiles, 3 k steps).
TEST(Sparse24Layout, EveryLaneSlot) {
  const int64_t rows = 48, cols = 96, KS = 3;
  for (int64_t rt = 0; rt < 3; ++rt)
    for (int64_t ks = 0; ks < KS; ++ks)
      for (int64_t g = 0; g < 8; ++g)
        for (int64_t p = 0; p < 2; ++p)
          for (int64_t high = 0; high < 2; ++high) {
            int64_t row = rt * 16 + g + 8 * high;
            // Chunk 4*(2*ks+p) + 2, single nonzero at position 1 -> (1,3).
            int64_t col = (2 * ks + p) * 16 + 2 * 4 + 1;
            std::vector<uint16_t> dense(rows * cols, 0);
            dense[row * cols + col] = h(1.0f);
            Compressed c(rows, cols);
            ASSERT_FALSE(compressSparse24(dense.data(), rows, cols,
                                          c.values.data(), c.meta.data())
                             .has_value());
            int64_t word = ((rt * KS + ks) * 8 + g) * 2 + p;
            uint32_t shift = 16u * static_cast<uint32_t>(high) + 8u;
            uint32_t expected =
                (kAllEmpty & ~(0xfu << shift)) | (0xDu << shift);
            for (int64_t w = 0; w < static_cast<int64_t>(c.meta.size()); ++w)
              ASSERT_EQ(c.meta[w], w == word ? expected : kAllEmpty)
                  << "rt " << rt << " ks " << ks << " g " << g << " p " << p
                  << " high " << high << " word " << w;
          }
}

//===----------------------------------------------------------------------===//
// Reference sparse matmul from values + metadata only.
//===----------------------------------------------------------------------===//

TEST(Sparse24Matmul, ReferenceFromCompressedMatchesDense) {
  const int64_t rows = 37, cols = 70, n = 5;
  std::mt19937 rng(7u);
  std::uniform_int_distribution<int> small(-8, 8);

  std::vector<uint16_t> w(rows * cols);
  for (auto &x : w)
    x = h(static_cast<float>(small(rng)));
  pruneTo24(w.data(), rows, cols, /*isBF16=*/false);
  ASSERT_FALSE(findSparse24Violation(w.data(), rows, cols).has_value());

  std::vector<float> x(cols * n);
  for (auto &v : x)
    v = static_cast<float>(small(rng));

  // Dense reference: Y = W * X.
  std::vector<float> yDense(rows * n, 0.0f);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t k = 0; k < cols; ++k)
      for (int64_t j = 0; j < n; ++j)
        yDense[r * n + j] += halfToFloat(w[r * cols + k]) * x[k * n + j];

  Compressed c(rows, cols);
  ASSERT_FALSE(
      compressSparse24(w.data(), rows, cols, c.values.data(), c.meta.data())
          .has_value());

  // Sparse: Y[r][j] = sum_i values[r][i] * X[logicalColumn(r, i)][j], with X
  // zero-padded to paddedCols rows.
  const int64_t valuesPerRow = c.shape.paddedCols / 2;
  std::vector<float> ySparse(c.shape.paddedRows * n, 0.0f);
  for (int64_t r = 0; r < c.shape.paddedRows; ++r)
    for (int64_t i = 0; i < valuesPerRow; ++i) {
      float v = halfToFloat(c.values[r * valuesPerRow + i]);
      int64_t k = sparse24LogicalColumn(c.meta.data(), c.shape, r, i);
      ASSERT_GE(k, 0);
      ASSERT_LT(k, c.shape.paddedCols);
      if (k >= cols || r >= rows) {
        ASSERT_EQ(v, 0.0f); // Padding never carries a value.
        continue;
      }
      for (int64_t j = 0; j < n; ++j)
        ySparse[r * n + j] += v * x[k * n + j];
    }

  int nonzeroOutputs = 0;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < n; ++j) {
      EXPECT_EQ(ySparse[r * n + j], yDense[r * n + j]) << r << "," << j;
      nonzeroOutputs += yDense[r * n + j] != 0.0f;
    }
  EXPECT_GT(nonzeroOutputs, 0);
}

//===----------------------------------------------------------------------===//
// Violations.
//===----------------------------------------------------------------------===//

TEST(Sparse24Violation, FirstInRowMajorOrder) {
  const int64_t rows = 6, cols = 16;
  std::vector<uint16_t> dense(rows * cols, 0);
  auto fill = [&](int64_t r, int64_t group, int count) {
    for (int i = 0; i < count; ++i)
      dense[r * cols + group * 4 + i] = h(static_cast<float>(1 + i));
  };
  fill(4, 1, 3);
  fill(2, 3, 4);
  fill(2, 2, 3);
  fill(1, 0, 2); // Legal.
  fill(5, 0, 4);

  std::optional<PatternViolation> v =
      findSparse24Violation(dense.data(), rows, cols);
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->row, 2);
  EXPECT_EQ(v->group, 2);
  EXPECT_EQ(v->nonzeros, 3);

  // Fix (2,2); the next one is (2,3) with 4 nonzeros.
  dense[2 * cols + 2 * 4] = 0;
  v = findSparse24Violation(dense.data(), rows, cols);
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->row, 2);
  EXPECT_EQ(v->group, 3);
  EXPECT_EQ(v->nonzeros, 4);

  // compressSparse24 reports the same one.
  Compressed c(rows, cols);
  v = compressSparse24(dense.data(), rows, cols, c.values.data(),
                       c.meta.data());
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->row, 2);
  EXPECT_EQ(v->group, 3);

  // Fix row 2 completely; then (4,1).
  dense[2 * cols + 3 * 4] = 0;
  dense[2 * cols + 3 * 4 + 1] = 0;
  v = findSparse24Violation(dense.data(), rows, cols);
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->row, 4);
  EXPECT_EQ(v->group, 1);
  EXPECT_EQ(v->nonzeros, 3);
}

TEST(Sparse24Violation, PartialTrailingChunk) {
  // cols = 7: chunk 1 has 3 real columns and can be violated.
  std::vector<uint16_t> a = {0, 0, 0, 0, h(1), h(2), h(3)};
  std::optional<PatternViolation> v = findSparse24Violation(a.data(), 1, 7);
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->row, 0);
  EXPECT_EQ(v->group, 1);
  EXPECT_EQ(v->nonzeros, 3);

  // cols = 6: chunk 1 has only 2 real columns.
  std::vector<uint16_t> b = {h(1), 0, h(2), 0, h(3), h(4)};
  EXPECT_FALSE(findSparse24Violation(b.data(), 1, 6).has_value());
}

//===----------------------------------------------------------------------===//
// Pruning.
//===----------------------------------------------------------------------===//

/// Checks that `pruned` is `original` with, per chunk, exactly the 2 largest
/// magnitudes kept (ties -> lower index) and everything else zeroed.
void expectTopTwoKept(const std::vector<uint16_t> &original,
                      const std::vector<uint16_t> &pruned, int64_t rows,
                      int64_t cols, float (*decode)(uint16_t)) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t start = 0; start < cols; start += 4) {
      int64_t width = std::min<int64_t>(4, cols - start);
      std::vector<int64_t> order;
      for (int64_t i = 0; i < width; ++i)
        order.push_back(i);
      std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
        return std::fabs(decode(original[r * cols + start + a])) >
               std::fabs(decode(original[r * cols + start + b]));
      });
      for (int64_t rank = 0; rank < width; ++rank) {
        int64_t idx = r * cols + start + order[rank];
        uint16_t expected = rank < 2 ? original[idx] : uint16_t(0);
        EXPECT_EQ(pruned[idx], expected)
            << "row " << r << " col " << (start + order[rank]);
      }
    }
}

TEST(Sparse24Prune, Fp16KeepsLargestMagnitudes) {
  const int64_t rows = 9, cols = 22;
  std::mt19937 rng(99u);
  std::uniform_real_distribution<float> dist(-100.0f, 100.0f);
  std::vector<uint16_t> dense(rows * cols);
  for (auto &x : dense)
    x = h(dist(rng));
  std::vector<uint16_t> pruned = dense;
  pruneTo24(pruned.data(), rows, cols, /*isBF16=*/false);
  EXPECT_FALSE(findSparse24Violation(pruned.data(), rows, cols).has_value());
  expectTopTwoKept(dense, pruned, rows, cols, halfToFloat);

  // Hand-checked chunks, including ties (lower index wins) and NaN.
  std::vector<uint16_t> t = {
      h(1),    h(-1),  h(1), h(0.5f), // tie of three 1s -> keep 0, 1
      h(0.5f), h(-2),  h(2), h(-3),   // |-2| == |2| -> keep 1 (lower), and 3
      h(1),    0x7e00, h(2), h(3),    // NaN counts as largest -> keep 1, 3
      h(5),    h(6),   h(7),          // partial chunk of 3 -> keep 6, 7
  };
  pruneTo24(t.data(), 1, 15, false);
  const std::vector<uint16_t> want = {
      h(1), h(-1),  0,    0,     //
      0,    h(-2),  0,    h(-3), //
      0,    0x7e00, 0,    h(3),  //
      0,    h(6),   h(7),        //
  };
  EXPECT_EQ(t, want);

  // Chunks with <= 2 real columns are never touched.
  std::vector<uint16_t> narrow = {h(1), h(2), h(3), h(4), h(5), h(6)};
  pruneTo24(narrow.data(), 1, 6, false);
  const std::vector<uint16_t> narrowWant = {0, 0, h(3), h(4), h(5), h(6)};
  EXPECT_EQ(narrow, narrowWant);
}

TEST(Sparse24Prune, Bf16KeepsLargestMagnitudes) {
  auto b = [](float v) { return floatToBF16(v); };
  std::vector<uint16_t> t = {b(3),      b(-5),    b(2),       b(4), //
                             b(-0.25f), b(1e30f), b(-1e-30f), b(0)};
  pruneTo24(t.data(), 2, 4, /*isBF16=*/true);
  const std::vector<uint16_t> want = {0,         b(-5),    0, b(4), //
                                      b(-0.25f), b(1e30f), 0, 0};
  EXPECT_EQ(t, want);

  const int64_t rows = 7, cols = 13;
  std::mt19937 rng(5u);
  std::uniform_real_distribution<float> dist(-1.0e6f, 1.0e6f);
  std::vector<uint16_t> dense(rows * cols);
  for (auto &x : dense)
    x = b(dist(rng));
  std::vector<uint16_t> pruned = dense;
  pruneTo24(pruned.data(), rows, cols, /*isBF16=*/true);
  EXPECT_FALSE(findSparse24Violation(pruned.data(), rows, cols).has_value());
  expectTopTwoKept(dense, pruned, rows, cols, bf16ToFloat);
}

//===----------------------------------------------------------------------===//
// fp16 / bf16 conversions.
//===----------------------------------------------------------------------===//

TEST(Float16, HalfExactValues) {
  EXPECT_EQ(halfToFloat(0x3c00), 1.0f);
  EXPECT_EQ(halfToFloat(0xc000), -2.0f);
  EXPECT_EQ(halfToFloat(0x3555), 0.333251953125f);
  EXPECT_EQ(halfToFloat(0x7bff), 65504.0f);
  EXPECT_EQ(halfToFloat(0x0400), std::ldexp(1.0f, -14)); // Smallest normal.
  EXPECT_EQ(halfToFloat(0x0001), std::ldexp(1.0f, -24)); // Smallest subnormal.
  EXPECT_EQ(halfToFloat(0x03ff), std::ldexp(1023.0f, -24));
  EXPECT_EQ(halfToFloat(0x0000), 0.0f);
  EXPECT_TRUE(std::signbit(halfToFloat(0x8000)));
  EXPECT_EQ(halfToFloat(0x7c00), std::numeric_limits<float>::infinity());
  EXPECT_EQ(halfToFloat(0xfc00), -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(halfToFloat(0x7e00)));
  EXPECT_TRUE(std::isnan(halfToFloat(0xfc01)));

  EXPECT_EQ(floatToHalf(1.0f), 0x3c00);
  EXPECT_EQ(floatToHalf(-2.0f), 0xc000);
  EXPECT_EQ(floatToHalf(65504.0f), 0x7bff);
  EXPECT_EQ(floatToHalf(std::ldexp(1.0f, -24)), 0x0001);
  EXPECT_EQ(floatToHalf(0.0f), 0x0000);
  EXPECT_EQ(floatToHalf(-0.0f), 0x8000);
}

TEST(Float16, HalfRoundingAndSpecials) {
  // Halfway between 1 and 1 + 2^-10: ties to even (1.0).
  EXPECT_EQ(floatToHalf(1.0f + std::ldexp(1.0f, -11)), 0x3c00);
  // Halfway between 1 + 2^-10 (odd) and 1 + 2^-9: ties to even (0x3c02).
  EXPECT_EQ(floatToHalf(1.0f + 3.0f * std::ldexp(1.0f, -11)), 0x3c02);
  // Just above halfway rounds up.
  EXPECT_EQ(floatToHalf(std::nextafter(1.0f + std::ldexp(1.0f, -11), 2.0f)),
            0x3c01);
  // Overflow: 65519 rounds down to 65504, 65520 (halfway) ties to inf.
  EXPECT_EQ(floatToHalf(65519.0f), 0x7bff);
  EXPECT_EQ(floatToHalf(65520.0f), 0x7c00);
  EXPECT_EQ(floatToHalf(-1.0e10f), 0xfc00);
  // Subnormal rounding: 2^-25 is halfway to the smallest subnormal -> 0;
  // anything above rounds up; 3 * 2^-25 ties to 2 * 2^-24.
  EXPECT_EQ(floatToHalf(std::ldexp(1.0f, -25)), 0x0000);
  EXPECT_EQ(floatToHalf(std::nextafter(std::ldexp(1.0f, -25), 1.0f)), 0x0001);
  EXPECT_EQ(floatToHalf(3.0f * std::ldexp(1.0f, -25)), 0x0002);
  EXPECT_EQ(floatToHalf(-std::ldexp(1.0f, -30)), 0x8000);
  // Largest subnormal rounding up into the smallest normal.
  EXPECT_EQ(floatToHalf(std::ldexp(1.0f, -14) - std::ldexp(1.0f, -26)), 0x0400);
  // Specials.
  EXPECT_EQ(floatToHalf(std::numeric_limits<float>::infinity()), 0x7c00);
  EXPECT_EQ(floatToHalf(-std::numeric_limits<float>::infinity()), 0xfc00);
  uint16_t nan = floatToHalf(std::numeric_limits<float>::quiet_NaN());
  EXPECT_EQ(nan & 0x7c00, 0x7c00);
  EXPECT_NE(nan & 0x03ff, 0);
  // A signalling NaN whose payload lives only in the low bits stays NaN.
  uint16_t snan = floatToHalf(floatFromBits(0xff800001u));
  EXPECT_EQ(snan & 0xfc00, 0xfc00);
  EXPECT_NE(snan & 0x03ff, 0);

  // Every non-NaN half survives half -> float -> half.
  for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
    uint16_t hb = static_cast<uint16_t>(bits);
    if ((hb & 0x7c00) == 0x7c00 && (hb & 0x03ff) != 0)
      continue;
    ASSERT_EQ(floatToHalf(halfToFloat(hb)), hb) << "bits " << bits;
  }
}

TEST(Float16, BF16ExactRoundingAndSpecials) {
  EXPECT_EQ(bf16ToFloat(0x3f80), 1.0f);
  EXPECT_EQ(bf16ToFloat(0xc040), -3.0f);
  EXPECT_EQ(bf16ToFloat(0x7f80), std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(bf16ToFloat(0x7fc0)));
  EXPECT_EQ(floatToBF16(1.0f), 0x3f80);
  EXPECT_EQ(floatToBF16(-3.0f), 0xc040);
  EXPECT_EQ(floatToBF16(-0.0f), 0x8000);

  // Round to nearest even on the dropped 16 bits.
  EXPECT_EQ(floatToBF16(floatFromBits(0x3f808000u)), 0x3f80); // tie, even
  EXPECT_EQ(floatToBF16(floatFromBits(0x3f818000u)), 0x3f82); // tie, odd -> up
  EXPECT_EQ(floatToBF16(floatFromBits(0x3f808001u)), 0x3f81); // above tie
  EXPECT_EQ(floatToBF16(floatFromBits(0x3f807fffu)), 0x3f80); // below tie
  // Overflow to infinity; infinities and NaN.
  EXPECT_EQ(floatToBF16(std::numeric_limits<float>::max()), 0x7f80);
  EXPECT_EQ(floatToBF16(std::numeric_limits<float>::infinity()), 0x7f80);
  EXPECT_EQ(floatToBF16(-std::numeric_limits<float>::infinity()), 0xff80);
  uint16_t nan = floatToBF16(floatFromBits(0x7f800001u)); // payload in low bits
  EXPECT_EQ(nan & 0x7f80, 0x7f80);
  EXPECT_NE(nan & 0x007f, 0);
  EXPECT_TRUE(std::isnan(bf16ToFloat(nan)));

  for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
    uint16_t bb = static_cast<uint16_t>(bits);
    if ((bb & 0x7f80) == 0x7f80 && (bb & 0x007f) != 0)
      continue;
    ASSERT_EQ(floatToBF16(bf16ToFloat(bb)), bb) << "bits " << bits;
    ASSERT_EQ(bitsFromFloat(bf16ToFloat(bb)), bits << 16);
  }
}

//===----------------------------------------------------------------------===//
// C API.
//===----------------------------------------------------------------------===//

TEST(Sparse24CAPI, Sizes) {
  int64_t nv = -1, nm = -1;
  EXPECT_EQ(sparseopt_sparse24_sizes(20, 40, &nv, &nm), 0);
  EXPECT_EQ(nv, 1024);
  EXPECT_EQ(nm, 64);
  EXPECT_EQ(sparseopt_sparse24_sizes(0, 40, &nv, &nm), 2);
  EXPECT_EQ(sparseopt_sparse24_sizes(20, -1, &nv, &nm), 2);
  EXPECT_EQ(sparseopt_sparse24_sizes(20, 40, nullptr, &nm), 2);
  EXPECT_EQ(sparseopt_sparse24_sizes(20, 40, &nv, nullptr), 2);
  EXPECT_EQ(sparseopt_sparse24_sizes(std::numeric_limits<int64_t>::max(), 40,
                                     &nv, &nm),
            2);
  EXPECT_EQ(
      sparseopt_sparse24_sizes(int64_t(1) << 40, int64_t(1) << 40, &nv, &nm),
      2);
}

TEST(Sparse24CAPI, CompressDecompressPrune) {
  const int64_t rows = 17, cols = 36;
  int64_t nv = 0, nm = 0;
  ASSERT_EQ(sparseopt_sparse24_sizes(rows, cols, &nv, &nm), 0);
  std::vector<uint16_t> values(nv), back(rows * cols);
  std::vector<uint32_t> meta(nm);

  std::mt19937 rng(3u);
  std::vector<uint16_t> dense = random24Matrix(rows, cols, rng);
  int64_t badRow = 123, badGroup = 456;
  EXPECT_EQ(sparseopt_sparse24_compress(dense.data(), rows, cols, values.data(),
                                        meta.data(), &badRow, &badGroup),
            0);
  EXPECT_EQ(badRow, -1);
  EXPECT_EQ(badGroup, -1);
  EXPECT_EQ(sparseopt_sparse24_decompress(values.data(), meta.data(), rows,
                                          cols, back.data()),
            0);
  EXPECT_EQ(back, dense);

  // Violation: 3 nonzeros in row 9, group 5 (cols 20..23).
  std::vector<uint16_t> bad = dense;
  for (int i = 0; i < 3; ++i)
    bad[9 * cols + 20 + i] = h(1.0f);
  EXPECT_EQ(sparseopt_sparse24_compress(bad.data(), rows, cols, values.data(),
                                        meta.data(), &badRow, &badGroup),
            1);
  EXPECT_EQ(badRow, 9);
  EXPECT_EQ(badGroup, 5);
  // The out-pointers are optional.
  EXPECT_EQ(sparseopt_sparse24_compress(bad.data(), rows, cols, values.data(),
                                        meta.data(), nullptr, nullptr),
            1);

  // Prune then compress succeeds.
  EXPECT_EQ(sparseopt_sparse24_prune(bad.data(), rows, cols, 0), 0);
  EXPECT_EQ(sparseopt_sparse24_compress(bad.data(), rows, cols, values.data(),
                                        meta.data(), nullptr, &badGroup),
            0);
  EXPECT_EQ(badGroup, -1);
  std::vector<uint16_t> bf = {floatToBF16(1), floatToBF16(-4), floatToBF16(3),
                              floatToBF16(2)};
  EXPECT_EQ(sparseopt_sparse24_prune(bf.data(), 1, 4, 1), 0);
  const std::vector<uint16_t> bfWant = {0, floatToBF16(-4), floatToBF16(3), 0};
  EXPECT_EQ(bf, bfWant);
}

TEST(Sparse24CAPI, BadArguments) {
  std::vector<uint16_t> dense(16 * 32, 0), values(256), out(16 * 32);
  std::vector<uint32_t> meta(16);
  int64_t r = 0, g = 0;
  // compress
  EXPECT_EQ(sparseopt_sparse24_compress(nullptr, 16, 32, values.data(),
                                        meta.data(), &r, &g),
            2);
  EXPECT_EQ(sparseopt_sparse24_compress(dense.data(), 16, 32, nullptr,
                                        meta.data(), &r, &g),
            2);
  EXPECT_EQ(sparseopt_sparse24_compress(dense.data(), 16, 32, values.data(),
                                        nullptr, &r, &g),
            2);
  EXPECT_EQ(sparseopt_sparse24_compress(dense.data(), 0, 32, values.data(),
                                        meta.data(), &r, &g),
            2);
  EXPECT_EQ(sparseopt_sparse24_compress(dense.data(), 16, -4, values.data(),
                                        meta.data(), &r, &g),
            2);
  // decompress
  EXPECT_EQ(
      sparseopt_sparse24_decompress(nullptr, meta.data(), 16, 32, out.data()),
      2);
  EXPECT_EQ(
      sparseopt_sparse24_decompress(values.data(), nullptr, 16, 32, out.data()),
      2);
  EXPECT_EQ(sparseopt_sparse24_decompress(values.data(), meta.data(), 16, 32,
                                          nullptr),
            2);
  EXPECT_EQ(sparseopt_sparse24_decompress(values.data(), meta.data(), -1, 32,
                                          out.data()),
            2);
  // prune
  EXPECT_EQ(sparseopt_sparse24_prune(nullptr, 16, 32, 0), 2);
  EXPECT_EQ(sparseopt_sparse24_prune(dense.data(), 16, 0, 1), 2);
}

} // namespace
