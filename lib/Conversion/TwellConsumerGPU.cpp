//===- TwellConsumerGPU.cpp - sgpu.twell_ffn as a generated kernel --------===//
//
// The TwELL consumer on CUDA cores: y[m] = sum over the active neurons j of
// row m of coef_j * Wd[:, j], with coef_j = h[m, j] (ungated) or
// h[m, j] * (X[m] . Wu[j]) (gated). It reads the concrete form that
// TwellToGPU.cpp's pack kernel writes (TwellToLoops.h documents it).
//
// Kernels:
//
// * sgpu_twell_down_t_<i>: Wd transposed (TwellTransposeGPU.cpp).
//
// * sgpu_twell_ffn_<i>: one block per row (token). The row's active
//   neurons are processed in groups staged in shared memory as (column,
//   coefficient) pairs:
//     - packed rows: a group is up to G <= 32 tiles (G * (W-1) entries fit
//       the stage); every warp scans the tiles' counts with shuffles (lane
//       l: tile l, its count word loaded alongside the row's flag), so the
//       warps place and copy their tiles' entries with no barrier between;
//     - overflowing rows (flag set): a group is the next C columns of the
//       dense fallback row, zeros included (they are skipped below).
//   Then, gated only, each warp takes whole entries: lanes read Wu[j] and
//   X[m] 16 bytes at a time, a warp xor-shuffle reduces the dot product and
//   lane 0 scales the staged coefficient (no block barrier per neuron).
//   Last, thread t owns the output vectors t, t + T, ... (16 bytes of
//   features each) and accumulates coef * WdT[j, those features] over the
//   group's entries in f32 registers, 4 entries per iteration so their
//   loads overlap; the row's result is rounded once at the end. Three block barriers per
//   group, and at 0.5-5% active neurons a row is one group.
//
// The output width is limited by the accumulator registers (64 f32 per
// thread), not by shared memory.
//
// Measured on an H200 (bf16, d = 2048, F = 5632, M = 16384, 0.5% active:
// 486 us): the kernel moves about 8 KiB of weights per active neuron
// through L2 at ~11 TB/s, plus ~100 us of per-row latency (the chain of
// dependent loads from the flags to the output store). Two output vectors
// per thread (128 threads for d = 2048, 72 registers: 7 blocks per SM) hide
// more of that latency than one (256 threads, 57 registers: 4 blocks):
// 486 against 528 us at 0.5%, 1772 against 1725 us at 2%. Forcing more
// blocks with nvvm.minctasm spilled (1.6-3.4x slower), and keeping the
// dot-product rounds a loop or accumulating 8 neurons per iteration was no
// faster (3-19% slower).
//
//===----------------------------------------------------------------------===//

#include "GPUKernel.h"
#include "IndexMath.h"
#include "TwellToGPU.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace mlir::sgpu;

namespace {

constexpr int64_t kWarpSize = 32;
/// Entries staged per group: every tile's capacity when that fits in
/// [kMinStage, kMaxStage] entries (then a packed row is one group), and at
/// least one tile's capacity.
constexpr int64_t kMinStage = 512;
constexpr int64_t kMaxStage = 2048;
/// Output vectors a thread owns when the row has enough of them (fewer
/// threads per block: more rows in flight per multiprocessor).
constexpr int64_t kSlotsPerThread = 2;
/// Entries per iteration of the accumulation.
constexpr int64_t kUnroll = 4;
/// Rounds of 32 vectors per iteration of a gated dot product.
constexpr int64_t kRoundsInFlight = 4;
/// Tiles per packed group: a warp scans their counts, one per lane.
constexpr int64_t kMaxGroupTiles = kWarpSize;
/// Reading H: the most 16-byte vectors a thread loads from its row (so F
/// up to 8 * 128 * 8 = 8192 at d = 2048, 16384 from d = 4096).
constexpr int64_t kMaxScanRounds = 8;

/// The consumer's static shape: what the kernel builder and the launch need.
struct ConsumerShape {
  int64_t f, d, tile, words, tiles, capacity;
  /// Elements per vector access of a d-row: the widest of 8/4/2/1 dividing
  /// d (16 bytes at most, each access aligned to its size).
  int64_t vec;
  /// d / vec: the vectors of a row.
  int64_t slots;
  int64_t threads, warps;
  /// Output vectors per thread.
  int64_t perThread;
  /// Entries staged per group; packed groups of `groupTiles` tiles.
  int64_t stage, groupTiles;
  bool gated;
  /// Launches over the tiles (twellConsumerPasses); with more than one the
  /// kernel takes its tile range and the f32 partial sums as arguments.
  int64_t passes;
  /// Reading H itself (lowerTwellFFNFromH, F a multiple of hVec): each
  /// thread loads hRounds 16-byte vectors of its row, hChunk = hVec *
  /// threads * hRounds >= F columns in all.
  static constexpr int64_t hVec = kTwellFromHVector;
  int64_t hRounds = 1, hChunk = 1;

