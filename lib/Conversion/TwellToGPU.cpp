//===- TwellToGPU.cpp - sgpu.twell_pack / sgpu.twell_ffn as kernels -------===//
//
// A first, correct GPU lowering of TwELL on CUDA cores. It writes and reads
// exactly the concrete form of the CPU reference (TwellToLoops.cpp), so the
// two can be compared buffer by buffer:
//   words        [M, NT, W] i32: word 0 the true count (even past the
//                capacity W - 1), words 1..min(count, W-1) the entries
//                `col-in-tile | value bits << 16` in column order, the
//                unused words 0
//   flags        [M] i32: 1 where a tile of the row is over capacity
//   fallback     [M, F]: the overflowing rows densely, the others 0
//   fallbackRows [1] i32: how many rows overflowed
//
// Kernels (launched in this order for every pack, then one per consumer):
//
// * sgpu_twell_clear_<i>, 1 block of 1 thread: fallbackRows := 0. The
//   runtime program zero-fills temporaries only when it binds them, and the
//   pack kernel counts with an atomic add, so the count must be cleared at
//   every run.
//
// * sgpu_twell_pack_<i>, one block per row, min(8, NT) warps. Per row
//   rather than per (row, tile) because the overflow decision is a property
//   of the whole row: it selects whether the row's fallback is the dense row
//   or zeros, and the flag and the count are per row. A block sees all its
//   tiles, so one shared-memory word and one barrier decide it, without a
//   second kernel or global synchronization. Warp w packs tiles w, w + warps,
//   ...: 32 columns at a time, each lane tests one column, a ballot gives
//   the warp's nonzero mask and the popcount of the mask bits below a lane
//   is that lane's rank, so entries land in column order with no atomics.
//   The running count goes on past the capacity (entries past it are not
//   stored), so word 0 is the true count. Entry words from min(count, W-1)+1
//   on are zeroed by the same warp after the count is known (disjoint from
//   the entry words, so no intra-warp ordering is needed).
//
// * sgpu_twell_ffn_<i>, one block per row (token), normBlockThreads(d)
//   threads. Thread t owns output features t, t + T, ... of an f32
//   accumulator row in shared memory (only its owner touches a feature, so
//   the accumulation needs no barrier). The block walks the row's active
//   neurons together (a loop bound read from global memory by every thread,
//   so uniform): for a flagged row every neuron j < F with the dense
//   fallback value, else each tile's min(count, W-1) entries. Ungated:
//   acc += h_j * Wd[:, j]. Gated: the block first reduces u = X[m] . Wu[j]
//   (thread partials over k, warp xor shuffles, warp sums through shared
//   memory, as NormToGPU.cpp does) and adds h_j * u * Wd[:, j]. The result
//   is rounded to the element type once at the end.
//
// What a faster version would do: the pack fused into the epilogue of the
// GEMM producing H (per-tile shared-memory counts, no pass over H in
// memory); a consumer that gathers the active neurons' Wd columns (and Wu
// rows) of a group of tokens into shared memory and multiplies on tensor
// cores, with warps owning disjoint neurons and reducing at the end instead
// of one block-wide reduction and two barriers per gated neuron; Wd stored
// transposed so a neuron's column is contiguous; and a per-layer choice of
// the dense path when the measured density makes TwELL lose.
//
//===----------------------------------------------------------------------===//

#include "TwellToGPU.h"
#include "IndexMath.h"
#include "NormToGPU.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

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
  Value f32(double v) {
    return arith::ConstantOp::create(b, loc, b.getF32Type(),
                                     b.getF32FloatAttr(v));
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
  Value addf(Value x, Value y) { return arith::AddFOp::create(b, loc, x, y); }
  Value mulf(Value x, Value y) { return arith::MulFOp::create(b, loc, x, y); }
};

