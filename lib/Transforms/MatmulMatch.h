//===- MatmulMatch.h - recognizing Y = X . W^T in linalg -------*- C++ -*-===//
//
// Importers write a torch Linear, Y = X . W^T with W : N x K, as a
// linalg.matmul in one of two forms: the N x K weight with transposing
// indexing_maps, or a K x N operand produced by linalg.transpose of it.
// sgpu-slide-sparse (sparse weights) and sgpu-dense-matmul (dense weights)
// recognize both through this matcher.
//
//===----------------------------------------------------------------------===//

#ifndef SPARSEOPT_LIB_TRANSFORMS_MATMULMATCH_H
#define SPARSEOPT_LIB_TRANSFORMS_MATMULMATCH_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/Matchers.h"

namespace mlir {
namespace sgpu {

/// A linalg.matmul read as Y = X . W^T.
struct LinearMatch {
  Value input;  ///< X : M x K
  Value weight; ///< W : N x K (null when the op is not in a recognized form)
  /// The op multiplies by a K x N operand that is not a transpose of an
  /// N x K value (a plain X . B): `weight` is null, `kxn` is that operand.
  Value kxn;
};

/// Whether `op`'s maps, relative to (m, n, k), are A = (m, k), C = (m, n)
/// and B = (n, k) when `transposedB`, else (k, n).
inline bool hasLinearMaps(linalg::MatmulOp op, bool transposedB) {
  MLIRContext *ctx = op.getContext();
  AffineExpr m, n, k;
  bindDims(ctx, m, n, k);
  auto maps = op.getIndexingMapsArray();
  if (maps.size() != 3)
    return false;
  auto make = [&](ArrayRef<AffineExpr> r) {
    return AffineMap::get(3, 0, r, ctx);
  };
  return maps[0] == make({m, k}) && maps[2] == make({m, n}) &&
         maps[1] == (transposedB ? make({n, k}) : make({k, n}));
}

/// Reads `op` (two inputs, one init, tensor semantics) as X . W^T; the
/// result's `weight` is null when neither form matches.
inline LinearMatch matchLinear(linalg::MatmulOp op) {
  LinearMatch m;
  if (op.getInputs().size() != 2 || op.getOutputs().size() != 1 ||
      !op.hasPureTensorSemantics())
    return m;
  Value a = op.getInputs()[0], b = op.getInputs()[1];
  if (hasLinearMaps(op, /*transposedB=*/true)) {
    m.input = a;
    m.weight = b;
  } else if (hasLinearMaps(op, /*transposedB=*/false)) {
    m.input = a;
    auto tr = b.getDefiningOp<linalg::TransposeOp>();
    if (tr && tr.getPermutation() == ArrayRef<int64_t>{1, 0})
      m.weight = tr.getInput();
    else
      m.kxn = b;
  }
  return m;
}

/// Whether `v` is produced by filling a tensor with zero (the accumulator of
/// a plain product).
inline bool isZeroFill(Value v) {
  auto fill = v.getDefiningOp<linalg::FillOp>();
  if (!fill)
    return false;
  Value scalar = fill.getInputs()[0];
  return matchPattern(scalar, m_AnyZeroFloat()) ||
         matchPattern(scalar, m_Zero());
}

} // namespace sgpu
} // namespace mlir

#endif // SPARSEOPT_LIB_TRANSFORMS_MATMULMATCH_H