  ConsumerShape(int64_t f, int64_t d, int64_t tile, int64_t words,
                bool gated, int64_t passes)
      : f(f), d(d), tile(tile), words(words),
        tiles((f + tile - 1) / tile), capacity(words - 1), gated(gated),
        passes(passes) {
    vec = rowVectorWidth(d);
    slots = d / vec;
    int64_t perLane = (slots + kSlotsPerThread - 1) / kSlotsPerThread;
    int64_t rounded = (perLane + kWarpSize - 1) / kWarpSize * kWarpSize;
    threads = std::clamp<int64_t>(rounded, 4 * kWarpSize,
                                  kTwellConsumerThreads);
    warps = threads / kWarpSize;
    perThread = (slots + threads - 1) / threads;
    stage = std::max(std::clamp(tiles * capacity, kMinStage, kMaxStage),
                     capacity);
    groupTiles = std::clamp<int64_t>(stage / capacity, 1,
                                     std::min(kMaxGroupTiles, tiles));
    hRounds = std::max<int64_t>((f + hVec * threads - 1) / (hVec * threads),
                                1);
    hChunk = hVec * threads * hRounds;
  }
};

/// Thread `tid`'s 16-byte vectors of row `row` of H, for the consumer that
/// reads H itself (lowerTwellFFNFromH).
struct HRowReader {
  OpBuilder &b;
  Location loc;
  const ConsumerShape &s;
  Value h, row, tid;
  Type et;

  /// The vector at thread offset `offset` (null: 0) from column `base`,
  /// with its first column and whether it is inside the row (vectors never
  /// straddle F: hVec divides it).
  Value load(IndexMath &im, Value base, Value offset, Value &col, Value &ok) {
    col = im.add(base, im.mul(offset ? im.add(tid, offset) : tid, s.hVec));
    ok = s.hChunk != s.f ? im.lt(col, s.f) : Value();
    llvm::Align align(s.hVec * et.getIntOrFloatBitWidth() / 8);
    return vector::LoadOp::create(b, loc, VectorType::get({s.hVec}, et), h,
                                  ValueRange{row, im.clamp(col, ok)},
                                  /*nontemporal=*/false, align);
  }

  /// Calls `each` with the column, value and nonzero flag of every
  /// element of vector `i` ("nonzero" as the pack kernel: une 0.0 against
  /// `zero`).
  void scan(Value base, Value i, Value zero,
            function_ref<void(Value col, Value x, Value nz)> each) {
    IndexMath im{b, loc};
    Value col, ok;
    Value v = load(im, base, im.mul(i, s.threads), col, ok);
    for (int64_t k = 0; k < s.hVec; ++k) {
      Value xk = vector::ExtractOp::create(b, loc, v, k);
      Value nz = im.andi(ok, arith::CmpFOp::create(
                                 b, loc, arith::CmpFPredicate::UNE, xk, zero));
      each(im.add(col, k), xk, nz);
    }
  }

  /// The nonzeros of vector `i` (16-bit elements, two per 32-bit word:
  /// nonzero when a half has a bit besides the sign, as une 0.0 for every
  /// value a ReLU leaves; NaN counts as nonzero), without unpacking them.
  /// The same predicate as nonzeroHalves (GPUKernel.h), tested per half:
  /// counting with nonzeroHalves made ptxas spill this kernel (d = 2048:
  /// 64 registers and 12 bytes of spills, against 72 and none).
  Value countNonzeros(Value base, int64_t i) {
    IndexMath im{b, loc};
    constexpr int64_t words = ConsumerShape::hVec / 2;
    Type i32 = b.getI32Type();
    Value col, ok;
    Value v = load(im, base, i ? im.c(i * s.threads) : Value(), col, ok);
    Value w =
        vector::BitCastOp::create(b, loc, VectorType::get({words}, i32), v);
    Value n = im.i32(0);
    for (int64_t k = 0; k < words; ++k) {
      Value word = vector::ExtractOp::create(b, loc, w, k);
      for (uint32_t mask : {0x7fffu, 0x7fff0000u}) {
        Value bits = arith::AndIOp::create(b, loc, word,
                                           im.i32(static_cast<int32_t>(mask)));
        Value nz = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, bits,
                                         im.i32(0));
        n = arith::AddIOp::create(b, loc, n,
                                  arith::ExtUIOp::create(b, loc, i32, nz));
      }
    }
    return ok ? arith::SelectOp::create(b, loc, ok, n, im.i32(0)).getResult()
              : n;
  }
};

/// Builder of the consumer kernel's body.
class ConsumerBuilder {
public:
  ConsumerBuilder(OpBuilder &b, Location loc, const ConsumerShape &s,
                  Type et)
      : b(b), loc(loc), im{b, loc}, s(s), et(et) {}

