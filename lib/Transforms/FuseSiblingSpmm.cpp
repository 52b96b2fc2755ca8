//===- FuseSiblingSpmm.cpp - sparse GEMMs of one activation as one GEMM ---===//
//
// q, k and v (or gate and up) are sparse GEMMs of the same activation X
// with weights of the same width K. Apart they are several launches, each
// with its own split-K reduction, and the small ones (k and v of a
// grouped-query model) stream their weights far below the copy bandwidth.
// This pass concatenates their weights along the rows, inside the
// compression that the prepare stage runs once (so the fused weight costs
// no memory beyond what the parts would), runs one sgpu.spmm and gives
// each former result as a column slice of the fused one. The GPU lowering
// writes those slices as separate buffers from the split-K reduction; other
// plans store the whole result and copy the slices out (see the pass
// description in Passes.td).
//
//===----------------------------------------------------------------------===//

#include "sparse-opt/Dialect/SGPU/ConstantWeights.h"
#include "sparse-opt/Dialect/SGPU/SGPU.h"
#include "sparse-opt/Transforms/Passes.h"

#include "sparse-opt/Conversion/DeviceInfo.h"
#include "sparse-opt/Conversion/SplitKRule.h"
#include "sparse-opt/Conversion/TargetInfo.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"

#include "llvm/ADT/MapVector.h"

namespace mlir {
namespace sgpu {
#define GEN_PASS_DEF_SGPUFUSESIBLINGSPMM
#include "sparse-opt/Transforms/Passes.h.inc"
} // namespace sgpu
} // namespace mlir

using namespace mlir;
using namespace mlir::sgpu;

namespace {

/// What siblings share: the activation they read (before its lift, for
/// (2N-2):2N), how their weight is compressed and the result's element type.
/// Two spmm ops with equal keys compute [X . W1^T | X . W2^T] as one.
struct SiblingKey {
  Value activation; // its reshapeRoot; its own type is `input`
  Type input;
  OperationName producer; // sgpu.compress or sgpu.nm_decompose
  Type weightElement;
  int64_t k;
  Attribute pattern, tileGroups, liftResult;
  Type resultElement;

