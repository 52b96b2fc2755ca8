//===- FoldAttentionTransposes.cpp - library attention in the projections'
// layout ---------------------------------------------------------------===//
//
// A transformer's projections write q, k and v as B x S x H x D; attention
// is written on B x H x S x D, so four transposes (q, k, v, and the result
// back) surround it, each a pass over a whole activation. cuDNN's fused
// attention reads any strides: where an sgpu.attention runs through the
// library, this pass gives it the projections' layout (`seq_major`) and
// drops the transposes. A RoPE between a transpose and the attention moves
// before the transpose: rope(transpose(x), cos, sin) ==
// transpose(rope(x, cos', sin')), with the tables' head and sequence
// dimensions swapped (a reshape, as the head dimension of a table is 1).
// See the pass description in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "sparse-opt/Dialect/SGPU/SGPU.h"
#include "sparse-opt/Transforms/Passes.h"

#include "EraseDeadChain.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"

namespace mlir {
namespace sgpu {
#define GEN_PASS_DEF_SGPUFOLDATTENTIONTRANSPOSES
#include "sparse-opt/Transforms/Passes.h.inc"
} // namespace sgpu
} // namespace mlir

using namespace mlir;
using namespace mlir::sgpu;

namespace {

/// The permutation between B x H x S x D and B x S x H x D (its own
/// inverse).
constexpr int64_t kSwapHeadsAndSeq[] = {0, 2, 1, 3};

/// The input of `v`'s producer when it is a transpose swapping heads and
/// sequence, else null.
Value swappedFrom(Value v) {
  auto t = v.getDefiningOp<linalg::TransposeOp>();
  if (!t || !t.hasPureTensorSemantics() ||
      t.getPermutation() != ArrayRef<int64_t>(kSwapHeadsAndSeq))
    return {};
  return t.getInput();
}

/// True when a rank-4 RoPE table broadcasts over heads (dimension 1 is 1):
/// then swapping its head and sequence dimensions is a reshape.
bool headsBroadcast(Value table) {
  auto t = cast<RankedTensorType>(table.getType());
  return t.getRank() == 4 && t.getDimSize(1) == 1;
}

/// A rope table [b, 1, s, d] as [b, s, 1, d] (collapse the middle pair,
/// expand it the other way round: the same elements in the same order).
Value swapTable(OpBuilder &b, Location loc, Value table) {
  auto t = cast<RankedTensorType>(table.getType());
  SmallVector<ReassociationIndices> middle = {{0}, {1, 2}, {3}};
  auto collapsed = tensor::CollapseShapeOp::create(
      b, loc,
      RankedTensorType::get({t.getDimSize(0), t.getDimSize(2), t.getDimSize(3)},
                            t.getElementType()),
      table, middle);
  return tensor::ExpandShapeOp::create(
      b, loc,
      RankedTensorType::get(
          {t.getDimSize(0), t.getDimSize(2), 1, t.getDimSize(3)},
          t.getElementType()),
      collapsed, middle);
}

/// How an operand of the attention is had in B x S x H x D: the tensor
/// itself (`source`) or a RoPE of it to move before the transpose.
struct SeqMajorOperand {
  Value source;
  RopeOp rope; ///< the rope to rebuild on `source`, or null
};

/// The B x S x H x D form of attention operand `v`, when `v` is a
/// heads/sequence transpose or a RoPE (used by the attention alone, with
/// tables that broadcast over heads) of one.
std::optional<SeqMajorOperand> seqMajorOperand(Value v) {
  if (Value x = swappedFrom(v))
    return SeqMajorOperand{x, nullptr};
  auto rope = v.getDefiningOp<RopeOp>();
  if (!rope || !rope->hasOneUse() || !headsBroadcast(rope.getCos()) ||
      !headsBroadcast(rope.getSin()))
    return std::nullopt;
  if (Value x = swappedFrom(rope.getInput()))
    return SeqMajorOperand{x, rope};
  return std::nullopt;
}

/// True when `op` was given to the library by sgpu-select-kernels.
bool runsOnLibrary(AttentionOp op) {
  auto config = dyn_cast_if_present<AttentionConfigAttr>(
      op->getAttr(SGPUDialect::kConfigAttr));
  return config && config.getKernel() == AttentionKernelKind::library;
}

/// The transposes of `op`'s result back to B x S x H x D: all of its users,
/// at least one; else empty.
SmallVector<linalg::TransposeOp> resultTransposes(AttentionOp op) {
  SmallVector<linalg::TransposeOp> out;
  for (Operation *user : op->getUsers()) {
    auto t = dyn_cast<linalg::TransposeOp>(user);
    if (!t || swappedFrom(t->getResult(0)) != op.getResult())
      return {};
    out.push_back(t);
  }
  return out;
}

struct FoldAttentionTransposesPass
    : public sgpu::impl::SGPUFoldAttentionTransposesBase<
          FoldAttentionTransposesPass> {
  void runOnOperation() override {
    SmallVector<AttentionOp> ops;
    getOperation().walk([&](AttentionOp op) {
      if (!op.getSeqMajor() && runsOnLibrary(op) && !op.getMask() &&
          !op.getPositions())
        ops.push_back(op);
    });
    for (AttentionOp op : ops) {
      SmallVector<linalg::TransposeOp> backs = resultTransposes(op);
      auto q = seqMajorOperand(op.getQuery());
      auto k = seqMajorOperand(op.getKey());
      auto v = seqMajorOperand(op.getValue());
      if (backs.empty() || !q || !k || !v)
        continue;
      OpBuilder b(op);
      auto operand = [&](SeqMajorOperand o) -> Value {
        if (!o.rope)
          return o.source;
        Location loc = o.rope.getLoc();
        auto rope = RopeOp::create(b, loc, o.source.getType(), o.source,
                                   swapTable(b, loc, o.rope.getCos()),
                                   swapTable(b, loc, o.rope.getSin()));
        // The launch configuration that sgpu-select-kernels gave it.
        if (Attribute config = o.rope->getAttr(SGPUDialect::kConfigAttr))
          rope->setAttr(SGPUDialect::kConfigAttr, config);
        return rope;
      };
      Value nq = operand(*q), nk = operand(*k), nv = operand(*v);
      auto folded = AttentionOp::create(
          b, op.getLoc(), backs.front()->getResult(0).getType(), nq, nk, nv,
          /*mask=*/Value(), /*positions=*/Value(), op.getCausalAttr(),
          op.getScaleAttr(), b.getUnitAttr());
      folded->setAttr(SGPUDialect::kConfigAttr,
                      op->getAttr(SGPUDialect::kConfigAttr));
      // With the last transpose back go the old attention (pure, unused
      // then) and the transposes and ropes only it read.
      for (linalg::TransposeOp back : backs) {
        back->getResult(0).replaceAllUsesWith(folded.getResult());
        eraseDeadChain(back);
      }
    }
  }
};

} // namespace
