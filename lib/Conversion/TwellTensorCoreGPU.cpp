//===- TwellTensorCoreGPU.cpp - the tensor-core TwELL consumer (sm_90a) ---===//
//
// convert-sgpu-to-gpu{twell-consumer=tensor-cores}: the FFN over the active
// neurons of blocks of 64 rows, on wgmma. The CUDA-core consumer
// (TwellConsumerGPU.cpp) reads a weight row per active (row, neuron); here
// the rows of a block share the weight rows of the neurons active in any
// of them (their union, U of F), which wgmma reads once per block:
//
//   sgpu_twell_blocks_<i>   one block of 256 threads per 64 rows of H:
//                           the union as a bit set in shared memory (an
//                           atomic or per 8 columns of the 64 rows), its
//                           positions by a warp scan of the words'
//                           populations, then count[b] = U, idx[b, p] the
//                           neurons in increasing order (0 up to the next
//                           multiple of 256) and coef[64 b + r, p] =
//                           H[64 b + r, idx[b, p]] (0 past U and past M).
//                           It also counts H's nonzeros (the stat of the
//                           pack; the form has no capacity, so no row ever
//                           falls back) and the blocks' U (the stat
//                           twell<i>.block_neurons, out of Nb * F).
//   sgpu_twell_up_<i>       gated only: P = (X . Wu[idx]^T) * coef, rounded
//                           once, over coef, or into a
//                           P buffer of its own when the pack has other
//                           consumers: the gathered rows mode of the
//                           TMA pipeline (SpmmTMA.h), A = the block's 64
//                           rows of X by TMA, B = 256 gathered rows of Wu
//                           per tile by cp.async (twell-gather=tma: TMA
//                           boxes of one row); tiles past U are skipped.
//   sgpu_twell_down_<i>     Y = P . WdT[idx] (ungated: P = coef): the
//                           gathered kRows mode, A = the block's P by TMA,
//                           B's K rows = rows of WdT [F, d] (d contiguous,
//                           MN-major), ceil(U / 64) k-tiles per tile.
//
// With random activations the union of 64 rows is 1 - (1 - p)^64 of F
// (27% at p = 0.5%, 73% at 2%): the tensor cores do that fraction of the
// dense FFN's up and down work, and each block reads U weight rows of each
// projection instead of 64 p F. docs/design.md has the measurements.
//
//===----------------------------------------------------------------------===//

#include "GPUKernel.h"
#include "IndexMath.h"
#include "SpmmTMA.h"
#include "TwellToGPU.h"
#include "../Transforms/TwellCostModel.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace mlir::sgpu;

