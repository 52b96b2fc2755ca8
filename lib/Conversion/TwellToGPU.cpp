//===- TwellToGPU.cpp - sgpu.twell_pack as kernels ------------------------===//
//
// The GPU pack of TwELL on CUDA cores. It writes the concrete form of the
// CPU reference (TwellToLoops.cpp), so the two can be compared buffer by
// buffer, except for the words that hold no entry and the fallback rows of
// rows that did not overflow (both unwritten here):
//   words        [M, NT, W] i32: word 0 the true count (even past the
//                capacity W - 1), words 1..min(count, W-1) the entries
//                `col-in-tile | value bits << 16` in column order, the
//                unused words not written (0 in the reference)
//   flags        [M] i32: 1 where a tile of the row is over capacity
//   fallback     [M, F]: the overflowing rows densely; the other rows are
//                not written here (0 in the reference)
//   fallbackRows [1] i32: how many rows overflowed
// and, on the GPU only, a [1] i64 count of H's nonzeros (the measured
// density times M*F). Both counters are program stats
// (`stat twell<i>.fallback_rows` / `stat twell<i>.active_neurons` lines),
// which the runtime reads after a run.
// The consumer is TwellConsumerGPU.cpp.
//
// Kernels (launched in this order for every pack):
//
// * sgpu_twell_clear_<i>, 1 block of 1 thread: both counters := 0. The
//   runtime program zero-fills temporaries only when it binds them, and the
//   pack kernel counts with atomic adds, so the counts must be cleared at
//   every run.
//
// * sgpu_twell_pack_<i>, one block per row, min(8, NT) warps. Per row
//   rather than per (row, tile) because the overflow decision is a property
//   of the whole row: it selects whether the row's dense fallback is
//   written, and the flag and the count are per row. A block sees all its
//   tiles, so one shared-memory word and one barrier decide it, without a
//   second kernel or global synchronization. Warp w packs tiles w, w + warps,
//   ...: each lane tests 8 contiguous columns (one 16-byte load; fewer when
//   F is not a multiple of 8), and a warp shuffle scan of the lanes' counts
//   gives each lane its first rank, so entries land in column order with no
//   atomics.
//   The running count goes on past the capacity (entries past it are not
//   stored), so word 0 is the true count.
//
// The pack fused into the epilogue of the GEMM producing H (no pass over
// H in memory) is the fused producer, TwellProducerGPU.cpp
// (twell-producer=fused), and the pack read by its one consumer is
// TwellConsumerGPU.cpp's (twell-pack=consumer); this kernel is the path
// where neither applies.
//
//===----------------------------------------------------------------------===//

#include "TwellToGPU.h"
#include "GPUKernel.h"
#include "IndexMath.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace mlir::sgpu;

namespace {

constexpr int64_t kWarpSize = 32;
// Pack: 8 warps (256 threads) per row block; a row of fewer tiles gets one
// warp per tile.
constexpr int64_t kPackMaxWarps = 8;

/// Builder state shared by the kernels.
struct KernelEmit {
  OpBuilder &b;
  Location loc;
  IndexMath im;

  KernelEmit(OpBuilder &b, Location loc) : b(b), loc(loc), im{b, loc} {}

