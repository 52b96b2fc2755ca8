//===- ReductionToGPU.h - reducing linalg ops as kernels --------*- C++ -*-===//
//
// Linalg ops with reduction loops that no rewrite turned into a library or
// generated GEMM: a softmax or a mean outside the recognized blocks, a sum
// over a dimension, an f32 matmul. Each becomes a kernel with one thread
// per result element that walks the reduction loops in order, the
// accumulator starting from the op's init, as the CPU reference's loops
// do (so the results match it bit for bit where the body is exact). It is
// the correct path for any such op, not a fast one for large reductions.
//
//===----------------------------------------------------------------------===//

#ifndef SPARSEOPT_LIB_CONVERSION_REDUCTIONTOGPU_H
#define SPARSEOPT_LIB_CONVERSION_REDUCTIONTOGPU_H

#include "KernelSink.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Transforms/DialectConversion.h"

#include <string>

namespace mlir {
namespace sgpu {

/// Why `op` (with at least one reduction loop) has no reduction kernel, or
/// an empty string: the checks of whyNotLoopKernel, a result indexed by a
/// projected permutation of the parallel loops, and at most 2^24 iterations
/// of the reduction loops per result element.
std::string whyNotReduction(linalg::LinalgOp op);

/// The pattern replacing a generic with reduction loops (whyNotReduction
/// empty) by a launch of a generated kernel `sgpu_reduction_<n>` in the
/// sink.
void populateReductionToGPUPatterns(RewritePatternSet &patterns,
                                    KernelSink &sink);

} // namespace sgpu
} // namespace mlir

#endif // SPARSEOPT_LIB_CONVERSION_REDUCTIONTOGPU_H
