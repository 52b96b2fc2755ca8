//===- GPUKernel.h - creating and launching generated kernels ---*- C++ -*-===//
//
// The few steps every generated one-dimensional kernel shares: a gpu.func
// marked as a kernel with its known block size, static shared-memory
// (workgroup) buffers, and a launch of it with a 1-D grid.
//
//===----------------------------------------------------------------------===//

#ifndef SPARSEOPT_LIB_CONVERSION_GPUKERNEL_H
#define SPARSEOPT_LIB_CONVERSION_GPUKERNEL_H

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"

#include <string>

namespace mlir {
namespace sgpu {

/// Elements of a 16-bit type per vector access along a row of `n`: the
/// widest of 8 (16 bytes), 4, 2, 1 dividing `n`, so that every vector of the
/// row is aligned to its size when rows start aligned.
inline int64_t rowVectorWidth(int64_t n) {
  return n % 8 == 0 ? 8 : n % 4 == 0 ? 4 : n % 2 == 0 ? 2 : 1;
}

/// Warp collectives on a value of every lane (32 lanes, all active).
/// The inclusive prefix sum over the lanes of an integer `v`: lane l gets
/// v_0 + ... + v_l (five shuffles up).
Value warpInclusiveSum(OpBuilder &b, Location loc, Value v);
/// The sum of a float `v` over the warp, in every lane (five butterfly
/// shuffles; the order of the additions is the same in every lane).
Value warpAllSum(OpBuilder &b, Location loc, Value v);

/// For a 32-bit word `w` holding two 16-bit floats: bit 15 (31) set where
/// the low (high) value is not +-0 ("une 0.0", as the reference; NaN is
/// nonzero), every other bit clear: ((w & 0x7fff7fff) + 0x7fff7fff) &
/// 0x80008000 (a half's magnitude bits carry into its top bit, never into
/// the other half).
Value nonzeroHalves(OpBuilder &b, Location loc, Value w);

/// The kernel's dynamic shared memory (gpu.dynamic_shared_memory, as
/// bytes) and its address in the shared window (an index; the launch sets
/// the size).
struct DynamicShared {
  Value bytes; ///< memref<?xi8, workgroup>
  Value base;  ///< its address as an index
};
DynamicShared dynamicShared(OpBuilder &b, Location loc);

/// A rank-1 shared-memory buffer of `n` elements of `et`.
MemRefType workgroupBuffer(OpBuilder &b, int64_t n, Type et);

/// Appends a kernel `name(args)` with the `workgroup` buffers and a known
/// block size of `threads` to `kb`'s current block (a gpu.module body),
/// registers it in `symbols` and leaves `kb` at the start of its body.
gpu::GPUFuncOp createKernel(OpBuilder &kb, Location loc, SymbolTable &symbols,
                            const std::string &name, ArrayRef<Type> args,
                            ArrayRef<Type> workgroup, int64_t threads);

/// Ends `func`'s body with gpu.return.
void finishKernel(OpBuilder &kb, Location loc, gpu::GPUFuncOp func);

/// Launches `func` at `b` on `grid` blocks of `threads` threads with
/// `dynamicSharedBytes` of dynamic shared memory (gpu.dynamic_shared_memory
/// in the kernel); returns the launch (callers may mark it as a
/// prepare-stage step).
gpu::LaunchFuncOp launchKernel(OpBuilder &b, Location loc,
                               gpu::GPUFuncOp func, int64_t grid,
                               int64_t threads, ValueRange args,
                               int64_t dynamicSharedBytes = 0);

/// Marks `launch` as a persistent grid that the runtime sizes when the
/// program loads (SGPUDialect::kPersistentGridAttr): `cluster` * min(`units`,
/// (multiprocessors - `reserved`) / `cluster`) blocks, `units` counting the
/// clusters of work. The kernel must stride by its launch's grid.
void setPersistentGrid(gpu::LaunchFuncOp launch, int64_t units,
                       int64_t cluster, int64_t reserved);

} // namespace sgpu
} // namespace mlir

#endif // SPARSEOPT_LIB_CONVERSION_GPUKERNEL_H
