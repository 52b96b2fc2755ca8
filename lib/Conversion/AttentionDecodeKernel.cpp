//===- AttentionDecodeKernel.cpp - split-KV attention over a KV cache -----===//
//
// Decoding attends one new query per sequence over a long cache: one block
// per query row would leave most of the GPU idle and walk thousands of keys
// one after another. This kernel pair splits the keys instead (flash
// decoding):
//
//  1. sgpu_attention_split: one block of kWarps warps per (sequence b,
//     key/value head, split s). Sequence b sees the keys 0..p (p =
//     positions[b, 0]); split s takes the s-th of `splits` equal ranges of
//     them. A key row is read by a group of L lanes (#sgpu.attention_config
//     `lanes_per_key`; default the fewest lanes that hold a row in 16-byte
//     vectors: 16 for bf16 D = 128), each holding V = D / L
//     consecutive columns in one vector load, so a warp reads 32 / L keys
//     at a time and reduces each dot product in log2(L) shuffles; with
//     `unroll` = 2 (the default) a group walks its keys two at a time (the
//     loads of both in flight together), and the loads run one loop step
//     ahead of the arithmetic (software pipelining). The key loop is
//     uniform over each warp (a group's key past the range is masked, not
//     skipped): the shuffles are warp-wide, and lanes that left the loop
//     early would never reach them. Every query head of the group (GQA:
//     H/Hkv heads share the key/value head) is computed from the same
//     loads. Each lane group keeps the online softmax of flash attention per
//     head (running max m, sum l, accumulator acc), rescaled once per loop
//     step for all of its keys, in base 2 (the query carries scale *
//     log2(e), so each exponential is one ex2.approx); the groups then merge
//     through shared memory into one (m, l, acc) per head and split, written
//     to f32 scratch buffers.
//  2. sgpu_attention_combine: one thread per output element (b, h, c)
//     merges the splits: M = max m_s, L = sum l_s 2^(m_s - M),
//     out = sum acc_s[c] 2^(m_s - M) / L, or 0 when no key is visible
//     (padding, p < 0).
//
// `splits` (#sgpu.attention_config `splits`, else chosen here) makes at
// most one wave of blocks (kBlocksPerSM per multiprocessor of the device),
// each walking its keys with the loads a step ahead.
//
//===----------------------------------------------------------------------===//

#include "AttentionKernels.h"
#include "FloatMath.h"
#include "GPUKernel.h"
#include "IndexMath.h"
#include "ModelOpsToGPU.h"

#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::sgpu;

