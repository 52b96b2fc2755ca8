//===- BlocksToLoops.cpp - reference loops for the model-block ops --------===//
//
// Straightforward loops, in f32, over buffers obtained with
// bufferization.to_buffer; the results go back to tensors with
// bufferization.to_tensor. Normalizations view their input as
// [rows, features] (a collapse of the leading dimensions).
//
//===----------------------------------------------------------------------===//

#include "BlocksToLoops.h"
#include "IndexMath.h"
#include "ModelElements.h"
#include "SlideIndex.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace mlir::sgpu;

namespace {

/// Builder state shared by the lowerings.
struct Loops {
  OpBuilder &b;
  Location loc;
  IndexMath im;

  Loops(OpBuilder &b, Location loc) : b(b), loc(loc), im{b, loc} {}

  Value f32(double v) {
    return arith::ConstantOp::create(b, loc, b.getF32Type(),
                                     b.getF32FloatAttr(v));
  }
  Value buffer(Value tensor) { return readBuffer(b, loc, tensor); }
  /// A buffer viewed as [rows, last dim].
  Value rows(Value buf) { return viewAsRows(b, loc, buf); }
  Value load(Value mem, ValueRange idx) { return im.loadF32(mem, idx); }
  void store(Value v, Value mem, ValueRange idx) {
    im.storeRounded(v, mem, idx);
  }
  /// for i in [0, n): body(i)
  void loop(int64_t n, function_ref<void(Value)> body) {
    im.forEach(im.c(0), im.c(n), im.c(1), body);
  }
  /// acc = init; for i in [0, n): acc = body(i, acc); returns acc.
  Value reduce(int64_t n, Value init, function_ref<Value(Value, Value)> body) {
    return im.reduce(im.c(0), im.c(n), im.c(1), init, body);
  }
  Value add(Value x, Value y) { return arith::AddFOp::create(b, loc, x, y); }
  Value sub(Value x, Value y) { return arith::SubFOp::create(b, loc, x, y); }
  Value mul(Value x, Value y) { return arith::MulFOp::create(b, loc, x, y); }
  Value div(Value x, Value y) { return arith::DivFOp::create(b, loc, x, y); }
};

/// Replaces `op`'s single result by the tensor of `buf`.
void finish(Operation *op, Value buf, Loops &l) {
  Value t = bufferization::ToTensorOp::create(
      l.b, l.loc, op->getResult(0).getType(), buf, l.b.getUnitAttr(),
      l.b.getUnitAttr());
  op->getResult(0).replaceAllUsesWith(t);
  op->erase();
}

/// The row statistics of a normalization: (mu, inv) of row r of x [rows, d].
using NormStats =
    function_ref<std::pair<Value, Value>(Loops &, Value, Value, int64_t)>;

/// Shared shell of the normalizations: y[r, :] = (x[r, :] - mu) * inv * w +
/// beta over the rows of `x` (a [rows, D] buffer), where `stats` computes
/// (mu, inv) of row r. Returns y, a new buffer of type `t`.
Value normLoops(Loops &l, Value x, RankedTensorType t, Value w, Value beta,
                NormStats stats) {
  Value out = memref::AllocOp::create(
      l.b, l.loc, MemRefType::get(t.getShape(), t.getElementType()));
  Value y = l.rows(out);
  int64_t d = t.getShape().back();
  int64_t n = t.getNumElements() / d;
  l.loop(n, [&](Value r) {
    auto [mu, inv] = stats(l, x, r, d);
    l.loop(d, [&](Value j) {
      Value v = l.mul(l.mul(l.sub(l.load(x, {r, j}), mu), inv), l.load(w, {j}));
      if (beta)
        v = l.add(v, l.load(beta, {j}));
      l.store(v, y, {r, j});
    });
  });
  return out;
}

/// RMS norm's statistics: mu = 0, inv = rsqrt(mean(x^2) + eps).
std::pair<Value, Value> rmsStats(Loops &l, Value x, Value r, int64_t d,
                                 float eps) {
  Value ss = l.reduce(d, l.f32(0), [&](Value j, Value acc) {
    Value v = l.load(x, {r, j});
    return l.add(acc, l.mul(v, v));
  });
  Value ms = l.div(ss, l.f32(double(d)));
  Value inv = math::RsqrtOp::create(l.b, l.loc, l.add(ms, l.f32(eps)));
  return std::make_pair(l.f32(0), inv);
}

/// `op`'s normalization of its input (operand 0) into its single result.
template <typename OpT>
void lowerNorm(OpT op, Value bias, NormStats stats) {
  OpBuilder b(op);
  Loops l(b, op.getLoc());
  auto t = cast<RankedTensorType>(op.getInput().getType());
  Value out = normLoops(l, l.rows(l.buffer(op.getInput())), t,
                        l.buffer(op.getWeight()),
                        bias ? l.buffer(bias) : Value(), stats);
  finish(op, out, l);
}

} // namespace