MemRefType workgroupBuffer(OpBuilder &b, int64_t n, Type et) {
  return MemRefType::get({n}, et, AffineMap(),
                         gpu::AddressSpaceAttr::get(
                             b.getContext(), gpu::AddressSpace::Workgroup));
}

gpu::GPUFuncOp createKernel(OpBuilder &kb, Location loc, SymbolTable &symbols,
                            const std::string &name, ArrayRef<Type> args,
                            ArrayRef<Type> workgroup, int64_t threads) {
  auto func = gpu::GPUFuncOp::create(
      kb, loc, name, kb.getFunctionType(args, {}), TypeRange(workgroup));
  func->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), kb.getUnitAttr());
  func.setKnownBlockSizeAttr(
      kb.getDenseI32ArrayAttr({int32_t(threads), 1, 1}));
  symbols.insert(func);
  kb.setInsertionPointToStart(&func.getBody().front());
  return func;
}

void finishKernel(OpBuilder &kb, Location loc, gpu::GPUFuncOp func) {
  kb.setInsertionPointToEnd(&func.getBody().front());
  gpu::ReturnOp::create(kb, loc);
}

void launch(OpBuilder &b, Location loc, gpu::GPUFuncOp func, int64_t grid,
            int64_t threads, ValueRange args) {
  auto c = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(b, loc, v);
  };
  gpu::LaunchFuncOp::create(b, loc, func, gpu::KernelDim3{c(grid), c(1), c(1)},
                            gpu::KernelDim3{c(threads), c(1), c(1)},
                            /*dynamicSharedMemorySize=*/Value(), args);
}

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
        rows = func.getArgument(4);
  Value over = func.getWorkgroupAttributions()[0];
  Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  Value row = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  Value lane = im.rem(tid, kWarpSize), warp = im.div(tid, kWarpSize);
  Value lane32 = e.toI32(lane);
  Value zero = arith::ConstantOp::create(b, loc, et, b.getZeroAttr(et));

  e.ifThen(e.eq(tid, 0), [&] { e.store(im.i32(0), over, {im.c(0)}); });
  gpu::BarrierOp::create(b, loc);

  // Lanes below this one: (1 << lane) - 1.
  Value below = arith::SubIOp::create(
      b, loc, arith::ShLIOp::create(b, loc, im.i32(1), lane32), im.i32(1));
  int64_t chunks = (tile + kWarpSize - 1) / kWarpSize;
  e.loop(warp, im.c(tiles), im.c(warps), [&](Value t) {
    Value base = im.mul(t, tile);
    auto count = scf::ForOp::create(
        b, loc, im.c(0), im.c(chunks), im.c(1), ValueRange{im.i32(0)},
        [&](OpBuilder &, Location, Value chunk, ValueRange iter) {
          Value n = iter[0];
          Value c = im.add(im.mul(chunk, kWarpSize), lane);
          Value col = im.add(base, c);
          // Columns past the tile (T not a multiple of 32) or past F (a
          // partial last tile) are not nonzero; their address is clamped.
          Value inTile = tile % kWarpSize ? im.lt(c, tile) : Value();
          Value inRow = f % tile ? im.lt(col, f) : Value();
          Value ok = im.andi(inTile, inRow);
          Value v = e.load(h, {row, im.clamp(col, ok)});
          // "Nonzero" as in the reference: une 0.0 (-0.0 is zero, NaN kept).
          Value nz = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNE,
                                           v, zero);
          nz = im.andi(ok, nz);
          Value mask = NVVM::VoteSyncOp::create(b, loc, i32, im.i32(-1), nz,
                                                NVVM::VoteSyncKind::ballot);
          Value rank = LLVM::CtPopOp::create(
              b, loc, i32, arith::AndIOp::create(b, loc, mask, below));
          Value pos = arith::AddIOp::create(b, loc, n, rank);
          Value fits = e.cmpi(arith::CmpIPredicate::ult, pos, im.i32(capacity));
          e.ifThen(im.andi(nz, fits), [&] {
            Value bits = arith::ExtUIOp::create(
                b, loc, i32, arith::BitcastOp::create(b, loc, i16, v));
            Value high = arith::ShLIOp::create(b, loc, bits, im.i32(16));
            Value entry = arith::OrIOp::create(b, loc, high, e.toI32(c));
            Value slot = im.add(e.toIndex(pos), im.c(1));
            e.store(entry, out, {row, t, slot});
          });
          Value total = LLVM::CtPopOp::create(b, loc, i32, mask);
          scf::YieldOp::create(b, loc,
                               ValueRange{arith::AddIOp::create(b, loc, n,
                                                                total)});
        });
    Value n = count.getResult(0);
    Value first = e.eq(lane, 0);
    e.ifThen(first, [&] { e.store(n, out, {row, t, im.c(0)}); });
    // Zero the entry words past the stored entries.
    Value stored =
        arith::MinUIOp::create(b, loc, e.toIndex(n), im.c(capacity));
    e.loop(im.add(im.add(stored, im.c(1)), lane), im.c(words),
           im.c(kWarpSize),
           [&](Value s) { e.store(im.i32(0), out, {row, t, s}); });
    Value overflows = e.cmpi(arith::CmpIPredicate::ugt, n, im.i32(capacity));
    e.ifThen(im.andi(first, overflows),
             [&] { e.store(im.i32(1), over, {im.c(0)}); });
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
  });
  // The fallback row: the dense row when it overflowed, else zeros (the
  // buffer is reused across runs, so the zeros are written every time).
  e.loop(tid, im.c(f), im.c(threads), [&](Value j) {
    Value v = arith::SelectOp::create(b, loc, overflow, e.load(h, {row, j}),
                                      zero);
    e.store(v, fallback, {row, j});
  });
}