  /// for i = lo; i < hi; i += step: body(i).
  void loop(Value lo, Value hi, Value step, function_ref<void(Value)> body) {
    im.forEach(lo, hi, step, body);
  }
  void ifThen(Value cond, function_ref<void()> then,
              function_ref<void()> otherwise = nullptr) {
    im.ifThen(cond, then, otherwise);
  }
  Value load(Value mem, ValueRange idx) {
    return memref::LoadOp::create(b, loc, mem, idx);
  }
  void store(Value v, Value mem, ValueRange idx) {
    memref::StoreOp::create(b, loc, v, mem, idx);
  }
  Value cmpi(arith::CmpIPredicate p, Value x, Value y) {
    return arith::CmpIOp::create(b, loc, p, x, y);
  }
  Value eq(Value x, int64_t y) {
    return cmpi(arith::CmpIPredicate::eq, x, im.c(y));
  }
  Value toIndex(Value v) {
    return arith::IndexCastUIOp::create(b, loc, b.getIndexType(), v);
  }
  Value toI32(Value v) {
    return arith::IndexCastUIOp::create(b, loc, b.getI32Type(), v);
  }
};

/// The pack kernel's body; arguments h, words, flags, fallback, rows;
/// one workgroup i32 word (the row's overflow).
void buildPackKernel(OpBuilder &b, Location loc, gpu::GPUFuncOp func,
                     int64_t f, int64_t tile, int64_t words, int64_t tiles,
                     int64_t warps, Type et) {
  KernelEmit e(b, loc);
  IndexMath &im = e.im;
  Type i32 = b.getI32Type();
  Type i16 = b.getIntegerType(16);
  int64_t capacity = words - 1;
  int64_t threads = warps * kWarpSize;
  Value h = func.getArgument(0), out = func.getArgument(1),
        flags = func.getArgument(2), fallback = func.getArgument(3),
        rows = func.getArgument(4), active = func.getArgument(5);
  // Shared words: [0] whether a tile of the row overflowed, [1] the row's
  // nonzero count.
  Value over = func.getWorkgroupAttributions()[0];
  Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  Value row = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  Value lane = im.rem(tid, kWarpSize), warp = im.div(tid, kWarpSize);
  Value zero = arith::ConstantOp::create(b, loc, et, b.getZeroAttr(et));

  e.ifThen(e.eq(tid, 0), [&] {
    e.store(im.i32(0), over, {im.c(0)});
    e.store(im.i32(0), over, {im.c(1)});
  });
  gpu::BarrierOp::create(b, loc);

  // Each lane reads `vec` contiguous columns per chunk (16 bytes for 8),
  // the widest width dividing F: a vector is then all inside or all
  // outside the row and aligned, and never straddles two tiles (tiles are
  // powers of two of at least 16 columns).
  int64_t vec = rowVectorWidth(f);
  int64_t span = kWarpSize * vec;
  int64_t chunks = (tile + span - 1) / span;
  VectorType vt = VectorType::get({vec}, et);
  llvm::Align align(vec * et.getIntOrFloatBitWidth() / 8);
  e.loop(warp, im.c(tiles), im.c(warps), [&](Value t) {
    Value base = im.mul(t, tile);
    auto count = scf::ForOp::create(
        b, loc, im.c(0), im.c(chunks), im.c(1), ValueRange{im.i32(0)},
        [&](OpBuilder &, Location, Value chunk, ValueRange iter) {
          Value n = iter[0];
          Value c = im.add(im.mul(chunk, span), im.mul(lane, vec));
          Value col = im.add(base, c);
          // Columns past the tile (T not a multiple of the span) or past F
          // (a partial last tile) are not nonzero; their address is
          // clamped.
          Value inTile = tile % span ? im.lt(c, tile) : Value();
          Value inRow = f % tile ? im.lt(col, f) : Value();
          Value ok = im.andi(inTile, inRow);
          Value v = vector::LoadOp::create(b, loc, vt, h,
                                           ValueRange{row, im.clamp(col, ok)},
                                           /*nontemporal=*/false, align);
          // "Nonzero" as in the reference: une 0.0 (-0.0 is zero, NaN kept).
          SmallVector<Value> elems, nzs;
          Value mine = im.i32(0);
          for (int64_t i = 0; i < vec; ++i) {
            Value x = vector::ExtractOp::create(b, loc, v, i);
            Value nz = im.andi(ok, arith::CmpFOp::create(
                                       b, loc, arith::CmpFPredicate::UNE, x,
                                       zero));
            elems.push_back(x);
            nzs.push_back(nz);
            mine = arith::AddIOp::create(
                b, loc, mine, arith::ExtUIOp::create(b, loc, i32, nz));
          }
          // The lane's first rank: an exclusive scan of the lanes' counts.
          Value incl = warpInclusiveSum(b, loc, mine);
          Value total = gpu::ShuffleOp::create(b, loc, incl, kWarpSize - 1,
                                               kWarpSize,
                                               gpu::ShuffleMode::IDX)
                            .getShuffleResult();
          Value pos = arith::AddIOp::create(
              b, loc, n, arith::SubIOp::create(b, loc, incl, mine));
          for (int64_t i = 0; i < vec; ++i) {
            Value fits =
                e.cmpi(arith::CmpIPredicate::ult, pos, im.i32(capacity));
            Value at = pos;
            e.ifThen(im.andi(nzs[i], fits), [&] {
              Value bits = arith::ExtUIOp::create(
                  b, loc, i32, arith::BitcastOp::create(b, loc, i16, elems[i]));
              Value high = arith::ShLIOp::create(b, loc, bits, im.i32(16));
              Value entry =
                  arith::OrIOp::create(b, loc, high, e.toI32(im.add(c, i)));
              Value slot = im.add(e.toIndex(at), im.c(1));
              e.store(entry, out, {row, t, slot});
            });
            if (i + 1 < vec)
              pos = arith::AddIOp::create(
                  b, loc, pos, arith::ExtUIOp::create(b, loc, i32, nzs[i]));
          }
          scf::YieldOp::create(b, loc,
                               ValueRange{arith::AddIOp::create(b, loc, n,
                                                                total)});
        });
    Value n = count.getResult(0);
    Value first = e.eq(lane, 0);
    e.ifThen(first, [&] { e.store(n, out, {row, t, im.c(0)}); });
    // The entry words past the stored ones are not written: the consumer
    // reads min(count, W-1) entries, and zeroing them would write as many
    // bytes per run as the entries of a dense row.
    Value overflows = e.cmpi(arith::CmpIPredicate::ugt, n, im.i32(capacity));
    e.ifThen(im.andi(first, overflows),
             [&] { e.store(im.i32(1), over, {im.c(0)}); });
    e.ifThen(first, [&] {
      memref::AtomicRMWOp::create(b, loc, arith::AtomicRMWKind::addi, n, over,
                                  ValueRange{im.c(1)});
    });
  });
  gpu::BarrierOp::create(b, loc);
  Value overflow = e.cmpi(arith::CmpIPredicate::ne, e.load(over, {im.c(0)}),
                          im.i32(0));
  e.ifThen(e.eq(tid, 0), [&] {
    e.store(arith::ExtUIOp::create(b, loc, i32, overflow), flags, {row});
    e.ifThen(overflow, [&] {
      memref::AtomicRMWOp::create(b, loc, arith::AtomicRMWKind::addi,
                                  im.i32(1), rows, ValueRange{im.c(0)});
    });
    // One global atomic per row for the run's nonzero count.
    Value rowCount = arith::ExtUIOp::create(b, loc, b.getI64Type(),
                                            e.load(over, {im.c(1)}));
    memref::AtomicRMWOp::create(b, loc, arith::AtomicRMWKind::addi, rowCount,
                                active, ValueRange{im.c(0)});
  });
  // The fallback row: the dense row when it overflowed. Other rows are not
  // written (the consumer reads a fallback row only when its flag is set):
  // writing zeros would cost as much memory traffic as reading H.
  e.ifThen(overflow, [&] {
    e.loop(im.mul(tid, vec), im.c(f), im.c(threads * vec), [&](Value j) {
      Value v = vector::LoadOp::create(b, loc, vt, h, ValueRange{row, j},
                                       /*nontemporal=*/false, align);
      vector::StoreOp::create(b, loc, v, fallback, ValueRange{row, j},
                              /*nontemporal=*/false, align);
    });
  });
}

} // namespace

