//===- SGPU.h - the sgpu dialect --------------------------------*- C++ -*-===//
//
// Dialect, attributes, types and operations of sgpu. Include this header to
// use any of them.
//
//===----------------------------------------------------------------------===//

#ifndef SPARSEOPT_DIALECT_SGPU_SGPU_H
#define SPARSEOPT_DIALECT_SGPU_SGPU_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "sparse-opt/Dialect/SGPU/SGPUDialect.h.inc"
#include "sparse-opt/Dialect/SGPU/SGPUEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "sparse-opt/Dialect/SGPU/SGPUAttrs.h.inc"

#define GET_TYPEDEF_CLASSES
#include "sparse-opt/Dialect/SGPU/SGPUTypes.h.inc"

#define GET_OP_CLASSES
#include "sparse-opt/Dialect/SGPU/SGPUOps.h.inc"

namespace mlir {
namespace sgpu {

/// Whether n:m is an accepted pattern: (2N-2):2N for N = 2..8.
bool isSupportedNMPattern(unsigned n, unsigned m);

/// Length of the lifted reduction axis for K under pattern (2N-2):2N:
/// roundUp(K, 2N) / 2N * 4(N-1), the group count rounded up to a multiple
/// of `tileGroups` when it is positive (the tiled window order of
/// sgpu.nm_decompose / sgpu.lift). For 2:4 in plain order this is K itself.
int64_t getLiftedK(int64_t k, NMSparsityAttr pattern, int64_t tileGroups = 0);

/// The tile_groups attribute of sgpu.nm_decompose and sgpu.lift: 0 when
/// absent (the plain window order).
int64_t getTileGroups(Operation *op);

/// The tiled window order the sm_90a TMA kernel lifts in its operand loads
/// (8 groups of 8 columns per 64-column k-tile); only 6:8 has one.
constexpr int64_t kFusedLiftTileGroups = 8;

/// The window order of the split 6:8 lift (16 groups: per 128 columns of X,
/// those columns in place, then the 64 shared-window columns), where every
/// 64-column k-tile of K' is one box of X or of the shared windows.
constexpr int64_t kSplitLiftTileGroups = 16;

/// The values of the `lift` option of sgpu-slide-sparse, convert-sgpu-to-gpu
/// and sgpu-compile, and the list a diagnostic names.
inline bool isLiftMode(llvm::StringRef mode) {
  return mode == "auto" || mode == "fused" || mode == "split" ||
         mode == "separate";
}
constexpr const char *kLiftModes = "auto, fused, split or separate";

/// Up to this many tokens the sm_90a 6:8 lift runs inside the kernel's
/// operand loads (lift=auto), where that measured fastest on the H200;
/// above, the split lift.
constexpr int64_t kFusedLiftMaxTokens = 16;

/// The N:M pattern a tensor type declares through its encoding: either an
/// #sgpu.nm attribute or the upstream sparse_tensor 2:4 synonym. Null when
/// the type carries no structured-sparsity encoding. Sets `unsupported` when
/// the encoding is a sparse_tensor encoding that is not the 2:4 synonym.
NMSparsityAttr getNMPattern(Type type, bool *unsupported = nullptr);

} // namespace sgpu
} // namespace mlir

#endif // SPARSEOPT_DIALECT_SGPU_SGPU_H