namespace {

constexpr int64_t kBlockRows = kTmaGatherRows; // rows of H per block
constexpr int64_t kBlocksThreads = 256;
constexpr int64_t kWarpSize = 32;
/// Rows of H read per batch of independent loads (block pack).
constexpr int64_t kRowBatch = 8;
/// Coefficients gathered per lane and batch (block pack).
constexpr int64_t kCoefBatch = 8;

int64_t paddedCols(int64_t f) {
  return (f + kTmaGatherCols - 1) / kTmaGatherCols * kTmaGatherCols;
}

/// The block pack's coefficients, row by row (warp w takes rows w, w + 8,
/// ...), the lanes over consecutive positions: H's values at the listed
/// neurons `sidx` (nearby columns of one row), `zeroE` past U (`u`, the
/// positions padded to `uPad`) and past M; kCoefBatch loads in flight per
/// lane.
static void writeBlockCoefficients(OpBuilder &b, Location loc, int64_t m,
                                   Value h, Value coef, Value sidx, Value row0,
                                   Value u, Value uPad, Value warp, Value lane,
                                   Value zeroE) {
  IndexMath im{b, loc};
  im.forEach(warp, im.c(kBlockRows), im.c(kBlocksThreads / kWarpSize),
             [&](Value r) {
    Value row = im.add(row0, r);
    Value rowOk = im.lt(row, m);
    Value hRow = im.clamp(row, rowOk);
    im.forEach(lane, uPad, im.c(kWarpSize * kCoefBatch), [&](Value p0) {
      SmallVector<Value> vals, ats, oks;
      for (int64_t j = 0; j < kCoefBatch; ++j) {
        Value p = im.add(p0, kWarpSize * j);
        Value inPad = im.lt(p, uPad);
        Value ok = im.andi(rowOk, im.andi(inPad, im.lt(p, u)));
        Value n = arith::IndexCastUIOp::create(
            b, loc, b.getIndexType(), im.load(sidx, {im.clamp(p, inPad)}));
        vals.push_back(im.load(h, {hRow, im.clamp(n, ok)}));
        ats.push_back(p);
        oks.push_back(ok);
      }
      for (int64_t j = 0; j < kCoefBatch; ++j)
        im.ifThen(im.lt(ats[j], uPad), [&] {
          memref::StoreOp::create(
              b, loc, arith::SelectOp::create(b, loc, oks[j], vals[j], zeroE),
              coef, ValueRange{row, ats[j]});
        });
    });
  });
}

/// The block pack's body: arguments h [M, F], idx [Nb, Fp] i32, coef
/// [64 Nb, Fp], count [Nb] i32, active [1] i64, blockNeurons [1] i64; workgroup buffers bits
/// [Fp / 32] i32, first [Fp / 32] i32 (each word's first position), misc [2]
/// i32 (U, the block's nonzero count), sidx [Fp] i16 (the list again).
void buildBlocksKernel(OpBuilder &b, Location loc, gpu::GPUFuncOp func,
                       int64_t m, int64_t f, Type et) {
  IndexMath im{b, loc};
  Type i32 = b.getI32Type(), i64 = b.getI64Type();
  Type i16 = b.getIntegerType(16);
  int64_t fp = paddedCols(f), words = fp / 32;
  Value h = func.getArgument(0), idx = func.getArgument(1),
        coef = func.getArgument(2), count = func.getArgument(3),
        active = func.getArgument(4), blockNeurons = func.getArgument(5);
  Value bits = func.getWorkgroupAttributions()[0],
        first = func.getWorkgroupAttributions()[1],
        misc = func.getWorkgroupAttributions()[2],
        sidx = func.getWorkgroupAttributions()[3];
  Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  Value blk = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  Value row0 = im.mul(blk, kBlockRows);
  Value lane = im.rem(tid, kWarpSize), warp = im.div(tid, kWarpSize);
  auto ne0 = [&](Value v, Value zero) -> Value {
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, v, zero);
  };
  auto toI32 = [&](Value v) -> Value {
    return arith::IndexCastUIOp::create(b, loc, i32, v);
  };
  auto toIndex = [&](Value v) -> Value {
    return arith::IndexCastUIOp::create(b, loc, b.getIndexType(), v);
  };
  Value zeroE = arith::ConstantOp::create(b, loc, et, b.getZeroAttr(et));

