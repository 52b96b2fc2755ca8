//===- SimulateRanks.cpp - every rank of a tensor-parallel group ---------===//
//
// A tensor-parallel function is written for one rank: it gets that rank's
// shard of the weights and exchanges partial results through
// sgpu.all_reduce. The CPU reference runs one process, where an all-reduce
// is the identity (a group of one rank), so sharded models could only be
// checked with one rank. This pass builds one function computing R ranks
// side by side: the body is cloned once per rank and each all-reduce becomes
// the element-wise sum of the R replicas' inputs, which is exactly what the
// collective computes across R processes. The reference pipeline then runs
// a sharded model, and rewrites of it (the ladder residual, asynchronous
// collectives), with several ranks on the CPU.
//
//===----------------------------------------------------------------------===//

#include "sparse-opt/Dialect/SGPU/SGPU.h"
#include "sparse-opt/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/CallInterfaces.h"

namespace mlir {
namespace sgpu {
#define GEN_PASS_DEF_SGPUSIMULATERANKS
#include "sparse-opt/Transforms/Passes.h.inc"
} // namespace sgpu
} // namespace mlir

using namespace mlir;
using namespace mlir::sgpu;

namespace {

/// Whether `op` is one of the tensor collectives the simulation replaces.
static bool isTensorCollective(Operation *op) {
  return isa<AllReduceOp, AllReduceStartOp, AllReduceWaitOp>(op);
}

/// Whether running `func` issues a collective: one in its body, or in a
/// function it calls (`visited` guards against recursion).
static bool issuesCollectives(func::FuncOp func,
                              DenseSet<Operation *> &visited) {
  if (!visited.insert(func).second)
    return false;
  return func
      .walk([&](Operation *op) {
        if (isTensorCollective(op) || isa<AllReduceCallOp, AllReduceSyncOp>(op))
          return WalkResult::interrupt();
        if (auto call = dyn_cast<CallOpInterface>(op))
          if (auto callee =
                  dyn_cast_if_present<func::FuncOp>(call.resolveCallable()))
            if (issuesCollectives(callee, visited))
              return WalkResult::interrupt();
        return WalkResult::advance();
      })
      .wasInterrupted();
}

/// What every rank of the group receives from an all-reduce of `inputs`
/// (rank r's input at index r): their element-wise sum, accumulated in rank
/// order. An element-wise `linalg.generic`, the form the reference pipeline
/// lowers to loops (`arith.addf` on tensors would not bufferize there).
static Value sumAcrossRanks(OpBuilder &b, Location loc, ValueRange inputs) {
  if (inputs.size() == 1)
    return inputs.front();
  // The collectives' verifiers guarantee static f16/bf16/f32 tensors.
  auto type = cast<RankedTensorType>(inputs.front().getType());
  Value init = tensor::EmptyOp::create(
      b, loc, type.getShape(), type.getElementType(), type.getEncoding());
  AffineMap id = b.getMultiDimIdentityMap(type.getRank());
  SmallVector<AffineMap> maps(inputs.size() + 1, id);
  SmallVector<utils::IteratorType> iterators(type.getRank(),
                                             utils::IteratorType::parallel);
  auto sum = linalg::GenericOp::create(
      b, loc, TypeRange{type}, inputs, ValueRange{init}, maps, iterators,
      [&](OpBuilder &nb, Location nloc, ValueRange args) {
        Value acc = args[0];
        for (Value next : args.take_front(inputs.size()).drop_front())
          acc = arith::AddFOp::create(nb, nloc, acc, next);
        linalg::YieldOp::create(nb, nloc, acc);
      });
  return sum.getResult(0);
}

// Every rank is a copy of the function: a bound keeps a mistyped count
// from exhausting memory (NCCL groups of one node have 8).
constexpr int64_t kMaxRanks = 1024;

struct SimulateRanksPass
    : public sgpu::impl::SGPUSimulateRanksBase<SimulateRanksPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (ranks < 1 || ranks > kMaxRanks) {
      module.emitError() << "sgpu-simulate-ranks ranks="
                         << static_cast<int64_t>(ranks)
                         << ": a tensor-parallel group has 1 to " << kMaxRanks
                         << " ranks here (each is a copy of the function)";
      return signalPassFailure();
    }
    if (!into.empty() && funcName.empty()) {
      module.emitError() << "sgpu-simulate-ranks into=" << into
                         << " needs func=: the function to simulate into @"
                         << into;
      return signalPassFailure();
    }

