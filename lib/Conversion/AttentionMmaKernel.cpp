//===- AttentionMmaKernel.cpp - flash attention on mma.sync ---------------===//
//
// The tensor-core kernel of sgpu.attention (f16/bf16, causal or unmasked,
// D = Dv a multiple of 16 up to 128): flash attention in the form of
// FlashAttention-2, on the warp-level mma.sync.m16n8k16 with f32
// accumulators.
//
// Grid: one block per (query tile of 64 rows, batch, head), the query tile
// slowest so the first wave holds the tiles with the most keys (a causal
// tile near the end of the sequence sees all keys before it). Block: 4
// warps, warp w owning query rows 16w..16w+15 of the tile; its Q fragments
// stay in registers for the whole kernel (D/16 x 4 words).
//
// Per key tile of 64 (only those a causal row can see):
//  1. the block stages K [64 x D] row-major and V transposed [D x 64] in
//     shared memory (rows padded by 8 elements, so the 8 rows a fragment
//     load touches fall in distinct banks);
//  2. S = Q K^T: 8 key n-tiles x D/16 k-steps of mma, B fragments read as
//     32-bit pairs of K rows;
//  3. scores outside the sequence or above the causal diagonal become
//     -inf; each row's running maximum m is updated (a max over the 4
//     lanes of a quad, which share a row), p = 2^(s log2e scale - m'),
//     the row sums l and the output accumulators are rescaled by
//     2^(m - m') (ex2.approx, as flash attention does);
//  4. O += P V: the f32 S fragments of two adjacent key n-tiles are
//     exactly the A fragment of a 16-key k-step once rounded to pairs of
//     16-bit values, so P never leaves registers; B fragments are 32-bit
//     pairs of the transposed V rows.
// Finally l is summed over the quad and O / l is written.
//
// What it does not do yet (the speed issue's levers): cp.async or TMA
// double buffering of the K/V tiles, ldmatrix, wgmma, and skipping the
// mask selects on tiles below the diagonal.
//
//===----------------------------------------------------------------------===//

#include "AttentionKernels.h"
#include "GPUKernel.h"
#include "IndexMath.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::sgpu;

namespace {

constexpr int64_t kThreads = 32 * kMmaWarps;
constexpr int64_t kPad = 8; // elements of padding per shared-memory row

struct MmaAttentionBuilder {
  OpBuilder &b;
  Location loc;
  IndexMath im;
  AttentionOp op;
  int64_t batch, heads, sq, d, group, sk;
  float scale;
  Type et;
  bool causal;
  Value lane, g, t;

  MmaAttentionBuilder(OpBuilder &b, Location loc, AttentionOp op)
      : b(b), loc(loc), im{b, loc}, op(op) {
    auto qt = op.getQuery().getType(), kt = op.getKey().getType();
    batch = qt.getDimSize(0);
    heads = qt.getDimSize(1);
    sq = qt.getDimSize(2);
    d = qt.getDimSize(3);
    group = heads / kt.getDimSize(1);
    sk = kt.getDimSize(2);
    scale = op.getScale().convertToFloat();
    et = qt.getElementType();
    causal = op.getCausal();
  }

  Value f32(double v) {
    return arith::ConstantOp::create(b, loc, b.getF32Type(),
                                     b.getF32FloatAttr(v));
  }
  Value i32zero() { return im.i32(0); }
  Value maxf(Value x, Value y) {
    return arith::MaximumFOp::create(b, loc, x, y);
  }
  Value mulf(Value x, Value y) { return arith::MulFOp::create(b, loc, x, y); }
  Value addf(Value x, Value y) { return arith::AddFOp::create(b, loc, x, y); }
  Value subf(Value x, Value y) { return arith::SubFOp::create(b, loc, x, y); }

  /// Two consecutive 16-bit elements at `idx` of `mem`, as one 32-bit word.
  Value pair(Value mem, ValueRange idx) {
    auto vt = VectorType::get({2}, et);
    Value v = vector::LoadOp::create(b, loc, vt, mem, idx,
                                     /*nontemporal=*/false, llvm::Align(4));
    Value w = vector::BitCastOp::create(
        b, loc, VectorType::get({1}, b.getI32Type()), v);
    return vector::ExtractOp::create(b, loc, w, ArrayRef<int64_t>{0});
  }

