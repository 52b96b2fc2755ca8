//===- SpmmTMALayout.h - the TMA kernel's constants and stages --*- C++ -*-===//
//
// What the TMA pipeline's kernel builder (SpmmTMA.cpp) and its tile table
// (SpmmTMAConfig.cpp) share: the kernel's fixed sizes and the byte layout
// of a shared-memory stage in each mode.
//
//===----------------------------------------------------------------------===//

#ifndef SPARSEOPT_LIB_CONVERSION_SPMMTMALAYOUT_H
#define SPARSEOPT_LIB_CONVERSION_SPMMTMALAYOUT_H

#include "SpmmTMA.h"
#include "sparse-opt/Conversion/SplitKRule.h"

namespace mlir {
namespace sgpu {
namespace tma {

// kBlockRows, kKTile, kSteps and kMinSplitTiles: SplitKRule.h.

constexpr int64_t kThreads = 384;
constexpr int64_t kConsumerWarps = 8; // two consumer warpgroups
constexpr int64_t kABytes = kBlockRows * kKTile / 2 * 2; // 8 KiB
constexpr int64_t kEWords = kBlockRows / 16 * kSteps * 16; // 256 words
constexpr int64_t kEBytes = kEWords * 4;                   // 1 KiB
constexpr int64_t kAlignSlack = 1024;
constexpr int64_t kMaxStages = 8;
constexpr int64_t kMaxStages256 = 4; // a fifth 41 KiB stage measured no faster
/// The TMA-store epilogue's smallest box: 16 tokens (one stmatrix.x4 per
/// warp).
constexpr int64_t kMinYBox = 16;
/// The time of a 128-token tile relative to a 256-token one (measured).
constexpr double kHalfTileCost = 0.57;
constexpr int64_t kGroup = 8; // token blocks per group of the block order
constexpr int64_t kMaxSplits = SpmmConfigAttr::kMaxSplits;
constexpr int64_t kProducerRegs = 40, kConsumerRegs = 232;
/// With the fused lift the producer warps also gather (a batch of loads in
/// flight): 56 registers for them, 224 for the consumers (the kernel needs
/// 168), 128 * 56 + 256 * 224 = 64512 of the 65536.
constexpr int64_t kGatherProducerRegs = 56, kGatherConsumerRegs = 224;

inline int64_t bBytes(int64_t bn) { return bn * kKTile * 2; }

/// Byte offsets of one stage's pieces, each 1024-aligned so that the
/// swizzle patterns start on their boundary. Plain: [A | X | E]. Fused lift:
/// [A steps 0-1 (SW64) | A step 2 (32 B rows, SW32) | X (SW128) | O: the
/// gathered step-2 columns, BN rows x 64 B (SW64) | E (3 steps)].
struct StageLayout {
  int64_t a = 0, a2 = 0, x = 0, o = 0, e = 0, stride = 0;
  /// Bytes the stage's TMA loads bring (the mbarrier's transaction count).
  int64_t txBytes = 0;
};

/// Gathered mode: [A 64 rows x 128 B | B 256 rows x 128 B (rows) or 64 K
/// rows x 512 B (kRows)], both 128B-swizzled; the A box is the only TMA
/// load of a stage.
constexpr int64_t kGatherABytes = kTmaGatherRows * kKTile * 2;           // 8 KiB
constexpr int64_t kGatherBBytes = kTmaGatherCols * kKTile * 2;           // 32 KiB
/// Gathered kRows mode: one MN-major atom column (64 B columns) of the
/// stage's 64 K rows.
constexpr int64_t kGatherAtomColumnBytes = kKTile * 128;                 // 8 KiB
constexpr int64_t kGatherMaxStages = 5;

inline StageLayout stageLayout(int64_t bn, bool fused, bool dense = false,
                        bool gather = false) {
  StageLayout l;
  if (gather) {
    l.x = kGatherABytes;
    l.stride = kGatherABytes + kGatherBBytes;
    l.txBytes = kGatherABytes;
    return l;
  }
  if (dense) {
    // [A 128 rows x 128 B | B BN rows x 128 B], both 128B-swizzled.
    l.x = kBlockRows * kKTile * 2;
    l.stride = l.x + bBytes(bn);
    l.txBytes = l.stride;
    return l;
  }
  if (!fused) {
    l.x = kABytes;
    l.e = l.x + bBytes(bn);
    l.stride = l.e + kEBytes;
    l.txBytes = l.stride;
    return l;
  }
  int64_t eBytes = kBlockRows / 16 * 3 * 16 * 4; // 1.5 KiB
  l.a2 = kABytes;
  l.x = l.a2 + kABytes / 2;
  l.o = l.x + bBytes(bn);
  l.e = l.o + bBytes(bn) / 2;
  l.stride = (l.e + eBytes + 1023) / 1024 * 1024;
  l.txBytes = kABytes + kABytes / 2 + bBytes(bn) + eBytes;
  return l;
}

inline int64_t stageBytes(int64_t bn, bool fused = false,
                          bool dense = false) {
  return stageLayout(bn, fused, dense).stride;
}

/// Producer warps 1..3 gather the fused lift's step-2 columns, in batches
/// of this many units per asm statement (8 registers each).
constexpr int64_t kGatherThreads = 96;
/// Gathered mode: the producer warpgroup's threads all copy B's rows.
constexpr int64_t kGatherCopyThreads = 128;
/// Gathered mode: 16 copies of 16 bytes per producer thread and stage.
constexpr int64_t kGatherCopiesPerThread =
    kGatherBBytes / 16 / kGatherCopyThreads;
constexpr int64_t kGatherBatch = 4;

} // namespace tma
} // namespace sgpu
} // namespace mlir

#endif // SPARSEOPT_LIB_CONVERSION_SPMMTMALAYOUT_H
