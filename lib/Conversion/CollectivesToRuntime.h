//===- CollectivesToRuntime.h - all-reduces as runtime steps ----*- C++ -*-===//

#ifndef SPARSEOPT_LIB_CONVERSION_COLLECTIVESTORUNTIME_H
#define SPARSEOPT_LIB_CONVERSION_COLLECTIVESTORUNTIME_H

#include "sparse-opt/Dialect/SGPU/SGPU.h"

#include "mlir/Transforms/DialectConversion.h"

namespace mlir {
namespace sgpu {

/// The patterns putting the collectives onto buffers:
/// sgpu.all_reduce_start into sgpu.all_reduce_call (send: the input's
/// buffer, recv: a new buffer), its sgpu.all_reduce_wait into
/// sgpu.all_reduce_sync plus the result tensor over recv, and a plain
/// sgpu.all_reduce into both, back to back.
void populateCollectivesToRuntimePatterns(RewritePatternSet &patterns);
/// An error at each collective of `module` inside a region: the runtime
/// program is one straight line of host steps.
LogicalResult checkCollectivesAtTopLevel(ModuleOp module);

} // namespace sgpu
} // namespace mlir

#endif // SPARSEOPT_LIB_CONVERSION_COLLECTIVESTORUNTIME_H