    SmallVector<func::FuncOp> funcs;
    if (!funcName.empty()) {
      auto func = module.lookupSymbol<func::FuncOp>(funcName);
      if (!func) {
        module.emitError() << "sgpu-simulate-ranks func=" << funcName
                           << ": the module has no func.func @" << funcName;
        return signalPassFailure();
      }
      if (func.isExternal()) {
        func.emitError() << "sgpu-simulate-ranks func=" << funcName << ": @"
                         << funcName
                         << " is only declared, there is no body to simulate";
        return signalPassFailure();
      }
      funcs.push_back(func);
    } else {
      for (auto func : module.getOps<func::FuncOp>())
        if (!func.isExternal())
          funcs.push_back(func);
    }

    // Check everything first, so that a failure leaves the module as it was
    // (and reports every function's problems at once).
    // The functions rewritten in place whose signature changes (with more
    // than one rank, or replicated arguments) cannot be called as before.
    DenseSet<Operation *> simulated, resigned;
    for (func::FuncOp func : funcs) {
      simulated.insert(func);
      if (into.empty() && simulatedType(func) != func.getFunctionType())
        resigned.insert(func);
    }
    bool ok = true;
    for (func::FuncOp func : funcs)
      ok &= succeeded(check(module, func, simulated, resigned));
    if (!ok)
      return signalPassFailure();

