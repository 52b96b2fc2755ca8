//===- TempArena.h - temporaries packed by liveness -------------*- C++ -*-===//
//
// The program's run-stage temporaries share one device allocation (the
// arena): two temporaries whose lifetimes (first to last step that touches
// them, through reshapes and tensor maps) do not overlap may take the same
// bytes. sgpu-emit-artifacts writes each packed temporary as
// `buffer <id> temp <bytes> arena <offset>` after an `arena <bytes>` line.
//
// Left out of the arena, so they keep their own zero-filled allocation:
// outputs, program stats (read after a run), temporaries that a prepare
// step touches (weights compressed at bind time persist across runs) and
// temporaries no step touches.
//
//===----------------------------------------------------------------------===//

#ifndef SPARSEOPT_LIB_TRANSFORMS_TEMPARENA_H
#define SPARSEOPT_LIB_TRANSFORMS_TEMPARENA_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

namespace mlir {
namespace sgpu {

struct TempArena {
  /// Byte offset of each packed allocation (a memref.alloc result).
  llvm::DenseMap<Value, int64_t> offsets;
  /// The arena's size: the peak of the packed temporaries' bytes.
  int64_t bytes = 0;
  /// What the packed temporaries would take unpacked.
  int64_t unpackedBytes = 0;
};

/// Alignment of every packed temporary (the widest access of any kernel,
/// and TMA's 128-byte base alignment with room to spare).
inline constexpr int64_t kArenaAlignment = 256;

/// Plans the arena of `host` (a bufferized host function with one block).
/// `isPrepare` tells the prepare-stage steps, `excluded` lists allocations
/// that must keep their own memory (outputs, stats).
TempArena planTempArena(func::FuncOp host,
                        llvm::function_ref<bool(Operation *)> isPrepare,
                        const llvm::DenseSet<Value> &excluded);

} // namespace sgpu
} // namespace mlir

#endif // SPARSEOPT_LIB_TRANSFORMS_TEMPARENA_H
