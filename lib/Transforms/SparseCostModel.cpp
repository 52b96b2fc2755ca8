//===- SparseCostModel.cpp - sparse kernel or library GEMM ----------------===//
//
// The rules, from the H200 benchmark grid (fp16 and bf16, one process,
// CUDA-graph replay; N x K in {14336 x 4096, 4096 x 14336, 18944 x 3584},
// M in {16, 128, 512, 4096, 16384}; docs/performance.md, "Sparse matmul on
// sm_90a: the TMA warpgroup kernel (2:4 and (2N-2):2N)"). Every timed case
// of that grid is a row of SparseCostTables.inc (bench/spmm/cost_tables.py
// writes it from bench/results/); the remarks quote their ranges, and a
// unit test checks every row against these rules within kMeasuredTie:
//
//  * 2:4 beats cuBLAS at every measured shape: always kept.
//  * 4:6 and 6:8 win at M <= 16 when the grid is at most one wave of
//    128-row blocks (6:8 only from half the multiprocessors: on the 32
//    blocks of the split-K grid it tied, and ties go to the library); with
//    more blocks than multiprocessors (two waves) and at M = 128 and 512
//    they lose: the windows multiply the MMA work by 2(N-1)/N and the lift
//    is a pass over memory.
//  * From 4096 tokens they win on the layers with N > K, and tie or lose
//    where N < K (a 32-block grid and the longest lift). Between 512 and
//    4096 tokens nothing was measured; the library GEMM stays.
//  * 8:10 and wider: the library GEMM everywhere (8:10 ties at best, from
//    4096 tokens with N > K, and loses elsewhere).
//  * Weights smaller than the measured ones (below kMeasuredWeightElements:
//    the attention projections): between 16 and 4096 tokens every pattern
//    but 2:4 lost or tied on every measured shape, and a smaller weight
//    has a shorter GEMM beside the same lift, so the library GEMM runs
//    them there (on the H100 the 8B model's 6:8 k and v projections at
//    M = 2048 took 36 us against cuBLAS's 27, q and o 105 against 106:
//    docs/performance.md). At M <= 16 and from 4096 tokens they keep the
//    declared pattern, deliberately without the measured-size conditions
//    (blocks per wave, N > K): nothing was measured at their sizes there,
//    and the 8B model's 6:8 decode, whose projections stay sparse,
//    measured 1.08x our dense program.
//
//===----------------------------------------------------------------------===//

#include "SparseCostModel.h"
#include "sparse-opt/Conversion/DeviceInfo.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <vector>

#include <string>

using namespace mlir;
using namespace mlir::sgpu;

