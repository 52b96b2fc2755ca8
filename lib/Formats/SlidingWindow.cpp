//===- SlidingWindow.cpp - (2N-2):2N sparsity as 2:4 windows --------------===//
//
// Part of the SparseOpt project.
//
//===----------------------------------------------------------------------===//
//
// See include/sparse-opt/Formats/SlidingWindow.h for the format description
// and the argument that the greedy window assignment cannot fail on a legal
// group.
//
//===----------------------------------------------------------------------===//

#include "sparse-opt/Formats/SlidingWindow.h"

#include "sparse-opt/Formats/Float16.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>

namespace sparseopt {

namespace {

constexpr int kMinFamily = 2;
constexpr int kMaxFamily = 8;
constexpr int kMaxGroupWidth = 2 * kMaxFamily; // 2N columns per group.
constexpr int64_t kWindow = 4;                 // A window is one 2:4 chunk.

bool isZero(uint16_t bits) { return (bits & 0x7fffu) == 0; }

/// Columns of one group of W: 2N.
int64_t groupWidth(int familyN) { return 2 * static_cast<int64_t>(familyN); }

/// Lifted columns of one group: N-1 windows of 4.
int64_t liftedGroupWidth(int familyN) {
  return kWindow * (static_cast<int64_t>(familyN) - 1);
}

/// Nonzeros allowed per group: the total window capacity 2(N-1).
int capacity(int familyN) { return 2 * (familyN - 1); }

/// Window of every position of one group (-1: zero or padding, not assigned).
struct GroupAssignment {
  int nonzeros = 0;   ///< Nonzeros among the group's real columns.
  bool valid = false; ///< Every nonzero found a window.
  int window[kMaxGroupWidth];
};

/// Runs the greedy of section 5 of the header on group `group` of `row`
/// (a row of `cols` elements).
GroupAssignment assignGroup(const uint16_t *row, int64_t cols, int64_t group,
                            int familyN) {
  const int width = static_cast<int>(groupWidth(familyN));
  const int64_t start = group * width;
  GroupAssignment result;
  for (int p = 0; p < width; ++p) {
    result.window[p] = -1;
    if (start + p < cols && !isZero(row[start + p]))
      ++result.nonzeros;
  }
  if (result.nonzeros > capacity(familyN))
    return result;

  int used[kMaxFamily] = {}; // Nonzeros given to each window so far.
  const int lastWindow = familyN - 2;
  for (int p = 0; p < width && start + p < cols; ++p) {
    if (isZero(row[start + p]))
      continue;
    // Windows covering p: p/2 - 1 and p/2, clipped to [0, N-2].
    int first = std::max(p / 2 - 1, 0);
    int last = std::min(p / 2, lastWindow);
    for (int j = first; j <= last && result.window[p] < 0; ++j)
      if (used[j] < 2) {
        result.window[p] = j;
        ++used[j];
      }
    if (result.window[p] < 0)
      return result; // Cannot happen (see the header); reported, not hidden.
  }
  result.valid = true;
  return result;
}

/// Orders magnitudes for pruning: NaN is larger than everything else.
bool largerMagnitude(float a, float b) {
  if (std::isnan(a))
    return !std::isnan(b);
  if (std::isnan(b))
    return false;
  return std::fabs(a) > std::fabs(b);
}

} // namespace

bool isSupportedFamily(int familyN) {
  return familyN >= kMinFamily && familyN <= kMaxFamily;
}

SlideShape getSlideShape(int64_t rows, int64_t cols, int familyN,
                         int64_t tileGroups) {
  SlideShape shape;
  shape.rows = rows;
  shape.cols = cols;
  shape.n = familyN;
  if (!isSupportedFamily(familyN) || rows < 0 || cols < 0 || tileGroups < 0)
    return shape;
  const int64_t width = groupWidth(familyN);
  // ceil(cols / width) without overflowing near INT64_MAX.
  int64_t groups = cols / width + (cols % width != 0 ? 1 : 0);
  if (tileGroups > 0)
    groups = groups / tileGroups * tileGroups +
             (groups % tileGroups != 0 ? tileGroups : 0);
  if (groups < 0 ||
      groups > std::numeric_limits<int64_t>::max() / liftedGroupWidth(familyN))
    return shape;
  shape.groups = groups;
  shape.liftedCols = groups * liftedGroupWidth(familyN);
  return shape;
}

int64_t liftedChunk(int64_t group, int64_t window, int familyN,
                    int64_t tileGroups) {
  const int64_t windows = familyN - 1;
  if (tileGroups <= 0)
    return group * windows + window;
  const int64_t even = (windows + 1) / 2, odd = windows / 2;
  const int64_t base = group / tileGroups * tileGroups * windows;
  const int64_t local = group % tileGroups;
  if (window % 2 == 0)
    return base + local * even + window / 2;
  return base + tileGroups * even + local * odd + (window - 1) / 2;
}

int64_t liftedSourceColumn(int64_t liftedCol, int familyN,
                           int64_t tileGroups) {
  if (!isSupportedFamily(familyN) || liftedCol < 0 || tileGroups < 0)
    return -1;
  const int64_t windows = familyN - 1;
  const int64_t chunk = liftedCol / kWindow, lane = liftedCol % kWindow;
  int64_t group = chunk / windows, window = chunk % windows;
  if (tileGroups > 0) {
    // The inverse of liftedChunk: the tile's even windows, then its odd.
    const int64_t even = (windows + 1) / 2, odd = windows / 2;
    const int64_t tile = chunk / (tileGroups * windows);
    const int64_t inTile = chunk % (tileGroups * windows);
    if (inTile < tileGroups * even) {
      group = tile * tileGroups + inTile / even;
      window = 2 * (inTile % even);
    } else {
      const int64_t rest = inTile - tileGroups * even;
      group = tile * tileGroups + rest / odd;
      window = 2 * (rest % odd) + 1;
    }
  }
  return group * groupWidth(familyN) + 2 * window + lane;
}

std::optional<PatternViolation> findSlidingViolation(const uint16_t *dense,
                                                     int64_t rows, int64_t cols,
                                                     int familyN) {
  assert(isSupportedFamily(familyN) && "unsupported sliding family");
  const SlideShape shape = getSlideShape(rows, cols, familyN);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t g = 0; g < shape.groups; ++g) {
      GroupAssignment a = assignGroup(dense + r * cols, cols, g, familyN);
      if (!a.valid)
        return PatternViolation{r, g, a.nonzeros};
    }
  return std::nullopt;
}