    for (func::FuncOp func : funcs)
      if (failed(simulate(module, func)))
        return signalPassFailure();
  }

  /// The type of the simulated `func`: the arguments of every rank, a
  /// replicated one once; the results of every rank.
  FunctionType simulatedType(func::FuncOp func) {
    FunctionType type = func.getFunctionType();
    SmallVector<Type> args, results;
    for (int64_t r = 0; r < ranks; ++r) {
      for (unsigned i = 0; i < type.getNumInputs(); ++i)
        if (r == 0 || !func.getArgAttr(i, SGPUDialect::kReplicatedAttr))
          args.push_back(type.getInput(i));
      llvm::append_range(results, type.getResults());
    }
    return FunctionType::get(func.getContext(), args, results);
  }

  /// Whether `func` can be simulated: one block, collectives only in that
  /// block and only on tensors, sums only, and no calls that would run a
  /// collective once per replica (or a function whose signature changes).
  LogicalResult check(ModuleOp module, func::FuncOp func,
                      const DenseSet<Operation *> &simulated,
                      const DenseSet<Operation *> &resigned) {
    if (!llvm::hasSingleElement(func.getBody()))
      return func.emitError()
             << "cannot simulate ranks of @" << func.getSymName()
             << ": its body has " << func.getBody().getBlocks().size()
             << " blocks; the body is cloned once per rank and must be a "
                "single block (simulate before lowering control flow to "
                "blocks)";
    WalkResult result = func.walk([&](Operation *op) -> WalkResult {
      if (isa<AllReduceCallOp, AllReduceSyncOp>(op))
        return op->emitError()
               << "'" << op->getName()
               << "' works on buffers: simulate ranks on tensors, before "
                  "bufferization";
      if (isTensorCollective(op) && op->getParentOp() != func) {
        // Each collective of the body is one group across the replicas; one
        // in a region may run a different number of times per rank.
        return op->emitError()
               << "'" << op->getName() << "' inside '"
               << op->getParentOp()->getName()
               << "': sgpu-simulate-ranks sums each collective across the "
                  "replicas of the function body, so collectives must be "
                  "issued in the body itself, where every rank reaches them "
                  "in the same order";
      }
      ReduceKind kind = ReduceKind::sum;
      if (auto ar = dyn_cast<AllReduceOp>(op))
        kind = ar.getKind();
      else if (auto start = dyn_cast<AllReduceStartOp>(op))
        kind = start.getKind();
      if (kind != ReduceKind::sum)
        return op->emitError()
               << "cannot simulate a '" << stringifyReduceKind(kind)
               << "' all-reduce: sgpu-simulate-ranks only sums the ranks' "
                  "inputs (kind = #sgpu.reduce<sum>)";
      if (auto call = dyn_cast<CallOpInterface>(op)) {
        auto callee = dyn_cast_if_present<func::FuncOp>(call.resolveCallable());
        // Each replica calls the callee: its collectives would run once per
        // rank, each a group of one, and silently not reduce anything.
        DenseSet<Operation *> visited;
        if (callee && issuesCollectives(callee, visited))
          return op->emitError()
                 << "calls @" << callee.getSymName()
                 << ", which issues collectives: each replica would run them "
                    "alone; inline @"
                 << callee.getSymName() << " before simulating ranks";
        if (callee && resigned.contains(callee))
          return op->emitError()
                 << "calls @" << callee.getSymName()
                 << ", which is simulated too: its signature becomes that of "
                    "all ranks, so a per-rank call no longer fits (inline it "
                    "first)";
      }
      return WalkResult::advance();
    });
    if (result.wasInterrupted())
      return failure();

    // A function rewritten in place takes the arguments of all ranks; a use
    // of it elsewhere (a call with one rank's operands) would not fit.
    if (resigned.contains(func)) {
      if (std::optional<SymbolTable::UseRange> uses =
              SymbolTable::getSymbolUses(func, module)) {
        for (const SymbolTable::SymbolUse &use : *uses) {
          Operation *user = use.getUser();
          auto userFunc = user->getParentOfType<func::FuncOp>();
          // A call in a simulated body is reported as such, above.
          if (isa<CallOpInterface>(user) && userFunc &&
              simulated.contains(userFunc))
            continue;
          return user->emitError()
                 << "uses @" << func.getSymName()
                 << ", whose signature sgpu-simulate-ranks changes to take "
                    "every rank's arguments; simulate it into a new function "
                    "instead (func="
                 << func.getSymName() << " into=NAME), which leaves @"
                 << func.getSymName() << " as it is";
        }
      }
    }
    return success();
  }

  /// Builds the R-rank version of `func` (in place, or into @into).
  LogicalResult simulate(ModuleOp module, func::FuncOp func) {
    MLIRContext *ctx = &getContext();
    int64_t numRanks = ranks;
    FunctionType type = func.getFunctionType();
    unsigned numArgs = type.getNumInputs();
    unsigned numResults = type.getNumResults();

    // Arguments: rank 0's arguments, then rank 1's, and so on, where a
    // replicated argument appears once, among rank 0's.
    SmallVector<bool> replicated(numArgs);
    for (unsigned i = 0; i < numArgs; ++i)
      replicated[i] =
          static_cast<bool>(func.getArgAttr(i, SGPUDialect::kReplicatedAttr));
    SmallVector<Type> argTypes;
    SmallVector<Attribute> argAttrs;
    SmallVector<Location> argLocs;
    SmallVector<std::pair<int64_t, unsigned>> argOrigin; // (rank, argument)
    for (int64_t r = 0; r < numRanks; ++r) {
      for (unsigned i = 0; i < numArgs; ++i) {
        if (replicated[i] && r > 0)
          continue;
        argTypes.push_back(type.getInput(i));
        NamedAttrList attrs(func.getArgAttrDict(i));
        attrs.erase(SGPUDialect::kReplicatedAttr);
        argAttrs.push_back(attrs.getDictionary(ctx));
        argLocs.push_back(func.getArgument(i).getLoc());
        argOrigin.emplace_back(r, i);
      }
    }
    // Results: every rank's results, rank 0's first. After the all-reduces
    // of a correct tensor-parallel model they are equal, which a test shows
    // by printing them all.
    SmallVector<Attribute> resultAttrs;
    for (int64_t r = 0; r < numRanks; ++r) {
      for (unsigned i = 0; i < numResults; ++i) {
        resultAttrs.push_back(func.getResultAttrDict(i)
                                  ? Attribute(func.getResultAttrDict(i))
                                  : Attribute(DictionaryAttr::get(ctx)));
      }
    }
    FunctionType newType = simulatedType(func);

    func::FuncOp target = func;
    if (!into.empty()) {
      target = module.lookupSymbol<func::FuncOp>(into);
      if (target) {
        // A declaration lets the rest of the module call the simulated
        // function (a test driver parses only if its callee exists).
        if (!target.isExternal())
          return target.emitError()
                 << "sgpu-simulate-ranks into=" << into << ": @" << into
                 << " already has a body; give the name of a new function "
                    "or of a declaration to define";
        if (target.getFunctionType() != newType)
          return target.emitError()
                 << "sgpu-simulate-ranks into=" << into << ": @" << into
                 << " is declared as " << target.getFunctionType()
                 << ", but simulating @" << func.getSymName() << " with "
                 << numRanks << (numRanks == 1 ? " rank" : " ranks")
                 << " gives " << newType;
      } else if (module.lookupSymbol(into)) {
        return module.lookupSymbol(into)->emitError()
               << "sgpu-simulate-ranks into=" << into
               << ": the symbol exists and is not a func.func";
      } else {
        OpBuilder b(ctx);
        b.setInsertionPointAfter(func);
        target = func::FuncOp::create(b, func.getLoc(), into, newType);
        target.setVisibility(func.getVisibility());
        for (NamedAttribute attr : func->getDiscardableAttrs())
          target->setAttr(attr.getName(), attr.getValue());
      }
    }

    Block &body = func.getBody().front();
    auto *newBody = new Block();
    newBody->addArguments(argTypes, argLocs);
    SmallVector<IRMapping> maps(numRanks);
    for (auto [k, origin] : llvm::enumerate(argOrigin)) {
      auto [r, i] = origin;
      Value arg = newBody->getArgument(k);
      if (replicated[i]) {
        for (IRMapping &map : maps)
          map.map(body.getArgument(i), arg);
      } else {
        maps[r].map(body.getArgument(i), arg);
      }
    }

    // Clone op by op, each op once per rank: when a collective is reached
    // every replica's input to it exists, so the k-th collective of the
    // body is one group across the ranks, as when R processes issue their
    // collectives in the same order.
    OpBuilder b(ctx);
    b.setInsertionPointToEnd(newBody);
    DenseMap<Operation *, Value> startedSums;
    auto rankInputs = [&](Value input) {
      SmallVector<Value> inputs;
      for (IRMapping &map : maps)
        inputs.push_back(map.lookup(input));
      return inputs;
    };
    for (Operation &op : body.without_terminator()) {
      if (auto ar = dyn_cast<AllReduceOp>(op)) {
        Value sum = sumAcrossRanks(b, ar.getLoc(), rankInputs(ar.getInput()));
        for (IRMapping &map : maps)
          map.map(ar.getResult(), sum);
        continue;
      }
      // An asynchronous pair reduces the value the start read: the sum is
      // computed there and stands for the wait's result. The token (used by
      // the wait alone) has no counterpart.
      if (auto start = dyn_cast<AllReduceStartOp>(op)) {
        startedSums[start] =
            sumAcrossRanks(b, start.getLoc(), rankInputs(start.getInput()));
        continue;
      }
      if (auto wait = dyn_cast<AllReduceWaitOp>(op)) {
        Value sum = startedSums.lookup(wait.getToken().getDefiningOp());
        for (IRMapping &map : maps)
          map.map(wait.getResult(), sum);
        continue;
      }
      for (IRMapping &map : maps)
        b.clone(op, map);
    }
    auto ret = cast<func::ReturnOp>(body.getTerminator());
    SmallVector<Value> results;
    for (IRMapping &map : maps)
      for (Value v : ret.getOperands())
        results.push_back(map.lookup(v));
    func::ReturnOp::create(b, ret.getLoc(), results);

    if (target == func)
      func.getBody().front().erase();
    target.getBody().push_back(newBody);
    target.setFunctionType(newType);
    target.setAllArgAttrs(argAttrs);
    target.setAllResultAttrs(resultAttrs);
    return success();
  }
};

} // namespace
