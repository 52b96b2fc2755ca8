//===- GPULoweringTarget.h - what convert-sgpu-to-gpu leaves ----*- C++ -*-===//

#ifndef SPARSEOPT_LIB_CONVERSION_GPULOWERINGTARGET_H
#define SPARSEOPT_LIB_CONVERSION_GPULOWERINGTARGET_H

#include "mlir/Transforms/DialectConversion.h"

namespace mlir {
namespace sgpu {

/// Marks illegal every op the GPU lowering replaces: the sgpu compute ops
/// (spmm, lift, matmul, norms, TwELL, collectives, the model-block ops),
/// sgpu.compress / sgpu.nm_decompose of a weight argument, and linalg ops
/// of the host functions. convert-sgpu-to-gpu ends with a conversion to
/// this target, so that an op left after its conversions is an error at
/// its location.
void addLoweredOpsIllegal(ConversionTarget &target);

} // namespace sgpu
} // namespace mlir

#endif // SPARSEOPT_LIB_CONVERSION_GPULOWERINGTARGET_H