  im.forEach(tid, im.c(words), im.c(kBlocksThreads),
             [&](Value w) { im.store(im.i32(0), bits, {w}); });
  im.ifThen(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, tid,
                                  im.c(0)),
            [&] { im.store(im.i32(0), misc, {im.c(1)}); });
  gpu::BarrierOp::create(b, loc);

  // The union and the nonzero count, per 16-byte chunk (8 columns) of the
  // block's rows, on 32-bit words: nonzeroHalves marks the nonzero values
  // of a pair, and its shift by 15 adds 1 to that half of a per-word
  // counter (at most 64 per half). One load per row and four words, a few
  // integer operations per word: the pass runs at memory speed.
  VectorType vt = VectorType::get({8}, et);
  VectorType wt = VectorType::get({4}, i32);
  llvm::Align align(16);
  Value rows = arith::MinUIOp::create(b, loc, im.c(kBlockRows),
                                      im.sub(im.c(m), row0));
  auto andC = [&](Value v, uint32_t c) -> Value {
    return arith::AndIOp::create(b, loc, v, im.i32(int32_t(c)));
  };
  auto nnz = scf::ForOp::create(
      b, loc, tid, im.c(f / 8), im.c(kBlocksThreads), ValueRange{im.i32(0)},
      [&](OpBuilder &, Location, Value chunk, ValueRange carried) {
        Value col = im.mul(chunk, 8);
        SmallVector<Value> init(4, im.i32(0));
        auto batches = scf::ForOp::create(
            b, loc, im.c(0), im.c(kBlockRows / kRowBatch), im.c(1), init,
            [&](OpBuilder &, Location, Value batch, ValueRange counts) {
              SmallVector<Value> cnt(counts.begin(), counts.end());
              SmallVector<Value> loaded, valid;
              for (int64_t r = 0; r < kRowBatch; ++r) {
                Value at = im.add(im.mul(batch, kRowBatch), im.c(r));
                Value ok = im.lt(at, rows);
                Value row = im.add(row0, arith::SelectOp::create(
                                             b, loc, ok, at, im.c(0)));
                loaded.push_back(vector::BitCastOp::create(
                    b, loc, wt,
                    vector::LoadOp::create(b, loc, vt, h, ValueRange{row, col},
                                           /*nontemporal=*/false, align)));
                valid.push_back(ok);
              }
              for (int64_t r = 0; r < kRowBatch; ++r)
                for (int64_t i = 0; i < 4; ++i) {
                  Value w = vector::ExtractOp::create(b, loc, loaded[r], i);
                  Value t = nonzeroHalves(b, loc, w);
                  Value one = arith::ShRUIOp::create(b, loc, t, im.i32(15));
                  one = arith::SelectOp::create(b, loc, valid[r], one,
                                                im.i32(0));
                  cnt[i] = arith::AddIOp::create(b, loc, cnt[i], one);
                }
              scf::YieldOp::create(b, loc, cnt);
            });
        Value mask = im.i32(0), n = carried[0];
        for (int64_t i = 0; i < 4; ++i) {
          Value c = batches.getResult(i);
          Value lo = andC(c, 0xffffu);
          Value hi = arith::ShRUIOp::create(b, loc, c, im.i32(16));
          n = arith::AddIOp::create(b, loc, n,
                                    arith::AddIOp::create(b, loc, lo, hi));
          auto bit = [&](Value v, int64_t at) -> Value {
            return arith::ShLIOp::create(
                b, loc, arith::ExtUIOp::create(b, loc, i32, ne0(v, im.i32(0))),
                im.i32(at));
          };
          mask = arith::OrIOp::create(
              b, loc, mask,
              arith::OrIOp::create(b, loc, bit(lo, 2 * i), bit(hi, 2 * i + 1)));
        }
        im.ifThen(ne0(mask, im.i32(0)), [&] {
          Value shifted = arith::ShLIOp::create(
              b, loc, mask, toI32(im.rem(col, 32)));
          memref::AtomicRMWOp::create(b, loc, arith::AtomicRMWKind::ori,
                                      shifted, bits,
                                      ValueRange{im.div(col, 32)});
        });
        scf::YieldOp::create(b, loc, ValueRange{n});
      });
  memref::AtomicRMWOp::create(b, loc, arith::AtomicRMWKind::addi,
                              nnz.getResult(0), misc, ValueRange{im.c(1)});
  gpu::BarrierOp::create(b, loc);

  // Positions: warp 0 scans the words' populations, 32 words at a time.
  auto popc = [&](Value v) -> Value {
    return LLVM::CtPopOp::create(b, loc, i32, v);
  };
  im.ifThen(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, warp,
                                  im.c(0)),
            [&] {
              auto scan = scf::ForOp::create(
                  b, loc, im.c(0), im.c(words), im.c(kWarpSize),
                  ValueRange{im.i32(0)},
                  [&](OpBuilder &, Location, Value base, ValueRange run) {
                    Value w = im.add(base, lane);
                    Value inside = im.lt(w, words);
                    Value word = im.load(bits, {im.clamp(w, inside)});
                    Value pc = arith::SelectOp::create(b, loc, inside,
                                                       popc(word), im.i32(0));
                    Value incl = warpInclusiveSum(b, loc, pc);
                    im.ifThen(inside, [&] {
                      im.store(arith::SubIOp::create(
                                b, loc,
                                arith::AddIOp::create(b, loc, run[0], incl),
                                pc),
                            first, {w});
                    });
                    Value total =
                        gpu::ShuffleOp::create(b, loc, incl, kWarpSize - 1,
                                               kWarpSize, gpu::ShuffleMode::IDX)
                            .getShuffleResult();
                    scf::YieldOp::create(
                        b, loc,
                        ValueRange{arith::AddIOp::create(b, loc, run[0], total)});
                  });
              im.ifThen(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                              lane, im.c(0)),
                        [&] {
                          im.store(scan.getResult(0), misc, {im.c(0)});
                          im.store(scan.getResult(0), count, {blk});
                          memref::AtomicRMWOp::create(
                              b, loc, arith::AtomicRMWKind::addi,
                              arith::ExtUIOp::create(b, loc, i64,
                                                     scan.getResult(0)),
                              blockNeurons, ValueRange{im.c(0)});
                          memref::AtomicRMWOp::create(
                              b, loc, arith::AtomicRMWKind::addi,
                              arith::ExtUIOp::create(
                                  b, loc, i64, im.load(misc, {im.c(1)})),
                              active, ValueRange{im.c(0)});
                        });
            });
  gpu::BarrierOp::create(b, loc);

  // The index list: every set bit at its position, then 0 up to the next
  // multiple of 256 (the gathered GEMMs' tiles read valid rows there).
  Value u = toIndex(im.load(misc, {im.c(0)}));
  Value uPad = im.mul(im.div(im.add(u, kTmaGatherCols - 1), kTmaGatherCols),
                      kTmaGatherCols);
  im.forEach(tid, im.c(words), im.c(kBlocksThreads), [&](Value w) {
    Value word = im.load(bits, {w});
    im.ifThen(ne0(word, im.i32(0)), [&] {
      Value p0 = im.load(first, {w});
      scf::ForOp::create(
          b, loc, im.c(0), im.c(32), im.c(1), ValueRange{p0},
          [&](OpBuilder &, Location, Value e, ValueRange pos) {
            Value set = ne0(
                arith::AndIOp::create(
                    b, loc,
                    arith::ShRUIOp::create(b, loc, word, toI32(e)),
                    im.i32(1)),
                im.i32(0));
            im.ifThen(set, [&] {
              Value n = im.add(im.mul(w, 32), e);
              im.store(toI32(n), idx, {blk, toIndex(pos[0])});
              im.store(arith::IndexCastUIOp::create(b, loc, i16, n), sidx,
                    {toIndex(pos[0])});
            });
            scf::YieldOp::create(
                b, loc,
                ValueRange{arith::AddIOp::create(
                    b, loc, pos[0],
                    arith::ExtUIOp::create(b, loc, i32, set))});
          });
    });
  });
  im.forEach(im.add(u, tid), uPad, im.c(kBlocksThreads), [&](Value p) {
    im.store(im.i32(0), idx, {blk, p});
    im.store(arith::ConstantIntOp::create(b, loc, i16, 0), sidx, {p});
  });
  gpu::BarrierOp::create(b, loc);

  writeBlockCoefficients(b, loc, m, h, coef, sidx, row0, u, uPad, warp, lane,
                         zeroE);
}

