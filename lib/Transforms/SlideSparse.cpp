//===- SlideSparse.cpp - N:M-sparse matmuls to sgpu.spmm ------------------===//
//
// Recognizes `linalg.matmul` computing Y = X . W^T whose weight carries a
// structured-sparsity encoding and rewrites it into sgpu.spmm on a compressed
// weight. Constant weights are compressed here, at compile time.
//
//===----------------------------------------------------------------------===//

#include "sparse-opt/Dialect/SGPU/SGPU.h"
#include "sparse-opt/Dialect/SGPU/ConstantWeights.h"
#include "sparse-opt/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Matchers.h"

namespace mlir {
namespace sgpu {
#define GEN_PASS_DEF_SGPUSLIDESPARSE
#include "sparse-opt/Transforms/Passes.h.inc"
} // namespace sgpu
} // namespace mlir

using namespace mlir;
using namespace mlir::sgpu;

namespace {

/// The pieces of a matched `Y = X . W^T`.
struct MatchedMatmul {
  linalg::MatmulOp matmul;
  Value input;  // X : M x K
  Value weight; // W : N x K, carries the encoding
  NMSparsityAttr pattern;
};

/// Returns the maps of the three matmul forms we accept, relative to
/// (m, n, k): A = (m, k), C = (m, n), and B either (n, k) or (k, n).
static bool hasMaps(linalg::MatmulOp op, bool transposedB) {
  MLIRContext *ctx = op.getContext();
  AffineExpr m, n, k;
  bindDims(ctx, m, n, k);
  auto maps = op.getIndexingMapsArray();
  if (maps.size() != 3)
    return false;
  auto make = [&](ArrayRef<AffineExpr> r) {
    return AffineMap::get(3, 0, r, ctx);
  };
  return maps[0] == make({m, k}) && maps[2] == make({m, n}) &&
         maps[1] == (transposedB ? make({n, k}) : make({k, n}));
}

/// Whether `v` is produced by filling an empty tensor with zero.
static bool isZeroFill(Value v) {
  auto fill = v.getDefiningOp<linalg::FillOp>();
  if (!fill)
    return false;
  Value scalar = fill.getInputs()[0];
  return matchPattern(scalar, m_AnyZeroFloat()) ||
         matchPattern(scalar, m_Zero());
}

struct SlideSparsePass
    : public sgpu::impl::SGPUSlideSparseBase<SlideSparsePass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<MatchedMatmul> matches;
    bool failed = false;

    module.walk([&](linalg::MatmulOp op) {
      if (op.getInputs().size() != 2 || op.getOutputs().size() != 1 ||
          !op.hasPureTensorSemantics())
        return;
      Value a = op.getInputs()[0], b = op.getInputs()[1];
      MatchedMatmul m{op, a, Value(), {}};
      if (hasMaps(op, /*transposedB=*/true)) {
        m.weight = b;
      } else if (hasMaps(op, /*transposedB=*/false)) {
        // B = transpose(W) with W : N x K carrying the encoding.
        auto tr = b.getDefiningOp<linalg::TransposeOp>();
        if (tr && tr.getPermutation() == ArrayRef<int64_t>{1, 0})
          m.weight = tr.getInput();
        else if (getNMPattern(b.getType())) {
          op.emitError() << "the N:M-sparse weight is a K x N operand; "
                            "expected the N x K weight (torch Linear layout) "
                            "through transposing indexing_maps or "
                            "linalg.transpose";
          failed = true;
          return;
        }
      }
      if (!m.weight)
        return;
      bool unsupported = false;
      m.pattern = getNMPattern(m.weight.getType(), &unsupported);
      if (unsupported) {
        op.emitError() << "weight encoding is a sparse_tensor encoding that "
                          "is not the 2:4 synonym; use #sgpu.nm<n:m>";
        failed = true;
        return;
      }
      if (!m.pattern)
        return;
      if (!isZeroFill(op.getOutputs()[0])) {
        op.emitRemark() << "not rewritten: the matmul accumulates into a "
                           "value that is not a zero fill";
        return;
      }
      auto x = cast<RankedTensorType>(a.getType());
      auto w = cast<RankedTensorType>(m.weight.getType());
      auto y = cast<RankedTensorType>(op.getResultTypes()[0]);
      if (!x.hasStaticShape() || !w.hasStaticShape() || !y.hasStaticShape()) {
        op.emitError() << "sparse matmul needs static shapes";
        failed = true;
        return;
      }
      Type et = w.getElementType();
      if ((!et.isF16() && !et.isBF16()) || x.getElementType() != et ||
          (y.getElementType() != et && !y.getElementType().isF32())) {
        op.emitError() << "sparse matmul supports f16 or bf16 operands of "
                          "one type with an f16/bf16/f32 result; got "
                       << x.getElementType() << " x " << et << " -> "
                       << y.getElementType();
        failed = true;
        return;
      }
      matches.push_back(m);
    });
    if (failed)
      return signalPassFailure();