void mlir::sgpu::lowerRMSNormToLoops(RMSNormOp op) {
  float eps = op.getEpsilon().convertToFloat();
  lowerNorm(op, Value(), [eps](Loops &l, Value x, Value r, int64_t d) {
    return rmsStats(l, x, r, d, eps);
  });
}

/// sum = round(x + residual); the RMS norm of the rounded sum, exactly as
/// an element-wise add followed by sgpu.rms_norm computes it.
void mlir::sgpu::lowerAddRMSNormToLoops(AddRMSNormOp op) {
  OpBuilder b(op);
  Loops l(b, op.getLoc());
  auto t = cast<RankedTensorType>(op.getInput().getType());
  Value sum = memref::AllocOp::create(
      b, l.loc, MemRefType::get(t.getShape(), t.getElementType()));
  Value x = l.rows(l.buffer(op.getInput()));
  Value res = l.rows(l.buffer(op.getResidual())), s = l.rows(sum);
  int64_t d = t.getShape().back();
  l.loop(t.getNumElements() / d, [&](Value r) {
    l.loop(d, [&](Value j) {
      l.store(l.add(l.load(x, {r, j}), l.load(res, {r, j})), s, {r, j});
    });
  });
  float eps = op.getEpsilon().convertToFloat();
  Value out = normLoops(l, s, t, l.buffer(op.getWeight()), Value(),
                        [eps](Loops &l, Value x, Value r, int64_t d) {
                          return rmsStats(l, x, r, d, eps);
                        });
  for (auto [result, buf] : {std::pair<Value, Value>{op.getSum(), sum},
                             {op.getResult(), out}})
    result.replaceAllUsesWith(bufferization::ToTensorOp::create(
        b, l.loc, result.getType(), buf, b.getUnitAttr(), b.getUnitAttr()));
  op.erase();
}

void mlir::sgpu::lowerLayerNormToLoops(LayerNormOp op) {
  float eps = op.getEpsilon().convertToFloat();
  lowerNorm(op, op.getBias(), [eps](Loops &l, Value x, Value r, int64_t d) {
    Value n = l.f32(double(d));
    Value mu = l.div(l.reduce(d, l.f32(0),
                              [&](Value j, Value acc) {
                                return l.add(acc, l.load(x, {r, j}));
                              }),
                     n);
    Value var = l.div(l.reduce(d, l.f32(0),
                               [&](Value j, Value acc) {
                                 Value c = l.sub(l.load(x, {r, j}), mu);
                                 return l.add(acc, l.mul(c, c));
                               }),
                      n);
    Value inv = math::RsqrtOp::create(l.b, l.loc, l.add(var, l.f32(eps)));
    return std::make_pair(mu, inv);
  });
}