/// Calls `fn(row, col, pair)` for every pair of adjacent columns of the
/// fragment's accumulators (elements 4q + 2h and 4q + 2h + 1: row g + 8h,
/// columns 8q + 2t and 8q + 2t + 1), `pair` a vector<2xf32>.
void forEachPair(OpBuilder &b, Location loc, ArrayRef<Value> acc,
                 const TmaFragment &at,
                 function_ref<void(Value row, Value col, Value pair)> fn) {
  IndexMath im{b, loc};
  auto f32Pair = VectorType::get({2}, b.getF32Type());
  for (size_t q = 0; q < acc.size() / 4; ++q)
    for (int64_t half = 0; half < 2; ++half) {
      Value row = im.add(at.rowBase, im.add(at.g, 8 * half));
      Value col = im.add(at.colBase, im.add(im.c(8 * q), im.mul(at.t, 2)));
      fn(row, col,
         vector::FromElementsOp::create(
             b, loc, f32Pair,
             ValueRange{acc[4 * q + 2 * half], acc[4 * q + 2 * half + 1]}));
    }
}

/// The up GEMM's epilogue: P = acc * coef at the fragment's elements,
/// rounded once (pairs of adjacent columns; args: coef, P). coef is 0 at a
/// union neuron inactive in that row and at the padding, so P is 0 there
/// unless acc is not finite (an infinite X . Wu, which the reference, not
/// computing it, would not see). A select for that case measured 6-11%
/// slower on the whole FFN (bench/results/twell_tc_select_h200.json), so
/// the product stays plain.
void buildUpEpilogue(OpBuilder &b, Location loc, ArrayRef<Value> acc,
                     const TmaFragment &at, ValueRange args, Type et) {
  Value coef = args[0], p = args[1];
  auto pairType = VectorType::get({2}, et);
  llvm::Align align(4);
  forEachPair(b, loc, acc, at, [&](Value row, Value col, Value a) {
    Value h = vector::LoadOp::create(b, loc, pairType, coef,
                                     ValueRange{row, col},
                                     /*nontemporal=*/false, align);
    Value prod = arith::MulFOp::create(
        b, loc, a, arith::ExtFOp::create(b, loc, a.getType(), h));
    vector::StoreOp::create(b, loc,
                            arith::TruncFOp::create(b, loc, pairType, prod), p,
                            ValueRange{row, col}, /*nontemporal=*/false, align);
  });
}