std::optional<PatternViolation> decomposeSliding(const uint16_t *dense,
                                                 int64_t rows, int64_t cols,
                                                 int familyN,
                                                 uint16_t *expanded,
                                                 int64_t tileGroups) {
  // Validate first so that nothing is written for a broken pattern.
  if (auto violation = findSlidingViolation(dense, rows, cols, familyN))
    return violation;

  const SlideShape shape = getSlideShape(rows, cols, familyN, tileGroups);
  const int64_t realGroups = getSlideShape(rows, cols, familyN).groups;
  const int width = static_cast<int>(groupWidth(familyN));
  for (int64_t r = 0; r < rows; ++r) {
    const uint16_t *row = dense + r * cols;
    uint16_t *out = expanded + r * shape.liftedCols;
    for (int64_t c = 0; c < shape.liftedCols; ++c)
      out[c] = 0;
    for (int64_t g = 0; g < realGroups; ++g) {
      GroupAssignment a = assignGroup(row, cols, g, familyN);
      for (int p = 0; p < width; ++p) {
        int j = a.window[p];
        if (j < 0)
          continue;
        // Position p sits at lane p - 2j of window j.
        out[kWindow * liftedChunk(g, j, familyN, tileGroups) + (p - 2 * j)] =
            row[g * width + p];
      }
    }
  }
  return std::nullopt;
}

void liftActivations(const uint16_t *x, int64_t m, int64_t k, int familyN,
                     uint16_t *lifted, int64_t tileGroups) {
  assert(isSupportedFamily(familyN) && "unsupported sliding family");
  const SlideShape shape = getSlideShape(m, k, familyN, tileGroups);
  for (int64_t t = 0; t < m; ++t) {
    const uint16_t *in = x + t * k;
    uint16_t *out = lifted + t * shape.liftedCols;
    for (int64_t c = 0; c < shape.liftedCols; ++c) {
      int64_t source = liftedSourceColumn(c, familyN, tileGroups);
      out[c] = source < k ? in[source] : 0;
    }
  }
}

void pruneToSliding(uint16_t *dense, int64_t rows, int64_t cols, int familyN,
                    bool isBF16) {
  assert(isSupportedFamily(familyN) && "unsupported sliding family");
  if (!isSupportedFamily(familyN))
    return; // Release builds: never loop on a zero-width group.
  const int64_t width = groupWidth(familyN);
  const int keep = capacity(familyN);
  for (int64_t r = 0; r < rows; ++r) {
    uint16_t *row = dense + r * cols;
    for (int64_t start = 0; start < cols; start += width) {
      const int real = static_cast<int>(std::min(width, cols - start));
      if (real <= keep)
        continue; // Nothing to prune.
      float mag[kMaxGroupWidth];
      int order[kMaxGroupWidth];
      for (int i = 0; i < real; ++i) {
        mag[i] =
            isBF16 ? bf16ToFloat(row[start + i]) : halfToFloat(row[start + i]);
        order[i] = i;
      }
      // Largest first; the stable sort keeps the lower index first on ties.
      std::stable_sort(order, order + real, [&](int a, int b) {
        return largerMagnitude(mag[a], mag[b]);
      });
      for (int rank = keep; rank < real; ++rank)
        row[start + order[rank]] = 0;
    }
  }
}

} // namespace sparseopt