  /// Two f32 values rounded into one word of two 16-bit elements (lo
  /// first), the layout of an MMA A fragment register.
  Value packPair(Value lo, Value hi) {
    auto f2 = VectorType::get({2}, b.getF32Type());
    Value v = vector::FromElementsOp::create(b, loc, f2, ValueRange{lo, hi});
    Value h = arith::TruncFOp::create(b, loc, VectorType::get({2}, et), v);
    Value w = vector::BitCastOp::create(
        b, loc, VectorType::get({1}, b.getI32Type()), h);
    return vector::ExtractOp::create(b, loc, w, ArrayRef<int64_t>{0});
  }

  /// d = a * b + c on one m16n8k16 tile (4 A words, 2 B words, 4 f32).
  SmallVector<Value, 4> mma(ArrayRef<Value> a, Value b0, Value b1,
                            ArrayRef<Value> c) {
    std::string type = et.isBF16() ? "bf16" : "f16";
    std::string text = "mma.sync.aligned.m16n8k16.row.col.f32." + type + "." +
                       type +
                       ".f32 {$0,$1,$2,$3}, {$4,$5,$6,$7}, {$8,$9}, "
                       "{$10,$11,$12,$13};";
    SmallVector<Value> operands(a.begin(), a.end());
    operands.push_back(b0);
    operands.push_back(b1);
    operands.append(c.begin(), c.end());
    Type f = b.getF32Type();
    auto resType =
        LLVM::LLVMStructType::getLiteral(b.getContext(), {f, f, f, f});
    auto asmOp = LLVM::InlineAsmOp::create(
        b, loc, resType, operands, text, "=f,=f,=f,=f,r,r,r,r,r,r,f,f,f,f",
        /*has_side_effects=*/false, /*is_align_stack=*/false,
        LLVM::TailCallKind::None, LLVM::AsmDialectAttr(), ArrayAttr());
    SmallVector<Value, 4> out;
    for (int64_t i = 0; i < 4; ++i)
      out.push_back(LLVM::ExtractValueOp::create(b, loc, asmOp.getRes(), i));
    return out;
  }

  /// 2^x (ex2.approx.f32: -inf gives 0).
  Value exp2(Value x) {
    return LLVM::CallIntrinsicOp::create(b, loc, b.getF32Type(),
                                         b.getStringAttr("llvm.nvvm.ex2.approx.f32"),
                                         ValueRange{x})
        .getResult(0);
  }

  /// `v` combined over the 4 lanes of a quad (lanes 4g..4g+3).
  Value quad(Value v, bool max) {
    for (int32_t off : {1, 2}) {
      auto other = gpu::ShuffleOp::create(b, loc, v, off, 32,
                                          gpu::ShuffleMode::XOR);
      v = max ? maxf(v, other.getShuffleResult())
              : addf(v, other.getShuffleResult());
    }
    return v;
  }

  /// The row's word of two elements at `col`, zero for rows past Sq.
  Value queryPair(Value q, Value bi, Value h, Value row, Value valid,
                  int64_t col) {
    Value w = pair(q, {bi, h, im.clamp(row, valid), im.add(t2, col)});
    return valid ? arith::SelectOp::create(b, loc, valid, w, i32zero())
                       .getResult()
                 : w;
  }
  Value t2; // 2t

