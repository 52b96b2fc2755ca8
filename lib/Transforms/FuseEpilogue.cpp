//===- FuseEpilogue.cpp - bias and ReLU into the GEMM epilogues -----------===//

#include "sparse-opt/Dialect/SGPU/SGPU.h"
#include "sparse-opt/Transforms/Passes.h"

#include "ElementwiseMatch.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Matchers.h"

namespace mlir {
namespace sgpu {
#define GEN_PASS_DEF_SGPUFUSEEPILOGUE
#include "sparse-opt/Transforms/Passes.h.inc"
} // namespace sgpu
} // namespace mlir

using namespace mlir;
using namespace mlir::sgpu;

namespace {

/// Erases `op` and the tensor.empty feeding its init if nothing else uses it.
static void eraseWithInit(linalg::GenericOp op) {
  Value init = op.getDpsInitOperand(0)->get();
  op.erase();
  if (Operation *def = init.getDefiningOp())
    if (def->use_empty() && isa<tensor::EmptyOp>(def))
      def->erase();
}

/// Folds the bias add and the ReLU that follow a GEMM op (sgpu.spmm or
/// sgpu.matmul: both carry an optional bias and activation) into the op.
struct FuseEpiloguePass
    : public sgpu::impl::SGPUFuseEpilogueBase<FuseEpiloguePass> {
  void runOnOperation() override {
    SmallVector<Operation *> gemms;
    getOperation().walk([&](Operation *op) {
      if (isa<SpmmOp, MatmulOp>(op))
        gemms.push_back(op);
    });
    for (Operation *op : gemms) {
      if (auto spmm = dyn_cast<SpmmOp>(op)) {
        fuseBias(spmm);
        fuseRelu(spmm);
      } else {
        auto matmul = cast<MatmulOp>(op);
        fuseBias(matmul);
        fuseRelu(matmul);
      }
    }
  }

  template <typename GemmOp>
  void fuseBias(GemmOp op) {
    Value y = op.getResult();
    if (op.getBias() || op.getActivationOrNone() != Activation::none ||
        !y.hasOneUse())
      return;
    auto add = dyn_cast<linalg::GenericOp>(*y.getUsers().begin());
    if (!add || add.getResult(0).getType() != y.getType())
      return;
    Value bias = matchBiasAdd(add, y);
    if (!bias)
      return;
    // The bias must be available where the GEMM is.
    if (Operation *def = bias.getDefiningOp())
      if (def->getBlock() == op->getBlock() && op->isBeforeInBlock(def))
        def->moveBefore(op);
    op.getBiasMutable().assign(bias);
    add.getResult(0).replaceAllUsesWith(y);
    eraseWithInit(add);
  }

  template <typename GemmOp>
  void fuseRelu(GemmOp op) {
    Value y = op.getResult();
    if (op.getActivationOrNone() != Activation::none || !y.hasOneUse())
      return;
    Operation *user = *y.getUsers().begin();
    // Look through one reshape: relu(reshape(y)) == reshape(relu(y)).
    Value seen = y;
    if (isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp>(user)) {
      seen = user->getResult(0);
      if (!seen.hasOneUse())
        return;
      user = *seen.getUsers().begin();
    }
    auto relu = dyn_cast<linalg::GenericOp>(user);
    if (!relu || !isRelu(relu) ||
        relu.getDpsInputOperand(0)->get() != seen ||
        relu.getResult(0).getType() != seen.getType())
      return;
    op.setActivationAttr(ActivationAttr::get(op.getContext(), Activation::relu));
    relu.getResult(0).replaceAllUsesWith(seen);
    eraseWithInit(relu);
  }
};

} // namespace
