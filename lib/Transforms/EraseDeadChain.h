//===- EraseDeadChain.h - erase an op and what only it used -----*- C++ -*-===//
//
// Shared by the rewrites that replace a chain of ops (sgpu-sparsify-ffn,
// sgpu-fold-attention-transposes).
//
//===----------------------------------------------------------------------===//

#ifndef SPARSEOPT_LIB_TRANSFORMS_ERASEDEADCHAIN_H
#define SPARSEOPT_LIB_TRANSFORMS_ERASEDEADCHAIN_H

#include "mlir/IR/Operation.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/SetVector.h"

namespace mlir {
namespace sgpu {

/// Erases `op` (which must have no users left) and then every op that only
/// fed what was erased, stopping at ops that still have users or side
/// effects.
inline void eraseDeadChain(Operation *op) {
  llvm::SetVector<Operation *> work;
  work.insert(op);
  while (!work.empty()) {
    Operation *o = work.pop_back_val();
    SmallVector<Operation *> defs;
    for (Value v : o->getOperands())
      if (Operation *def = v.getDefiningOp())
        defs.push_back(def);
    o->erase();
    for (Operation *def : defs)
      if (isOpTriviallyDead(def))
        work.insert(def);
  }
}

} // namespace sgpu
} // namespace mlir

#endif // SPARSEOPT_LIB_TRANSFORMS_ERASEDEADCHAIN_H
