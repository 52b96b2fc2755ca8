//===- SpmmMMA.h - the warp-level mma.sp spmm kernel ------------*- C++ -*-===//
//
// The spmm kernel of kernel=mma (any chip from sm_80): each warp owns 16
// feature rows (one MMA M tile) and 64 tokens (8 MMA N tiles of 8), four
// warps per block. (SpmmMMA.cpp)
//
//===----------------------------------------------------------------------===//

#ifndef SPARSEOPT_CONVERSION_SPMMMMA_H
#define SPARSEOPT_CONVERSION_SPMMMMA_H

#include "SpmmWGMMA.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"

namespace mlir {
namespace sgpu {

inline constexpr int64_t kMmaSpmmWarps = 4;
inline constexpr int64_t kMmaSpmmRowsPerWarp = 16;
inline constexpr int64_t kMmaSpmmTokensPerBlock = 64;

/// Builds the body of `func` (arguments: x, values, metadata, [bias], y):
/// a grid of ceil(M / 64) x ceil(paddedN / 64) blocks of 128 threads.
void buildMmaSpmmKernel(OpBuilder &b, Location loc, const SpmmShape &s,
                        gpu::GPUFuncOp func);

} // namespace sgpu
} // namespace mlir

#endif // SPARSEOPT_CONVERSION_SPMMMMA_H