namespace {

constexpr int64_t kLanes = 32;
constexpr int64_t kWarps = 8;
// Blocks of kWarps warps resident per multiprocessor: the split kernel
// takes about 128 registers per thread (its running states, the query
// heads and the loads in flight), so two of 256 threads fit the register
// file. One wave of them was the fastest splits count at batch 1, 8 and
// 64 at the Llama-3-8B shape (H100, one process; the H200 in separate
// processes agreed: docs/performance.md).
constexpr int64_t kBlocksPerSM = 2;
// Loop-carried f32 values per lane (per head: m, l and V accumulators).
constexpr int64_t kMaxCarried = 80;
constexpr int64_t kCombineThreads = 256;
// Two keys per lane group and loop step: both rows' loads in flight
// together (measured faster than one at batch 1, 8 and 64 on the H200).
constexpr int64_t kDefaultUnroll = 2;

struct DecodeShape {
  int64_t batch, heads, kvHeads, group, capacity, d, splits;
  int64_t v;      ///< columns per lane
  int64_t lanes;  ///< lanes per key row (L = D / V, a power of two <= 32)
  int64_t keys;   ///< keys a warp reads at a time (32 / L)
  int64_t unroll; ///< keys a lane group takes per loop step (1 or 2)
  int64_t partials() const { return kWarps * keys; }
};

/// The partial states the groups of a block merge through shared memory
/// fit its static 48 KiB.
bool mergeFits(int64_t lanes, int64_t group, int64_t d) {
  return kWarps * (kLanes / lanes) * group * (d + 2) * 4 <= 48 * 1024;
}

/// The lanes per key row for head size `d` of `et` with `group` query heads
/// per key/value head: `lanes_per_key` when given, else the
/// fewest lanes whose columns fit one 16-byte vector and whose partial
/// states fit the merge (the widest loads and the fewest shuffles: with
/// bf16 and D = 128, 16 lanes, measured faster than a whole warp per key at
/// batch 1, 8 and 64 on the H200). 0 when none fits: L must be a power of
/// two up to 32 dividing D, with D / L elements of at most 16 bytes per
/// lane.
int64_t lanesPerKey(AttentionOp op, int64_t d, Type et, int64_t group) {
  int64_t bytes = et.getIntOrFloatBitWidth() / 8;
  auto fits = [&](int64_t l) {
    return l >= 1 && l <= kLanes && (l & (l - 1)) == 0 && d % l == 0 &&
           (d / l) * bytes <= 16;
  };
  if (int64_t wanted = attentionConfig(op).getLanesPerKey())
    return fits(wanted) ? wanted : 0;
  int64_t widest = 0;
  for (int64_t l = 1; l <= kLanes; l *= 2) {
    if (!fits(l))
      continue;
    if (!widest)
      widest = l;
    if (mergeFits(l, group, d))
      return l;
  }
  return widest;
}

int64_t groupOf(AttentionOp op) {
  return op.getQuery().getType().getDimSize(1) /
         op.getKey().getType().getDimSize(1);
}

DecodeShape shapeOf(AttentionOp op, int64_t numSMs) {
  auto qt = op.getQuery().getType(), kt = op.getKey().getType();
  DecodeShape s;
  s.batch = qt.getDimSize(0);
  s.heads = qt.getDimSize(1);
  s.d = qt.getDimSize(3);
  s.kvHeads = kt.getDimSize(1);
  s.group = s.heads / s.kvHeads;
  s.capacity = kt.getDimSize(2);
  s.lanes =
      std::max<int64_t>(1, lanesPerKey(op, s.d, qt.getElementType(), s.group));
  s.v = s.d / s.lanes;
  s.keys = kLanes / s.lanes;
  s.unroll = attentionConfig(op).getUnroll();
  if (!s.unroll)
    s.unroll = kDefaultUnroll;
  int64_t rows = s.batch * s.kvHeads;
  // One wave: the most splits whose blocks all fit the device at once.
  int64_t splits = kBlocksPerSM * numSMs / rows;
  // At least a few keys per warp at full capacity.
  splits = std::max<int64_t>(1, std::min(splits, s.capacity / (4 * kWarps)));
  s.splits = attentionConfig(op).getSplits();
  if (!s.splits)
    s.splits = splits;
  return s;
}

/// The split kernel's body (arguments q, k, v, positions, partial acc,
/// partial m/l; workgroup buffers for the warps' m/l and acc).
struct SplitBuilder : FloatMath {
  IndexMath im;
  DecodeShape s;
  Type et;
  float scale;

  /// The V columns [sub * V, sub * V + V) of row `idx` of `mem` as one
  /// vector load (sub: the lane's index in its group).
  Value loadVector(Value mem, SmallVector<Value> idx, Value sub) {
    idx.push_back(im.mul(sub, s.v));
    // Aligned to its size: rows start 16-byte aligned and V divides D.
    int64_t bytes = s.v * et.getIntOrFloatBitWidth() / 8;
    return vector::LoadOp::create(b, loc, VectorType::get({s.v}, et), mem, idx,
                                  /*nontemporal=*/false,
                                  llvm::Align(std::min<int64_t>(bytes, 16)));
  }

  /// The elements of a loaded vector in f32.
  SmallVector<Value> lanesOf(Value vec) {
    SmallVector<Value> out;
    for (int64_t i = 0; i < s.v; ++i)
      out.push_back(im.toF32(
          vector::ExtractOp::create(b, loc, vec, ArrayRef<int64_t>{i})));
    return out;
  }

  /// loadVector's columns in f32.
  SmallVector<Value> loadRow(Value mem, SmallVector<Value> idx, Value sub) {
    return lanesOf(loadVector(mem, std::move(idx), sub));
  }

  /// The sum of `v` over the lanes of this lane's group (L lanes aligned to
  /// a multiple of L: xor offsets below L stay inside it).
  Value groupSum(Value v) {
    for (int32_t off = s.lanes / 2; off > 0; off /= 2) {
      auto other = gpu::ShuffleOp::create(b, loc, v, off, int32_t(kLanes),
                                          gpu::ShuffleMode::XOR);
      v = addf(v, other.getShuffleResult());
    }
    return v;
  }