    for (MatchedMatmul &m : matches)
      if (mlir::failed(rewrite(m)))
        return signalPassFailure();

    // Clean up transposes and constants that only fed rewritten matmuls.
    cleanupDeadOps(module);

    // Bufferization drops encodings silently: every encoded value left must
    // be consumed by an sgpu op that understands it.
    WalkResult r = module.walk([&](Operation *op) {
      for (Value v : op->getResults())
        if (mlir::failed(checkConsumed(v, op->getLoc())))
          return WalkResult::interrupt();
      for (Region &region : op->getRegions())
        for (Block &block : region)
          for (BlockArgument arg : block.getArguments())
            if (mlir::failed(checkConsumed(arg, op->getLoc())))
              return WalkResult::interrupt();
      return WalkResult::advance();
    });
    if (r.wasInterrupted())
      signalPassFailure();
  }

  LogicalResult checkConsumed(Value v, Location loc) {
    if (!getNMPattern(v.getType()))
      return success();
    for (Operation *user : v.getUsers())
      if (!isa<CompressOp, NMDecomposeOp>(user))
        return user->emitError()
               << "operand carries a structured-sparsity encoding that no "
                  "sparse rewrite consumed; bufferization would drop it "
                  "silently (only the N x K weight of a linalg.matmul "
                  "computing X . W^T is recognized)";
    return success();
  }

  LogicalResult rewrite(MatchedMatmul &m) {
    linalg::MatmulOp op = m.matmul;
    OpBuilder b(op);
    Location loc = op.getLoc();
    auto w = cast<RankedTensorType>(m.weight.getType());
    MLIRContext *ctx = op.getContext();
    auto pattern24 = NMSparsityAttr::get(ctx, 2, 4);
    if (m.pattern.is24()) {
      auto ctype = CompressedType::get(ctx, w.getShape(), w.getElementType(),
                                       pattern24);
      auto compress = CompressOp::create(b, loc, ctype, m.weight);
      Value y = SpmmOp::create(b, loc, op.getResultTypes()[0], m.input,
                               compress.getResult(), /*bias=*/Value(),
                               ActivationAttr());
      op.getResult(0).replaceAllUsesWith(y);
      op.erase();
      // Constant weights are compressed here, at compile time.
      return foldConstantCompress(compress);
    }
    // (2N-2):2N: overlapping 2:4 windows over the lifted reduction axis K'.
    auto x = cast<RankedTensorType>(m.input.getType());
    int64_t lifted = getLiftedK(w.getDimSize(1), m.pattern);
    auto ctype = CompressedType::get(ctx, {w.getDimSize(0), lifted},
                                     w.getElementType(), pattern24);
    auto decompose = NMDecomposeOp::create(b, loc, ctype, m.weight);
    Value xl = LiftOp::create(
        b, loc, RankedTensorType::get({x.getDimSize(0), lifted},
                                      x.getElementType()),
        m.input, m.pattern);
    Value y = SpmmOp::create(b, loc, op.getResultTypes()[0], xl,
                             decompose.getResult(), /*bias=*/Value(),
                             ActivationAttr());
    op.getResult(0).replaceAllUsesWith(y);
    op.erase();
    // Constant weights are decomposed and compressed here, at compile time.
    return foldConstantDecompose(decompose);
  }

  static void cleanupDeadOps(ModuleOp module) {
    bool changed = true;
    while (changed) {
      changed = false;
      SmallVector<Operation *> dead;
      module.walk([&](Operation *op) {
        if (isa<linalg::TransposeOp, linalg::FillOp, arith::ConstantOp,
                tensor::EmptyOp>(op) &&
            op->use_empty())
          dead.push_back(op);
      });
      for (Operation *op : dead)
        op->erase();
      changed = !dead.empty();
    }
  }
};

} // namespace
