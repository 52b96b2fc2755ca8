//===- SplitKRule.h - when the sm_90a TMA spmm kernel splits K --*- C++ -*-===//
//
// The rule the TMA kernel's configuration (getTmaSpmmConfig) splits K by,
// shared with sgpu-fuse-sibling-spmm, which fuses sibling GEMMs only where
// the fused GEMM still splits (its reduction then writes the slices).
//
//===----------------------------------------------------------------------===//

#ifndef SPARSEOPT_CONVERSION_SPLITKRULE_H
#define SPARSEOPT_CONVERSION_SPLITKRULE_H

#include <algorithm>
#include <cstdint>

namespace mlir {
namespace sgpu {
namespace tma {

constexpr int64_t kBlockRows = 128; // features per block (2 x wgmma M)
constexpr int64_t kKTile = 64;      // logical K per stage
constexpr int64_t kSteps = kKTile / 32; // k32 wgmmas per stage
constexpr int64_t kFusedLiftSteps = 3;  // with the 6:8 lift in the kernel
constexpr int64_t kMinSplitTiles = 8; // k-tiles per split-K block, at least

/// The k-tiles of a weight of `paddedK` (lifted) columns, `steps` k32 steps
/// each.
inline int64_t kTilesOf(int64_t paddedK, int64_t steps) {
  return (paddedK / 32 + steps - 1) / steps;
}

/// The splits of K for a grid of `blocks` blocks over `kTiles` k-tiles on
/// `numSMs` multiprocessors: where the grid cannot fill half of them, as
/// many as bring it to one wave, each of at least kMinSplitTiles; else 1.
inline int64_t splitKCount(int64_t blocks, int64_t kTiles, int64_t numSMs) {
  if (blocks >= numSMs / 2)
    return 1;
  return std::max<int64_t>(
      1, std::min(numSMs / blocks, kTiles / kMinSplitTiles));
}

} // namespace tma
} // namespace sgpu
} // namespace mlir

#endif // SPARSEOPT_CONVERSION_SPLITKRULE_H