  auto tuple() const {
    return std::make_tuple(activation.getAsOpaquePointer(),
                           input.getAsOpaquePointer(),
                           producer.getAsOpaquePointer(),
                           weightElement.getAsOpaquePointer(), k,
                           pattern.getAsOpaquePointer(),
                           tileGroups.getAsOpaquePointer(),
                           liftResult.getAsOpaquePointer(),
                           resultElement.getAsOpaquePointer());
  }
  bool operator<(const SiblingKey &o) const { return tuple() < o.tuple(); }
};

/// The value `v` reshapes (through collapse_shape and expand_shape ops),
/// or `v`. Static reshapes of one value to one type are the same tensor:
/// the importers reshape an activation once per projection that reads it.
Value reshapeRoot(Value v) {
  while (Operation *def = v.getDefiningOp()) {
    if (!isa<tensor::CollapseShapeOp, tensor::ExpandShapeOp>(def))
      break;
    v = def->getOperand(0);
  }
  return v;
}

/// The weight argument `spmm` compresses: an argument of its function's
/// entry block that only this compression reads (the prepare stage's
/// input), or null.
BlockArgument weightArgument(SpmmOp spmm) {
  Operation *producer = spmm.getWeight().getDefiningOp();
  if (!isa_and_nonnull<CompressOp, NMDecomposeOp>(producer) ||
      !producer->hasOneUse())
    return {};
  Value weight = producer->getOperand(0);
  return isWeightArgument(weight) ? cast<BlockArgument>(weight)
                                  : BlockArgument();
}

/// The key of a fusable spmm, or failure: no bias or activation (the slices
/// would need them split too), no kernel chosen yet, a weight argument
/// (weightArgument) whose rows are a whole number of 16-row metadata tiles,
/// so each part's compressed rows start a tile of the fused weight.
FailureOr<SiblingKey> siblingKey(SpmmOp spmm) {
  if (spmm.getBias() || spmm.getActivation() ||
      spmm->hasAttr(SGPUDialect::kConfigAttr))
    return failure();
  BlockArgument arg = weightArgument(spmm);
  if (!arg)
    return failure();
  auto w = cast<RankedTensorType>(arg.getType());
  if (!w.hasStaticShape() || w.getDimSize(0) % 16 != 0)
    return failure();
  Operation *producer = spmm.getWeight().getDefiningOp();
  SiblingKey key{reshapeRoot(spmm.getInput()),
                 spmm.getInput().getType(),
                 producer->getName(),
                 w.getElementType(),
                 w.getDimSize(1),
                 {},
                 {},
                 {},
                 getElementTypeOrSelf(spmm.getResult().getType())};
  if (auto decompose = dyn_cast<NMDecomposeOp>(producer)) {
    // The lifted activation: the siblings each lift the same X.
    auto lift = spmm.getInput().getDefiningOp<LiftOp>();
    if (!lift)
      return failure();
    key.activation = reshapeRoot(lift.getInput());
    key.input = lift.getInput().getType();
    key.pattern = lift.getPatternAttr();
    key.tileGroups = lift.getTileGroupsAttr();
    key.liftResult = TypeAttr::get(lift.getType());
    if (decompose.getTileGroupsAttr() != lift.getTileGroupsAttr() ||
        getNMPattern(w) != lift.getPatternAttr())
      return failure();
  }
  return key;
}

/// Replaces `group` (sibling spmm ops in program order) by one spmm on the
/// row concatenation of their weight arguments and a column slice of its
/// result per former op.
void fuse(ArrayRef<SpmmOp> group) {
  SpmmOp first = group.front();
  OpBuilder b(first);
  Location loc = b.getFusedLoc(llvm::map_to_vector(
      group, [](SpmmOp op) { return op.getLoc(); }));
  SmallVector<Value> parts;
  int64_t rows = 0;
  for (SpmmOp op : group) {
    BlockArgument arg = weightArgument(op);
    parts.push_back(arg);
    rows += cast<RankedTensorType>(arg.getType()).getDimSize(0);
  }
  auto w = cast<RankedTensorType>(parts.front().getType());
  auto concatType = RankedTensorType::get({rows, w.getDimSize(1)},
                                          w.getElementType(), w.getEncoding());
  Value concat =
      tensor::ConcatOp::create(b, loc, concatType, /*dim=*/0, parts);
  Operation *producer = first.getWeight().getDefiningOp();
  auto partType = cast<CompressedType>(first.getWeight().getType());
  auto ctype = CompressedType::get(
      b.getContext(), {rows, partType.getShape()[1]},
      partType.getElementType(), partType.getPattern());
  Value weight;
  if (auto decompose = dyn_cast<NMDecomposeOp>(producer))
    weight = NMDecomposeOp::create(b, loc, ctype, concat,
                                   decompose.getTileGroupsAttr());
  else
    weight = CompressOp::create(b, loc, ctype, concat);
  auto m = cast<RankedTensorType>(first.getResult().getType()).getDimSize(0);
  auto resultType = RankedTensorType::get(
      {m, rows}, getElementTypeOrSelf(first.getResult().getType()));
  Value fused = SpmmOp::create(b, loc, resultType, first.getInput(), weight,
                               /*bias=*/Value(), ActivationAttr());
  // The slices follow the fused op; the siblings go once all exist (the
  // builder inserts before the first of them).
  b.setInsertionPointAfterValue(fused);
  SmallVector<Value> slices;
  int64_t offset = 0;
  for (SpmmOp op : group) {
    auto t = cast<RankedTensorType>(op.getResult().getType());
    SmallVector<OpFoldResult> offsets = {b.getIndexAttr(0),
                                         b.getIndexAttr(offset)},
                              sizes = {b.getIndexAttr(m),
                                       b.getIndexAttr(t.getDimSize(1))},
                              strides = {b.getIndexAttr(1), b.getIndexAttr(1)};
    slices.push_back(tensor::ExtractSliceOp::create(b, op.getLoc(), t, fused,
                                                    offsets, sizes, strides));
    offset += t.getDimSize(1);
  }
  for (auto [index, slice] : llvm::enumerate(slices)) {
    SpmmOp op = group[index];
    Operation *oldProducer = op.getWeight().getDefiningOp();
    Operation *lift = op.getInput().getDefiningOp<LiftOp>();
    op.getResult().replaceAllUsesWith(slice);
    op.erase();
    oldProducer->erase();
    if (lift && lift->use_empty())
      lift->erase();
  }
}

/// Whether the fused GEMM of `group` splits K at decode sizes (one block of
/// tokens) on `numSMs` multiprocessors, by the TMA kernel's own rule
/// (SplitKRule.h), so that its reduction writes the slices. Otherwise the
/// fused result would be stored whole and copied into its slices, which
/// costs more than the separate GEMMs save.
bool splitsK(MutableArrayRef<SpmmOp> group, int64_t numSMs) {
  int64_t rows = 0;
  for (SpmmOp op : group)
    rows += cast<CompressedType>(op.getWeight().getType()).getShape()[0];
  auto weight = cast<CompressedType>(group.front().getWeight().getType());
  // The 6:8 lift inside the kernel (tile_groups 8) takes three k32 steps.
  auto lift = group.front().getInput().getDefiningOp<LiftOp>();
  bool fusedLift = lift && lift.getTileGroups() == kFusedLiftTileGroups;
  int64_t kTiles = tma::kTilesOf(weight.getPaddedCols(),
                                 fusedLift ? tma::kFusedLiftSteps : tma::kSteps);
  return tma::splitKCount(llvm::divideCeil(rows, tma::kBlockRows), kTiles,
                          numSMs) > 1;
}

struct FuseSiblingSpmmPass
    : public sgpu::impl::SGPUFuseSiblingSpmmBase<FuseSiblingSpmmPass> {
  using Base::Base;

  void runOnOperation() override {
    std::string message;
    FailureOr<TargetInfo> target = parseTarget(chip, "", &message);
    if (failed(target)) {
      getOperation().emitError()
          << "invalid sgpu-fuse-sibling-spmm chip: " << message;
      return signalPassFailure();
    }
    FailureOr<const DeviceInfo *> part =
        resolveDevice(device, target->smVersion, &message);
    if (failed(part)) {
      getOperation().emitError()
          << "invalid sgpu-fuse-sibling-spmm device: " << message;
      return signalPassFailure();
    }
    // Only the sm_90a TMA kernel splits K and writes the slices itself.
    if (chip != "sm_90a" && !always)
      return;
    int64_t numSMs = (*part)->numSMs;
    // Groups per block, in program order; a group's first op is where the
    // fused op goes (the activation and the weight arguments dominate it,
    // and every use of a later sibling follows it).
    SmallVector<SmallVector<SpmmOp>> groups;
    getOperation().walk([&](Block *block) {
      llvm::MapVector<SiblingKey, SmallVector<SpmmOp>,
                      std::map<SiblingKey, unsigned>>
          byKey;
      for (auto spmm : block->getOps<SpmmOp>()) {
        FailureOr<SiblingKey> key = siblingKey(spmm);
        if (succeeded(key))
          byKey[*key].push_back(spmm);
      }
      for (auto &entry : byKey)
        if (entry.second.size() > 1 &&
            (always || splitsK(entry.second, numSMs)))
          groups.push_back(entry.second);
    });
    for (ArrayRef<SpmmOp> group : groups)
      fuse(group);
  }
};

} // namespace
