//===- ConstantWeights.h - compile-time weight compression ------*- C++ -*-===//
//
// Weights that are constants are compressed when the program is compiled:
// sgpu.compress of a constant becomes sgpu.assemble of two constants (values
// and metadata) computed by the 2:4 format utility. Weights that are
// arguments are compressed when the program's params are bound.
//
//===----------------------------------------------------------------------===//

#ifndef SPARSEOPT_DIALECT_SGPU_CONSTANTWEIGHTS_H
#define SPARSEOPT_DIALECT_SGPU_CONSTANTWEIGHTS_H

#include "sparse-opt/Dialect/SGPU/SGPU.h"

namespace mlir {
namespace sgpu {

/// If the weight of `op` is a constant (`dense` or `dense_resource`),
/// replaces `op` by sgpu.assemble of its compressed values and metadata and
/// sets `*folded`. Fails, with an error at the constant naming the first row
/// and group that break 2:4 (and a note at `op`), when the data is not 2:4.
/// A weight that is not a constant is left alone (success, not folded).
LogicalResult foldConstantCompress(CompressOp op, bool *folded = nullptr);

/// The same for sgpu.nm_decompose: a constant (2N-2):2N weight is cut into
/// overlapping 2:4 windows over the lifted K (the greedy assignment of
/// lib/Formats/SlidingWindow.cpp) and compressed; the error names the first
/// row and group with more than 2N-2 nonzeros.
LogicalResult foldConstantDecompose(NMDecomposeOp op, bool *folded = nullptr);

/// foldConstantCompress / foldConstantDecompose on every sgpu.compress and
/// sgpu.nm_decompose nested in `root`.
LogicalResult foldConstantCompresses(Operation *root);

/// The same constant weight without its structured-sparsity encoding (a new
/// arith.constant at `b`'s insertion point, same bits), for a weight that is
/// kept dense; failure when `weight` is not a constant with readable 16-bit
/// data.
FailureOr<Value> plainConstantWeight(OpBuilder &b, Value weight);

/// Whether `v` is an argument of a func.func's entry block that exactly one
/// op reads: a weight the runtime binds once as a param, which the prepare
/// stage compresses when that op is its compression (WeightPrepare.cpp,
/// sgpu-fuse-sibling-spmm).
bool isWeightArgument(Value v);

} // namespace sgpu
} // namespace mlir

#endif // SPARSEOPT_DIALECT_SGPU_CONSTANTWEIGHTS_H