  /// Arguments: words, flags, fallback, wdT, [x, wu], y, and with several
  /// passes part (f32 partial sums, [M, d]) and the pass's tiles
  /// [tileBegin, tileEnd) (index constants of the launch); workgroup: cols,
  /// vals, the group's entry count.
  void build(gpu::GPUFuncOp func) {
    words = func.getArgument(0);
    flags = func.getArgument(1);
    fallback = func.getArgument(2);
    wdT = func.getArgument(3);
    if (s.gated) {
      x = func.getArgument(4);
      wu = func.getArgument(5);
    }
    y = func.getArgument(s.gated ? 6 : 4);
    if (s.passes > 1) {
      part = func.getArgument(s.gated ? 7 : 5);
      tileBegin = func.getArgument(s.gated ? 8 : 6);
      tileEnd = func.getArgument(s.gated ? 9 : 7);
    } else {
      tileBegin = im.c(0);
      tileEnd = im.c(s.tiles);
    }
    auto wg = func.getWorkgroupAttributions();
    cols = wg[0];
    vals = wg[1];
    total = wg[2];

    tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
    row = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
    lane = im.rem(tid, kWarpSize);
    warp = im.div(tid, kWarpSize);
    Value overflowed = arith::CmpIOp::create(
        b, loc, arith::CmpIPredicate::ne,
        memref::LoadOp::create(b, loc, flags, ValueRange{row}), im.i32(0));
    // This pass's tiles and fallback columns [colBegin, colEnd) (constants
    // with one pass).
    Value packedGroups, fallbackGroups;
    if (s.passes == 1) {
      colBegin = im.c(0);
      colEnd = im.c(s.f);
      packedGroups = im.c((s.tiles + s.groupTiles - 1) / s.groupTiles);
      fallbackGroups = im.c((s.f + s.stage - 1) / s.stage);
    } else {
      colBegin = im.mul(tileBegin, s.tile);
      colEnd = arith::MinUIOp::create(b, loc, im.mul(tileEnd, s.tile),
                                      im.c(s.f));
      packedGroups = im.div(
          im.add(im.sub(tileEnd, tileBegin), s.groupTiles - 1), s.groupTiles);
      fallbackGroups =
          im.div(im.add(im.sub(colEnd, colBegin), s.stage - 1), s.stage);
    }
    Value groups = arith::SelectOp::create(b, loc, overflowed,
                                           fallbackGroups, packedGroups);

    Value zero = splat(0.0);
    SmallVector<Value> init(s.perThread, zero);
    // A pass after the first starts from the partial sums.
    Value later = s.passes > 1 ? im.lt(im.c(0), tileBegin) : Value();
    if (later)
      for (int64_t p = 0; p < s.perThread; ++p) {
        Value slot = im.clamp(im.add(tid, p * s.threads),
                              (p + 1) * s.threads <= s.slots
                                  ? Value()
                                  : im.lt(im.add(tid, p * s.threads), s.slots));
        auto ifOp = scf::IfOp::create(
            b, loc, later,
            [&](OpBuilder &, Location) {
              Value v = vector::LoadOp::create(
                  b, loc, vecType(b.getF32Type()), part,
                  ValueRange{row, im.mul(slot, s.vec)});
              scf::YieldOp::create(b, loc, v);
            },
            [&](OpBuilder &, Location) {
              scf::YieldOp::create(b, loc, zero);
            });
        init[p] = ifOp.getResult(0);
      }
    auto loop = scf::ForOp::create(
        b, loc, im.c(0), groups, im.c(1), init,
        [&](OpBuilder &, Location, Value g, ValueRange acc) {
          Value countWord = loadCountWord(g);
          im.ifThen(
              overflowed, [&] { stageFallback(g); },
              [&] { stagePacked(g, countWord); });
          scf::YieldOp::create(b, loc, consumeGroup(acc));
        });
    auto storeY = [&] { storeRow(loop.getResults()); };
    if (s.passes == 1)
      return storeY();
    // The last pass rounds into y; the others keep the f32 partial sums.
    im.ifThen(im.lt(tileEnd, s.tiles), [&] {
      for (int64_t p = 0; p < s.perThread; ++p)
        forSlot(p, [&](Value slot) {
          vector::StoreOp::create(b, loc, loop.getResult(p), part,
                                  ValueRange{row, im.mul(slot, s.vec)});
        });
    }, storeY);
  }