  /// One loop step of the online softmax of every head over the step's
  /// keys (`unroll` of them, taken together): `state` holds per head (m, l,
  /// acc[V]); key u's columns are kr[u] and vr[u], and a key that is not
  /// valid[u] (null: always valid; past the range) changes nothing. The
  /// keys of a step share one new maximum, so the running sum and the
  /// accumulators are rescaled once per step, not once per key.
  SmallVector<Value> step(ValueRange state, ArrayRef<SmallVector<Value>> qv,
                          ArrayRef<SmallVector<Value>> kr,
                          ArrayRef<SmallVector<Value>> vr,
                          ArrayRef<Value> valid, Value negInf) {
    int64_t per = 2 + s.v, keys = kr.size();
    SmallVector<Value> next;
    for (int64_t g = 0; g < s.group; ++g) {
      SmallVector<Value> sc;
      for (int64_t u = 0; u < keys; ++u) {
        Value dot = f32(0);
        for (int64_t i = 0; i < s.v; ++i)
          dot = fma(qv[g][i], kr[u][i], dot);
        Value score = groupSum(dot);
        if (valid[u])
          score = arith::SelectOp::create(b, loc, valid[u], score, negInf);
        sc.push_back(score);
      }
      Value m = state[g * per], l = state[g * per + 1];
      Value mNew = m;
      for (Value score : sc)
        mNew = maxf(mNew, score);
      Value corr = exp2Above(m, mNew);
      SmallVector<Value> p;
      for (Value score : sc)
        p.push_back(exp2Above(score, mNew));
      Value lNew = mulf(l, corr);
      for (Value pj : p)
        lNew = addf(lNew, pj);
      next.push_back(mNew);
      next.push_back(lNew);
      for (int64_t i = 0; i < s.v; ++i) {
        Value acc = mulf(state[g * per + 2 + i], corr);
        for (int64_t u = 0; u < keys; ++u)
          acc = fma(p[u], vr[u][i], acc);
        next.push_back(acc);
      }
    }
    return next;
  }

