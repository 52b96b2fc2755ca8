//===- TwellToLoops.cpp - reference loops for the TwELL ops ---------------===//
//
// sgpu.twell_pack and sgpu.twell_ffn as plain scf loops over buffers.
//
// Why buffers and not a tensor-level decomposition: the packed value is
// written entry by entry at positions that depend on the data (the running
// count of each tile), exactly as the GPU epilogue fills it with per-tile
// atomics. Loops storing into a memref say that directly; the same loops on
// tensors would thread every tensor through iter_args and rely on
// bufferization to turn the inserts back into stores, which tests
// bufferization rather than the format. The rest of convert-sgpu-to-loops
// works on buffers for the same reason (sgpu.spmm reads the compressed
// weight's values and metadata the way the tensor cores do).
//
// The consumer reads only the concrete parts (count words, entries, flags,
// fallback rows), never the dense input of the pack, so a CPU run checks the
// encoding, its capacity limit and the overflow path.
//
//===----------------------------------------------------------------------===//

#include "TwellToLoops.h"
#include "IndexMath.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace mlir::sgpu;

namespace {

/// Builder state shared by the two lowerings.
struct Emit {
  OpBuilder &b;
  Location loc;
  IndexMath im;

  Emit(OpBuilder &b, Location loc) : b(b), loc(loc), im{b, loc} {}

  /// for i in [lo, hi): body(i); `hi` may be a run-time index.
  void loop(Value lo, Value hi, function_ref<void(Value)> body) {
    im.forEach(lo, hi, im.c(1), body);
  }
  void loop(int64_t n, function_ref<void(Value)> body) {
    loop(im.c(0), im.c(n), body);
  }
  /// acc = init; for i in [0, n): acc = body(i, acc); returns acc.
  Value reduce(Value n, Value init, function_ref<Value(Value, Value)> body) {
    return im.reduce(im.c(0), n, im.c(1), init, body);
  }
  Value reduce(int64_t n, Value init, function_ref<Value(Value, Value)> body) {
    return reduce(im.c(n), init, body);
  }
  /// if (cond) then(); [else otherwise();]
  void ifThen(Value cond, function_ref<void()> then,
              function_ref<void()> otherwise = nullptr) {
    im.ifThen(cond, then, otherwise);
  }
  Value alloc(ArrayRef<int64_t> shape, Type et) {
    return memref::AllocOp::create(b, loc, MemRefType::get(shape, et));
  }
  Value load(Value mem, ValueRange idx) {
    return memref::LoadOp::create(b, loc, mem, idx);
  }
  void store(Value v, Value mem, ValueRange idx) {
    memref::StoreOp::create(b, loc, v, mem, idx);
  }
  Value f32(double v) {
    return arith::ConstantOp::create(b, loc, b.getF32Type(),
                                     b.getF32FloatAttr(v));
  }
  Value toIndex(Value v) {
    return arith::IndexCastUIOp::create(b, loc, b.getIndexType(), v);
  }
  Value toI32(Value v) {
    return arith::IndexCastUIOp::create(b, loc, b.getI32Type(), v);
  }
  Value cmpi(arith::CmpIPredicate p, Value x, Value y) {
    return arith::CmpIOp::create(b, loc, p, x, y);
  }
};

} // namespace

