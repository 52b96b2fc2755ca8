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
// The K/V tiles of 64 keys go through shared memory in two stages: while
// the warps compute on tile kt, cp.async copies tile kt + 1 (16 bytes per
// copy, rows past Sk zero-filled) into the other stage. Rows are padded by
// 8 elements so the 8 row addresses of an ldmatrix fall in distinct banks.
// Per tile:
//  1. S = Q K^T: 8 key n-tiles x D/16 k-steps of mma; the K fragments come
//     from ldmatrix.x4 (two n-tiles x two k-halves per instruction);
//  2. scores outside the sequence or above the causal diagonal become
//     -inf; each row's running maximum m is updated (a max over the 4
//     lanes of a quad, which share a row), p = 2^(s log2e scale - m'),
//     the row sums l and the output accumulators are rescaled by
//     2^(m - m') (ex2.approx, as flash attention does);
//  3. O += P V: the f32 S fragments of two adjacent key n-tiles are
//     exactly the A fragment of a 16-key k-step once rounded to pairs of
//     16-bit values, so P never leaves registers; the V fragments come from
//     ldmatrix.x4.trans of the row-major V tile.
// Finally l is summed over the quad and O / l is written.
//
// What it does not do yet (the levers for future speed work): wgmma with
// TMA and a producer warp. The mask selects are already skipped on tiles
// that reach neither past Sk nor above the diagonal (maskScores).
//
//===----------------------------------------------------------------------===//

#include "AttentionKernels.h"
#include "FloatMath.h"
#include "GPUKernel.h"
#include "IndexMath.h"
#include "MmaSync.h"
#include "ModelOpsToGPU.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <array>
#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::sgpu;

namespace {

constexpr int64_t kPad = 8; // elements of padding per shared-memory row

struct MmaAttentionBuilder : FloatMath {
  IndexMath im;
  AttentionOp op;
  int64_t batch, heads, sq, d, group, sk;
  float scale;
  Type et;
  bool causal;
  Value lane, g, t;