  void build(gpu::GPUFuncOp func) {
    Value q = func.getArgument(0), k = func.getArgument(1),
          v = func.getArgument(2), out = func.getArgument(3);
    Value ks = func.getWorkgroupAttributions()[0];
    Value vt = func.getWorkgroupAttributions()[1];
    int64_t kRow = d + kPad, vRow = kMmaKeyTile + kPad;
    int64_t qTiles = (sq + kMmaQueryRows - 1) / kMmaQueryRows;

    Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
    lane = im.rem(tid, 32);
    Value warp = im.div(tid, 32);
    g = im.div(lane, 4);
    t = im.rem(lane, 4);
    t2 = im.mul(t, 2);
    Value bid = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
    Value bh = im.rem(bid, batch * heads);
    Value qt = im.sub(im.c(qTiles - 1), im.div(bid, batch * heads));
    Value h = im.rem(bh, heads), bi = im.div(bh, heads);
    Value hk = im.div(h, group);
    Value q0 = im.add(im.mul(qt, kMmaQueryRows), im.mul(warp, 16));
    Value rowA = im.add(q0, g), rowB = im.add(rowA, im.c(8));
    Value validA = sq % kMmaQueryRows ? im.lt(rowA, sq) : Value();
    Value validB = sq % kMmaQueryRows ? im.lt(rowB, sq) : Value();

    // Q fragments of the warp's 16 rows, for every k-step of D.
    SmallVector<SmallVector<Value, 4>> qa;
    for (int64_t s = 0; s < d / 16; ++s)
      qa.push_back({queryPair(q, bi, h, rowA, validA, 16 * s),
                    queryPair(q, bi, h, rowB, validB, 16 * s),
                    queryPair(q, bi, h, rowA, validA, 16 * s + 8),
                    queryPair(q, bi, h, rowB, validB, 16 * s + 8)});

    // Key tiles: all of them, or up to the block's last visible key.
    Value tiles = im.c((sk + kMmaKeyTile - 1) / kMmaKeyTile);
    if (causal) {
      Value last = im.add(im.mul(qt, kMmaQueryRows),
                          im.c(kMmaQueryRows - 1 + sk - sq));
      last = arith::MinSIOp::create(b, loc, last, im.c(sk - 1));
      tiles = arith::FloorDivSIOp::create(
          b, loc, im.add(last, im.c(kMmaKeyTile)), im.c(kMmaKeyTile));
    }

    Value negInf = f32(-std::numeric_limits<double>::infinity());
    // State: m (rows A, B), l (rows A, B, lane-partial), O (D/8 x 4).
    SmallVector<Value> init = {negInf, negInf, f32(0), f32(0)};
    for (int64_t i = 0; i < d / 8 * 4; ++i)
      init.push_back(f32(0));
    double sl2 = double(scale) * M_LOG2E;
    Value scaleLog2 = f32(sl2);

    auto loop = scf::ForOp::create(
        b, loc, im.c(0), tiles, im.c(1), init,
        [&](OpBuilder &, Location, Value kt, ValueRange state) {
          Value key0 = im.mul(kt, kMmaKeyTile);
          stageTile(k, v, ks, vt, bi, hk, key0, tid, kRow, vRow);

          // S = Q K^T for the tile's 8 key n-tiles.
          SmallVector<SmallVector<Value, 4>> s(8);
          for (int64_t nt = 0; nt < 8; ++nt) {
            SmallVector<Value, 4> c = {f32(0), f32(0), f32(0), f32(0)};
            Value rowBase = im.mul(im.add(g, im.c(8 * nt)), kRow);
            for (int64_t st = 0; st < d / 16; ++st) {
              Value col = im.add(rowBase, im.add(t2, im.c(16 * st)));
              c = mma(qa[st], pair(ks, {col}), pair(ks, {im.add(col, 8)}), c);
            }
            s[nt] = c;
          }
          maskScores(s, key0, rowA, rowB, negInf);

          // Online softmax per row (A = rows g, B = rows g + 8).
          Value mA = negInf, mB = negInf;
          for (auto &c : s) {
            mA = maxf(mA, maxf(c[0], c[1]));
            mB = maxf(mB, maxf(c[2], c[3]));
          }
          mA = maxf(state[0], quad(mA, true));
          mB = maxf(state[1], quad(mB, true));
          auto base = [&](Value m) -> Value {
            Value none = arith::CmpFOp::create(
                b, loc, arith::CmpFPredicate::OEQ, m, negInf);
            return arith::SelectOp::create(b, loc, none, f32(0),
                                           mulf(m, scaleLog2));
          };
          Value baseA = base(mA), baseB = base(mB);
          Value corrA = exp2(subf(mulf(state[0], scaleLog2), baseA));
          Value corrB = exp2(subf(mulf(state[1], scaleLog2), baseB));
          Value lA = mulf(state[2], corrA), lB = mulf(state[3], corrB);
          for (auto &c : s) {
            for (int64_t e = 0; e < 4; ++e) {
              Value bse = e < 2 ? baseA : baseB;
              c[e] = exp2(subf(mulf(c[e], scaleLog2), bse));
            }
            lA = addf(lA, addf(c[0], c[1]));
            lB = addf(lB, addf(c[2], c[3]));
          }
          SmallVector<SmallVector<Value, 4>> o(d / 8);
          for (int64_t dn = 0; dn < d / 8; ++dn)
            for (int64_t e = 0; e < 4; ++e)
              o[dn].push_back(
                  mulf(state[4 + 4 * dn + e], e < 2 ? corrA : corrB));

          // O += P V, 16 keys per k-step.
          for (int64_t kc = 0; kc < kMmaKeyTile / 16; ++kc) {
            auto &lo = s[2 * kc], &hi = s[2 * kc + 1];
            SmallVector<Value, 4> pa = {packPair(lo[0], lo[1]),
                                        packPair(lo[2], lo[3]),
                                        packPair(hi[0], hi[1]),
                                        packPair(hi[2], hi[3])};
            for (int64_t dn = 0; dn < d / 8; ++dn) {
              Value col =
                  im.add(im.mul(im.add(g, im.c(8 * dn)), vRow),
                         im.add(t2, im.c(16 * kc)));
              o[dn] = mma(pa, pair(vt, {col}), pair(vt, {im.add(col, 8)}),
                          o[dn]);
            }
          }
          SmallVector<Value> next = {mA, mB, lA, lB};
          for (auto &c : o)
            next.append(c.begin(), c.end());
          scf::YieldOp::create(b, loc, next);
        });

    // O / l, two adjacent columns per register pair.
    Value lA = quad(loop.getResult(2), false);
    Value lB = quad(loop.getResult(3), false);
    auto vt2 = VectorType::get({2}, et);
    auto f2 = VectorType::get({2}, b.getF32Type());
    for (int64_t dn = 0; dn < d / 8; ++dn) {
      Value col = im.add(t2, im.c(8 * dn));
      for (int64_t half = 0; half < 2; ++half) {
        Value l = half ? lB : lA;
        Value x0 = arith::DivFOp::create(
            b, loc, loop.getResult(4 + 4 * dn + 2 * half), l);
        Value x1 = arith::DivFOp::create(
            b, loc, loop.getResult(5 + 4 * dn + 2 * half), l);
        Value row = half ? rowB : rowA;
        Value valid = half ? validB : validA;
        im.ifThen(valid, [&] {
          Value pairF = vector::FromElementsOp::create(b, loc, f2,
                                                       ValueRange{x0, x1});
          Value pairH = arith::TruncFOp::create(b, loc, vt2, pairF);
          vector::StoreOp::create(b, loc, pairH, out,
                                  ValueRange{bi, h, row, col},
                                  /*nontemporal=*/false, llvm::Align(4));
        });
      }
    }
  }