  /// The consumer reading H (the pack's input) instead of the packed form.
  /// Arguments: h, wdT, [x, wu], y, active (the pack's nonzero stat);
  /// workgroup: cols, vals, the group's entry count, the warps' counts
  /// (one per 16 bytes). Every thread counts the nonzeros of its vectors
  /// of the row, a warp scan and the warps' totals give each thread its
  /// first place, and the row's entries are staged `stage` places at a
  /// time (one group unless the row holds more), each group then as in
  /// build().
  void buildFromH(gpu::GPUFuncOp func) {
    Value h = func.getArgument(0);
    wdT = func.getArgument(1);
    if (s.gated) {
      x = func.getArgument(2);
      wu = func.getArgument(3);
    }
    y = func.getArgument(s.gated ? 4 : 2);
    Value active = func.getArgument(s.gated ? 5 : 3);
    auto wg = func.getWorkgroupAttributions();
    cols = wg[0];
    vals = wg[1];
    total = wg[2];
    Value warpCounts = wg[3];

    Type i32 = b.getI32Type();
    tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
    row = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
    lane = im.rem(tid, kWarpSize);
    warp = im.div(tid, kWarpSize);
    Value zeroH = arith::ConstantOp::create(b, loc, et, b.getZeroAttr(et));

    auto toI32 = [&](Value v) {
      return arith::IndexCastUIOp::create(b, loc, i32, v).getResult();
    };
    HRowReader hRow{b, loc, s, h, row, tid, et};

    Value base = im.c(0);
    Value mine = im.i32(0);
    for (int64_t i = 0; i < s.hRounds; ++i)
      mine = arith::AddIOp::create(b, loc, mine, hRow.countNonzeros(base, i));
    Value incl = warpInclusiveSum(b, loc, mine);
    // One count per 16 bytes: adjacent 4-byte counts would be read as one
    // 16-byte load, which the buffer's 4-byte alignment does not allow
    // (measured: a misaligned-address fault).
    auto countAt = [&](Value w) { return im.mul(w, 4); };
    im.ifThen(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, lane,
                                    im.c(kWarpSize - 1)),
              [&] {
                memref::StoreOp::create(b, loc, incl, warpCounts,
                                        ValueRange{countAt(warp)});
              });
    gpu::BarrierOp::create(b, loc);
    Value before = im.i32(0), rowTotal = im.i32(0);
    for (int64_t w = 0; w < s.warps; ++w) {
      Value wc = memref::LoadOp::create(b, loc, warpCounts,
                                        ValueRange{countAt(im.c(w))});
      before = arith::AddIOp::create(
          b, loc, before,
          arith::SelectOp::create(b, loc, im.lt(im.c(w), warp), wc,
                                  im.i32(0)));
      rowTotal = arith::AddIOp::create(b, loc, rowTotal, wc);
    }
    Value first = arith::AddIOp::create(
        b, loc, before, arith::SubIOp::create(b, loc, incl, mine));
    Value n =
        arith::IndexCastUIOp::create(b, loc, b.getIndexType(), rowTotal);
    Value groups = im.div(im.add(n, s.stage - 1), s.stage);
    SmallVector<Value> init(s.perThread, splat(0.0));
    auto groupLoop = scf::ForOp::create(
        b, loc, im.c(0), groups, im.c(1), init,
        [&](OpBuilder &, Location, Value g, ValueRange acc) {
          // Places [lo, lo + stage) of the row's entries.
          Value lo = toI32(im.mul(g, s.stage));
          // One vector per iteration (a loop, not unrolled: the vectors
          // come from L1 again, and unrolled they would take registers
          // from the weight loads' occupancy).
          scf::ForOp::create(
              b, loc, im.c(0), im.c(s.hRounds), im.c(1), ValueRange{first},
              [&](OpBuilder &, Location, Value i, ValueRange iter) {
                Value pos = iter[0];
                hRow.scan(base, i, zeroH, [&](Value col, Value xk, Value nz) {
                  Value at = arith::SubIOp::create(b, loc, pos, lo);
                  Value inGroup = im.andi(
                      nz,
                      im.andi(arith::CmpIOp::create(
                                  b, loc, arith::CmpIPredicate::sge, pos, lo),
                              arith::CmpIOp::create(b, loc,
                                                    arith::CmpIPredicate::slt,
                                                    at, im.i32(s.stage))));
                  im.ifThen(inGroup, [&] {
                    Value e = arith::IndexCastUIOp::create(
                        b, loc, b.getIndexType(), at);
                    memref::StoreOp::create(b, loc, toI32(col), cols,
                                            ValueRange{e});
                    memref::StoreOp::create(b, loc, im.toF32(xk), vals,
                                            ValueRange{e});
                  });
                  pos = arith::AddIOp::create(
                      b, loc, pos, arith::ExtUIOp::create(b, loc, i32, nz));
                });
                scf::YieldOp::create(b, loc, pos);
              });
          im.ifThen(
              arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, tid,
                                    im.c(0)),
              [&] {
                Value left = arith::SubIOp::create(b, loc, rowTotal, lo);
                memref::StoreOp::create(
                    b, loc,
                    arith::MinUIOp::create(b, loc, left, im.i32(s.stage)),
                    total, ValueRange{im.c(0)});
              });
          scf::YieldOp::create(b, loc, consumeGroup(acc));
        });
    // One global atomic per row for the run's nonzero count.
    im.ifThen(
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, tid, im.c(0)),
        [&] {
          Value rowCount =
              arith::ExtUIOp::create(b, loc, b.getI64Type(), rowTotal);
          memref::AtomicRMWOp::create(b, loc, arith::AtomicRMWKind::addi,
                                      rowCount, active, ValueRange{im.c(0)});
        });
    storeRow(groupLoop.getResults());
  }