/// o[b, h, i, :] = sum_j softmax_j(s_ij) v[b, h / G, j, :] with
/// s_ij = scale * q[b, h, i] . k[b, h / G, j] (+ float mask), positions j
/// removed by a false i1 mask or, when causal, j > i + (Sk - Sq). With
/// seq_major the operands and the result are indexed [b, s, h, :].
void mlir::sgpu::lowerAttentionToLoops(AttentionOp op) {
  OpBuilder b(op);
  Loops l(b, op.getLoc());
  IndexMath &im = l.im;
  auto qt = op.getQuery().getType(), kt = op.getKey().getType(),
       vt = op.getValue().getType(), rt = op.getResult().getType();
  unsigned hDim = op.headsDim(), sDim = op.seqDim();
  int64_t batch = qt.getDimSize(0), heads = qt.getDimSize(hDim),
          sq = qt.getDimSize(sDim), d = qt.getDimSize(3);
  int64_t group = heads / kt.getDimSize(hDim), sk = kt.getDimSize(sDim),
          dv = vt.getDimSize(3);
  // The index of element (batch, head, position, column) in the layout.
  auto at = [&](Value bi, Value h, Value s, Value c) -> SmallVector<Value> {
    if (op.getSeqMajor())
      return {bi, s, h, c};
    return {bi, h, s, c};
  };
  float scale = op.getScale().convertToFloat();
  Value q = l.buffer(op.getQuery()), k = l.buffer(op.getKey()),
        v = l.buffer(op.getValue());
  Value mask = op.getMask() ? l.buffer(op.getMask()) : Value();
  Value positions = op.getPositions() ? l.buffer(op.getPositions()) : Value();
  Value out = memref::AllocOp::create(
      b, l.loc, MemRefType::get(rt.getShape(), rt.getElementType()));
  Value scores = memref::AllocOp::create(
      b, l.loc, MemRefType::get({sk}, b.getF32Type()));
  Value negInf = l.f32(-std::numeric_limits<double>::infinity());

  l.loop(batch, [&](Value bi) {
    l.loop(heads, [&](Value h) {
      Value hk = im.div(h, group);
      l.loop(sq, [&](Value i) {
        // With positions (a KV cache), query i sees keys 0..positions[b, i]
        // and a negative position (padding) none: its row is zeros.
        Value pos = positions ? im.loadPosition(positions, bi, i) : Value();
        Value live = pos ? im.sge(pos, im.c(0)) : Value();
        // Scores and their maximum.
        Value mx = l.reduce(sk, negInf, [&](Value j, Value acc) {
          Value dot = l.reduce(d, l.f32(0), [&](Value c, Value s) {
            return l.add(s, l.mul(l.load(q, at(bi, h, i, c)),
                                  l.load(k, at(bi, hk, j, c))));
          });
          Value s = l.mul(dot, l.f32(scale));
          Value keep;
          if (mask) {
            auto mt = cast<MemRefType>(mask.getType());
            Value full[4] = {bi, h, i, j};
            SmallVector<Value> idx;
            for (int64_t a = 0; a < mt.getRank(); ++a) {
              int64_t dim = 4 - mt.getRank() + a;
              idx.push_back(mt.getDimSize(a) == 1 ? im.c(0) : full[dim]);
            }
            Value m = memref::LoadOp::create(b, l.loc, mask, idx);
            if (mt.getElementType().isInteger(1))
              keep = m;
            else
              s = l.add(s, im.toF32(m));
          }
          if (op.getCausal()) {
            // Key j is visible to query i when j <= i + (Sk - Sq), or with
            // positions j <= positions[b, i].
            Value limit = pos ? pos : im.add(i, sk - sq);
            Value visible = arith::CmpIOp::create(
                b, l.loc, arith::CmpIPredicate::sle, j, limit);
            keep = im.andi(keep, visible);
          }
          if (keep)
            s = arith::SelectOp::create(b, l.loc, keep, s, negInf);
          memref::StoreOp::create(b, l.loc, s, scores, j);
          return arith::MaximumFOp::create(b, l.loc, acc, s).getResult();
        });
        // Exponentials (in place) and their sum.
        Value sum = l.reduce(sk, l.f32(0), [&](Value j, Value acc) {
          Value e = math::ExpOp::create(
              b, l.loc,
              l.sub(memref::LoadOp::create(b, l.loc, scores, j), mx));
          memref::StoreOp::create(b, l.loc, e, scores, j);
          return l.add(acc, e);
        });
        l.loop(dv, [&](Value c) {
          Value acc = l.reduce(sk, l.f32(0), [&](Value j, Value a) {
            Value p = memref::LoadOp::create(b, l.loc, scores, j);
            return l.add(a, l.mul(p, l.load(v, at(bi, hk, j, c))));
          });
          Value o = l.div(acc, sum);
          if (live)
            o = arith::SelectOp::create(b, l.loc, live, o, l.f32(0));
          l.store(o, out, at(bi, h, i, c));
        });
      });
    });
  });
  memref::DeallocOp::create(b, l.loc, scores);
  finish(op, out, l);
}