Value mlir::sgpu::allocTwellStats(OpBuilder &b, TwellPackOp op, size_t index,
                                  Value &active) {
  Location loc = op.getLoc();
  TwellType tt = op.getResult().getType();
  int64_t m = tt.getRows(), f = tt.getCols();
  Value fallbackRows = memref::AllocOp::create(
      b, loc, MemRefType::get({1}, b.getI32Type()));
  // The run's nonzero count of H (entries past the capacity included).
  active = memref::AllocOp::create(b, loc,
                                   MemRefType::get({1}, b.getI64Type()));
  // Both counters are program stats, readable after a run.
  std::string suffix = std::to_string(index);
  fallbackRows.getDefiningOp()->setAttr(
      SGPUDialect::kStatAttr,
      b.getStringAttr("twell" + suffix + ".fallback_rows"));
  active.getDefiningOp()->setAttr(
      SGPUDialect::kStatAttr,
      b.getStringAttr("twell" + suffix + ".active_neurons"));
  active.getDefiningOp()->setAttr(SGPUDialect::kStatTotalAttr,
                                  b.getI64IntegerAttr(m * f));
  if (auto limit =
          op->getAttrOfType<FloatAttr>(SGPUDialect::kTwellBreakEvenAttr))
    active.getDefiningOp()->setAttr(SGPUDialect::kStatLimitAttr, limit);
  fallbackRows.getDefiningOp()->setAttr(SGPUDialect::kStatTotalAttr,
                                        b.getI64IntegerAttr(m));
  return fallbackRows;
}