// Packing, row m (W = T/C words per tile, capacity W - 1):
//   for each tile t: n = 0; for each column c of the tile, in order:
//     if H[m, tT + c] != 0: (n < W-1: words[m, t, 1+n] = c | bits(v) << 16); n++
//   words[m, t, 0] = n (the true count, which may exceed the capacity)
//   overflow = any tile with n > W-1: flags[m] = 1, fallback[m, :] = H[m, :]
//   else flags[m] = 0, fallback[m, :] = 0
// Unused entry words are 0. "Nonzero" is `une 0.0`: -0.0 counts as zero (it
// adds nothing), a NaN is kept so it reaches the result as in a dense FFN.
TwellBuffers mlir::sgpu::lowerTwellPackToLoops(TwellPackOp op, bool report) {
  OpBuilder b(op);
  Emit e(b, op.getLoc());
  IndexMath &im = e.im;
  TwellType tt = op.getResult().getType();
  TwellLayoutAttr layout = tt.getLayout();
  int64_t m = tt.getRows(), f = tt.getCols(), tiles = tt.getTilesPerRow();
  int64_t tile = layout.getTile(), words = layout.getWordsPerTile();
  int64_t capacity = layout.getCapacity();
  Type et = tt.getElementType();
  Type i32 = b.getI32Type();
  Type i16 = b.getIntegerType(16);

  Value h = readBuffer(b, e.loc, op.getInput());
  TwellBuffers out;
  out.words = e.alloc({m, tiles, words}, i32);
  out.flags = e.alloc({m}, i32);
  out.fallback = e.alloc({m, f}, et);
  out.fallbackRows = e.alloc({1}, i32);
  Value zero = arith::ConstantOp::create(b, e.loc, et, b.getZeroAttr(et));
  Value falseV = arith::ConstantIntOp::create(b, e.loc, b.getI1Type(), 0);

  Value rows = e.reduce(m, im.i32(0), [&](Value mi, Value rowsSoFar) {
    Value overflow = e.reduce(tiles, falseV, [&](Value ti, Value any) {
      Value base = im.mul(ti, tile);
      // The last tile may be partial when F is not a multiple of T.
      Value rest = im.sub(im.c(f), base);
      Value width = arith::MinUIOp::create(b, e.loc, im.c(tile), rest);
      e.loop(im.c(1), im.c(words),
             [&](Value w) { e.store(im.i32(0), out.words, {mi, ti, w}); });
      Value count = e.reduce(width, im.i32(0), [&](Value ci, Value n) {
        Value v = e.load(h, {mi, im.add(base, ci)});
        Value nonzero = arith::CmpFOp::create(
            b, e.loc, arith::CmpFPredicate::UNE, v, zero);
        Value fits = e.cmpi(arith::CmpIPredicate::ult, n, im.i32(capacity));
        e.ifThen(im.andi(nonzero, fits), [&] {
          // entry = column-in-tile (low 16 bits) | value bits (high 16).
          // (Operands are built one statement at a time so the IR's
          // order does not depend on argument evaluation order.)
          Value bits = arith::ExtUIOp::create(
              b, e.loc, i32, arith::BitcastOp::create(b, e.loc, i16, v));
          Value high = arith::ShLIOp::create(b, e.loc, bits, im.i32(16));
          Value entry =
              arith::OrIOp::create(b, e.loc, high, e.toI32(ci));
          Value slot = im.add(e.toIndex(n), im.c(1));
          e.store(entry, out.words, {mi, ti, slot});
        });
        return arith::SelectOp::create(
                   b, e.loc, nonzero,
                   arith::AddIOp::create(b, e.loc, n, im.i32(1)), n)
            .getResult();
      });
      e.store(count, out.words, {mi, ti, im.c(0)});
      Value over = e.cmpi(arith::CmpIPredicate::ugt, count, im.i32(capacity));
      return arith::OrIOp::create(b, e.loc, any, over).getResult();
    });
    e.store(arith::ExtUIOp::create(b, e.loc, i32, overflow), out.flags, {mi});
    // The fallback is sized for every row overflowing, so none is dropped.
    e.loop(f, [&](Value j) {
      Value v = arith::SelectOp::create(b, e.loc, overflow,
                                        e.load(h, {mi, j}), zero);
      e.store(v, out.fallback, {mi, j});
    });
    return arith::AddIOp::create(
               b, e.loc, rowsSoFar,
               arith::ExtUIOp::create(b, e.loc, i32, overflow))
        .getResult();
  });
  e.store(rows, out.fallbackRows, {im.c(0)});
  if (report) {
    // The count is what a run-time guard on the GPU reads to decide whether
    // the sparse path paid off; the reference prints it for tests and users.
    vector::PrintOp::create(b, e.loc, "twell fallback rows: ");
    vector::PrintOp::create(b, e.loc, e.load(out.fallbackRows, {im.c(0)}),
                            vector::PrintPunctuation::NewLine);
  }
  return out;
}

