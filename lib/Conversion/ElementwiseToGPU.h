//===- ElementwiseToGPU.h - element-wise linalg ops as kernels --*- C++ -*-===//

#ifndef SPARSEOPT_LIB_CONVERSION_ELEMENTWISETOGPU_H
#define SPARSEOPT_LIB_CONVERSION_ELEMENTWISETOGPU_H

#include "KernelSink.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Transforms/DialectConversion.h"

#include <string>

namespace mlir {
namespace sgpu {

/// Threads per block of the element-wise kernels.
inline constexpr int64_t kElementwiseThreads = 256;

/// Why the linalg op `op` (a generic or a named op such as linalg.fill,
/// linalg.add, linalg.transpose) has no element-wise kernel, or an empty
/// string when it has one: the kernel needs tensor semantics, static
/// shapes, one result, parallel loops only, inputs indexed by projected
/// permutations (broadcasts, transposes), a result indexed by a
/// permutation, and a body of scalar arith / math ops (values from outside
/// the body must be constants).
std::string whyNotElementwise(linalg::LinalgOp op);

/// whyNotElementwise, with reduction loops allowed when `reductions` (then
/// the result's map only has to be a projected permutation): the shared
/// checks of the element-wise and the reduction kernels.
std::string whyNotLoopKernel(linalg::LinalgOp op, bool reductions);

/// `op` as a linalg.generic (a named element-wise op is rewritten in
/// place), so that one lowering covers them all; an error at the op when a
/// named op cannot be rewritten.
FailureOr<linalg::GenericOp> generalizeElementwise(linalg::LinalgOp op);

/// The pattern replacing an element-wise linalg.generic (whyNotElementwise
/// is empty) by a launch of a generated kernel, one thread per result
/// element (or a vector of them), added to the sink as
/// `sgpu_elementwise_<n>`.
void populateElementwiseToGPUPatterns(RewritePatternSet &patterns,
                                      KernelSink &sink);

/// Whether `op` is dead once the element-wise generics are lowered: its
/// result is only the init of element-wise generics whose bodies do not
/// read it (the usual `outs(tensor.empty / linalg.fill)`), or unused.
bool isOnlyUnreadInit(Operation *op);

} // namespace sgpu
} // namespace mlir

#endif // SPARSEOPT_LIB_CONVERSION_ELEMENTWISETOGPU_H