  void build(gpu::GPUFuncOp func) {
    Value q = func.getArgument(0), k = func.getArgument(1),
          v = func.getArgument(2), positions = func.getArgument(3),
          pacc = func.getArgument(4), pml = func.getArgument(5);
    Value sml = func.getWorkgroupAttributions()[0],
          sacc = func.getWorkgroupAttributions()[1];
    Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
    Value lane = im.rem(tid, kLanes), warp = im.div(tid, kLanes);
    // The lane's group (which of the warp's keys) and place in it.
    Value sub = im.rem(lane, s.lanes);
    Value part = im.add(im.mul(warp, s.keys), im.div(lane, s.lanes));
    Value bid = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
    Value split = im.rem(bid, s.splits), bk = im.div(bid, s.splits);
    Value kvh = im.rem(bk, s.kvHeads), bi = im.div(bk, s.kvHeads);
    Value negInf = f32(-std::numeric_limits<double>::infinity());

    // Keys [start, stop) of this split: the s-th of `splits` ranges of
    // ceil(end / splits) keys, end = clamp(p + 1, 0, T).
    Value p = im.loadPosition(positions, bi, im.c(0));
    Value end = arith::MinSIOp::create(
        b, loc, im.c(s.capacity),
        arith::MaxSIOp::create(b, loc, im.add(p, 1), im.c(0)));
    Value chunk = arith::DivUIOp::create(b, loc, im.add(end, s.splits - 1),
                                         im.c(s.splits));
    Value start = arith::MulIOp::create(b, loc, split, chunk);
    Value stop = arith::MinSIOp::create(
        b, loc, end, arith::AddIOp::create(b, loc, start, chunk));

    // The query columns carry the scale and log2(e): a dot product is the
    // score in base 2, ready for ex2.
    Value qScale = f32(double(scale) * M_LOG2E);
    SmallVector<SmallVector<Value>> qv;
    for (int64_t g = 0; g < s.group; ++g) {
      Value h = im.add(im.mul(kvh, s.group), g);
      qv.push_back(loadRow(q, {bi, h, im.c(0)}, sub));
      for (Value &x : qv.back())
        x = mulf(x, qScale);
    }
    // Loop state per head g: m, l, acc[0..V).
    SmallVector<Value> init;
    for (int64_t g = 0; g < s.group; ++g) {
      init.push_back(negInf);
      init.push_back(f32(0));
      for (int64_t i = 0; i < s.v; ++i)
        init.push_back(f32(0));
    }
    int64_t per = 2 + s.v, stride = s.partials();
    // Group `part` takes the keys start + part + t * stride, `unroll` per
    // iteration. The loop runs over the warp's first key j0 so that every
    // lane of a warp takes the same trip count (the shuffles need the whole
    // warp); a group's key past the range is masked.
    //
    // The loads are one iteration ahead (software pipelining): iteration j0
    // issues the K and V rows of iteration j0 + step, carried to it as raw
    // vectors, before it computes on the rows the previous iteration
    // loaded, so each warp has a step's compute to cover the memory
    // latency. A row past the range (the next keys of the last iteration,
    // or a masked key) reads row min(j, T - 1) of the cache: memory of the
    // buffer, never used.
    Value group = im.div(lane, s.lanes);
    int64_t loopStep = s.unroll * stride;
    auto fetch = [&](Value j0) {
      SmallVector<Value> rows;
      for (int64_t u = 0; u < s.unroll; ++u) {
        Value j = im.add(im.add(j0, group), u * stride);
        Value row = arith::MinSIOp::create(b, loc, j, im.c(s.capacity - 1));
        rows.push_back(loadVector(k, {bi, kvh, row}, sub));
        rows.push_back(loadVector(v, {bi, kvh, row}, sub));
      }
      return rows;
    };
    Value first = im.add(start, im.mul(warp, s.keys));
    SmallVector<Value> carried = init;
    llvm::append_range(carried, fetch(first));
    int64_t nState = init.size();
    auto loop = scf::ForOp::create(
        b, loc, first, stop, im.c(loopStep), carried,
        [&](OpBuilder &, Location, Value j0, ValueRange iter) {
          SmallVector<Value> ahead = fetch(im.add(j0, loopStep));
          SmallVector<SmallVector<Value>> kr, vr;
          SmallVector<Value> valid;
          for (int64_t u = 0; u < s.unroll; ++u) {
            Value j = im.add(im.add(j0, group), u * stride);
            // A whole warp on one key needs no mask: j = j0 < stop.
            bool alwaysValid = s.keys == 1 && u == 0;
            valid.push_back(alwaysValid ? Value() : im.slt(j, stop));
            kr.push_back(lanesOf(iter[nState + 2 * u]));
            vr.push_back(lanesOf(iter[nState + 2 * u + 1]));
          }
          SmallVector<Value> next =
              step(iter.take_front(nState), qv, kr, vr, valid, negInf);
          llvm::append_range(next, ahead);
          scf::YieldOp::create(b, loc, next);
        });

    // The groups' states to shared memory: m, l per (group, head) from the
    // group's first lane; acc per (group, head, column).
    for (int64_t g = 0; g < s.group; ++g) {
      im.ifThen(
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, sub, im.c(0)),
          [&] {
            Value at = im.mul(im.add(im.mul(part, s.group), g), 2);
            memref::StoreOp::create(b, loc, loop.getResult(g * per), sml, at);
            memref::StoreOp::create(b, loc, loop.getResult(g * per + 1), sml,
                                    im.add(at, 1));
          });
      for (int64_t i = 0; i < s.v; ++i) {
        Value at = im.add(im.mul(im.add(im.mul(part, s.group), g), s.d),
                          im.add(im.mul(sub, s.v), i));
        memref::StoreOp::create(b, loc, loop.getResult(g * per + 2 + i), sacc,
                                at);
      }
    }
    gpu::BarrierOp::create(b, loc);

    mergeDecodeParts(b, loc, tid, kWarps * kLanes, stride, s.group, s.heads,
                     s.d, s.splits, sml, sacc, pacc, pml, bi, kvh, split);
  }
};

