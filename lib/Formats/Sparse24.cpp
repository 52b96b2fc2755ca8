//===- Sparse24.cpp - 2:4 structured-sparse weight compression ------------===//
//
// Part of the SparseOpt project.
//
//===----------------------------------------------------------------------===//
//
// See include/sparse-opt/Formats/Sparse24.h for the layout description.
//
//===----------------------------------------------------------------------===//

#include "sparse-opt/Formats/Sparse24.h"
#include "sparse-opt/Formats/SlidingWindow.h"

#include "sparse-opt/Formats/Float16.h"

#include <cassert>
#include <cmath>

namespace sparseopt {

namespace {

constexpr int64_t kTileRows = 16; // M of one mma.sp.
constexpr int64_t kTileCols = 32; // K of one mma.sp.
constexpr int64_t kChunk = 4;     // 2:4 chunk width.

int64_t roundUp(int64_t value, int64_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

bool isZero(uint16_t bits) { return (bits & 0x7fffu) == 0; }

/// Element (row, col) of the logically zero-padded dense matrix.
uint16_t paddedElement(const uint16_t *dense, int64_t rows, int64_t cols,
                       int64_t row, int64_t col) {
  if (row >= rows || col >= cols)
    return 0;
  return dense[row * cols + col];
}

/// Where the nibble of chunk `chunk` of row `row` lives in the metadata
/// array: word index and bit offset (see the header comment, section 6).
struct NibbleLocation {
  int64_t word;
  unsigned shift;
};

NibbleLocation locateNibble(const Sparse24Shape &shape, int64_t row,
                            int64_t chunk) {
  int64_t rowTile = row / kTileRows;
  int64_t rowInTile = row % kTileRows;
  int64_t g = rowInTile % 8;        // Lane group.
  bool highHalf = rowInTile >= 8;   // Rows g+8 live in bits 16..31.
  int64_t group16 = chunk / 4;      // 16-column group q.
  int64_t chunkInGroup = chunk % 4; // c' inside meta16.
  int64_t kStep = group16 / 2;      // ks.
  int64_t half = group16 % 2;       // p.
  int64_t word = ((rowTile * shape.numKSteps() + kStep) * 8 + g) * 2 + half;
  unsigned shift =
      (highHalf ? 16u : 0u) + 4u * static_cast<unsigned>(chunkInGroup);
  return {word, shift};
}

/// Result of encoding one chunk of 4 elements.
struct EncodedChunk {
  uint32_t nibble;   // p0 | (p1 << 2).
  uint16_t slots[2]; // Values stored at compressed columns 2c, 2c+1.
};

/// Encodes one chunk that is known to hold <= 2 nonzeros (section 5).
EncodedChunk encodeChunk(const uint16_t w[4]) {
  int positions[4];
  int count = 0;
  for (int i = 0; i < 4; ++i)
    if (!isZero(w[i]))
      positions[count++] = i;
  assert(count <= 2 && "chunk violates the 2:4 pattern");

  int p0, p1;
  switch (count) {
  case 0: // Nothing kept: positions (0, 1).
    p0 = 0;
    p1 = 1;
    break;
  case 1: // Pair the nonzero with a zero slot so that p0 < p1.
    if (positions[0] < 3) {
      p0 = positions[0];
      p1 = 3;
    } else {
      p0 = 0;
      p1 = 3;
    }
    break;
  default:
    p0 = positions[0];
    p1 = positions[1];
    break;
  }
  // Zero slots hold canonical +0 regardless of the sign of the input zero.
  auto keep = [](uint16_t bits) -> uint16_t { return isZero(bits) ? 0 : bits; };
  EncodedChunk result;
  result.nibble = static_cast<uint32_t>(p0 | (p1 << 2));
  result.slots[0] = keep(w[p0]);
  result.slots[1] = keep(w[p1]);
  return result;
}

} // namespace

Sparse24Shape getSparse24Shape(int64_t rows, int64_t cols) {
  assert(rows >= 0 && cols >= 0 && "negative matrix size");
  Sparse24Shape shape;
  shape.rows = rows;
  shape.cols = cols;
  shape.paddedRows = roundUp(rows, kTileRows);
  shape.paddedCols = roundUp(cols, kTileCols);
  return shape;
}

std::optional<PatternViolation>
findSparse24Violation(const uint16_t *dense, int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) {
    const uint16_t *row = dense + r * cols;
    for (int64_t start = 0; start < cols; start += kChunk) {
      int nonzeros = 0;
      for (int64_t col = start; col < start + kChunk && col < cols; ++col)
        nonzeros += isZero(row[col]) ? 0 : 1;
      if (nonzeros > 2)
        return PatternViolation{r, start / kChunk, nonzeros};
    }
  }
  return std::nullopt;
}

std::optional<PatternViolation> compressSparse24(const uint16_t *dense,
                                                 int64_t rows, int64_t cols,
                                                 uint16_t *values,
                                                 uint32_t *meta) {
  // Validate first so that nothing is written for a broken pattern.
  if (auto violation = findSparse24Violation(dense, rows, cols))
    return violation;

  Sparse24Shape shape = getSparse24Shape(rows, cols);
  for (int64_t i = 0, e = shape.numMetaWords(); i < e; ++i)
    meta[i] = 0;

  const int64_t valuesPerRow = shape.paddedCols / 2;
  const int64_t chunksPerRow = shape.paddedCols / kChunk;
  // Every chunk of the padded matrix is encoded, padding included (padding
  // chunks get the empty encoding: nibble 0b0100, slots (0, 0)).
  for (int64_t r = 0; r < shape.paddedRows; ++r) {
    for (int64_t c = 0; c < chunksPerRow; ++c) {
      uint16_t w[4];
      for (int i = 0; i < 4; ++i)
        w[i] = paddedElement(dense, rows, cols, r, c * kChunk + i);
      EncodedChunk enc = encodeChunk(w);
      values[r * valuesPerRow + 2 * c] = enc.slots[0];
      values[r * valuesPerRow + 2 * c + 1] = enc.slots[1];
      NibbleLocation loc = locateNibble(shape, r, c);
      meta[loc.word] |= enc.nibble << loc.shift;
    }
  }
  return std::nullopt;
}

void decompressSparse24(const uint16_t *values, const uint32_t *meta,
                        int64_t rows, int64_t cols, uint16_t *dense) {
  Sparse24Shape shape = getSparse24Shape(rows, cols);
  const int64_t valuesPerRow = shape.paddedCols / 2;
  for (int64_t r = 0; r < rows; ++r) {
    uint16_t *row = dense + r * cols;
    for (int64_t col = 0; col < cols; ++col)
      row[col] = 0;
    // Only chunks that overlap real columns can contribute.
    for (int64_t c = 0; c * kChunk < cols; ++c) {
      NibbleLocation loc = locateNibble(shape, r, c);
      uint32_t nibble = (meta[loc.word] >> loc.shift) & 0xfu;
      int64_t col0 = c * kChunk + (nibble & 0x3u);
      int64_t col1 = c * kChunk + ((nibble >> 2) & 0x3u);
      if (col0 < cols)
        row[col0] = values[r * valuesPerRow + 2 * c];
      if (col1 < cols)
        row[col1] = values[r * valuesPerRow + 2 * c + 1];
    }
  }
}

int64_t sparse24LogicalColumn(const uint32_t *meta, const Sparse24Shape &shape,
                              int64_t row, int64_t compressedCol) {
  assert(row >= 0 && row < shape.paddedRows && "row out of range");
  assert(compressedCol >= 0 && compressedCol < shape.paddedCols / 2 &&
         "compressed column out of range");
  int64_t chunk = compressedCol / 2;
  unsigned slot = static_cast<unsigned>(compressedCol % 2);
  NibbleLocation loc = locateNibble(shape, row, chunk);
  uint32_t position = (meta[loc.word] >> (loc.shift + 2u * slot)) & 0x3u;
  return chunk * kChunk + static_cast<int64_t>(position);
}

void pruneTo24(uint16_t *dense, int64_t rows, int64_t cols, bool isBF16) {
  // 2:4 is the N = 2 member of the (2N-2):2N family: keep 2 of every 4.
  pruneToSliding(dense, rows, cols, /*familyN=*/2, isBF16);
}

} // namespace sparseopt