/// The down GEMM's epilogue: Y at the fragment's elements, rows < M and
/// columns < d (d is even: pairs of columns).
void buildDownEpilogue(OpBuilder &b, Location loc, ArrayRef<Value> acc,
                       const TmaFragment &at, ValueRange args, Type et,
                       int64_t m, int64_t d) {
  IndexMath im{b, loc};
  Value y = args[0];
  auto pairType = VectorType::get({2}, et);
  llvm::Align align(4);
  forEachPair(b, loc, acc, at, [&](Value row, Value col, Value a) {
    im.ifThen(im.andi(im.lt(row, m), im.lt(col, d)), [&] {
      vector::StoreOp::create(b, loc,
                              arith::TruncFOp::create(b, loc, pairType, a), y,
                              ValueRange{row, col}, /*nontemporal=*/false,
                              align);
    });
  });
}

/// A gathered-mode kernel `name` with its arguments (the tensor map of A,
/// the source of B's rows, idx, count, then `outs`, what the epilogue
/// reads and writes) and launch, at `b`.
void emitGatherGemm(OpBuilder &b, Location loc, KernelSink &sink, const std::string &name,
                    TmaGatherKind kind, Value a, Value source, Value idx,
                    Value count, ValueRange outs, int64_t blocks, int64_t n,
                    int64_t k, int64_t rowLength, Type et, const KernelBudget &budget,
                    bool byTma, const TmaDenseEpilogue &epilogue) {
  Type ptrType = LLVM::LLVMPointerType::get(b.getContext());
  TmaSpmmConfig cfg = getTmaGatherConfig(kind, blocks, n, k, budget, byTma);
  // By TMA the source is a tensor map of one-row boxes.
  Value src = byTma ? TensorMapOp::create(b, loc, ptrType, source,
                                          b.getDenseI64ArrayAttr({1, 64}),
                                          b.getI64IntegerAttr(128))
                          .getResult()
                    : source;
  SmallVector<Value> operands = {src, idx, count};
  operands.append(outs.begin(), outs.end());
  SmallVector<Type> types = {ptrType};
  for (Value v : operands)
    types.push_back(v.getType());
  OpBuilder kb = sink.builder();
  auto func =
      gpu::GPUFuncOp::create(kb, loc, name, kb.getFunctionType(types, {}));
  func->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), kb.getUnitAttr());
  func.setKnownBlockSizeAttr(
      kb.getDenseI32ArrayAttr({int32_t(cfg.threads), 1, 1}));
  func->setAttr("sgpu.tensor_map_args",
                byTma ? kb.getDenseI64ArrayAttr({0, 1})
                      : kb.getDenseI64ArrayAttr({0}));
  func->setAttr(NVVM::NVVMDialect::getMinctasmAttrName(),
                kb.getI32IntegerAttr(1));
  sink.symbols.insert(func);
  SpmmShape s{blocks * kTmaGatherRows, n, rowLength, n, rowLength, et, et,
              Activation::none, false};
  buildTmaDenseKernel(kb, loc, s, cfg, func, epilogue);

  SmallVector<Value> args = {TensorMapOp::create(
      b, loc, ptrType, a, b.getDenseI64ArrayAttr(cfg.aBox),
      b.getI64IntegerAttr(cfg.aSwizzle))};
  args.append(operands.begin(), operands.end());
  auto c = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(b, loc, v);
  };
  gpu::LaunchFuncOp::create(
      b, loc, func, gpu::KernelDim3{c(cfg.gridSize), c(1), c(1)},
      gpu::KernelDim3{c(cfg.threads), c(1), c(1)},
      arith::ConstantIntOp::create(b, loc, b.getI32Type(),
                                   cfg.dynamicSharedBytes),
      args);
}

} // namespace