/// cache[b, h, positions[b, s], :] = update[b, h, s, :] for positions in
/// [0, T), written into the cache argument's own buffer (the verifier made
/// it a state argument with no other use); the result is that buffer.
void mlir::sgpu::lowerCacheUpdateToLoops(CacheUpdateOp op) {
  OpBuilder b(op);
  Loops l(b, op.getLoc());
  IndexMath &im = l.im;
  auto ut = op.getUpdate().getType();
  int64_t capacity = op.getCache().getType().getDimSize(2);
  Value cache = l.buffer(op.getCache()), update = l.buffer(op.getUpdate()),
        positions = l.buffer(op.getPositions());
  // With rope tables: the rotated element (sgpu.rope's formula) on flat
  // views of the update and the tables.
  Value flatUpdate, cos, sin;
  if (op.getRopeCos()) {
    flatUpdate = flatView(b, l.loc, update);
    cos = flatView(b, l.loc, l.buffer(op.getRopeCos()));
    sin = flatView(b, l.loc, l.buffer(op.getRopeSin()));
  }
  int64_t heads = ut.getDimSize(1), len = ut.getDimSize(2),
          d = ut.getDimSize(3);
  l.loop(ut.getDimSize(0), [&](Value bi) {
    l.loop(heads, [&](Value h) {
      l.loop(len, [&](Value s) {
        Value p = im.loadPosition(positions, bi, s);
        Value notBelow = im.sge(p, im.c(0));
        Value inside = im.andi(notBelow, im.slt(p, im.c(capacity)));
        im.ifThen(inside, [&] {
          l.loop(d, [&](Value c) {
            if (flatUpdate) {
              Value e = im.add(
                  im.mul(im.add(im.mul(im.add(im.mul(bi, heads), h), len), s),
                         d),
                  c);
              l.store(ropeElement(
                          im, flatUpdate, cos, sin, ut.getShape(),
                          op.getRopeCos().getType()
                              .getShape(),
                          op.getRopeSin().getType()
                              .getShape(),
                          e),
                      cache, {bi, h, p, c});
              return;
            }
            Value v = memref::LoadOp::create(b, l.loc, update,
                                             ValueRange{bi, h, s, c});
            memref::StoreOp::create(b, l.loc, v, cache,
                                    ValueRange{bi, h, p, c});
          });
        });
      });
    });
  });
  op.getResult().replaceAllUsesWith(op.getCache());
  op.erase();
}

/// out[m, c'] = x[m, g*2N + 2j + l] for c' = g*4(N-1) + 4j + l (or the
/// tiled order's map, SlideIndex.h), zero past K.
void mlir::sgpu::lowerLiftToLoops(LiftOp op) {
  OpBuilder b(op);
  Loops l(b, op.getLoc());
  IndexMath &im = l.im;
  auto xt = cast<RankedTensorType>(op.getInput().getType());
  auto yt = cast<RankedTensorType>(op.getResult().getType());
  int64_t k = xt.getDimSize(1), fam = op.getPattern().getFamilyN();
  int64_t tileGroups = getTileGroups(op);
  Value x = l.buffer(op.getInput());
  Value out = memref::AllocOp::create(
      b, l.loc, MemRefType::get(yt.getShape(), yt.getElementType()));
  Value zero = arith::ConstantOp::create(b, l.loc, xt.getElementType(),
                                         b.getZeroAttr(xt.getElementType()));
  l.loop(yt.getDimSize(0), [&](Value m) {
    l.loop(yt.getDimSize(1), [&](Value c) {
      Value src = liftedSourceIndex(im, c, fam, tileGroups);
      Value inK = im.lt(src, k);
      Value v = memref::LoadOp::create(b, l.loc, x,
                                       ValueRange{m, im.clamp(src, inK)});
      v = arith::SelectOp::create(b, l.loc, inK, v, zero);
      memref::StoreOp::create(b, l.loc, v, out, ValueRange{m, c});
    });
  });
  finish(op, out, l);
}

/// y[t, c] = table[ids[t], c] (zero for an id outside the table), over the
/// ids flattened and the result viewed as [tokens, D].
void mlir::sgpu::lowerEmbeddingToLoops(EmbeddingOp op) {
  OpBuilder b(op);
  Loops l(b, op.getLoc());
  auto rt = op.getResult().getType();
  int64_t d = rt.getShape().back(), tokens = op.getIds().getType().getNumElements();
  Value table = l.buffer(op.getTable());
  Value ids = flatView(b, l.loc, l.buffer(op.getIds()));
  Value out = memref::AllocOp::create(b, l.loc, memrefTypeOf(rt));
  Value rows = viewAsRows(b, l.loc, out);
  l.loop(tokens, [&](Value t) {
    l.loop(d, [&](Value c) {
      l.store(embeddingElement(l.im, table, ids, t, c), rows, {t, c});
    });
  });
  finish(op, out, l);
}

/// Every element of the result by ropeElement (ModelElements.h).
void mlir::sgpu::lowerRopeToLoops(RopeOp op) {
  OpBuilder b(op);
  Loops l(b, op.getLoc());
  auto xt = op.getInput().getType();
  Value x = flatView(b, l.loc, l.buffer(op.getInput()));
  Value cos = flatView(b, l.loc, l.buffer(op.getCos()));
  Value sin = flatView(b, l.loc, l.buffer(op.getSin()));
  Value out = memref::AllocOp::create(b, l.loc, memrefTypeOf(xt));
  Value y = flatView(b, l.loc, out);
  l.loop(xt.getNumElements(), [&](Value e) {
    l.store(ropeElement(l.im, x, cos, sin, xt.getShape(),
                        op.getCos().getType().getShape(),
                        op.getSin().getType().getShape(), e),
            y, {e});
  });
  finish(op, out, l);
}
