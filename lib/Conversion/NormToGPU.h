//===- NormToGPU.h - sgpu.rms_norm / sgpu.layer_norm as kernels -*- C++ -*-===//

#ifndef SPARSEOPT_LIB_CONVERSION_NORMTOGPU_H
#define SPARSEOPT_LIB_CONVERSION_NORMTOGPU_H

#include "KernelSink.h"
#include "sparse-opt/Dialect/SGPU/SGPU.h"

#include "mlir/Transforms/DialectConversion.h"

namespace mlir {
namespace sgpu {

/// The patterns replacing sgpu.rms_norm and sgpu.layer_norm by a launch
/// of a generated kernel, one block per row (the row held in registers in
/// 16-byte chunks where it fits, else strided loops over it), added to the
/// sink as `sgpu_rms_norm_<n>` / `sgpu_layer_norm_<n>`.
void populateNormToGPUPatterns(RewritePatternSet &patterns, KernelSink &sink);

} // namespace sgpu
} // namespace mlir

#endif // SPARSEOPT_LIB_CONVERSION_NORMTOGPU_H
