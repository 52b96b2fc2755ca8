//===- SpmmWGMMA.h - warpgroup sparse-MMA spmm kernel -----------*- C++ -*-===//
//
// The sgpu.spmm kernel for sm_90a built on the warpgroup-level sparse tensor
// core instruction wgmma.mma_async.sp (`convert-sgpu-to-gpu{kernel=wgmma}`).
// SGPUToGPU.cpp creates the gpu.func and its launch; this file fills in the
// body and says how the kernel is launched.
//
//===----------------------------------------------------------------------===//

#ifndef SPARSEOPT_LIB_CONVERSION_SPMMWGMMA_H
#define SPARSEOPT_LIB_CONVERSION_SPMMWGMMA_H

#include "sparse-opt/Dialect/SGPU/SGPU.h"

#include "mlir/IR/Builders.h"

namespace mlir {
namespace gpu {
class GPUFuncOp;
} // namespace gpu

namespace sgpu {

/// Everything a spmm kernel generator needs to know about one sgpu.spmm:
/// Y[m, n] = X[m, k] . W[n, k]^T with W compressed (values + metadata in the
/// layout of !sgpu.compressed, padded to paddedN x paddedK).
struct SpmmShape {
  int64_t m, n, k;          // logical sizes
  int64_t paddedN, paddedK; // compressed-weight padding (16, 32)
  Type elementType;         // f16 or bf16
  Type resultType;          // f16, bf16 or f32
  Activation activation;
  bool hasBias;             // a bias vector argument follows the metadata
};

/// Launch geometry of the wgmma kernel for one spmm: one warpgroup per
/// block, a 64-feature x `tokensPerBlock` tile.
struct WgmmaSpmmLaunch {
  int64_t tokensPerBlock; ///< N of the wgmma (64 or 128).
  int64_t threads;        ///< Threads per block (128).
  int64_t gridX;          ///< Token blocks.
  int64_t gridY;          ///< Feature blocks (64 rows each).
};

WgmmaSpmmLaunch getWgmmaSpmmLaunch(const SpmmShape &s);

/// Builds the body of `func` (arguments: x, values, metadata, [bias], y) and
/// its workgroup (shared memory) buffers.
void buildWgmmaSpmmKernel(OpBuilder &b, Location loc, const SpmmShape &s,
                          gpu::GPUFuncOp func);

} // namespace sgpu
} // namespace mlir

#endif // SPARSEOPT_LIB_CONVERSION_SPMMWGMMA_H
