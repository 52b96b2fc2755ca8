//===- CollectivesToRuntime.h - all-reduces as runtime steps ----*- C++ -*-===//

#ifndef SPARSEOPT_LIB_CONVERSION_COLLECTIVESTORUNTIME_H
#define SPARSEOPT_LIB_CONVERSION_COLLECTIVESTORUNTIME_H

#include "sparse-opt/Dialect/SGPU/SGPU.h"

namespace mlir {
namespace sgpu {

/// Rewrites every collective of `module` onto buffers: sgpu.all_reduce_start
/// into sgpu.all_reduce_call (send: the input's buffer, recv: a new buffer),
/// its sgpu.all_reduce_wait into sgpu.all_reduce_sync plus the result
/// tensor over recv, and a plain sgpu.all_reduce into both, back to back.
/// Fails (with an error at the op) for a collective inside a region: the
/// runtime program is one straight line of host steps.
LogicalResult lowerCollectivesToRuntime(ModuleOp module);

} // namespace sgpu
} // namespace mlir

#endif // SPARSEOPT_LIB_CONVERSION_COLLECTIVESTORUNTIME_H
