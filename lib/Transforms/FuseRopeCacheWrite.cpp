//===- FuseRopeCacheWrite.cpp - RoPE into the KV-cache write --------------===//
//
// cache_update(cache, rope(k, cos, sin), pos) -> cache_update(cache, k, pos)
// rope(cos, sin): the keys are rotated by the kernel that writes them into
// the cache, where a decode step's RoPE of k was a kernel and a pass of its
// own (see the pass description in Passes.td).
//
//===----------------------------------------------------------------------===//

#include "sparse-opt/Dialect/SGPU/SGPU.h"
#include "sparse-opt/Transforms/Passes.h"

#include "mlir/IR/BuiltinOps.h"

namespace mlir {
namespace sgpu {
#define GEN_PASS_DEF_SGPUFUSEROPECACHEWRITE
#include "sparse-opt/Transforms/Passes.h.inc"
} // namespace sgpu
} // namespace mlir

using namespace mlir;
using namespace mlir::sgpu;

namespace {

struct FuseRopeCacheWritePass
    : public sgpu::impl::SGPUFuseRopeCacheWriteBase<FuseRopeCacheWritePass> {
  void runOnOperation() override {
    getOperation().walk([&](CacheUpdateOp update) {
      auto rope = update.getUpdate().getDefiningOp<RopeOp>();
      // The rope must be read by this write alone (a prefill that also
      // attends over the rotated keys keeps it), and its tables must be
      // there before the write, which they are: the rope reads them.
      if (update.getRopeCos() || !rope || !rope->hasOneUse())
        return;
      update.getUpdateMutable().assign(rope.getInput());
      update.getRopeCosMutable().assign(rope.getCos());
      update.getRopeSinMutable().assign(rope.getSin());
      rope.erase();
    });
  }
};

} // namespace