std::string mlir::sgpu::whyNoTwellTensorCores(TwellFFNOp ffn,
                                              const TargetInfo &target,
                                              bool fusedProducer) {
  if (!target.hasSparseWGMMA())
    return "the target has no wgmma (sm_90a with PTX ISA 8.2 or later)";
  int64_t d = cast<RankedTensorType>(ffn.getResult().getType()).getDimSize(1);
  if (d % 8 != 0)
    return "d = " + std::to_string(d) +
           " is not a multiple of 8 (the gathered rows are copied in "
           "16-byte chunks)";
  int64_t f = ffn.getPacked().getType().getCols();
  if (f % 8 != 0)
    return "F = " + std::to_string(f) +
           " is not a multiple of 8 (the block pack reads 16-byte chunks)";
  if (f > kTwellTensorCoreMaxF)
    return "F = " + std::to_string(f) + " is over " +
           std::to_string(kTwellTensorCoreMaxF) +
           " (the block pack's neuron list in shared memory)";
  if (fusedProducer)
    return "the fused producer writes no H for the block pack to read";
  return "";
}

TwellBlocks mlir::sgpu::lowerTwellPackToBlocks(OpBuilder &b, TwellPackOp pack,
                                               KernelSink &sink,
                                               size_t index) {
  Location loc = pack.getLoc();
  TwellType tt = pack.getResult().getType();
  int64_t m = tt.getRows(), f = tt.getCols(), fp = paddedCols(f);
  int64_t nb = (m + kBlockRows - 1) / kBlockRows;
  Type et = tt.getElementType(), i32 = IntegerType::get(pack.getContext(), 32);

  Value h = readBuffer(b, loc, pack.getInput());
  TwellBlocks out;
  out.fallbackRows = allocTwellStats(b, pack, index, out.active);
  out.idx = memref::AllocOp::create(b, loc, MemRefType::get({nb, fp}, i32));
  out.coef = memref::AllocOp::create(
      b, loc, MemRefType::get({nb * kBlockRows, fp}, et));
  out.count = memref::AllocOp::create(b, loc, MemRefType::get({nb}, i32));
  out.blockNeurons = memref::AllocOp::create(
      b, loc, MemRefType::get({1}, b.getI64Type()));
  Operation *stat = out.blockNeurons.getDefiningOp();
  stat->setAttr(SGPUDialect::kStatAttr,
                b.getStringAttr("twell" + std::to_string(index) +
                                ".block_neurons"));
  stat->setAttr(SGPUDialect::kStatTotalAttr, b.getI64IntegerAttr(nb * f));
  // A layer the cost model put on the tensor cores is guarded on its
  // blocks' union (its cost), not on the density.
  if (auto limit = pack->getAttrOfType<FloatAttr>(
          SGPUDialect::kTwellUnionBreakEvenAttr)) {
    stat->setAttr(SGPUDialect::kStatLimitAttr, limit);
    out.active.getDefiningOp()->removeAttr(SGPUDialect::kStatLimitAttr);
  }

  OpBuilder kb = sink.builder();
  auto clear = buildTwellClearKernel(
      kb, loc, sink.symbols, {out.fallbackRows, out.active, out.blockNeurons},
      index);
  kb.setInsertionPointToEnd(sink.module.getBody());
  SmallVector<Type> types = {h.getType(),          out.idx.getType(),
                             out.coef.getType(),    out.count.getType(),
                             out.active.getType(), out.blockNeurons.getType()};
  auto blocks = createKernel(kb, loc, sink.symbols,
                             "sgpu_twell_blocks_" + std::to_string(index),
                             types,
                             {workgroupBuffer(kb, fp / 32, i32),
                              workgroupBuffer(kb, fp / 32, i32),
                              workgroupBuffer(kb, 2, i32),
                              workgroupBuffer(kb, fp, kb.getIntegerType(16))},
                             kBlocksThreads);
  buildBlocksKernel(kb, loc, blocks, m, f, et);
  finishKernel(kb, loc, blocks);

  launchKernel(b, loc, clear, 1, 1,
               {out.fallbackRows, out.active, out.blockNeurons});
  launchKernel(b, loc, blocks, nb, kBlocksThreads,
               {h, out.idx, out.coef, out.count, out.active, out.blockNeurons});
  return out;
}