private:
  OpBuilder &b;
  Location loc;
  IndexMath im;
  const ConsumerShape &s;
  Type et;
  Value words, flags, fallback, wdT, x, wu, y, part;
  Value tileBegin, tileEnd, colBegin, colEnd;
  Value cols, vals, total;
  Value tid, row, lane, warp;

  /// The staged group (its entry count in `total`, the stage written by
  /// every thread): a barrier, the gated dot products, the accumulation
  /// into `acc`; returns the new accumulators after the barrier that lets
  /// the next group overwrite the stage.
  SmallVector<Value> consumeGroup(ValueRange acc) {
    gpu::BarrierOp::create(b, loc);
    Value n = arith::IndexCastUIOp::create(
        b, loc, b.getIndexType(),
        memref::LoadOp::create(b, loc, total, ValueRange{im.c(0)}));
    if (s.gated) {
      gateUp(n);
      gpu::BarrierOp::create(b, loc);
    }
    SmallVector<Value> next = accumulate(n, acc);
    gpu::BarrierOp::create(b, loc);
    return next;
  }

  /// Rounds the row's accumulators into y.
  void storeRow(ValueRange acc) {
    for (int64_t p = 0; p < s.perThread; ++p)
      forSlot(p, [&](Value slot) {
        Value v = acc[p];
        if (et != v.getType())
          v = arith::TruncFOp::create(b, loc, vecType(et), v);
        vector::StoreOp::create(b, loc, v, y,
                                ValueRange{row, im.mul(slot, s.vec)},
                                /*nontemporal=*/false, align());
      });
  }

  /// `start + v` (`v` when there is one pass: the start is 0).
  Value fromPassStart(Value start, Value v) {
    return s.passes == 1 ? v : im.add(start, v);
  }
  VectorType vecType(Type t) { return VectorType::get({s.vec}, t); }
  llvm::Align align() {
    return llvm::Align(s.vec * et.getIntOrFloatBitWidth() / 8);
  }
  Value f32(double v) {
    return arith::ConstantOp::create(b, loc, b.getF32Type(),
                                     b.getF32FloatAttr(v));
  }
  Value splat(double v) {
    return arith::ConstantOp::create(
        b, loc, vecType(b.getF32Type()),
        DenseElementsAttr::get(vecType(b.getF32Type()),
                               b.getF32FloatAttr(v)));
  }
  /// `vec` elements of row `r` of `mem` from vector `slot`, widened to f32.
  Value loadVec(Value mem, Value r, Value slot) {
    Value v = vector::LoadOp::create(b, loc, vecType(et), mem,
                                     ValueRange{r, im.mul(slot, s.vec)},
                                     /*nontemporal=*/false, align());
    return arith::ExtFOp::create(b, loc, vecType(b.getF32Type()), v);
  }
  /// body(slot) for this thread's output vector `p` (tid + p * threads),
  /// guarded when the last round of vectors is partial.
  void forSlot(int64_t p, function_ref<void(Value)> body) {
    Value slot = im.add(tid, p * s.threads);
    if ((p + 1) * s.threads <= s.slots)
      return body(slot);
    im.ifThen(im.lt(slot, s.slots), [&] { body(slot); });
  }

  /// Lane l's count word: the true count of tile g*G + l of the row (its
  /// address clamped for lanes past the group or the row). Loaded before
  /// the row's overflow flag is known, so that both loads overlap.
  Value loadCountWord(Value g) {
    Value t = im.add(fromPassStart(tileBegin, im.mul(g, s.groupTiles)), lane);
    Value ok = im.andi(im.lt(lane, s.groupTiles), im.lt(t, tileEnd));
    return memref::LoadOp::create(b, loc, words,
                                  ValueRange{row, im.clamp(t, ok), im.c(0)});
  }

  /// A packed group: tiles g*G .. g*G+G-1 of the row. Every warp scans the
  /// group's counts itself (lane l: tile g*G + l), so the entries' places
  /// need no barrier; warp w then copies tiles w, w + warps, ...
  void stagePacked(Value g, Value countWord) {
    Value first = fromPassStart(tileBegin, im.mul(g, s.groupTiles));
    Value t = im.add(first, lane);
    Value ok = im.andi(im.lt(lane, s.groupTiles), im.lt(t, tileEnd));
    Value count = arith::MinUIOp::create(b, loc, countWord, im.i32(s.capacity));
    count = arith::SelectOp::create(b, loc, ok, count, im.i32(0));
    Value sum = warpInclusiveSum(b, loc, count);
    Value start = arith::SubIOp::create(b, loc, sum, count);
    im.ifThen(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, tid,
                                    im.c(kWarpSize - 1)),
              [&] {
                memref::StoreOp::create(b, loc, sum, total,
                                        ValueRange{im.c(0)});
              });
    Type i16 = b.getIntegerType(16);
    Type i32 = b.getI32Type();
    auto fromLane = [&](Value v, Value srcLane) {
      return gpu::ShuffleOp::create(
                 b, loc, v,
                 arith::IndexCastUIOp::create(b, loc, i32, srcLane),
                 im.i32(kWarpSize), gpu::ShuffleMode::IDX)
          .getShuffleResult();
    };
    im.forEach(warp, im.c(s.groupTiles), im.c(s.warps), [&](Value i) {
      // Tile i's count and first place, from lane i (i is warp-uniform).
      Value tileCount = toIndex(fromLane(count, i));
      Value tileStart = toIndex(fromLane(start, i));
      Value ti = im.add(first, i);
      Value base = im.mul(ti, s.tile);
      // A tile past the row has count 0: the loop does not run.
      im.forEach(lane, tileCount, im.c(kWarpSize), [&](Value e) {
        Value w = memref::LoadOp::create(
            b, loc, words, ValueRange{row, ti, im.add(e, im.c(1))});
        Value col = arith::AndIOp::create(b, loc, w, im.i32(0xffff));
        Value j = arith::AddIOp::create(
            b, loc, col, arith::IndexCastUIOp::create(b, loc, i32, base));
        Value bits = arith::TruncIOp::create(
            b, loc, i16, arith::ShRUIOp::create(b, loc, w, im.i32(16)));
        Value h = im.toF32(arith::BitcastOp::create(b, loc, et, bits));
        Value at = im.add(tileStart, e);
        memref::StoreOp::create(b, loc, j, cols, ValueRange{at});
        memref::StoreOp::create(b, loc, h, vals, ValueRange{at});
      });
    });
  }

  /// A fallback group: columns g*C .. g*C+C-1 of the dense fallback row.
  void stageFallback(Value g) {
    Value first = fromPassStart(colBegin, im.mul(g, s.stage));
    im.forEach(tid, im.c(s.stage), im.c(s.threads), [&](Value c) {
      Value j = im.add(first, c);
      Value ok = im.lt(j, colEnd);
      Value jc = im.clamp(j, ok);
      Value h = im.loadF32(fallback, {row, jc});
      h = arith::SelectOp::create(b, loc, ok, h, f32(0.0));
      memref::StoreOp::create(
          b, loc, arith::IndexCastUIOp::create(b, loc, b.getI32Type(), jc),
          cols, ValueRange{c});
      memref::StoreOp::create(b, loc, h, vals, ValueRange{c});
    });
    im.ifThen(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, tid,
                                    im.c(0)),
              [&] {
                Value n = arith::MinUIOp::create(
                    b, loc, im.sub(colEnd, first), im.c(s.stage));
                memref::StoreOp::create(
                    b, loc,
                    arith::IndexCastUIOp::create(b, loc, b.getI32Type(), n),
                    total, ValueRange{im.c(0)});
              });
  }

  /// Gated: vals[e] *= X[row] . Wu[cols[e]], one warp per entry.
  void gateUp(Value n) {
    int64_t rounds = (s.slots + kWarpSize - 1) / kWarpSize;
    im.forEach(warp, n, im.c(s.warps), [&](Value e) {
      Value h = memref::LoadOp::create(b, loc, vals, ValueRange{e});
      Value active = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNE,
                                           h, f32(0.0));
      im.ifThen(active, [&] {
        Value j = toIndex(memref::LoadOp::create(b, loc, cols, ValueRange{e}));
        // Lane l reads vectors l, l + 32, ... of both rows: kRoundsInFlight
        // rounds per iteration, unrolled so that their loads are in flight
        // together (more would cost registers and so occupancy).
        int64_t perIter = std::min(rounds, kRoundsInFlight);
        int64_t iters = (rounds + perIter - 1) / perIter;
        bool partial = s.slots % (kWarpSize * perIter) != 0;
        auto rounds = scf::ForOp::create(
            b, loc, im.c(0), im.c(iters), im.c(1), ValueRange{splat(0.0)},
            [&](OpBuilder &, Location, Value it, ValueRange iter) {
              Value acc = iter[0];
              Value first = im.add(lane, im.mul(it, kWarpSize * perIter));
              for (int64_t r = 0; r < perIter; ++r) {
                Value slot = im.add(first, r * kWarpSize);
                Value ok = partial ? im.lt(slot, s.slots) : Value();
                Value sc = im.clamp(slot, ok);
                // Named loads: the op order must not depend on the host
                // compiler's order of evaluating call arguments.
                Value wv = loadVec(wu, j, sc);
                Value xv = loadVec(x, row, sc);
                Value p = arith::MulFOp::create(b, loc, xv, wv);
                if (ok)
                  p = arith::SelectOp::create(b, loc, ok, p, splat(0.0));
                acc = arith::AddFOp::create(b, loc, acc, p);
              }
              scf::YieldOp::create(b, loc, acc);
            });
        Value dot = rounds.getResult(0);
        Value sum = vector::ReductionOp::create(b, loc,
                                                vector::CombiningKind::ADD,
                                                dot);
        sum = warpAllSum(b, loc, sum);
        // Every lane read vals[e] above; lane 0 overwrites it. The shuffles
        // already order the two (the read decided the branch), but only a
        // warp barrier orders shared memory for the memory model (and for
        // compute-sanitizer's racecheck). The branch is warp-uniform.
        NVVM::SyncWarpOp::create(b, loc, im.i32(-1));
        im.ifThen(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                        lane, im.c(0)),
                  [&] {
                    memref::StoreOp::create(
                        b, loc, arith::MulFOp::create(b, loc, h, sum), vals,
                        ValueRange{e});
                  });
      });
    });
  }

  /// acc[p] += vals[e] * WdT[cols[e], this thread's vectors] over the
  /// group's entries, kUnroll entries per iteration so that their loads are
  /// in flight together (entries past n count as zero coefficients on row
  /// cols[0]). Zero coefficients (fallback rows) are not skipped: a branch
  /// per entry would keep the loads from overlapping.
  SmallVector<Value> accumulate(Value n, ValueRange acc) {
    auto loop = scf::ForOp::create(
        b, loc, im.c(0), n, im.c(kUnroll), acc,
        [&](OpBuilder &, Location, Value e0, ValueRange cur) {
          SmallVector<Value> coefs, rows;
          for (int64_t u = 0; u < kUnroll; ++u) {
            Value e = im.add(e0, u);
            Value ok = u ? im.lt(e, n) : Value();
            Value ec = im.clamp(e, ok);
            Value coef = memref::LoadOp::create(b, loc, vals, ValueRange{ec});
            if (ok)
              coef = arith::SelectOp::create(b, loc, ok, coef, f32(0.0));
            coefs.push_back(vector::BroadcastOp::create(
                b, loc, vecType(b.getF32Type()), coef));
            rows.push_back(
                toIndex(memref::LoadOp::create(b, loc, cols, ValueRange{ec})));
          }
          SmallVector<Value> next(cur.begin(), cur.end());
          for (int64_t p = 0; p < s.perThread; ++p) {
            Value slot = im.add(tid, p * s.threads);
            bool full = (p + 1) * s.threads <= s.slots;
            Value sc = im.clamp(slot, full ? Value() : im.lt(slot, s.slots));
            SmallVector<Value> ws;
            for (int64_t u = 0; u < kUnroll; ++u)
              ws.push_back(loadVec(wdT, rows[u], sc));
            for (int64_t u = 0; u < kUnroll; ++u)
              next[p] = vector::FMAOp::create(b, loc, coefs[u], ws[u], next[p]);
          }
          scf::YieldOp::create(b, loc, next);
        });
    return SmallVector<Value>(loop.getResults());
  }

  Value toIndex(Value v) {
    return arith::IndexCastUIOp::create(b, loc, b.getIndexType(), v);
  }
};

} // namespace

