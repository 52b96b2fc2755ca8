//===- LadderResidual.cpp - the residual chain in ladder form -------------===//
//
// Standard tensor-parallel residual: x_i = x_{i-1} + AR(f_i(norm(x_{i-1}))).
// Ladder: x_i = x_{i-1} + AR(f_i(norm(x_{i-2}))); the first two blocks read
// the embedding. Only the norm inputs change: each converted block's norm
// reads the stream the previous residual add started from.
//
//===----------------------------------------------------------------------===//

#include "sparse-opt/Dialect/SGPU/SGPU.h"
#include "sparse-opt/Transforms/Passes.h"

#include "mlir/Analysis/SliceAnalysis.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/BuiltinOps.h"

namespace mlir {
namespace sgpu {
#define GEN_PASS_DEF_SGPULADDERRESIDUAL
#include "sparse-opt/Transforms/Passes.h.inc"
} // namespace sgpu
} // namespace mlir

using namespace mlir;
using namespace mlir::sgpu;

namespace {

/// One residual add of the chain: out = stream + all_reduce(block).
struct Step {
  Operation *add = nullptr;
  Value stream; ///< x_{i-1}
  AllReduceOp reduce;
  /// The norm operands in the block that read the stream.
  SmallVector<OpOperand *> normInputs;
};

/// The two tensors `op` adds element-wise: arith.addf on tensors or a
/// linalg.generic with identity maps whose body is one addf of its inputs.
static std::optional<std::pair<Value, Value>> addedTensors(Operation *op) {
  if (auto add = dyn_cast<arith::AddFOp>(op)) {
    if (isa<RankedTensorType>(add.getType()))
      return std::make_pair(add.getLhs(), add.getRhs());
    return std::nullopt;
  }
  auto generic = dyn_cast<linalg::GenericOp>(op);
  if (!generic || generic.getNumDpsInputs() != 2 ||
      generic.getNumDpsInits() != 1 || generic->getNumResults() != 1 ||
      !generic.hasPureTensorSemantics() ||
      !llvm::all_of(generic.getIndexingMapsArray(),
                    [](AffineMap m) { return m.isIdentity(); }) ||
      generic.payloadUsesValueFromOperand(generic.getDpsInitOperand(0)))
    return std::nullopt;
  Block &body = generic.getRegion().front();
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  auto add = yield.getNumOperands() == 1
                 ? yield.getOperand(0).getDefiningOp<arith::AddFOp>()
                 : arith::AddFOp();
  if (!add || body.getOperations().size() != 2)
    return std::nullopt;
  Value a = body.getArgument(0), b = body.getArgument(1);
  if (!((add.getLhs() == a && add.getRhs() == b) ||
        (add.getLhs() == b && add.getRhs() == a)))
    return std::nullopt;
  return std::make_pair(generic.getDpsInputOperand(0)->get(),
                        generic.getDpsInputOperand(1)->get());
}

/// The residual add `op` is, if it is one: stream + all_reduce(...), the
/// all-reduce's result used only here.
static std::optional<Step> matchStep(Operation *op) {
  auto added = addedTensors(op);
  if (!added)
    return std::nullopt;
  for (auto [stream, reduced] :
       {std::pair{added->first, added->second},
        std::pair{added->second, added->first}}) {
    auto reduce = reduced.getDefiningOp<AllReduceOp>();
    if (reduce && reduced.hasOneUse()) {
      Step step;
      step.add = op;
      step.stream = stream;
      step.reduce = reduce;
      return step;
    }
  }
  return std::nullopt;
}

struct LadderResidualPass
    : public sgpu::impl::SGPULadderResidualBase<LadderResidualPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    int64_t requested = layers;
    if (requested < 0) {
      module.emitError() << "sgpu-ladder-residual layers=" << requested
                         << " is negative; expected 0 (the module's "
                            "sgpu.ladder_layers, or all) or a layer count";
      return signalPassFailure();
    }
    int64_t k = requested;
    if (k == 0)
      if (auto attr = module->getAttrOfType<IntegerAttr>(
              SGPUDialect::kLadderLayersAttr))
        k = attr.getInt();
    bool any = false;
    for (auto func : module.getOps<func::FuncOp>()) {
      if (func.isExternal())
        continue;
      bool has = false;
      func.walk([&](AllReduceOp) { has = true; });
      if (!has)
        continue;
      any = true;
      if (failed(convert(func, k)))
        return signalPassFailure();
    }
    if (!any) {
      module.emitError() << "sgpu-ladder-residual found no tensor-parallel "
                            "residual chain (x = x + all_reduce(block(norm(x))))"
                            ": the module has no sgpu.all_reduce";
      signalPassFailure();
    }
  }

  LogicalResult convert(func::FuncOp func, int64_t k) {
    Block &body = func.getBody().front();
    // The chain, in program order.
    SmallVector<Step> steps;
    for (Operation &op : body)
      if (std::optional<Step> step = matchStep(&op))
        steps.push_back(*step);
    // Already in ladder form: leave it (the pass is idempotent).
    if (llvm::any_of(steps, [](const Step &s) {
          return s.add->hasAttr(SGPUDialect::kLadderBlockAttr);
        }))
      return success();
    // Every all-reduce must feed a residual add.
    WalkResult r = func.walk([&](AllReduceOp op) {
      if (!llvm::any_of(steps, [&](const Step &s) { return s.reduce == op; })) {
        op.emitError() << "not a residual block: the all-reduce's result is "
                          "not added to the residual stream alone "
                          "(x = x + all_reduce(block(norm(x))))";
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    if (r.wasInterrupted())
      return failure();
    for (size_t i = 1; i < steps.size(); ++i)
      if (steps[i].stream != steps[i - 1].add->getResult(0))
        return steps[i].add->emitError()
               << "residual add does not continue the chain: its stream "
                  "operand is not the previous residual sum";
    // Each block reads the stream through norms only (pre-norm).
    for (Step &step : steps)
      if (failed(findNormInputs(step)))
        return failure();

    int64_t n = steps.size();
    int64_t first = 0;
    if (k > 0 && 2 * k < n) {
      if (n % 2)
        return steps.front().add->emitError()
               << "layers=" << k << " needs attention/MLP pairs, but the "
               << "residual chain has " << n << " blocks";
      first = n - 2 * k;
    }
    // Block i reads x_{i-2}: the stream the previous add started from.
    for (int64_t i = std::max<int64_t>(first, 1); i < n; ++i)
      for (OpOperand *use : steps[i].normInputs)
        use->set(steps[i - 1].stream);
    for (int64_t i = first; i < n; ++i)
      steps[i].add->setAttr(SGPUDialect::kLadderBlockAttr,
                            UnitAttr::get(func.getContext()));
    // Each converted residual add moves down to its first user (the next
    // add, or the norm two blocks on): the next block no longer needs it,
    // so its work can run while this block's all-reduce is in flight, and
    // sgpu-async-collectives puts the wait right before the add. Last
    // first, so each add lands before the already moved next one.
    for (int64_t i = n - 1; i >= first; --i) {
      Operation *add = steps[i].add;
      Operation *firstUser = nullptr;
      for (Operation *user : add->getResult(0).getUsers()) {
        Operation *inBlock = body.findAncestorOpInBlock(*user);
        if (inBlock && (!firstUser || inBlock->isBeforeInBlock(firstUser)))
          firstUser = inBlock;
      }
      if (firstUser && add->isBeforeInBlock(firstUser))
        add->moveBefore(firstUser);
    }
    return success();
  }

  /// The norms of the step's block that read the stream: the block is the
  /// backward slice of the all-reduce's input, cut at the stream.
  LogicalResult findNormInputs(Step &step) {
    BackwardSliceOptions options;
    Operation *streamDef = step.stream.getDefiningOp();
    Block *block = step.add->getBlock();
    options.filter = [&](Operation *op) {
      return op != streamDef && op->getBlock() == block;
    };
    options.omitBlockArguments = true;
    SetVector<Operation *> slice;
    (void)getBackwardSlice(step.reduce.getInput(), &slice, options);
    if (Operation *def = step.reduce.getInput().getDefiningOp())
      slice.insert(def);
    for (Operation *op : slice) {
      for (OpOperand &use : op->getOpOperands()) {
        if (use.get() != step.stream)
          continue;
        if (isa<RMSNormOp, LayerNormOp>(op) && use.getOperandNumber() == 0) {
          step.normInputs.push_back(&use);
          continue;
        }
        return op->emitError()
               << "not a pre-norm residual block: '" << op->getName()
               << "' reads the residual stream directly (the ladder form "
                  "needs every block to read it through a norm)";
      }
    }
    if (step.normInputs.empty())
      return step.reduce.emitError()
             << "not a pre-norm residual block: the all-reduced block does "
                "not read the residual stream through sgpu.rms_norm or "
                "sgpu.layer_norm";
    return success();
  }
};

} // namespace
