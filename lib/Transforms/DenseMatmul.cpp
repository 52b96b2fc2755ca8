//===- DenseMatmul.cpp - dense linear layers to sgpu.matmul ---------------===//
//
// Recognizes `linalg.matmul` computing Y = X . W^T with a dense weight and
// rewrites it into sgpu.matmul, the library GEMM (cuBLASLt on the GPU).
//
//===----------------------------------------------------------------------===//

#include "sparse-opt/Dialect/SGPU/SGPU.h"
#include "sparse-opt/Transforms/Passes.h"

#include "MatmulMatch.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/SetVector.h"

namespace mlir {
namespace sgpu {
#define GEN_PASS_DEF_SGPUDENSEMATMUL
#include "sparse-opt/Transforms/Passes.h.inc"
} // namespace sgpu
} // namespace mlir

using namespace mlir;
using namespace mlir::sgpu;

namespace {

/// Whether the library GEMM takes these types: f16 or bf16 operands of one
/// type, a result of that type or f32.
static bool hasLibraryTypes(Type x, Type w, Type y) {
  return (x.isF16() || x.isBF16()) && w == x && (y == x || y.isF32());
}

struct DenseMatmulPass
    : public sgpu::impl::SGPUDenseMatmulBase<DenseMatmulPass> {
  void runOnOperation() override {
    SmallVector<std::pair<linalg::MatmulOp, LinearMatch>> found;
    getOperation().walk([&](linalg::MatmulOp op) {
      LinearMatch lin = matchLinear(op);
      if (!lin.input || !isZeroFill(op.getOutputs()[0]))
        return;
      auto x = cast<RankedTensorType>(lin.input.getType());
      auto y = cast<RankedTensorType>(op.getResultTypes()[0]);
      Value w = lin.weight ? lin.weight : lin.kxn;
      auto wt = cast<RankedTensorType>(w.getType());
      if (wt.getEncoding() || !x.hasStaticShape() || !wt.hasStaticShape() ||
          !y.hasStaticShape() ||
          !hasLibraryTypes(x.getElementType(), wt.getElementType(),
                           y.getElementType()))
        return;
      if (!lin.weight) {
        op.emitRemark() << "not rewritten into a library GEMM: the weight is "
                           "a K x N operand; sgpu.matmul takes the N x K "
                           "weight (torch Linear layout) through transposing "
                           "indexing_maps or linalg.transpose";
        return;
      }
      found.emplace_back(op, lin);
    });

    // Rewrite first, erase what became dead after: a fill or transpose
    // erased while another matmul still reads it would leave a dangling
    // value.
    SmallVector<Operation *> maybeDead;
    for (auto &[op, cached] : found) {
      // Matched again: an earlier rewrite may have replaced this op's input
      // (a matmul feeding a matmul), which the cached match still names.
      LinearMatch lin = matchLinear(op);
      OpBuilder b(op);
      Value y = MatmulOp::create(b, op.getLoc(), op.getResultTypes()[0],
                                 lin.input, lin.weight, /*bias=*/Value(),
                                 ActivationAttr());
      for (Value v : {op.getInputs()[1], op.getOutputs()[0]})
        if (Operation *def = v.getDefiningOp())
          maybeDead.push_back(def);
      op.getResult(0).replaceAllUsesWith(y);
      op.erase();
    }
    // The zero fills and the transposes that only fed the matmuls, and the
    // tensor.empty under them.
    SetVector<Operation *> dead;
    for (Operation *def : maybeDead)
      if (isa<linalg::TransposeOp, linalg::FillOp>(def))
        dead.insert(def);
    for (Operation *def : dead) {
      if (!def->use_empty())
        continue;
      Value src = def->getNumOperands()
                      ? def->getOperand(def->getNumOperands() - 1)
                      : Value();
      def->erase();
      if (Operation *empty = src ? src.getDefiningOp() : nullptr)
        if (empty->use_empty() && isa<tensor::EmptyOp>(empty))
          empty->erase();
    }
  }
};

} // namespace