int64_t mlir::sgpu::twellConsumerPasses(TwellFFNOp op, int64_t requested) {
  TwellType tt = op.getPacked().getType();
  int64_t f = tt.getShape()[1];
  int64_t tiles = (f + tt.getLayout().getTile() - 1) / tt.getLayout().getTile();
  if (requested > 0)
    return std::min(requested, tiles);
  int64_t d = cast<RankedTensorType>(op.getResult().getType()).getDimSize(1);
  int64_t rowBytes = d * tt.getElementType().getIntOrFloatBitWidth() / 8;
  int64_t weightBytes = f * rowBytes * (op.getInput() ? 2 : 1);
  if (rowBytes > kTwellPassMaxRowBytes || weightBytes <= kTwellPassMinWeightBytes)
    return 1;
  return std::clamp<int64_t>(
      (weightBytes + kTwellPassWeightBytes - 1) / kTwellPassWeightBytes, 1,
      tiles);
}

/// The consumer's shape for `op` in `passes` passes.
static ConsumerShape shapeOf(TwellFFNOp op, int64_t passes) {
  TwellType tt = op.getPacked().getType();
  auto yt = cast<RankedTensorType>(op.getResult().getType());
  return ConsumerShape(tt.getShape()[1], yt.getDimSize(1),
                       tt.getLayout().getTile(),
                       tt.getLayout().getWordsPerTile(),
                       static_cast<bool>(op.getInput()), passes);
}

