//===- TempArena.cpp - temporaries packed by liveness ---------------------===//
//
// Lifetimes are step intervals in program order. Allocations are placed in
// order of their first step at the lowest offset where they fit beside the
// blocks still live (first fit over the live blocks sorted by offset), the
// classic linear-scan placement: not optimal, but a transformer's
// temporaries come in a few sizes that repeat per layer, so the arena ends
// close to the largest set of simultaneously live temporaries.
//
//===----------------------------------------------------------------------===//

#include "TempArena.h"

#include "sparse-opt/Dialect/SGPU/SGPU.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

#include <algorithm>
#include <map>

using namespace mlir;
using namespace mlir::sgpu;

namespace {

/// The allocation `v` views (through reshapes and tensor maps), or null.
Value rootAlloc(Value v) {
  while (Operation *def = v.getDefiningOp()) {
    if (auto alloc = dyn_cast<memref::AllocOp>(def))
      return alloc.getResult();
    if (isa<memref::ExpandShapeOp, memref::CollapseShapeOp, memref::CastOp>(
            def)) {
      v = def->getOperand(0);
      continue;
    }
    if (auto map = dyn_cast<TensorMapOp>(def)) {
      v = map.getSource();
      continue;
    }
    return Value();
  }
  return Value();
}

int64_t byteSize(Value alloc) {
  auto t = cast<MemRefType>(alloc.getType());
  return t.getNumElements() * ((t.getElementTypeBitWidth() + 7) / 8);
}

int64_t alignUp(int64_t v) {
  return (v + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment;
}

} // namespace

TempArena mlir::sgpu::planTempArena(
    func::FuncOp host, llvm::function_ref<bool(Operation *)> isPrepare,
    const llvm::DenseSet<Value> &excluded) {
  struct Life {
    int64_t first = 0, last = 0;
  };
  llvm::DenseMap<Value, Life> lives;
  llvm::DenseSet<Value> pinned(excluded.begin(), excluded.end());
  SmallVector<Value> order;
  int64_t step = 0;
  for (Operation &op : host.getBody().front()) {
    // Steps: launches, library calls and collectives (their buffers stay
    // in use until the matching wait, which names them again).
    if (!isa<gpu::LaunchFuncOp, GemmCallOp, AttentionCallOp, AllReduceCallOp,
             AllReduceSyncOp, WeightCheckOp>(op))
      continue;
    ++step;
    bool prepare = isPrepare(&op);
    for (Value operand : op.getOperands()) {
      Value alloc = rootAlloc(operand);
      if (!alloc)
        continue;
      if (prepare) {
        pinned.insert(alloc);
        continue;
      }
      auto [it, inserted] = lives.try_emplace(alloc, Life{step, step});
      if (inserted)
        order.push_back(alloc);
      it->second.last = step;
    }
  }

  TempArena arena;
  // Live blocks: offset -> (end offset, last step).
  std::map<int64_t, std::pair<int64_t, int64_t>> live;
  for (Value alloc : order) {
    if (pinned.contains(alloc))
      continue;
    Life life = lives.lookup(alloc);
    for (auto it = live.begin(); it != live.end();)
      it = it->second.second < life.first ? live.erase(it) : std::next(it);
    int64_t size = alignUp(byteSize(alloc)), offset = 0;
    for (auto &[start, block] : live) {
      if (start - offset >= size)
        break;
      offset = std::max(offset, block.first);
    }
    live[offset] = {offset + size, life.last};
    arena.offsets[alloc] = offset;
    arena.bytes = std::max(arena.bytes, offset + size);
    arena.unpackedBytes += size;
  }
  return arena;
}