/// The consumer kernel's body; arguments words, flags, fallback, wd,
/// [x, wu], y; workgroup: the f32 accumulator row [d], and for several
/// warps the warp sums of the gated dot product.
void buildFFNKernel(OpBuilder &b, Location loc, gpu::GPUFuncOp func,
                    int64_t f, int64_t d, int64_t tile, int64_t words,
                    int64_t tiles, bool gated, Type et) {
  KernelEmit e(b, loc);
  IndexMath &im = e.im;
  Type i16 = b.getIntegerType(16);
  int64_t capacity = words - 1;
  int64_t threads = normBlockThreads(d), warps = threads / kWarpSize;
  Value packedWords = func.getArgument(0), flags = func.getArgument(1),
        fallback = func.getArgument(2), wd = func.getArgument(3);
  Value x = gated ? func.getArgument(4) : Value();
  Value wu = gated ? func.getArgument(5) : Value();
  // The entry block also holds the workgroup attributions, after the
  // function's own arguments: y is the last argument of the type.
  Value y = func.getArgument(func.getFunctionType().getNumInputs() - 1);
  Value acc = func.getWorkgroupAttributions()[0];
  Value sums;
  if (gated && warps > 1)
    sums = func.getWorkgroupAttributions()[1];
  Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  Value row = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  Value lane = im.rem(tid, kWarpSize), warp = im.div(tid, kWarpSize);
  auto forColumns = [&](function_ref<void(Value)> body) {
    e.loop(tid, im.c(d), im.c(threads), body);
  };

  forColumns([&](Value n) { e.store(e.f32(0), acc, {n}); });

  auto warpSum = [&](Value v) {
    for (int32_t offset = kWarpSize / 2; offset > 0; offset /= 2) {
      auto shuffle = gpu::ShuffleOp::create(b, loc, v, offset, kWarpSize,
                                            gpu::ShuffleMode::XOR);
      v = e.addf(v, shuffle.getShuffleResult());
    }
    return v;
  };
  // The block's sum in every thread. The second barrier keeps the next
  // neuron's warp sums from overwriting ones a slower warp still reads.
  auto blockSum = [&](Value v) {
    v = warpSum(v);
    if (warps == 1)
      return v;
    e.ifThen(e.eq(lane, 0), [&] { e.store(v, sums, {warp}); });
    gpu::BarrierOp::create(b, loc);
    Value has = im.lt(lane, warps);
    Value partial = e.load(sums, {im.clamp(lane, has)});
    Value total =
        warpSum(arith::SelectOp::create(b, loc, has, partial, e.f32(0)));
    gpu::BarrierOp::create(b, loc);
    return total;
  };
  // acc[:] += h * (gated: X[row] . Wu[j]) * Wd[:, j]; called by the whole
  // block with the same j.
  auto contribute = [&](Value j, Value hv) {
    Value coef = hv;
    if (gated) {
      auto partial = scf::ForOp::create(
          b, loc, tid, im.c(d), im.c(threads), ValueRange{e.f32(0)},
          [&](OpBuilder &, Location, Value k, ValueRange s) {
            Value p = e.mulf(im.loadF32(x, {row, k}), im.loadF32(wu, {j, k}));
            scf::YieldOp::create(b, loc, ValueRange{e.addf(s[0], p)});
          });
      coef = e.mulf(hv, blockSum(partial.getResult(0)));
    }
    forColumns([&](Value n) {
      Value p = e.mulf(coef, im.loadF32(wd, {n, j}));
      e.store(e.addf(e.load(acc, {n}), p), acc, {n});
    });
  };

  Value overflowed = e.cmpi(arith::CmpIPredicate::ne, e.load(flags, {row}),
                            im.i32(0));
  e.ifThen(
      overflowed,
      [&] {
        e.loop(im.c(0), im.c(f), im.c(1), [&](Value j) {
          contribute(j, im.loadF32(fallback, {row, j}));
        });
      },
      [&] {
        e.loop(im.c(0), im.c(tiles), im.c(1), [&](Value t) {
          Value count = arith::MinUIOp::create(
              b, loc, e.toIndex(e.load(packedWords, {row, t, im.c(0)})),
              im.c(capacity));
          Value base = im.mul(t, tile);
          e.loop(im.c(0), count, im.c(1), [&](Value ei) {
            Value w = e.load(packedWords, {row, t, im.add(ei, im.c(1))});
            Value col = arith::AndIOp::create(b, loc, w, im.i32(0xffff));
            Value j = im.add(base, e.toIndex(col));
            Value bits = arith::TruncIOp::create(
                b, loc, i16, arith::ShRUIOp::create(b, loc, w, im.i32(16)));
            contribute(j, im.toF32(arith::BitcastOp::create(b, loc, et, bits)));
          });
        });
      });
  forColumns(
      [&](Value n) { im.storeRounded(e.load(acc, {n}), y, {row, n}); });
}

} // namespace