/// The combine kernel's body (arguments partial acc, partial m/l, out viewed
/// as [B * H, D]).
void buildCombine(OpBuilder &b, Location loc, const DecodeShape &s,
                  gpu::GPUFuncOp func) {
  FloatMath fm{b, loc};
  IndexMath im{b, loc};
  Value pacc = func.getArgument(0), pml = func.getArgument(1),
        out = func.getArgument(2);
  Value negInf = fm.f32(-std::numeric_limits<double>::infinity());
  Value e = im.add(im.mul(gpu::BlockIdOp::create(b, loc, gpu::Dimension::x),
                          kCombineThreads),
                   gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x));
  int64_t total = s.batch * s.heads * s.d;
  im.ifThen(im.lt(e, total), [&] {
    Value row = im.div(e, s.d), c = im.rem(e, s.d);
    Value first = im.mul(row, s.splits);
    auto ml = [&](int64_t split, int64_t which) -> Value {
      return memref::LoadOp::create(
          b, loc, pml,
          ValueRange{im.add(im.mul(im.add(first, split), 2), which)});
    };
    Value mMax = negInf;
    for (int64_t sp = 0; sp < s.splits; ++sp)
      mMax = fm.maxf(mMax, ml(sp, 0));
    Value lSum = fm.f32(0), acc = fm.f32(0);
    for (int64_t sp = 0; sp < s.splits; ++sp) {
      Value f = fm.exp2Above(ml(sp, 0), mMax);
      lSum = fm.addf(lSum, fm.mulf(f, ml(sp, 1)));
      Value partial = memref::LoadOp::create(
          b, loc, pacc, ValueRange{im.add(im.mul(im.add(first, sp), s.d), c)});
      acc = fm.addf(acc, fm.mulf(f, partial));
    }
    Value seen = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, lSum,
                                       fm.f32(0));
    Value o =
        arith::SelectOp::create(b, loc, seen, fm.divf(acc, lSum), fm.f32(0));
    im.storeRounded(o, out, {row, c});
  });
}

} // namespace

void mlir::sgpu::mergeDecodeParts(OpBuilder &b, Location loc, Value tid,
                                  int64_t threads, int64_t parts,
                                  int64_t group, int64_t heads, int64_t d,
                                  int64_t splits, Value sml, Value sacc,
                                  Value pacc, Value pml, Value bi, Value kvh,
                                  Value split) {
  FloatMath fm{b, loc};
  IndexMath im{b, loc};
  Value negInf = fm.f32(-std::numeric_limits<double>::infinity());
  // Thread t handles the (head, column) pairs t, t + threads, ...; the
  // c == 0 thread of a head also writes m and l.
  int64_t pairs = group * d;
  for (int64_t base = 0; base < pairs; base += threads) {
    Value e = im.add(tid, base);
    im.ifThen(base + threads <= pairs ? Value() : im.lt(e, pairs), [&] {
      Value g = im.div(e, d), c = im.rem(e, d);
      Value mMax = negInf;
      for (int64_t w = 0; w < parts; ++w)
        mMax = fm.maxf(mMax, memref::LoadOp::create(
                                 b, loc, sml,
                                 ValueRange{im.mul(im.add(g, w * group), 2)}));
      Value lSum = fm.f32(0), acc = fm.f32(0);
      for (int64_t w = 0; w < parts; ++w) {
        Value at = im.mul(im.add(g, w * group), 2);
        Value f = fm.exp2Above(memref::LoadOp::create(b, loc, sml, at), mMax);
        lSum = fm.addf(
            lSum,
            fm.mulf(f, memref::LoadOp::create(b, loc, sml, im.add(at, 1))));
        Value accAt = im.add(im.mul(im.add(g, w * group), d), c);
        acc = fm.addf(acc,
                      fm.mulf(f, memref::LoadOp::create(b, loc, sacc, accAt)));
      }
      Value h = im.add(im.mul(kvh, group), g);
      Value row = im.add(im.mul(im.add(im.mul(bi, heads), h), splits), split);
      memref::StoreOp::create(b, loc, acc, pacc, im.add(im.mul(row, d), c));
      im.ifThen(
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, c, im.c(0)),
          [&] {
            memref::StoreOp::create(b, loc, mMax, pml, im.mul(row, 2));
            memref::StoreOp::create(b, loc, lSum, pml,
                                    im.add(im.mul(row, 2), 1));
          });
    });
  }
}

