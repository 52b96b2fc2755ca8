//===- SparseCostModel.cpp - sparse kernel or library GEMM ----------------===//
//
// The rules, measured on an H200 (fp16 and bf16, one process, CUDA-graph
// replay; N x K in {14336 x 4096, 4096 x 14336, 18944 x 3584}, M in {16,
// 128, 512, 4096, 16384}; docs/performance.md, "Sliding-window sparse
// GEMM"):
//
//  * 2:4 beats cuBLAS at every M >= 512 (1.05-1.52x) and at M <= 128 when
//    the weight has at least 66 blocks of 128 rows, half the 132
//    multiprocessors (1.03-1.53x); with fewer blocks (N = 4096) it measured
//    0.83-0.90x at M <= 128: the grid leaves most multiprocessors idle.
//  * 4:6, 6:8 and 8:10 lose to cuBLAS at every M >= 128 (0.50-0.92x): the
//    windows multiply the MMA work by 2(N-1)/N and the lift is a separate
//    pass over memory. At M = 16 only 4:6 on a one-wave grid (66..132
//    blocks) wins (1.05-1.22x); 6:8 and 8:10 there are even (0.97-1.06x)
//    and the library is kept.
//
//===----------------------------------------------------------------------===//

#include "SparseCostModel.h"

#include <string>

using namespace mlir;
using namespace mlir::sgpu;

namespace {
constexpr int64_t kBlockRows = 128; // weight rows per block of the kernel
constexpr int64_t kNumSMs = 132;    // H100 / H200 SXM
} // namespace

SparseOrDense mlir::sgpu::chooseSparseOrDense(llvm::StringRef chip, int64_t m,
                                              int64_t n, int64_t k,
                                              unsigned patternM) {
  SparseOrDense keep;
  if (chip != "sm_90a" || n * k < kMeasuredWeightElements)
    return keep;
  int64_t blocks = (n + kBlockRows - 1) / kBlockRows;
  std::string shape = "M = " + std::to_string(m) + ", " +
                      std::to_string(blocks) + " blocks of 128 weight rows";
  SparseOrDense dense;
  dense.dense = true;
  if (patternM == 4) {
    if (m > 128 || blocks >= kNumSMs / 2)
      return keep;
    dense.reason = "the 2:4 kernel measured 0.83-0.90x of the library GEMM "
                   "at M <= 128 on fewer than 66 blocks of 128 weight rows (" +
                   shape + ")";
    return dense;
  }
  if (patternM == 6 && m <= 16 && blocks >= kNumSMs / 2 && blocks <= kNumSMs)
    return keep;
  dense.reason = "the sliding-window kernels measured 0.50-0.92x of the "
                 "library GEMM at M >= 128 and at most even at M = 16 "
                 "outside 4:6 on one wave of blocks (" +
                 shape + ")";
  return dense;
}