  MmaAttentionBuilder(OpBuilder &b, Location loc, AttentionOp op)
      : FloatMath{b, loc}, im{b, loc}, op(op) {
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

  Value i32zero() { return im.i32(0); }

  /// Two consecutive 16-bit elements at `idx` of `mem`, as one 32-bit word.
  Value pair(Value mem, ValueRange idx) {
    auto vt = VectorType::get({2}, et);
    Value v = vector::LoadOp::create(b, loc, vt, mem, idx,
                                     /*nontemporal=*/false, llvm::Align(4));
    Value w = vector::BitCastOp::create(
        b, loc, VectorType::get({1}, b.getI32Type()), v);
    return vector::ExtractOp::create(b, loc, w, ArrayRef<int64_t>{0});
  }

  /// d = a * b + c on one m16n8k16 tile (4 A words, 2 B words, 4 f32).
  SmallVector<Value, 4> mma(ArrayRef<Value> a, Value b0, Value b1,
                            ArrayRef<Value> c) {
    return mmaM16N8K16(b, loc, et, a, b0, b1, c);
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

  /// The address `base + bytes` of the .shared window (an index) as a
  /// shared-memory pointer.
  Value sharedPtr(Value base, Value bytes) {
    Value addr = arith::IndexCastOp::create(b, loc, b.getI64Type(),
                                            im.add(base, bytes));
    return LLVM::IntToPtrOp::create(
        b, loc, LLVM::LLVMPointerType::get(b.getContext(), 3), addr);
  }

  /// cp.async (.cg) of 16 bytes from the global address `src` (i64) to
  /// shared `dst`, reading `srcBytes` (16, or 0 to zero-fill).
  void copyAsync(Value dst, Value src, Value srcBytes) {
    Value global = LLVM::IntToPtrOp::create(
        b, loc, LLVM::LLVMPointerType::get(b.getContext(), 1), src);
    NVVM::CpAsyncOp::create(
        b, loc, dst, global, b.getI32IntegerAttr(16),
        NVVM::LoadCacheModifierKindAttr::get(b.getContext(),
                                             NVVM::LoadCacheModifierKind::CG),
        srcBytes);
  }

  /// ldmatrix.x4 of 8x8 16-bit matrices (transposed with `trans`) at this
  /// lane's row address.
  SmallVector<Value, 4> ldmatrix(Value ptr, bool trans) {
    Type i32 = b.getI32Type();
    auto resType =
        LLVM::LLVMStructType::getLiteral(b.getContext(), {i32, i32, i32, i32});
    Value res = NVVM::LdMatrixOp::create(
        b, loc, resType, ptr, /*num=*/4,
        trans ? NVVM::MMALayout::col : NVVM::MMALayout::row,
        NVVM::LdStMatrixShapeAttr::get(b.getContext(), 8, 8),
        NVVM::LdStMatrixEltType::B16);
    SmallVector<Value, 4> out;
    for (int64_t i = 0; i < 4; ++i)
      out.push_back(LLVM::ExtractValueOp::create(b, loc, res, i));
    return out;
  }

  /// Q fragments of the warp's 16 rows (A and B), for every k-step of D.
  SmallVector<SmallVector<Value, 4>> queryFragments(Value q, Value bi, Value h,
                                                    Value rowA, Value rowB,
                                                    Value validA,
                                                    Value validB) {
    SmallVector<SmallVector<Value, 4>> qa;
    for (int64_t s = 0; s < d / 16; ++s)
      qa.push_back({queryPair(q, bi, h, rowA, validA, 16 * s),
                    queryPair(q, bi, h, rowB, validB, 16 * s),
                    queryPair(q, bi, h, rowA, validA, 16 * s + 8),
                    queryPair(q, bi, h, rowB, validB, 16 * s + 8)});
    return qa;
  }

  void build(gpu::GPUFuncOp func) {
    Value q = func.getArgument(0), k = func.getArgument(1),
          v = func.getArgument(2), out = func.getArgument(3);
    int64_t warps = attentionMmaWarps(op), rowsPerBlock = 16 * warps;
    int64_t threads = 32 * warps;
    int64_t rowBytes = 2 * (d + kPad);
    int64_t tileBytes = kMmaKeyTile * rowBytes;
    int64_t qTiles = (sq + rowsPerBlock - 1) / rowsPerBlock;

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
    Value q0 = im.add(im.mul(qt, rowsPerBlock), im.mul(warp, 16));
    Value rowA = im.add(q0, g), rowB = im.add(rowA, im.c(8));
    Value validA = sq % rowsPerBlock ? im.lt(rowA, sq) : Value();
    Value validB = sq % rowsPerBlock ? im.lt(rowB, sq) : Value();

    // Shared memory: [stage][K, V][64 rows of D + 8 elements], from the
    // dynamic window aligned up to 128 bytes.
    Value raw = dynamicShared(b, loc).base;
    Value smem = im.add(raw, im.rem(im.sub(im.c(128), im.rem(raw, 128)), 128));
    auto tileBase = [&](Value stage, int64_t tensor) {
      return im.add(smem, im.add(im.mul(stage, 2 * tileBytes),
                                 im.c(tensor * tileBytes)));
    };
    // Global base addresses of this (batch, kv head)'s K and V rows.
    auto rowsBase = [&](Value mem) -> Value {
      Value p = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, mem);
      Value head = im.add(im.mul(bi, heads / group), hk);
      Value off = im.mul(im.mul(head, sk), d * 2);
      return arith::IndexCastOp::create(b, loc, b.getI64Type(),
                                        im.add(p, off));
    };
    Value kRows = rowsBase(k), vRows = rowsBase(v);

    // Copies tile `kt` (keys kt*64..) of K and V into `stage`.
    int64_t chunksPerRow = d / 8, chunks = kMmaKeyTile * chunksPerRow;
    auto issueTile = [&](Value kt, Value stage) {
      for (int64_t r = 0; r * threads < chunks; ++r) {
        Value c = im.add(tid, im.c(r * threads));
        // The last round may have fewer chunks than threads (small D).
        Value inRange = (r + 1) * threads <= chunks ? Value() : im.lt(c, chunks);
        c = im.clamp(c, inRange);
        Value row = im.div(c, chunksPerRow);
        Value col = im.mul(im.rem(c, chunksPerRow), 16);
        Value key = im.add(im.mul(kt, kMmaKeyTile), row);
        Value in = sk % kMmaKeyTile ? im.lt(key, sk) : Value();
        // A clamped extra chunk rewrites chunk 0 with the same bytes.
        Value srcOff = arith::IndexCastOp::create(
            b, loc, b.getI64Type(),
            im.add(im.mul(im.clamp(key, in), d * 2), col));
        Value bytes = in ? arith::SelectOp::create(b, loc, in, im.i32(16),
                                                   im.i32(0))
                               .getResult()
                         : im.i32(16);
        Value dstOff = im.add(im.mul(row, rowBytes), col);
        for (int64_t tensor = 0; tensor < 2; ++tensor) {
          Value src = arith::AddIOp::create(b, loc, tensor ? vRows : kRows,
                                            srcOff);
          copyAsync(sharedPtr(tileBase(stage, tensor), dstOff), src, bytes);
        }
      }
      NVVM::CpAsyncCommitGroupOp::create(b, loc);
    };

    SmallVector<SmallVector<Value, 4>> qa =
        queryFragments(q, bi, h, rowA, rowB, validA, validB);

    // Key tiles: all of them, or up to the block's last visible key.
    Value tiles = im.c((sk + kMmaKeyTile - 1) / kMmaKeyTile);
    if (causal) {
      Value last = im.add(im.mul(qt, rowsPerBlock),
                          im.c(rowsPerBlock - 1 + sk - sq));
      last = arith::MinSIOp::create(b, loc, last, im.c(sk - 1));
      tiles = arith::FloorDivSIOp::create(
          b, loc, im.add(last, im.c(kMmaKeyTile)), im.c(kMmaKeyTile));
    }
    Value anyTile = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sgt,
                                          tiles, im.c(0));
    im.ifThen(anyTile, [&] { issueTile(im.c(0), im.c(0)); });

    // This lane's row addresses for ldmatrix.x4: lane l gives row l % 8 of
    // matrix l / 8. K (S's B operand, not transposed): matrices (n-tile
    // 2p + m/2, k half m%2). V (P.V's B operand, transposed): matrices
    // (k half m%2, dim tile 2q + m/2).
    Value m = im.div(lane, 8), r8 = im.rem(lane, 8);
    Value kLane = im.add(im.mul(im.add(im.mul(im.div(m, 2), 8), r8), rowBytes),
                         im.mul(im.rem(m, 2), 16));
    Value vLane = im.add(im.mul(im.add(im.mul(im.rem(m, 2), 8), r8), rowBytes),
                         im.mul(im.div(m, 2), 16));

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
          Value stage = im.rem(kt, 2);
          // Tile kt + 1 into the other stage (an empty group past the
          // end keeps the count uniform), then wait for tile kt.
          Value next = im.add(kt, im.c(1));
          im.ifThen(im.lt(next, tiles),
                    [&] { issueTile(next, im.rem(next, 2)); },
                    [&] { NVVM::CpAsyncCommitGroupOp::create(b, loc); });
          NVVM::CpAsyncWaitGroupOp::create(b, loc, 1);
          gpu::BarrierOp::create(b, loc);
          Value kTile = tileBase(stage, 0), vTile = tileBase(stage, 1);

          // S = Q K^T for the tile's 8 key n-tiles, two per ldmatrix.x4.
          SmallVector<SmallVector<Value, 4>> s(8);
          for (int64_t nt = 0; nt < 8; ++nt)
            s[nt] = {f32(0), f32(0), f32(0), f32(0)};
          for (int64_t p = 0; p < 4; ++p)
            for (int64_t st = 0; st < d / 16; ++st) {
              Value at = im.add(kTile, im.add(kLane, im.c(16 * p * rowBytes +
                                                          32 * st)));
              SmallVector<Value, 4> kb =
                  ldmatrix(sharedPtr(at, im.c(0)), /*trans=*/false);
              s[2 * p] = mma(qa[st], kb[0], kb[1], s[2 * p]);
              s[2 * p + 1] = mma(qa[st], kb[2], kb[3], s[2 * p + 1]);
            }
          maskScores(s, key0, q0, rowA, rowB, negInf);

          // Online softmax per row (A = rows g, B = rows g + 8).
          Value mA = negInf, mB = negInf;
          for (auto &c : s) {
            mA = maxf(mA, maxf(c[0], c[1]));
            mB = maxf(mB, maxf(c[2], c[3]));
          }
          mA = maxf(state[0], quadReduce(b, loc, mA, true));
          mB = maxf(state[1], quadReduce(b, loc, mB, true));
          auto base = [&](Value mv) -> Value {
            Value none = arith::CmpFOp::create(
                b, loc, arith::CmpFPredicate::OEQ, mv, negInf);
            return arith::SelectOp::create(b, loc, none, f32(0),
                                           mulf(mv, scaleLog2));
          };
          Value baseA = base(mA), baseB = base(mB);
          Value corrA = exp2Approx(subf(mulf(state[0], scaleLog2), baseA));
          Value corrB = exp2Approx(subf(mulf(state[1], scaleLog2), baseB));
          Value lA = mulf(state[2], corrA), lB = mulf(state[3], corrB);
          for (auto &c : s) {
            for (int64_t e = 0; e < 4; ++e) {
              Value bse = e < 2 ? baseA : baseB;
              c[e] = exp2Approx(subf(mulf(c[e], scaleLog2), bse));
            }
            lA = addf(lA, addf(c[0], c[1]));
            lB = addf(lB, addf(c[2], c[3]));
          }
          SmallVector<SmallVector<Value, 4>> o(d / 8);
          for (int64_t dn = 0; dn < d / 8; ++dn)
            for (int64_t e = 0; e < 4; ++e)
              o[dn].push_back(
                  mulf(state[4 + 4 * dn + e], e < 2 ? corrA : corrB));

          // O += P V, 16 keys per k-step, two dim tiles per ldmatrix.x4.
          for (int64_t kc = 0; kc < kMmaKeyTile / 16; ++kc) {
            auto &lo = s[2 * kc], &hi = s[2 * kc + 1];
            SmallVector<Value, 4> pa = {packF32Pair(b, loc, et, lo[0], lo[1]),
                                        packF32Pair(b, loc, et, lo[2], lo[3]),
                                        packF32Pair(b, loc, et, hi[0], hi[1]),
                                        packF32Pair(b, loc, et, hi[2], hi[3])};
            for (int64_t qd = 0; qd < d / 16; ++qd) {
              Value at = im.add(vTile, im.add(vLane, im.c(16 * kc * rowBytes +
                                                          32 * qd)));
              SmallVector<Value, 4> vb =
                  ldmatrix(sharedPtr(at, im.c(0)), /*trans=*/true);
              o[2 * qd] = mma(pa, vb[0], vb[1], o[2 * qd]);
              o[2 * qd + 1] = mma(pa, vb[2], vb[3], o[2 * qd + 1]);
            }
          }
          // Every warp is done with this stage before it is refilled.
          gpu::BarrierOp::create(b, loc);
          SmallVector<Value> nextState = {mA, mB, lA, lB};
          for (auto &c : o)
            nextState.append(c.begin(), c.end());
          scf::YieldOp::create(b, loc, nextState);
        });
    NVVM::CpAsyncWaitGroupOp::create(b, loc, 0);
    storeNormalized(loop.getResults(), out, bi, h, {rowA, rowB},
                    {validA, validB});
  }

  /// O / l of the loop's final `state` into `out`[bi, h], rows A and B of
  /// the warp (each written where `valid`), two adjacent columns per
  /// register pair.
  void storeNormalized(ValueRange state, Value out, Value bi, Value h,
                       std::array<Value, 2> rows,
                       std::array<Value, 2> valid) {
    Value lA = quadReduce(b, loc, state[2], false);
    Value lB = quadReduce(b, loc, state[3], false);
    auto vt2 = VectorType::get({2}, et);
    auto f2 = VectorType::get({2}, b.getF32Type());
    for (int64_t dn = 0; dn < d / 8; ++dn) {
      Value col = im.add(t2, im.c(8 * dn));
      for (int64_t half = 0; half < 2; ++half) {
        Value l = half ? lB : lA;
        Value x0 =
            arith::DivFOp::create(b, loc, state[4 + 4 * dn + 2 * half], l);
        Value x1 =
            arith::DivFOp::create(b, loc, state[5 + 4 * dn + 2 * half], l);
        Value row = rows[half];
        im.ifThen(valid[half], [&] {
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

  /// -inf for keys past Sk and, when causal, above the diagonal
  /// (key > row + Sk - Sq).
  /// Only a tile that reaches past Sk or above the diagonal of the warp's
  /// first row (key0 + 63 > q0 + Sk - Sq) pays for the selects.
  void maskScores(SmallVector<SmallVector<Value, 4>> &s, Value key0,
                  Value q0, Value rowA, Value rowB, Value negInf) {
    bool tail = sk % kMmaKeyTile != 0;
    if (!tail && !causal)
      return;
    Value lastKey = im.add(key0, im.c(kMmaKeyTile - 1));
    Value needs;
    if (tail)
      needs = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge,
                                    lastKey, im.c(sk));
    if (causal) {
      Value above = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sgt,
                                          lastKey, im.add(q0, im.c(sk - sq)));
      needs = needs ? arith::OrIOp::create(b, loc, needs, above).getResult()
                    : above;
    }
    SmallVector<Type> types(32, b.getF32Type());
    auto ifOp = scf::IfOp::create(b, loc, types, needs, /*withElse=*/true);
    SmallVector<Value> flat;
    for (auto &c : s)
      flat.append(c.begin(), c.end());
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(&ifOp.getElseRegion().front());
      scf::YieldOp::create(b, loc, flat);
      b.setInsertionPointToStart(&ifOp.getThenRegion().front());
      SmallVector<SmallVector<Value, 4>> masked = s;
      selectVisible(masked, key0, rowA, rowB, negInf, tail);
      SmallVector<Value> out;
      for (auto &c : masked)
        out.append(c.begin(), c.end());
      scf::YieldOp::create(b, loc, out);
    }
    for (int64_t i = 0; i < 32; ++i)
      s[i / 4][i % 4] = ifOp.getResult(i);
  }

  void selectVisible(SmallVector<SmallVector<Value, 4>> &s, Value key0,
                     Value rowA, Value rowB, Value negInf, bool tail) {
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
  if (op.getPositions())
    return "per-query positions over a KV cache (the decode kernel's case)";
  if (d != dv || d % 16 != 0 || d > 128)
    return "head sizes must be equal multiples of 16 up to 128 (got " +
           std::to_string(d) + " and " + std::to_string(dv) + ")";
  return "";
}

int64_t mlir::sgpu::attentionMmaWarps(AttentionOp op) {
  return attentionConfig(op).getWarps();
}

int64_t mlir::sgpu::attentionMmaBlocks(AttentionOp op) {
  auto qt = op.getQuery().getType();
  int64_t rows = 16 * attentionMmaWarps(op);
  return (qt.getDimSize(2) + rows - 1) / rows * qt.getDimSize(0) *
         qt.getDimSize(1);
}

int64_t mlir::sgpu::attentionMmaSharedBytes(AttentionOp op) {
  int64_t d = op.getQuery().getType().getDimSize(3);
  // Two stages of K and V tiles, plus the slack to align the window.
  return 2 * 2 * kMmaKeyTile * 2 * (d + kPad) + 128;
}

void mlir::sgpu::buildAttentionMmaKernel(OpBuilder &b, Location loc,
                                         AttentionOp op, gpu::GPUFuncOp func) {
  MmaAttentionBuilder(b, loc, op).build(func);
}