std::string mlir::sgpu::whyNoAttentionDecode(AttentionOp op) {
  if (!op.getPositions())
    return "no positions (not attention over a KV cache)";
  auto qt = op.getQuery().getType();
  int64_t d = qt.getDimSize(3), dv = op.getValue().getType().getDimSize(3);
  if (qt.getDimSize(2) != 1)
    return "more than one query per sequence (" +
           std::to_string(qt.getDimSize(2)) + ")";
  int64_t group = groupOf(op);
  int64_t lanes = lanesPerKey(op, d, qt.getElementType(), group);
  if (d != dv || !lanes)
    return "head sizes must be equal and split over a power of two of lanes "
           "(lanes_per_key, at most 32) with at most 16 bytes "
           "each (got " +
           std::to_string(d) + " and " + std::to_string(dv) +
           (attentionConfig(op).getLanesPerKey()
                ? ", lanes_per_key " +
                      std::to_string(attentionConfig(op).getLanesPerKey())
                : std::string()) +
           ")";
  int64_t v = d / lanes;
  if (group * (2 + v) > kMaxCarried)
    return std::to_string(group) +
           " query heads per key/value head keep too many running values";
  // The groups' states in shared memory (static: at most 48 KiB).
  if (!mergeFits(lanes, group, d))
    return "the merge of " + std::to_string(kWarps * (kLanes / lanes)) +
           " partial states of " + std::to_string(group) +
           " heads exceeds 48 KiB of shared memory";
  return "";
}

AttentionDecodeChoice mlir::sgpu::chooseAttentionDecode(AttentionOp op,
                                                        int64_t numSMs) {
  DecodeShape s = shapeOf(op, numSMs);
  return {s.lanes, s.unroll, s.splits};
}

Value mlir::sgpu::buildAttentionDecode(OpBuilder &b, Location loc,
                                       AttentionOp op, KernelSink &sink,
                                       ValueRange args, Value out) {
  DecodeShape s = shapeOf(op, sink.budget.numSMs);
  bool tensorCores =
      attentionConfig(op).getKernel() == AttentionKernelKind::decode_tensor_cores;
  if (tensorCores)
    s.splits = attentionDecodeMmaSplits(op, sink.budget.numSMs);
  Type et = op.getQuery().getType().getElementType();
  Type f32 = b.getF32Type();
  // Scratch: per (b, h, split) an accumulator row and (m, l).
  int64_t rows = s.batch * s.heads * s.splits;
  Value pacc =
      memref::AllocOp::create(b, loc, MemRefType::get({rows * s.d}, f32));
  Value pml = memref::AllocOp::create(b, loc, MemRefType::get({rows * 2}, f32));

  OpBuilder kb = sink.builder();
  SmallVector<Type> argTypes;
  for (Value a : args)
    argTypes.push_back(a.getType());
  argTypes.push_back(pacc.getType());
  argTypes.push_back(pml.getType());
  SmallVector<Value> splitArgs(args.begin(), args.end());
  splitArgs.push_back(pacc);
  splitArgs.push_back(pml);
  if (tensorCores) {
    auto split =
        buildAttentionDecodeMmaSplit(kb, loc, op, sink, argTypes, s.splits);
    launchKernel(b, loc, split, s.batch * s.kvHeads * s.splits,
                 attentionDecodeMmaThreads(), splitArgs);
  } else {
    int64_t threads = kWarps * kLanes;
    auto split = createKernel(
        kb, loc, sink.symbols, sink.name("sgpu_attention_split"), argTypes,
        {workgroupBuffer(kb, s.partials() * s.group * 2, f32),
         workgroupBuffer(kb, s.partials() * s.group * s.d, f32)},
        threads);
    // The grid is one wave of kBlocksPerSM blocks per multiprocessor:
    // ptxas keeps the registers to what that many blocks can share (without
    // the bound, some shapes take 146 and fit one block).
    split->setAttr("nvvm.minctasm", kb.getI32IntegerAttr(kBlocksPerSM));
    SplitBuilder{
        {kb, loc}, IndexMath{kb, loc}, s, et, op.getScale().convertToFloat()}
        .build(split);
    finishKernel(kb, loc, split);
    launchKernel(b, loc, split, s.batch * s.kvHeads * s.splits, threads,
                 splitArgs);
  }

  OpBuilder cb = sink.builder();
  auto rowsOut = MemRefType::get({s.batch * s.heads, s.d}, et);
  auto combine = createKernel(
      cb, loc, sink.symbols, sink.name("sgpu_attention_combine"),
      {pacc.getType(), pml.getType(), rowsOut}, {}, kCombineThreads);
  buildCombine(cb, loc, s, combine);
  finishKernel(cb, loc, combine);
  int64_t total = s.batch * s.heads * s.d;
  launchKernel(b, loc, combine, (total + kCombineThreads - 1) / kCombineThreads,
               kCombineThreads, {pacc, pml, viewAsRows(b, loc, out)});
  return out;
}