TwellBuffers mlir::sgpu::lowerTwellPackToGPU(TwellPackOp op,
                                             gpu::GPUModuleOp gpuModule,
                                             SymbolTable &symbols,
                                             size_t index) {
  Location loc = op.getLoc();
  TwellType tt = op.getResult().getType();
  TwellLayoutAttr layout = tt.getLayout();
  int64_t m = tt.getShape()[0], f = tt.getShape()[1];
  int64_t tile = layout.getTile(), words = layout.getWordsPerTile();
  int64_t tiles = (f + tile - 1) / tile;
  Type et = tt.getElementType();

  OpBuilder b(op);
  Type i32 = b.getI32Type();
  auto wordsType = MemRefType::get({m, tiles, words}, i32);
  auto flagsType = MemRefType::get({m}, i32);
  auto hType = MemRefType::get({m, f}, et);
  auto rowsType = MemRefType::get({1}, i32);
  TwellBuffers out;
  Value h = readBuffer(b, loc, op.getInput());
  out.words = memref::AllocOp::create(b, loc, wordsType);
  out.flags = memref::AllocOp::create(b, loc, flagsType);
  out.fallback = memref::AllocOp::create(b, loc, hType);
  out.fallbackRows = memref::AllocOp::create(b, loc, rowsType);

  OpBuilder kb(gpuModule.getBodyRegion());
  kb.setInsertionPointToEnd(gpuModule.getBody());
  std::string suffix = std::to_string(index);
  auto clear = createKernel(kb, loc, symbols, "sgpu_twell_clear_" + suffix,
                            {rowsType}, {}, 1);
  {
    IndexMath im{kb, loc};
    memref::StoreOp::create(kb, loc, im.i32(0), clear.getArgument(0),
                            ValueRange{im.c(0)});
  }
  finishKernel(kb, loc, clear);

  kb.setInsertionPointToEnd(gpuModule.getBody());
  int64_t warps = std::min(kPackMaxWarps, tiles);
  auto pack = createKernel(kb, loc, symbols, "sgpu_twell_pack_" + suffix,
                           {hType, wordsType, flagsType, hType, rowsType},
                           {workgroupBuffer(kb, 1, i32)}, warps * kWarpSize);
  buildPackKernel(kb, loc, pack, f, tile, words, tiles, warps, et);
  finishKernel(kb, loc, pack);

  launch(b, loc, clear, 1, 1, {out.fallbackRows});
  launch(b, loc, pack, m, warps * kWarpSize,
         {h, out.words, out.flags, out.fallback, out.fallbackRows});
  return out;
}