  /// Stages K [64 x D] and V^T [D x 64] of keys key0.. in shared memory
  /// (zeros past Sk), between barriers: the previous tile's reads finish
  /// before the stores, the stores before this tile's reads.
  void stageTile(Value k, Value v, Value ks, Value vt, Value bi, Value hk,
                 Value key0, Value tid, int64_t kRow, int64_t vRow) {
    gpu::BarrierOp::create(b, loc);
    int64_t words = kMmaKeyTile * d / 2;
    auto vt2 = VectorType::get({2}, et);
    Value zeros = arith::ConstantOp::create(
        b, loc, vt2, DenseElementsAttr::get(vt2, b.getZeroAttr(et)));
    for (int64_t r = 0; r < words / kThreads; ++r) {
      Value idx = im.add(tid, im.c(r * kThreads));
      Value key = im.div(idx, d / 2);
      Value col = im.mul(im.rem(idx, d / 2), 2);
      Value kg = im.add(key0, key);
      Value in = sk % kMmaKeyTile ? im.lt(kg, sk) : Value();
      Value kc = im.clamp(kg, in);
      auto load = [&](Value mem) -> Value {
        Value x = vector::LoadOp::create(b, loc, vt2, mem,
                                         ValueRange{bi, hk, kc, col},
                                         /*nontemporal=*/false,
                                         llvm::Align(4));
        return in ? arith::SelectOp::create(b, loc, in, x, zeros).getResult()
                  : x;
      };
      Value kx = load(k), vx = load(v);
      vector::StoreOp::create(b, loc, kx, ks,
                              ValueRange{im.add(im.mul(key, kRow), col)},
                              /*nontemporal=*/false, llvm::Align(4));
      for (int64_t e = 0; e < 2; ++e) {
        Value x = vector::ExtractOp::create(b, loc, vx, ArrayRef<int64_t>{e});
        Value at = im.add(im.mul(im.add(col, im.c(e)), vRow), key);
        memref::StoreOp::create(b, loc, x, vt, ValueRange{at});
      }
    }
    gpu::BarrierOp::create(b, loc);
  }