/// The tensor of `op`'s output buffer `y`, which replaces it.
static Value outputTensor(OpBuilder &b, TwellFFNOp op, Value y) {
  return bufferization::ToTensorOp::create(
      b, op.getLoc(), op.getResult().getType(), y,
      /*restrict=*/b.getUnitAttr(), /*writable=*/b.getUnitAttr());
}

Value mlir::sgpu::lowerTwellFFNToGPU(OpBuilder &b, TwellFFNOp op, const TwellBuffers &packed,
                                    Value downT, KernelSink &sink, size_t index,
                                    int64_t passes) {
  Location loc = op.getLoc();
  TwellType tt = op.getPacked().getType();
  auto yt = cast<RankedTensorType>(op.getResult().getType());
  bool gated = static_cast<bool>(op.getInput());
  ConsumerShape shape = shapeOf(op, passes);
  Type et = tt.getElementType();

  SmallVector<Value> args = {packed.words, packed.flags, packed.fallback,
                             downT};
  if (gated) {
    args.push_back(readBuffer(b, loc, op.getInput()));
    args.push_back(readBuffer(b, loc, op.getUp()));
  }
  Value y = memref::AllocOp::create(b, loc, memrefTypeOf(yt));
  args.push_back(y);
  if (passes > 1) {
    args.push_back(memref::AllocOp::create(
        b, loc,
        MemRefType::get({yt.getDimSize(0), yt.getDimSize(1)}, b.getF32Type())));
    // Placeholders for the pass's tile range (constants of each launch).
    args.push_back(arith::ConstantIndexOp::create(b, loc, 0));
    args.push_back(arith::ConstantIndexOp::create(b, loc, 0));
  }

  OpBuilder kb = sink.builder();
  Type i32 = kb.getI32Type(), f32 = kb.getF32Type();
  SmallVector<Type> workgroup = {workgroupBuffer(kb, shape.stage, i32),
                                 workgroupBuffer(kb, shape.stage, f32),
                                 workgroupBuffer(kb, 1, i32)};
  auto func = createKernel(kb, loc, sink.symbols,
                           "sgpu_twell_ffn_" + std::to_string(index),
                           llvm::to_vector(ValueRange(args).getTypes()),
                           workgroup, shape.threads);
  ConsumerBuilder(kb, loc, shape, et).build(func);
  finishKernel(kb, loc, func);

  // Pass p visits tiles [p T / P, (p + 1) T / P): one launch each, in
  // order, so the weight rows in use at a time are 1/P of them.
  for (int64_t p = 0; p < passes; ++p) {
    if (passes > 1) {
      args[args.size() - 2] =
          arith::ConstantIndexOp::create(b, loc, p * shape.tiles / passes);
      args[args.size() - 1] = arith::ConstantIndexOp::create(
          b, loc, (p + 1) * shape.tiles / passes);
    }
    launchKernel(b, loc, func, tt.getShape()[0], shape.threads, args);
  }
  return outputTensor(b, op, y);
}