namespace {
constexpr int64_t kBlockRows = 128; // weight rows per block of the kernel
constexpr int64_t kLargeTokens = 4096; // the measured prefill sizes
constexpr int64_t kSmallTokens = 16;   // the measured decode sizes

const MeasuredCase kMeasured[] = {
#define SPARSEOPT_MEASURED(pattern, m, n, k, bf16, speedup)                    \
  {pattern, m, n, k, bf16 != 0, speedup},
#include "SparseCostTables.inc"
#undef SPARSEOPT_MEASURED
};

/// The rules: whether the sparse kernel is kept for a measured-size weight
/// on sm_90a with `numSMs` multiprocessors.
bool keepsSparse(int64_t numSMs, int64_t m, int64_t n, int64_t k,
                 unsigned patternM) {
  int64_t blocks = (n + kBlockRows - 1) / kBlockRows;
  if (patternM == 4)
    return true;
  // At M <= 16 on one wave: 4:6 with or without split-K; 6:8 only on
  // half to all of the multiprocessors' blocks, as on the split-K grid it
  // measured a tie, and ties go to the library.
  if (patternM == 6 && m <= 16 && blocks <= numSMs)
    return true;
  if (patternM == 8 && m <= 16 && blocks >= numSMs / 2 && blocks <= numSMs)
    return true;
  // From 4096 tokens where N > K (the lift is short beside the GEMM).
  return (patternM == 6 || patternM == 8) && m >= kLargeTokens && n > k;
}

/// "0.72-1.10x of the library GEMM (median 0.91x over the 20 measured
/// shapes<suffix>)": the range and median of the measured speedups of
/// `patternM` whose case `covered` accepts, from SparseCostTables.inc.
std::string measuredRange(unsigned patternM,
                          llvm::function_ref<bool(const MeasuredCase &)> covered,
                          llvm::StringRef suffix) {
  std::vector<double> ratios;
  for (const MeasuredCase &c : kMeasured)
    if (c.patternM == patternM && covered(c))
      ratios.push_back(c.speedup);
  if (ratios.empty())
    return "no measurement";
  llvm::sort(ratios);
  double median = ratios.size() % 2
                      ? ratios[ratios.size() / 2]
                      : (ratios[ratios.size() / 2 - 1] +
                         ratios[ratios.size() / 2]) /
                            2;
  return llvm::formatv("{0:F2}-{1:F2}x of the library GEMM (median {2:F2}x "
                       "over the {3} measured shapes{4})",
                       ratios.front(), ratios.back(), median, ratios.size(),
                       suffix)
      .str();
}

/// The measured cases that the rules give to the library GEMM (at the
/// measured part's multiprocessor count).
std::string measuredLosses(unsigned patternM) {
  int64_t measuredSMs = KernelBudget().numSMs;
  return measuredRange(
      patternM,
      [&](const MeasuredCase &c) {
        return !keepsSparse(measuredSMs, c.m, c.n, c.k, c.patternM);
      },
      " this rule covers");
}

/// The measured cases between the decode and the large prefill sizes.
std::string measuredBetween(unsigned patternM) {
  return measuredRange(
      patternM,
      [](const MeasuredCase &c) {
        return c.m > kSmallTokens && c.m < kLargeTokens;
      },
      "");
}

} // namespace

llvm::ArrayRef<MeasuredCase> mlir::sgpu::measuredCases() { return kMeasured; }

SparseOrDense mlir::sgpu::chooseSparseOrDense(llvm::StringRef chip,
                                              int64_t numSMs, int64_t m,
                                              int64_t n, int64_t k,
                                              unsigned patternM) {
  SparseOrDense keep;
  if (chip != "sm_90a")
    return keep;
  int64_t blocks = (n + kBlockRows - 1) / kBlockRows;
  std::string shape = "M = " + std::to_string(m) + ", " +
                      std::to_string(blocks) + " blocks of 128 weight rows";
  SparseOrDense dense;
  dense.dense = true;
  std::string name = patternM == 6   ? "4:6"
                     : patternM == 8 ? "6:8"
                     : patternM == 10
                         ? "8:10"
                         : std::to_string(patternM - 2) + ":" +
                               std::to_string(patternM);
  if (n * k < kMeasuredWeightElements) {
    // A smaller weight than the measured ones: the library GEMM between
    // the decode and the large prefill sizes (see the file comment).
    if (patternM == 4 || m <= kSmallTokens || m >= kLargeTokens)
      return keep;
    unsigned measured = std::min(patternM, 10u);
    dense.reason = "between 16 and 4096 tokens the " +
                   (measured == patternM ? name : std::string("8:10")) +
                   " kernel measured " + measuredBetween(measured) +
                   ", and a weight smaller than the measured ones (" +
                   std::to_string(n) + " x " + std::to_string(k) +
                   ") has a shorter GEMM beside the same lift (" + shape + ")";
    return dense;
  }
  if (keepsSparse(numSMs, m, n, k, patternM))
    return keep;
  if (patternM == 6 || patternM == 8)
    dense.reason = "the " + name + " kernel measured " +
                   measuredLosses(patternM) +
                   "; it is kept only at M <= 16 on at "
                   "most one wave of blocks (6:8: " +
                   std::to_string(numSMs / 2) + " to " +
                   std::to_string(numSMs) +
                   " blocks) or at M >= 4096 with N > K (" + shape + ")";
  else
    dense.reason = "the 8:10 kernel measured " + measuredLosses(10) +
                   ", and wider patterns do more MMA work still (" + shape +
                   ")";
  return dense;
}