// Consumer, row m, accumulating y[:] in f32 and rounding once at the end:
//   flags[m] != 0: for every neuron j (the dense path): contribute(j, fallback[m, j])
//   else: for each tile t, e in [0, words[m, t, 0]): w = words[m, t, 1+e],
//         j = tT + (w & 0xffff), h = bitcast<T>(w >> 16): contribute(j, h)
//   contribute(j, h): ungated y += h * Wd[:, j];
//                     gated u = sum_k X[m, k] * Wu[j, k] (f32), y += h * u * Wd[:, j]
void mlir::sgpu::lowerTwellFFNToLoops(TwellFFNOp op,
                                      const TwellBuffers &packed) {
  OpBuilder b(op);
  Emit e(b, op.getLoc());
  IndexMath &im = e.im;
  TwellType tt = op.getPacked().getType();
  TwellLayoutAttr layout = tt.getLayout();
  int64_t m = tt.getRows(), f = tt.getCols(), tiles = tt.getTilesPerRow();
  int64_t tile = layout.getTile();
  auto yt = cast<RankedTensorType>(op.getResult().getType());
  int64_t d = yt.getDimSize(1);
  Type et = tt.getElementType();
  Type i16 = b.getIntegerType(16);

  Value wd = readBuffer(b, e.loc, op.getDown());
  Value x = op.getInput() ? readBuffer(b, e.loc, op.getInput()) : Value();
  Value wu = op.getUp() ? readBuffer(b, e.loc, op.getUp()) : Value();
  Value y = memref::AllocOp::create(b, e.loc, memrefTypeOf(yt));
  Value acc = e.alloc({d}, b.getF32Type());

  e.loop(m, [&](Value mi) {
    e.loop(d, [&](Value n) { e.store(e.f32(0), acc, {n}); });
    auto contribute = [&](Value j, Value h) {
      Value coef = h;
      if (x) {
        Value u = e.reduce(d, e.f32(0), [&](Value k, Value s) {
          Value xv = im.loadF32(x, {mi, k});
          Value wv = im.loadF32(wu, {j, k});
          Value p = arith::MulFOp::create(b, e.loc, xv, wv);
          return arith::AddFOp::create(b, e.loc, s, p).getResult();
        });
        coef = arith::MulFOp::create(b, e.loc, h, u);
      }
      e.loop(d, [&](Value n) {
        Value p = arith::MulFOp::create(b, e.loc, coef,
                                        im.loadF32(wd, {n, j}));
        Value sum = arith::AddFOp::create(b, e.loc, e.load(acc, {n}), p);
        e.store(sum, acc, {n});
      });
    };
    Value overflowed = e.cmpi(arith::CmpIPredicate::ne,
                              e.load(packed.flags, {mi}), im.i32(0));
    e.ifThen(
        overflowed,
        [&] {
          e.loop(f, [&](Value j) {
            contribute(j, im.loadF32(packed.fallback, {mi, j}));
          });
        },
        [&] {
          e.loop(tiles, [&](Value ti) {
            Value count =
                e.toIndex(e.load(packed.words, {mi, ti, im.c(0)}));
            e.loop(im.c(0), count, [&](Value ei) {
              Value slot = im.add(ei, im.c(1));
              Value w = e.load(packed.words, {mi, ti, slot});
              Value col = arith::AndIOp::create(b, e.loc, w, im.i32(0xffff));
              Value base = im.mul(ti, tile);
              Value j = im.add(base, e.toIndex(col));
              Value bits = arith::TruncIOp::create(
                  b, e.loc, i16,
                  arith::ShRUIOp::create(b, e.loc, w, im.i32(16)));
              Value h = im.toF32(arith::BitcastOp::create(b, e.loc, et, bits));
              contribute(j, h);
            });
          });
        });
    e.loop(d, [&](Value n) { im.storeRounded(e.load(acc, {n}), y, {mi, n}); });
  });
  memref::DeallocOp::create(b, e.loc, acc);
  Value result = bufferization::ToTensorOp::create(
      b, e.loc, yt, y, /*restrict=*/b.getUnitAttr(),
      /*writable=*/b.getUnitAttr());
  op.replaceAllUsesWith(result);
  op.erase();
}