void mlir::sgpu::lowerTwellFFNToGPU(TwellFFNOp op, const TwellBuffers &packed,
                                    gpu::GPUModuleOp gpuModule,
                                    SymbolTable &symbols, size_t index) {
  Location loc = op.getLoc();
  TwellType tt = op.getPacked().getType();
  TwellLayoutAttr layout = tt.getLayout();
  int64_t m = tt.getShape()[0], f = tt.getShape()[1];
  int64_t tile = layout.getTile(), words = layout.getWordsPerTile();
  int64_t tiles = (f + tile - 1) / tile;
  auto yt = cast<RankedTensorType>(op.getResult().getType());
  int64_t d = yt.getDimSize(1);
  bool gated = static_cast<bool>(op.getInput());
  Type et = tt.getElementType();

  OpBuilder b(op);
  SmallVector<Value> args = {packed.words, packed.flags, packed.fallback,
                             readBuffer(b, loc, op.getDown())};
  if (gated) {
    args.push_back(readBuffer(b, loc, op.getInput()));
    args.push_back(readBuffer(b, loc, op.getUp()));
  }
  Value y = memref::AllocOp::create(b, loc, memrefTypeOf(yt));
  args.push_back(y);

  OpBuilder kb(gpuModule.getBodyRegion());
  kb.setInsertionPointToEnd(gpuModule.getBody());
  int64_t threads = normBlockThreads(d);
  SmallVector<Type> workgroup = {workgroupBuffer(kb, d, kb.getF32Type())};
  if (gated && threads > kWarpSize)
    workgroup.push_back(
        workgroupBuffer(kb, threads / kWarpSize, kb.getF32Type()));
  auto func = createKernel(kb, loc, symbols,
                           "sgpu_twell_ffn_" + std::to_string(index),
                           llvm::to_vector(ValueRange(args).getTypes()),
                           workgroup, threads);
  buildFFNKernel(kb, loc, func, f, d, tile, words, tiles, gated, et);
  finishKernel(kb, loc, func);

  launch(b, loc, func, m, threads, args);
  Value result = bufferization::ToTensorOp::create(
      b, loc, yt, y, /*restrict=*/b.getUnitAttr(),
      /*writable=*/b.getUnitAttr());
  op.replaceAllUsesWith(result);
  op.erase();
}