TwellBuffers mlir::sgpu::allocTwellPackBuffers(OpBuilder &b, TwellPackOp op,
                                               size_t index, Value &active) {
  Location loc = op.getLoc();
  TwellType tt = op.getResult().getType();
  int64_t m = tt.getRows(), f = tt.getCols();
  Type i32 = b.getI32Type();
  TwellBuffers out;
  out.words = memref::AllocOp::create(
      b, loc,
      MemRefType::get(
          {m, tt.getTilesPerRow(), tt.getLayout().getWordsPerTile()}, i32));
  out.flags = memref::AllocOp::create(b, loc, MemRefType::get({m}, i32));
  out.fallback = memref::AllocOp::create(
      b, loc, MemRefType::get({m, f}, tt.getElementType()));
  out.fallbackRows = allocTwellStats(b, op, index, active);
  return out;
}

gpu::GPUFuncOp mlir::sgpu::buildTwellClearKernel(OpBuilder &kb, Location loc,
                                                 SymbolTable &symbols,
                                                 ValueRange stats,
                                                 size_t index) {
  auto clear = createKernel(kb, loc, symbols,
                            "sgpu_twell_clear_" + std::to_string(index),
                            llvm::to_vector(stats.getTypes()), {}, 1);
  IndexMath im{kb, loc};
  for (BlockArgument stat : clear.getArguments()) {
    Type et = cast<MemRefType>(stat.getType()).getElementType();
    Value zero = et.isInteger(64) ? im.i64(0) : im.i32(0);
    memref::StoreOp::create(kb, loc, zero, stat, ValueRange{im.c(0)});
  }
  finishKernel(kb, loc, clear);
  return clear;
}

TwellBuffers mlir::sgpu::lowerTwellPackToGPU(OpBuilder &b, TwellPackOp op,
                                             KernelSink &sink,
                                             size_t index) {
  Location loc = op.getLoc();
  TwellType tt = op.getResult().getType();
  int64_t m = tt.getRows(), f = tt.getCols(), tiles = tt.getTilesPerRow();
  int64_t tile = tt.getLayout().getTile();
  int64_t words = tt.getLayout().getWordsPerTile();
  Type et = tt.getElementType();

  Value h = readBuffer(b, loc, op.getInput());
  Value active;
  TwellBuffers out = allocTwellPackBuffers(b, op, index, active);
  auto wordsType = cast<MemRefType>(out.words.getType());
  auto flagsType = cast<MemRefType>(out.flags.getType());
  auto hType = cast<MemRefType>(out.fallback.getType());
  auto rowsType = cast<MemRefType>(out.fallbackRows.getType());
  auto activeType = cast<MemRefType>(active.getType());
  std::string suffix = std::to_string(index);
  Type i32 = b.getI32Type();

  OpBuilder kb = sink.builder();
  auto clear =
      buildTwellClearKernel(kb, loc, sink.symbols, {out.fallbackRows, active}, index);

  kb.setInsertionPointToEnd(sink.module.getBody());
  int64_t warps = std::min(kPackMaxWarps, tiles);
  auto pack = createKernel(kb, loc, sink.symbols, "sgpu_twell_pack_" + suffix,
                           {hType, wordsType, flagsType, hType, rowsType,
                            activeType},
                           {workgroupBuffer(kb, 2, i32)}, warps * kWarpSize);
  buildPackKernel(kb, loc, pack, f, tile, words, tiles, warps, et);
  finishKernel(kb, loc, pack);

  launchKernel(b, loc, clear, 1, 1, {out.fallbackRows, active});
  launchKernel(b, loc, pack, m, warps * kWarpSize,
               {h, out.words, out.flags, out.fallback, out.fallbackRows,
                active});
  return out;
}

std::pair<Value, Value>
mlir::sgpu::lowerTwellPackIntoConsumer(OpBuilder &b, TwellPackOp pack,
                                       KernelSink &sink, size_t index) {
  Location loc = pack.getLoc();
  Value h = readBuffer(b, loc, pack.getInput());
  Value active;
  Value rows = allocTwellStats(b, pack, index, active);
  OpBuilder kb = sink.builder();
  auto clear = buildTwellClearKernel(kb, loc, sink.symbols, {rows, active}, index);
  launchKernel(b, loc, clear, 1, 1, {rows, active});
  return {h, active};
}
