//===- SpmmToGPU.h - sgpu.spmm as a generated sparse kernel -----*- C++ -*-===//

#ifndef SPARSEOPT_LIB_CONVERSION_SPMMTOGPU_H
#define SPARSEOPT_LIB_CONVERSION_SPMMTOGPU_H

#include "KernelSink.h"
#include "SpmmSelection.h"

#include "mlir/Transforms/DialectConversion.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallPtrSet.h"

namespace mlir {
namespace sgpu {

/// The plans of a module's spmms (planFromConfig, one per op), and the
/// lifts that their lowering took in (into the kernel's operand loads, the
/// split lift's shared windows or padded rows): the lift patterns erase
/// those.
struct SpmmLowering {
  llvm::DenseMap<Operation *, SpmmPlan> plans;
  llvm::SmallPtrSet<Operation *, 4> loweredLifts;
};

/// The pattern replacing each sgpu.spmm of `state.plans` by what its plan
/// says: the kernel `sgpu_spmm_<n>` in the sink (SpmmTMA.cpp's TMA
/// pipeline, SpmmWGMMA.cpp's register-staged wgmma kernel, or SpmmMMA.cpp's
/// mma.sp kernel), the lift it lowers with it, the host launch on buffers
/// and, with split-K, `sgpu_spmm_<n>_reduce`.
void populateSpmmToGPUPatterns(RewritePatternSet &patterns, KernelSink &sink,
                               SpmmLowering &state);

} // namespace sgpu
} // namespace mlir

#endif // SPARSEOPT_LIB_CONVERSION_SPMMTOGPU_H