std::string mlir::sgpu::whyNoTwellPackInConsumer(TwellFFNOp op) {
  ConsumerShape shape = shapeOf(op, 1);
  if (shape.f % ConsumerShape::hVec)
    return "F is not a multiple of 8 (the consumer reads H in 16-byte "
           "vectors)";
  if (shape.hRounds > kMaxScanRounds)
    return "F = " + std::to_string(shape.f) + " is over the " +
           std::to_string(ConsumerShape::hVec * shape.threads *
                          kMaxScanRounds) +
           " columns the consumer's threads scan";
  return "";
}

Value mlir::sgpu::lowerTwellFFNFromH(OpBuilder &b, TwellFFNOp op, Value h, Value active,
                                    Value downT, KernelSink &sink, size_t index) {
  Location loc = op.getLoc();
  TwellType tt = op.getPacked().getType();
  auto yt = cast<RankedTensorType>(op.getResult().getType());
  bool gated = static_cast<bool>(op.getInput());
  ConsumerShape shape = shapeOf(op, 1);
  Type et = tt.getElementType();

  SmallVector<Value> args = {h, downT};
  if (gated) {
    args.push_back(readBuffer(b, loc, op.getInput()));
    args.push_back(readBuffer(b, loc, op.getUp()));
  }
  Value y = memref::AllocOp::create(b, loc, memrefTypeOf(yt));
  args.push_back(y);
  args.push_back(active);

  OpBuilder kb = sink.builder();
  Type i32 = kb.getI32Type(), f32 = kb.getF32Type();
  SmallVector<Type> workgroup = {workgroupBuffer(kb, shape.stage, i32),
                                 workgroupBuffer(kb, shape.stage, f32),
                                 workgroupBuffer(kb, 1, i32),
                                 workgroupBuffer(kb, 4 * shape.warps, i32)};
  auto func = createKernel(kb, loc, sink.symbols,
                           "sgpu_twell_ffn_" + std::to_string(index),
                           llvm::to_vector(ValueRange(args).getTypes()),
                           workgroup, shape.threads);
  ConsumerBuilder(kb, loc, shape, et).buildFromH(func);
  finishKernel(kb, loc, func);

  launchKernel(b, loc, func, tt.getShape()[0], shape.threads, args);
  return outputTensor(b, op, y);
}
