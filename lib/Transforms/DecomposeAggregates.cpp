//===- DecomposeAggregates.cpp - linalg.softmax & co. into linalg ops -----===//

#include "sparse-opt/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/BuiltinOps.h"

namespace mlir {
namespace sgpu {
#define GEN_PASS_DEF_SGPUDECOMPOSEAGGREGATES
#include "sparse-opt/Transforms/Passes.h.inc"
} // namespace sgpu
} // namespace mlir

using namespace mlir;

namespace {

struct DecomposeAggregatesPass
    : public sgpu::impl::SGPUDecomposeAggregatesBase<DecomposeAggregatesPass> {
  void runOnOperation() override {
    SmallVector<linalg::AggregatedOpInterface> ops;
    getOperation().walk(
        [&](linalg::AggregatedOpInterface op) { ops.push_back(op); });
    for (linalg::AggregatedOpInterface op : ops) {
      OpBuilder b(op);
      FailureOr<SmallVector<Value>> parts = op.decomposeOperation(b);
      if (failed(parts)) {
        op->emitError() << "cannot decompose '" << op->getName() << "'";
        return signalPassFailure();
      }
      op->replaceAllUsesWith(*parts);
      op->erase();
    }
  }
};

} // namespace