  /// -inf for keys past Sk and, when causal, above the diagonal
  /// (key > row + Sk - Sq).
  void maskScores(SmallVector<SmallVector<Value, 4>> &s, Value key0,
                  Value rowA, Value rowB, Value negInf) {
    bool tail = sk % kMmaKeyTile != 0;
    if (!tail && !causal)
      return;
    for (int64_t nt = 0; nt < 8; ++nt)
      for (int64_t e = 0; e < 4; ++e) {
        Value key = im.add(key0, im.add(t2, im.c(8 * nt + (e & 1))));
        Value keep = tail ? im.lt(key, sk) : Value();
        if (causal) {
          Value limit = im.add(e < 2 ? rowA : rowB, im.c(sk - sq));
          keep = im.andi(keep, arith::CmpIOp::create(
                                   b, loc, arith::CmpIPredicate::sle, key,
                                   limit));
        }
        s[nt][e] = arith::SelectOp::create(b, loc, keep, s[nt][e], negInf);
      }
  }
};

} // namespace

std::string mlir::sgpu::whyNoAttentionMma(AttentionOp op) {
  auto qt = op.getQuery().getType();
  int64_t d = qt.getDimSize(3), dv = op.getValue().getType().getDimSize(3);
  if (!qt.getElementType().isF16() && !qt.getElementType().isBF16())
    return "tensor cores take f16 or bf16, not " +
           std::to_string(qt.getElementTypeBitWidth()) + "-bit floats";
  if (op.getMask())
    return "an explicit mask (only causal or none)";
  if (d != dv || d % 16 != 0 || d > 128)
    return "head sizes must be equal multiples of 16 up to 128 (got " +
           std::to_string(d) + " and " + std::to_string(dv) + ")";
  return "";
}

int64_t mlir::sgpu::attentionMmaBlocks(AttentionOp op) {
  auto qt = op.getQuery().getType();
  return (qt.getDimSize(2) + kMmaQueryRows - 1) / kMmaQueryRows *
         qt.getDimSize(0) * qt.getDimSize(1);
}

SmallVector<Type> mlir::sgpu::attentionMmaWorkgroup(OpBuilder &b,
                                                    AttentionOp op) {
  auto qt = op.getQuery().getType();
  int64_t d = qt.getDimSize(3);
  Type et = qt.getElementType();
  return {workgroupBuffer(b, kMmaKeyTile * (d + kPad), et),
          workgroupBuffer(b, d * (kMmaKeyTile + kPad), et)};
}

void mlir::sgpu::buildAttentionMmaKernel(OpBuilder &b, Location loc,
                                         AttentionOp op, gpu::GPUFuncOp func) {
  MmaAttentionBuilder(b, loc, op).build(func);
}
