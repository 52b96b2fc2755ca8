//===- WeightPrepare.h - weight arguments compressed on the GPU -*- C++ -*-===//
//
// A sparse weight that the program receives as an argument (not a constant)
// is compressed into the spmm kernels' format by a generated kernel that runs
// once, when the runtime binds the weight (the program's prepare stage),
// with a status word that names the first group breaking the pattern.
//
//===----------------------------------------------------------------------===//

#ifndef SPARSEOPT_LIB_CONVERSION_WEIGHTPREPARE_H
#define SPARSEOPT_LIB_CONVERSION_WEIGHTPREPARE_H

#include "KernelSink.h"
#include "sparse-opt/Dialect/SGPU/SGPU.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Transforms/DialectConversion.h"

namespace mlir {
namespace sgpu {

/// Whether `op` (sgpu.compress or sgpu.nm_decompose) compresses an argument
/// of the enclosing function that nothing else reads, or a concatenation of
/// such arguments (preparedWeightParts): a weight the runtime can bind once
/// and prepare.
bool isPreparableWeight(Operation *op);

/// The weight arguments `op` compresses: the one it reads, or those of the
/// `tensor.concat` along the rows that it reads (sgpu-fuse-sibling-spmm),
/// each read only there and a whole number of 16-row tiles; empty when the
/// weight is not preparable.
SmallVector<Value> preparedWeightParts(Operation *op);

/// Erases the tensor.concat and tensor.cast ops left without users once
/// the concatenated weights they built are prepared part by part: nothing
/// reads them, and they must not become copy kernels.
void eraseDeadWeightConcats(ModuleOp module);

/// The patterns replacing sgpu.compress and sgpu.nm_decompose of a weight
/// argument (isPreparableWeight) by a launch of a generated kernel
/// `sgpu_prepare_<n>` in the prepare stage, an sgpu.weight_check of its
/// status word and sgpu.assemble of the compressed values and metadata it
/// writes.
void populateWeightPreparePatterns(RewritePatternSet &patterns,
                                   KernelSink &sink);

/// The CPU reference of the same: `op` becomes loops running the kernel's
/// per-(row, group) work, a printed message naming the first row and group
/// that break the pattern (if any), and sgpu.assemble of the result.
void lowerWeightPrepareToLoops(Operation *op);

} // namespace sgpu
} // namespace mlir

#endif // SPARSEOPT_LIB_CONVERSION_WEIGHTPREPARE_H