Value mlir::sgpu::lowerTwellFFNToTensorCores(OpBuilder &b, TwellFFNOp op,
                                            const TwellBlocks &blocks,
                                            Value downT,
                                            KernelSink &sink, size_t index,
                                            const KernelBudget &budget,
                                            bool gatherByTma) {
  Location loc = op.getLoc();
  TwellType tt = op.getPacked().getType();
  auto yt = cast<RankedTensorType>(op.getResult().getType());
  int64_t m = tt.getRows(), f = tt.getCols(), fp = paddedCols(f);
  int64_t d = yt.getDimSize(1);
  int64_t nb = (m + kBlockRows - 1) / kBlockRows;
  Type et = tt.getElementType();
  std::string suffix = std::to_string(index);

  // The down GEMM's A: the block pack's coef (ungated), or P, which the up
  // GEMM writes over coef when this is the pack's only consumer, else into
  // a buffer of this consumer's own (coef stays H's values for the
  // others).
  Value p = blocks.coef;
  if (op.getInput()) {
    Value x = readBuffer(b, loc, op.getInput());
    Value wu = readBuffer(b, loc, op.getUp());
    if (!op.getPacked().hasOneUse())
      p = memref::AllocOp::create(b, loc,
                                  cast<MemRefType>(blocks.coef.getType()));
    emitGatherGemm(
        b, loc, sink, "sgpu_twell_up_" + suffix,
        TmaGatherKind::rows, x, wu, blocks.idx, blocks.count,
        ValueRange{blocks.coef, p}, nb, fp, d, d, et, budget, gatherByTma,
        [&](OpBuilder &eb, ArrayRef<Value> acc, const TmaFragment &at,
            ValueRange args) { buildUpEpilogue(eb, loc, acc, at, args, et); });
  }
  Value y = memref::AllocOp::create(b, loc, memrefTypeOf(yt));
  emitGatherGemm(b, loc, sink, "sgpu_twell_down_" + suffix,
                 TmaGatherKind::kRows, p, downT, blocks.idx,
                 blocks.count, ValueRange{y}, nb, d, fp, d, et, budget,
                 gatherByTma,
                 [&](OpBuilder &eb, ArrayRef<Value> acc, const TmaFragment &at,
                     ValueRange args) {
                   buildDownEpilogue(eb, loc, acc, at, args, et, m, d);
                 });
  return bufferization::ToTensorOp::create(b, loc, yt, y,
                                           /*restrict=*/b.getUnitAttr(),
                                           /*writable=*/b.getUnitAttr());
}
