//===- AsyncCollectives.cpp - all-reduce start/wait with a late wait -----===//
//
// sgpu.all_reduce becomes sgpu.all_reduce_start in place and
// sgpu.all_reduce_wait before the first use of the result, so the work in
// between overlaps the communication.
//
//===----------------------------------------------------------------------===//

#include "sparse-opt/Dialect/SGPU/SGPU.h"
#include "sparse-opt/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

namespace mlir {
namespace sgpu {
#define GEN_PASS_DEF_SGPUASYNCCOLLECTIVES
#include "sparse-opt/Transforms/Passes.h.inc"
} // namespace sgpu
} // namespace mlir

using namespace mlir;
using namespace mlir::sgpu;

namespace {

/// The operation of `block` that uses `v` first (a use nested in a region
/// counts as a use by its ancestor in `block`), or null when none does.
static Operation *firstUserIn(Block *block, Value v) {
  Operation *first = nullptr;
  for (Operation *user : v.getUsers()) {
    Operation *inBlock = block->findAncestorOpInBlock(*user);
    if (inBlock && (!first || inBlock->isBeforeInBlock(first)))
      first = inBlock;
  }
  return first;
}

struct AsyncCollectivesPass
    : public sgpu::impl::SGPUAsyncCollectivesBase<AsyncCollectivesPass> {
  void runOnOperation() override {
    SmallVector<AllReduceOp> collectives;
    bool failed = false;
    getOperation().walk([&](AllReduceOp op) {
      auto func = op->getParentOfType<FunctionOpInterface>();
      if (!func || op->getBlock() != &func.getFunctionBody().front() ||
          op->getParentOp() != func.getOperation()) {
        Operation *parent = op->getParentOp();
        op.emitError() << "sgpu.all_reduce inside '"
                       << (parent ? parent->getName().getStringRef()
                                  : StringRef("<none>"))
                       << "': collectives must be issued unconditionally in "
                          "the body of their function, so that every rank "
                          "issues the same collectives in the same order";
        failed = true;
        return;
      }
      collectives.push_back(op);
    });
    if (failed)
      return signalPassFailure();

    for (AllReduceOp op : collectives) {
      OpBuilder b(op);
      Location loc = op.getLoc();
      auto start = AllReduceStartOp::create(b, loc, op.getInput(),
                                            op.getKindAttr());
      Block *block = op->getBlock();
      Operation *use = firstUserIn(block, op.getResult());
      b.setInsertionPoint(use ? use : block->getTerminator());
      auto wait = AllReduceWaitOp::create(b, loc, op.getType(),
                                          start.getToken(), op.getInput());
      op.getResult().replaceAllUsesWith(wait.getResult());
      op.erase();
    }
  }
};

} // namespace
