//===- BlocksToLoops.h - reference loops for the model-block ops -*- C++ -*-===//
//
// Reference (CPU) semantics of sgpu.rms_norm, sgpu.add_rms_norm,
// sgpu.layer_norm,
// sgpu.attention, sgpu.lift, sgpu.embedding, sgpu.rope and
// sgpu.cache_update, used by convert-sgpu-to-loops. Each function
// replaces the op by scf loops over buffers (arithmetic in f32).
//
//===----------------------------------------------------------------------===//

#ifndef SPARSEOPT_LIB_CONVERSION_BLOCKSTOLOOPS_H
#define SPARSEOPT_LIB_CONVERSION_BLOCKSTOLOOPS_H

#include "sparse-opt/Dialect/SGPU/SGPU.h"

namespace mlir {
namespace sgpu {

void lowerRMSNormToLoops(RMSNormOp op);
void lowerAddRMSNormToLoops(AddRMSNormOp op);
void lowerLayerNormToLoops(LayerNormOp op);
void lowerAttentionToLoops(AttentionOp op);
void lowerLiftToLoops(LiftOp op);
void lowerEmbeddingToLoops(EmbeddingOp op);
void lowerRopeToLoops(RopeOp op);
void lowerCacheUpdateToLoops(CacheUpdateOp op);

} // namespace sgpu
} // namespace mlir

#endif // SPARSEOPT_LIB_CONVERSION_BLOCKSTOLOOPS_H
