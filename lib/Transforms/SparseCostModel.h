//===- SparseCostModel.h - sparse kernel or library GEMM -------*- C++ -*-===//
//
// Whether a matmul whose weight declares structured sparsity runs faster on
// the generated sparse kernel or on the dense library GEMM, from the H200
// measurements in docs/performance.md (bench/results/spmm_issue_*.json).
// sgpu-slide-sparse{policy=auto} consults it.
//
//===----------------------------------------------------------------------===//

#ifndef SPARSEOPT_LIB_TRANSFORMS_SPARSECOSTMODEL_H
#define SPARSEOPT_LIB_TRANSFORMS_SPARSECOSTMODEL_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <string>

namespace mlir {
namespace sgpu {

/// The choice for one matmul Y[M, N] = X[M, K] . W[N, K]^T.
struct SparseOrDense {
  bool dense = false;
  /// Why the library GEMM is faster (the measurement behind the rule);
  /// empty when the sparse kernel is kept.
  std::string reason;
};

/// `patternM` is the group size 2N of an (2N-2):2N pattern (4 for 2:4).
/// Only the measured target (sm_90a, where the sparse kernel is the TMA
/// wgmma kernel) can choose dense. Weights of the measured size (at least
/// kMeasuredWeightElements) follow the measured rules; smaller ones keep
/// the declared sparsity at M <= 16 and M >= 4096 and take the library
/// GEMM between (except 2:4, always kept). `numSMs` is the device's
/// multiprocessor count (DeviceInfo.h): the rules speak of grids of one
/// wave.
SparseOrDense chooseSparseOrDense(llvm::StringRef chip, int64_t numSMs,
                                  int64_t m, int64_t n, int64_t k,
                                  unsigned patternM);

/// One timed case of the benchmark grid (bench/results/, written into
/// SparseCostTables.inc by bench/spmm/cost_tables.py): the sparse kernel's
/// time over cuBLAS's for pattern (patternM-2):patternM at M x N x K.
struct MeasuredCase {
  unsigned patternM;
  int64_t m, n, k;
  bool bf16;
  double speedup;
};

/// Every measured case the rules and their remarks are drawn from.
llvm::ArrayRef<MeasuredCase> measuredCases();

/// How far a measured case may lie on the other side of 1.0x from the
/// rule's choice: the records' run-to-run and f16/bf16 noise (the widest,
/// 6:8 at 4096 x 4096 x 14336: 1.10x in f16 and 0.96x in bf16), and ties
/// go to the library GEMM.
inline constexpr double kMeasuredTie = 0.12;

/// The smallest weight (N * K elements) the rules were measured on is 58.7 M
/// elements (14336 x 4096); below 32 M elements only the token count
/// decides (chooseSparseOrDense).
inline constexpr int64_t kMeasuredWeightElements = int64_t(1) << 25;

} // namespace sgpu
} // namespace mlir

#endif // SPARSEOPT_LIB_TRANSFORMS_SPARSECOSTMODEL_H
