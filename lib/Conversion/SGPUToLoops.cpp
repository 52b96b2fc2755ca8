//===- SGPUToLoops.cpp - sgpu ops to reference loops ----------------------===//
//
// The reference semantics of the sgpu ops, as plain scf loops over buffers.
// The compressed weight is decoded exactly as the sparse tensor cores read
// it (values + per-chunk metadata), so a CPU run of this lowering checks the
// compression format as well as the rewrite that produced the op.
//
//===----------------------------------------------------------------------===//

#include "sparse-opt/Conversion/Passes.h"
#include "sparse-opt/Dialect/SGPU/BufferLimits.h"
#include "sparse-opt/Dialect/SGPU/ConstantWeights.h"
#include "sparse-opt/Dialect/SGPU/SGPU.h"
#include "BlocksToLoops.h"
#include "IndexMath.h"
#include "TwellToLoops.h"
#include "WeightPrepare.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinOps.h"

namespace mlir {
namespace sgpu {
#define GEN_PASS_DEF_CONVERTSGPUTOLOOPS
#include "sparse-opt/Conversion/Passes.h.inc"
} // namespace sgpu
} // namespace mlir

using namespace mlir;
using namespace mlir::sgpu;

namespace {

/// The GEMM epilogue of the references: y[mi, ni] = act(r + bias[ni]),
/// rounded once to y's element type. `bias` may be null.
static void storeReferenceEpilogue(OpBuilder &b, Location loc, IndexMath &lb,
                                   Value r, Value bias, Activation act,
                                   Value y, Value mi, Value ni) {
  if (bias)
    r = arith::AddFOp::create(b, loc, r,
                              lb.toF32(memref::LoadOp::create(b, loc, bias,
                                                              ni)));
  if (act == Activation::relu)
    r = arith::MaximumFOp::create(
        b, loc, r,
        arith::ConstantOp::create(b, loc, b.getF32Type(),
                                  b.getF32FloatAttr(0)));
  Type et = cast<MemRefType>(y.getType()).getElementType();
  if (!et.isF32())
    r = arith::TruncFOp::create(b, loc, et, r);
  memref::StoreOp::create(b, loc, r, y, ValueRange{mi, ni});
}

/// Replaces `op`'s one result by the tensor of buffer `y` (type `yt`),
/// built at `b`, and erases `op`.
static void replaceByBuffer(OpBuilder &b, Operation *op, RankedTensorType yt,
                            Value y) {
  Value result = bufferization::ToTensorOp::create(
      b, op->getLoc(), yt, y, /*restrict=*/b.getUnitAttr(),
      /*writable=*/b.getUnitAttr());
  op->getResult(0).replaceAllUsesWith(result);
  op->erase();
}

/// Y[m, n] = act(sum_k X[m, k] * W[n, k] + b[n]) with W decoded from values and
/// metadata: chunk c of row n holds its kept values at columns 2c, 2c+1 and
/// their positions in nibble bits [1:0], [3:2] of the metadata word
/// ((n/16 * KS + c/8) * 8 + n%8) * 2 + (c/4)%2, half n%16 / 8, slot c%4.
static void lowerSpmm(SpmmOp op, AssembleOp assemble) {
  OpBuilder b(op);
  Location loc = op.getLoc();
  IndexMath lb{b, loc};
  auto xt = cast<RankedTensorType>(op.getInput().getType());
  auto yt = cast<RankedTensorType>(op.getResult().getType());
  CompressedType wt = op.getWeight().getType();
  int64_t m = xt.getDimSize(0), k = xt.getDimSize(1), n = wt.getRows();
  int64_t kSteps = wt.getPaddedCols() / 32;
  Value x = readBuffer(b, loc, op.getInput());
  Value vals = readBuffer(b, loc, assemble.getValues());
  Value meta = readBuffer(b, loc, assemble.getMetadata());
  Value bias = op.getBias() ? readBuffer(b, loc, op.getBias()) : Value();
  Value y = memref::AllocOp::create(b, loc, memrefTypeOf(yt));
  Type f32 = b.getF32Type();
  Value zeroF = arith::ConstantOp::create(b, loc, f32, b.getF32FloatAttr(0));
  Value zeroX = arith::ConstantOp::create(b, loc, xt.getElementType(),
                                          b.getZeroAttr(xt.getElementType()));
  Value kIdx = lb.c(k);

  scf::ForOp::create(
      b, loc, lb.c(0), lb.c(m), lb.c(1), ValueRange{},
      [&](OpBuilder &, Location, Value mi, ValueRange) {
        scf::ForOp::create(
            b, loc, lb.c(0), lb.c(n), lb.c(1), ValueRange{},
            [&](OpBuilder &, Location, Value ni, ValueRange) {
              Value rowTile = lb.div(ni, 16), inTile = lb.rem(ni, 16);
              Value g = lb.rem(inTile, 8), half = lb.div(inTile, 8);
              auto chunks = scf::ForOp::create(
                  b, loc, lb.c(0), lb.c(wt.getPaddedCols() / 4), lb.c(1),
                  ValueRange{zeroF},
                  [&](OpBuilder &, Location, Value ci, ValueRange acc) {
                    Value ks = lb.div(ci, 8), p = lb.rem(lb.div(ci, 4), 2);
                    Value slot = lb.rem(ci, 4);
                    Value word = lb.add(
                        lb.mul(lb.add(lb.mul(lb.add(lb.mul(rowTile, kSteps),
                                                    ks),
                                             8),
                                      g),
                               2),
                        p);
                    Value e = memref::LoadOp::create(b, loc, meta, word);
                    // shift = 16 * half + 4 * slot
                    Value shift = arith::IndexCastOp::create(
                        b, loc, b.getI32Type(),
                        lb.add(lb.mul(half, 16), lb.mul(slot, 4)));
                    Value nib = arith::AndIOp::create(
                        b, loc, arith::ShRUIOp::create(b, loc, e, shift),
                        lb.i32(0xF));
                    Value sum = acc[0];
                    for (int64_t i = 0; i < 2; ++i) {
                      Value pos = arith::AndIOp::create(
                          b, loc,
                          arith::ShRUIOp::create(b, loc, nib, lb.i32(2 * i)),
                          lb.i32(3));
                      Value kk = lb.add(
                          lb.mul(ci, 4),
                          arith::IndexCastOp::create(b, loc,
                                                     b.getIndexType(), pos));
                      Value inK = lb.lt(kk, kIdx);
                      Value kc = lb.clamp(kk, inK);
                      Value xv = memref::LoadOp::create(b, loc, x,
                                                        ValueRange{mi, kc});
                      xv = arith::SelectOp::create(b, loc, inK, xv, zeroX);
                      Value wv = memref::LoadOp::create(
                          b, loc, vals,
                          ValueRange{ni, lb.add(lb.mul(ci, 2), lb.c(i))});
                      Value prod = arith::MulFOp::create(b, loc, lb.toF32(xv),
                                                         lb.toF32(wv));
                      sum = arith::AddFOp::create(b, loc, sum, prod);
                    }
                    scf::YieldOp::create(b, loc, sum);
                  });
              storeReferenceEpilogue(b, loc, lb, chunks.getResult(0), bias,
                                     op.getActivationOrNone(), y, mi, ni);
              scf::YieldOp::create(b, loc);
            });
        scf::YieldOp::create(b, loc);
      });
  replaceByBuffer(b, op, yt, y);
}

/// Y[m, n] = act(sum_k X[m, k] * W[n, k] + b[n]) for a dense W, summed in
/// f32 in k order and rounded once, as sgpu.spmm's reference.
static void lowerMatmul(MatmulOp op) {
  OpBuilder b(op);
  Location loc = op.getLoc();
  IndexMath lb{b, loc};
  auto xt = cast<RankedTensorType>(op.getInput().getType());
  auto wt = cast<RankedTensorType>(op.getWeight().getType());
  auto yt = cast<RankedTensorType>(op.getResult().getType());
  Value x = readBuffer(b, loc, op.getInput());
  Value w = readBuffer(b, loc, op.getWeight());
  Value bias = op.getBias() ? readBuffer(b, loc, op.getBias()) : Value();
  Value y = memref::AllocOp::create(b, loc, memrefTypeOf(yt));
  Type f32 = b.getF32Type();
  Value zeroF = arith::ConstantOp::create(b, loc, f32, b.getF32FloatAttr(0));
  scf::ForOp::create(
      b, loc, lb.c(0), lb.c(xt.getDimSize(0)), lb.c(1), ValueRange{},
      [&](OpBuilder &, Location, Value mi, ValueRange) {
        scf::ForOp::create(
            b, loc, lb.c(0), lb.c(wt.getDimSize(0)), lb.c(1), ValueRange{},
            [&](OpBuilder &, Location, Value ni, ValueRange) {
              auto dot = scf::ForOp::create(
                  b, loc, lb.c(0), lb.c(xt.getDimSize(1)), lb.c(1),
                  ValueRange{zeroF},
                  [&](OpBuilder &, Location, Value ki, ValueRange acc) {
                    Value xv = memref::LoadOp::create(b, loc, x,
                                                      ValueRange{mi, ki});
                    Value wv = memref::LoadOp::create(b, loc, w,
                                                      ValueRange{ni, ki});
                    Value prod = arith::MulFOp::create(b, loc, lb.toF32(xv),
                                                       lb.toF32(wv));
                    scf::YieldOp::create(
                        b, loc,
                        ValueRange{arith::AddFOp::create(b, loc, acc[0], prod)
                                       .getResult()});
                  });
              storeReferenceEpilogue(b, loc, lb, dot.getResult(0), bias,
                                     op.getActivationOrNone(), y, mi, ni);
              scf::YieldOp::create(b, loc);
            });
        scf::YieldOp::create(b, loc);
      });
  replaceByBuffer(b, op, yt, y);
}

struct ConvertSGPUToLoopsPass
    : public sgpu::impl::ConvertSGPUToLoopsBase<ConvertSGPUToLoopsPass> {
  using Base::Base;

  void runOnOperation() override {
    // Shapes no GPU program can hold fail here, before any folding or
    // kernel arithmetic divides by them or allocates them.
    if (failed(checkBufferLimits(getOperation())))
      return signalPassFailure();
    // Weights that are constants are compressed now, at compile time.
    if (failed(foldConstantCompresses(getOperation())))
      return signalPassFailure();

    bool failedAny = false;
    SmallVector<Operation *> ops;
    SmallVector<Operation *> prepares;
    getOperation().walk([&](Operation *op) {
      if (!op->getDialect() || !isa<SGPUDialect>(op->getDialect()))
        return;
      if (auto spmm = dyn_cast<SpmmOp>(op)) {
        Operation *producer = spmm.getWeight().getDefiningOp();
        if (!isa_and_nonnull<AssembleOp>(producer) &&
            !(producer && isPreparableWeight(producer))) {
          spmm.emitError() << "the sparse weight must be a constant, "
                              "sgpu.assemble of its parts, or an argument of "
                              "the function that only this matmul reads; a "
                              "weight computed in the function is not "
                              "supported";
          failedAny = true;
          return;
        }
        if (!isa<AssembleOp>(producer))
          prepares.push_back(producer);
        ops.push_back(op);
        return;
      }
      // Compressed-weight producers are handled through their spmm.
      if (isa<CompressOp, NMDecomposeOp>(op) && isPreparableWeight(op) &&
          !op->use_empty() &&
          llvm::all_of(op->getUsers(),
                       [](Operation *u) { return isa<SpmmOp>(u); }))
        return;
      // TwELL: the pack's concrete parts are buffers, so each packed value
      // must be consumed here, by twell_ffn, within this lowering.
      if (auto pack = dyn_cast<TwellPackOp>(op)) {
        for (Operation *user : pack->getUsers())
          if (!isa<TwellFFNOp>(user)) {
            pack.emitError()
                << "the packed activations are used by '" << user->getName()
                << "'; the reference lowering supports TwELL values read "
                   "only by sgpu.twell_ffn";
            failedAny = true;
            return;
          }
        ops.push_back(op);
        return;
      }
      if (auto ffn = dyn_cast<TwellFFNOp>(op)) {
        if (!ffn.getPacked().getDefiningOp<TwellPackOp>()) {
          ffn.emitError() << "the TwELL activations must come from "
                             "sgpu.twell_pack in the same function; a "
                             "!sgpu.twell value from elsewhere (a function "
                             "argument, another op) has no concrete form in "
                             "the reference lowering";
          failedAny = true;
          return;
        }
        ops.push_back(op);
        return;
      }
      if (isa<AssembleOp, MatmulOp, AllReduceOp, AllReduceStartOp, AllReduceWaitOp,
              RMSNormOp, AddRMSNormOp, LayerNormOp, AttentionOp, LiftOp,
              EmbeddingOp,
              RopeOp, CacheUpdateOp>(op)) {
        ops.push_back(op);
        return;
      }
      op->emitError() << "'" << op->getName()
                      << "' has no reference lowering yet";
      failedAny = true;
    });
    if (failedAny)
      return signalPassFailure();

    // Weight arguments are compressed by loops running the prepare
    // kernel's work, so the format the GPU builds is checked here too.
    for (Operation *op : prepares)
      lowerWeightPrepareToLoops(op);
    // Packs come before their consumers in walk order (they dominate
    // them), so each pack's buffers exist when its twell_ffn is lowered.
    DenseMap<Value, TwellBuffers> packed;
    for (Operation *op : ops) {
      if (auto pack = dyn_cast<TwellPackOp>(op)) {
        packed[pack.getResult()] = lowerTwellPackToLoops(pack, twellReport);
      } else if (auto ffn = dyn_cast<TwellFFNOp>(op)) {
        lowerTwellFFNToLoops(ffn, packed.lookup(ffn.getPacked()));
      } else if (auto spmm = dyn_cast<SpmmOp>(op)) {
        lowerSpmm(spmm, spmm.getWeight().getDefiningOp<AssembleOp>());
      } else if (auto matmul = dyn_cast<MatmulOp>(op)) {
        lowerMatmul(matmul);
      } else if (auto norm = dyn_cast<RMSNormOp>(op)) {
        lowerRMSNormToLoops(norm);
      } else if (auto norm = dyn_cast<AddRMSNormOp>(op)) {
        lowerAddRMSNormToLoops(norm);
      } else if (auto norm = dyn_cast<LayerNormOp>(op)) {
        lowerLayerNormToLoops(norm);
      } else if (auto attn = dyn_cast<AttentionOp>(op)) {
        lowerAttentionToLoops(attn);
      } else if (auto lift = dyn_cast<LiftOp>(op)) {
        lowerLiftToLoops(lift);
      } else if (auto emb = dyn_cast<EmbeddingOp>(op)) {
        lowerEmbeddingToLoops(emb);
      } else if (auto rope = dyn_cast<RopeOp>(op)) {
        lowerRopeToLoops(rope);
      } else if (auto update = dyn_cast<CacheUpdateOp>(op)) {
        lowerCacheUpdateToLoops(update);
      } else if (auto ar = dyn_cast<AllReduceOp>(op)) {
        // A single-rank group: every reduction kind is the identity.
        ar.replaceAllUsesWith(ar.getInput());
        ar.erase();
      } else if (auto wait = dyn_cast<AllReduceWaitOp>(op)) {
        auto start = wait.getToken().getDefiningOp<AllReduceStartOp>();
        wait.replaceAllUsesWith(start.getInput());
        wait.erase();
      }
    }
    getOperation().walk([](Operation *op) {
      if (isa<AllReduceStartOp, AssembleOp, TwellPackOp>(op) &&
          op->use_empty())
        op->erase();
    });
  }
};

} // namespace
