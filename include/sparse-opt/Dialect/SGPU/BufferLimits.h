//===- BufferLimits.h - sizes a GPU program can hold ------------*- C++ -*-===//
//
// The checks every lowering makes before it generates anything: a shape
// whose dimension is 0, whose byte size overflows or exceeds what any GPU
// holds, or a function boundary of elements without a size in memory is a
// located diagnostic here, never a divide by zero, an overflowed buffer
// size or an allocation that fails further down.
//
//===----------------------------------------------------------------------===//

#ifndef SPARSEOPT_DIALECT_SGPU_BUFFERLIMITS_H
#define SPARSEOPT_DIALECT_SGPU_BUFFERLIMITS_H

#include "mlir/IR/Operation.h"

#include <optional>

namespace mlir {
namespace sgpu {

/// The largest buffer a program may hold: 256 GiB, beyond the memory of any
/// GPU the compiler targets (an H200 has 141 GB).
constexpr int64_t kMaxBufferBytes = int64_t(1) << 38;

/// The bytes of `count` elements of `bits` bits each (rounded up to whole
/// bytes per element), or nullopt when the product overflows int64.
std::optional<int64_t> checkedBytes(ArrayRef<int64_t> shape, unsigned bits);

/// Checks every value of `root` with a static shape (tensors, memrefs,
/// compressed weights, TwELL activations; function arguments and op
/// results): no dimension of size 0 and at most kMaxBufferBytes; and the
/// arguments and results of functions have integer or float elements.
/// Reports each violation at its value's location; fails if any.
LogicalResult checkBufferLimits(Operation *root);

} // namespace sgpu
} // namespace mlir

#endif // SPARSEOPT_DIALECT_SGPU_BUFFERLIMITS_H
