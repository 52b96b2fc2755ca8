//===- SparseCostModel.cpp - sparse kernel or library GEMM ----------------===//
//
// The rules, measured on an H200 (fp16 and bf16, one process, CUDA-graph
// replay; N x K in {14336 x 4096, 4096 x 14336, 18944 x 3584}, M in {16,
// 128, 512, 4096, 16384}; docs/performance.md, "Sparse matmul on sm_90a:
// the TMA warpgroup kernel (2:4 and (2N-2):2N)" and its "Sparse or dense:
// what the compiler runs at M ≤ 128"; split-K for small grids included):
//
//  * 2:4 beats cuBLAS at every measured shape (1.03-1.48x at M <= 128,
//    1.23-1.63x at M >= 512 with the clusters of two from 4096 tokens):
//    always kept.
//  * 4:6 and 6:8 win only at M = 16 when the grid is at most one wave of
//    128-row blocks (N = 14336: 112 blocks; N = 4096: 32 blocks, split-K):
//    4:6 1.04-1.13x, 6:8 1.02-1.06x on 112 blocks but a tie (0.997-1.03x)
//    on the split-K grid, which therefore goes to the library. With more blocks than multiprocessors
//    (N = 18944: 148 blocks, two waves) they lose at M = 16 (0.89-0.95x),
//    and they lose at M = 128 and 512 (0.65-0.98x): the windows multiply
//    the MMA work by 2(N-1)/N and the lift is a separate pass over memory.
//  * From 4096 tokens (with the vectorized lift kernel and the TMA-store
//    epilogue, bench/results/spmm_issue_{a,b}_h200.json) 6:8 measured
//    1.02-1.14x and 4:6 0.97-1.10x on the layers with N > K (14336 x 4096,
//    18944 x 3584), 6:8 0.95-1.04x and 4:6 0.95-0.98x on 4096 x 14336
//    (N < K: a 32-block grid and the longest lift): kept where N > K, the
//    library GEMM elsewhere. With the split 6:8 lift (bench/results/
//    spmm_issue_slide_h200.json, spmm_lift_split_h200.json) 6:8 measured
//    1.04-1.17x with N > K and 0.96-1.10x on 4096 x 14336: still a tie
//    there, which goes to the library. Between 512 and 4096 tokens nothing
//    was measured; the library GEMM stays.
//  * 8:10 and wider lose everywhere measured (0.57-0.95x).
//
//===----------------------------------------------------------------------===//

#include "SparseCostModel.h"

#include <string>

using namespace mlir;
using namespace mlir::sgpu;

namespace {
constexpr int64_t kBlockRows = 128; // weight rows per block of the kernel
constexpr int64_t kLargeTokens = 4096; // the measured prefill sizes
} // namespace

SparseOrDense mlir::sgpu::chooseSparseOrDense(llvm::StringRef chip,
                                              int64_t numSMs, int64_t m,
                                              int64_t n, int64_t k,
                                              unsigned patternM) {
  SparseOrDense keep;
  if (chip != "sm_90a" || n * k < kMeasuredWeightElements)
    return keep;
  int64_t blocks = (n + kBlockRows - 1) / kBlockRows;
  std::string shape = "M = " + std::to_string(m) + ", " +
                      std::to_string(blocks) + " blocks of 128 weight rows";
  if (patternM == 4)
    return keep;
  SparseOrDense dense;
  dense.dense = true;
  // At M <= 16 on one wave: 4:6 with or without split-K; 6:8 only on
  // half to all of the multiprocessors' blocks (66..132 on the H200:
  // 1.02-1.06x), as with split-K (32 blocks) it measured
  // 0.997-1.03x, a tie, and ties go to the library.
  if (patternM == 6 && m <= 16 && blocks <= numSMs)
    return keep;
  if (patternM == 8 && m <= 16 && blocks >= numSMs / 2 && blocks <= numSMs)
    return keep;
  if ((patternM == 6 || patternM == 8) && m >= kLargeTokens && n > k)
    return keep;
  if (patternM == 6 || patternM == 8)
    dense.reason = "the 4:6 and 6:8 kernels measured 0.64-1.02x of the "
                   "library GEMM unless M <= 16 on at most one wave of "
                   "blocks (6:8: " +
                   std::to_string(numSMs / 2) + " to " +
                   std::to_string(numSMs) +
                   " blocks) or M >= 4096 with N > K (" +
                   shape + ")";
  else
    dense.reason = "the 8:10 kernel measured 0.57-0.95x of the library "
                   "GEMM at every measured shape, and wider patterns do "
                   "more MMA work still (" +
                   shape + ")";
  return dense;
}
