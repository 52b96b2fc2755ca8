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

#include "sparse-opt/Conversion/DeviceInfo.h"
#include "sparse-opt/Conversion/TargetInfo.h"

#include "MatmulMatch.h"
#include "SparseCostModel.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
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

struct SlideSparsePass
    : public sgpu::impl::SGPUSlideSparseBase<SlideSparsePass> {
  using Base::Base;

  /// The device's multiprocessors (device option), for the cost model.
  int64_t numSMs = 0;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<MatchedMatmul> matches;
    bool failed = false;

    if (policy != "auto" && policy != "sparse") {
      module.emitError() << "unknown sgpu-slide-sparse policy '" << policy
                         << "'; expected auto or sparse";
      return signalPassFailure();
    }
    if (!isLiftMode(lift)) {
      module.emitError() << "unknown sgpu-slide-sparse lift '" << lift
                         << "'; expected " << kLiftModes;
      return signalPassFailure();
    }
    // The chip picks the kernels the cost model weighs: one it does not
    // know is an error, not a silent default.
    std::string message;
    FailureOr<TargetInfo> target = parseTarget(chip, "", &message);
    if (mlir::failed(target)) {
      module.emitError() << "invalid sgpu-slide-sparse chip: " << message;
      return signalPassFailure();
    }
    FailureOr<const DeviceInfo *> part =
        resolveDevice(device, target->smVersion, &message);
    if (mlir::failed(part)) {
      module.emitError() << "invalid sgpu-slide-sparse device: " << message;
      return signalPassFailure();
    }
    numSMs = (*part)->numSMs;

    module.walk([&](linalg::MatmulOp op) {
      LinearMatch lin = matchLinear(op);
      MatchedMatmul m{op, lin.input, lin.weight, {}};
      if (lin.kxn && getNMPattern(lin.kxn.getType())) {
        op.emitError() << "the N:M-sparse weight is a K x N operand; "
                          "expected the N x K weight (torch Linear layout) "
                          "through transposing indexing_maps or "
                          "linalg.transpose";
        failed = true;
        return;
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
      auto x = cast<RankedTensorType>(m.input.getType());
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

    for (MatchedMatmul &m : matches) {
      // A previous rewrite may have replaced the activation (a chain of
      // sparse layers): read it from the op now.
      m.input = m.matmul.getInputs()[0];
      if (mlir::failed(rewrite(m)))
        return signalPassFailure();
    }

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

  /// Whether `user` calls a function whose parameter at `v`'s position
  /// declares the same encoding: the callee consumes the weight.
  static bool isEncodedCallOperand(Value v, Operation *user) {
    auto call = dyn_cast<func::CallOp>(user);
    if (!call)
      return false;
    auto callee = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
        call, call.getCalleeAttr());
    if (!callee)
      return false;
    for (OpOperand &use : v.getUses())
      if (use.getOwner() == user &&
          callee.getArgumentTypes()[use.getOperandNumber()] != v.getType())
        return false;
    return true;
  }

  LogicalResult checkConsumed(Value v, Location loc) {
    if (!getNMPattern(v.getType()))
      return success();
    for (Operation *user : v.getUsers()) {
      // Weights concatenated along their rows (sgpu-fuse-sibling-spmm) are
      // consumed where the concatenation is.
      if (auto concat = dyn_cast<tensor::ConcatOp>(user)) {
        if (failed(checkConsumed(concat.getResult(), loc)))
          return failure();
        continue;
      }
      if (!isa<CompressOp, NMDecomposeOp>(user) && !isEncodedCallOperand(v, user))
        return user->emitError()
               << "operand carries a structured-sparsity encoding that no "
                  "sparse rewrite consumed; bufferization would drop it "
                  "silently (only the N x K weight of a linalg.matmul "
                  "computing X . W^T is recognized)";
    }
    return success();
  }

  LogicalResult rewrite(MatchedMatmul &m) {
    linalg::MatmulOp op = m.matmul;
    OpBuilder b(op);
    Location loc = op.getLoc();
    auto w = cast<RankedTensorType>(m.weight.getType());
    MLIRContext *ctx = op.getContext();
    if (policy == "auto" && succeeded(keepDense(m)))
      return success();
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
    // The windows go in a tiled order where the target's kernel reads the
    // activations without a full lifted copy (6:8 on sm_90a): the order of
    // the lift inside the operand loads up to kFusedLiftMaxTokens tokens
    // (lift=auto) or everywhere (fused), else that of the split lift.
    auto x = cast<RankedTensorType>(m.input.getType());
    int64_t tileGroups = 0;
    if (lift != "separate" && chip == "sm_90a" && m.pattern.getM() == 8) {
      bool fewTokens =
          !x.isDynamicDim(0) && x.getDimSize(0) <= kFusedLiftMaxTokens;
      tileGroups = lift == "fused" || (lift == "auto" && fewTokens)
                       ? kFusedLiftTileGroups
                       : kSplitLiftTileGroups;
    }
    int64_t lifted = getLiftedK(w.getDimSize(1), m.pattern, tileGroups);
    auto ctype = CompressedType::get(ctx, {w.getDimSize(0), lifted},
                                     w.getElementType(), pattern24);
    IntegerAttr tileAttr =
        tileGroups ? b.getI64IntegerAttr(tileGroups) : IntegerAttr();
    auto decompose = NMDecomposeOp::create(b, loc, ctype, m.weight, tileAttr);
    Value xl = LiftOp::create(
        b, loc, RankedTensorType::get({x.getDimSize(0), lifted},
                                      x.getElementType()),
        m.input, m.pattern, tileAttr);
    Value y = SpmmOp::create(b, loc, op.getResultTypes()[0], xl,
                             decompose.getResult(), /*bias=*/Value(),
                             ActivationAttr());
    op.getResult(0).replaceAllUsesWith(y);
    op.erase();
    // Constant weights are decomposed and compressed here, at compile time.
    return foldConstantDecompose(decompose);
  }

  /// The weight without its encoding: a constant is rebuilt with the plain
  /// type; an argument of an entry function (one nothing in the module
  /// calls) that only this matmul reads (directly or through one transpose)
  /// has the encoding dropped from the signature (the buffer a caller
  /// passes is the dense weight either way). Failure for any other weight.
  static FailureOr<Value> plainWeight(OpBuilder &b, Value weight) {
    if (weight.getDefiningOp<arith::ConstantOp>())
      return plainConstantWeight(b, weight);
    auto arg = dyn_cast<BlockArgument>(weight);
    auto func = arg ? dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp())
                    : func::FuncOp();
    // The signature may only change where no call in the module passes the
    // encoded weight (an entry point); a called function keeps it sparse.
    auto module = func ? func->getParentOfType<ModuleOp>() : ModuleOp();
    if (!func || arg.getOwner() != &func.getBody().front() ||
        !arg.hasOneUse() || !module ||
        !SymbolTable::symbolKnownUseEmpty(func, module))
      return failure();
    Operation *user = *arg.getUsers().begin();
    if (auto tr = dyn_cast<linalg::TransposeOp>(user))
      if (!tr->getResult(0).hasOneUse())
        return failure();
    auto t = cast<RankedTensorType>(arg.getType());
    auto plain = RankedTensorType::get(t.getShape(), t.getElementType());
    arg.setType(plain);
    SmallVector<Type> inputs(func.getArgumentTypes());
    inputs[arg.getArgNumber()] = plain;
    func.setFunctionType(
        FunctionType::get(func.getContext(), inputs, func.getResultTypes()));
    return weight;
  }

  /// policy=auto: where the cost model says the library GEMM is faster,
  /// rewrites the matmul into sgpu.matmul on the weight without its
  /// encoding, with a remark. Fails (changing nothing) when the sparse
  /// kernel is kept or the weight cannot be made plain (plainWeight).
  LogicalResult keepDense(MatchedMatmul &m) {
    linalg::MatmulOp op = m.matmul;
    auto x = cast<RankedTensorType>(m.input.getType());
    auto w = cast<RankedTensorType>(m.weight.getType());
    SparseOrDense choice =
        chooseSparseOrDense(chip, numSMs, x.getDimSize(0), w.getDimSize(0),
                            w.getDimSize(1), m.pattern.getM());
    if (!choice.dense)
      return failure();
    OpBuilder b(op);
    FailureOr<Value> plain = plainWeight(b, m.weight);
    if (failed(plain))
      return failure();
    Value y = MatmulOp::create(b, op.getLoc(), op.getResultTypes()[0],
                               m.input, *plain, /*bias=*/Value(),
                               ActivationAttr());
    op.emitRemark() << "kept dense (library GEMM) instead of the "
                    << m.pattern << " sparse kernel: " << choice.reason
                    << "; policy=sparse forces the sparse kernel";
    op.getResult(0).replaceAllUsesWith(y);
    op.erase();
    return success();
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
