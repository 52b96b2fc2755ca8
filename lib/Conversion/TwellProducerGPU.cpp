//===- TwellProducerGPU.cpp - the TwELL producer GEMM (sm_90a) ------------===//
//
// `sgpu.twell_pack` of `sgpu.matmul {activation = relu}` as one tensor-core
// GEMM whose epilogue packs (convert-sgpu-to-gpu{twell-producer=fused}):
// H = relu(X . W^T + b) is never written to memory. The GEMM is the dense
// mode of the TMA pipeline (SpmmTMA.cpp): A = X [M, K] (128 tokens per
// block, 64 per consumer warpgroup), B = W [F, K] (256 features per block),
// four wgmma.mma_async m64n256k16 per 64-column stage, a persistent grid.
//
// The epilogue (buildPackEpilogue). In the accumulator fragment a token's
// 256 features of the block are held by the four lanes of one quad (lane
// 4g + t holds columns 8q + 2t and 8q + 2t + 1 of rows g and g + 8), so one
// (row, tile) of TwELL is packed by a quad with shuffles and no shared
// memory:
//   * each lane adds the bias, applies the ReLU, rounds to the element type
//     and sets bit 2i + e of a 64-bit mask for every nonzero (chunk i of the
//     tile, column 8i + 2t + e);
//   * the quad exchanges its four masks (8 shuffles); the tile's count is
//     the sum of their populations;
//   * an entry's rank in column order is the population of the quad's bits
//     of earlier chunks plus those of lower lanes in its chunk, so each lane
//     stores its own entries (`col-in-tile | value bits << 16`) at their
//     final word, in increasing column order as the CPU reference does,
//     without atomics; chunks without a nonzero of the lane cost a test;
//   * lane t = 0 stores word 0, the true count.
// A (row, tile) over capacity is written densely into the row's fallback by
// its quad, and lane 0 sets the row's flag with an atomic or (the first
// setter counts the row in `fallback rows`). The rest of that row's fallback
// (the tiles that fit, packed by other blocks) is filled from their entries
// by sgpu_twell_fixup_<i> after the GEMM: the consumer reads an overflowed
// row only from its fallback (TwellToGPU.cpp has the format). Each warp adds
// its tiles' counts to the run's nonzero count with one 64-bit atomic.
//
// Kernels, launched in this order: sgpu_twell_clear_<i> (the two counters
// and the M flags := 0; the producer only ever sets flags), the producer,
// sgpu_twell_fixup_<i> (one warp per row; rows without the flag return at
// once).
//
//===----------------------------------------------------------------------===//

#include "GPUKernel.h"
#include "IndexMath.h"
#include "SpmmTMA.h"
#include "TwellToGPU.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace mlir::sgpu;

namespace {

/// Features per block (the wgmma N): a TwELL tile of 64, 128 or 256
/// columns lies inside one block.
constexpr int64_t kProducerTileN = 256;
constexpr int64_t kProducerThreads = 384;
constexpr int64_t kBlockTokens = 128;
constexpr int64_t kClearThreads = 256;
constexpr int64_t kFixupWarps = 8;

/// What the kernels need to know about one producer.
struct ProducerShape {
  int64_t m, f, k;
  int64_t tile, words, tiles; // TwELL: columns and words per tile, tiles per row
  Type et;                    // the element type of H
  bool hasBias;
};

/// One output tile's epilogue in one consumer thread (see the file
/// comment). `args`: [bias], words, flags, fallback, fallback rows, active.
void buildPackEpilogue(OpBuilder &b, Location loc, const ProducerShape &p,
                       ArrayRef<Value> acc, const TmaFragment &at,
                       ValueRange args) {
  IndexMath im{b, loc};
  unsigned a = 0;
  Value bias = p.hasBias ? args[a++] : Value();
  Value words = args[a++], flags = args[a++], fallback = args[a++],
        rows = args[a++], active = args[a++];
  Type i16 = b.getIntegerType(16), i32 = b.getI32Type(), i64 = b.getI64Type();
  Type f32 = b.getF32Type();
  int64_t capacity = p.words - 1;
  int64_t chunks = p.tile / 8;
  bool checkRow = p.m % kBlockTokens != 0;
  bool checkCol = p.f % kProducerTileN != 0;
  auto cst64 = [&](uint64_t v) -> Value {
    return arith::ConstantIntOp::create(b, loc, i64, static_cast<int64_t>(v));
  };
  auto toI32 = [&](Value index) -> Value {
    return arith::IndexCastUIOp::create(b, loc, i32, index);
  };
  auto popc = [&](Value v) -> Value {
    return arith::TruncIOp::create(b, loc, i32,
                                   LLVM::CtPopOp::create(b, loc, i64, v));
  };
  auto cmp = [&](arith::CmpIPredicate pred, Value x, Value y) -> Value {
    return arith::CmpIOp::create(b, loc, pred, x, y);
  };
  Value zeroF = arith::ConstantOp::create(b, loc, f32, b.getF32FloatAttr(0));
  Value zeroT = arith::ConstantOp::create(b, loc, p.et, b.getZeroAttr(p.et));
  Value lane32 = toI32(at.lane), t32 = toI32(at.t);
  Value quad0 = arith::AndIOp::create(b, loc, lane32, im.i32(~3));
  Value isLeader = cmp(arith::CmpIPredicate::eq, t32, im.i32(0));
  Value counted = im.i32(0);

  for (int64_t h = 0; h < 2; ++h) {
    Value row = im.add(at.rowBase, im.add(at.g, im.c(8 * h)));
    Value rowOk = checkRow ? im.lt(row, p.m) : Value();
    for (int64_t tau = 0; tau < kProducerTileN / p.tile; ++tau) {
      Value col0 = im.add(at.colBase, im.c(tau * p.tile));
      Value tileOk = checkCol ? im.lt(col0, p.f) : Value();
      Value tileIdx = im.div(col0, p.tile);
      // The lane's values of the tile, rounded as H would be, and its
      // nonzero mask (bit 2i + e: chunk i, column 8i + 2t + e).
      SmallVector<Value> vals, colsOk;
      Value mask = cst64(0);
      for (int64_t i = 0; i < chunks; ++i) {
        for (int64_t e = 0; e < 2; ++e) {
          int64_t q = tau * chunks + i;
          Value v = acc[4 * q + 2 * h + e];
          Value col = im.add(col0, im.add(im.mul(at.t, 2), im.c(8 * i + e)));
          Value colOk = checkCol ? im.lt(col, p.f) : Value();
          // The bias is loaded again for the second row (an L1 hit)
          // rather than kept in 64 more registers across both rows.
          if (bias)
            v = arith::AddFOp::create(
                b, loc, v,
                im.toF32(memref::LoadOp::create(b, loc, bias,
                                                im.clamp(col, colOk))));
          v = arith::MaximumFOp::create(b, loc, v, zeroF);
          Value r = arith::TruncFOp::create(b, loc, p.et, v);
          Value nz = im.andi(arith::CmpFOp::create(
                                 b, loc, arith::CmpFPredicate::UNE, r, zeroT),
                             im.andi(rowOk, colOk));
          Value bit = arith::ShLIOp::create(
              b, loc, arith::ExtUIOp::create(b, loc, i64, nz),
              cst64(2 * i + e));
          mask = arith::OrIOp::create(b, loc, mask, bit);
          vals.push_back(r);
          colsOk.push_back(colOk);
        }
      }
      // The quad's four masks, in every lane of the quad.
      Value lo = arith::TruncIOp::create(b, loc, i32, mask);
      Value hi = arith::TruncIOp::create(
          b, loc, i32, arith::ShRUIOp::create(b, loc, mask, cst64(32)));
      SmallVector<Value> quad;
      Value n = im.i32(0);
      for (int64_t j = 0; j < 4; ++j) {
        Value src = arith::AddIOp::create(b, loc, quad0, im.i32(j));
        auto shfl = [&](Value v) -> Value {
          return gpu::ShuffleOp::create(b, loc, v, src, im.i32(32),
                                        gpu::ShuffleMode::IDX)
              .getShuffleResult();
        };
        Value m = arith::OrIOp::create(
            b, loc, arith::ExtUIOp::create(b, loc, i64, shfl(lo)),
            arith::ShLIOp::create(
                b, loc, arith::ExtUIOp::create(b, loc, i64, shfl(hi)),
                cst64(32)));
        quad.push_back(m);
        n = arith::AddIOp::create(b, loc, n, popc(m));
      }
      // The lane's entries, each at its rank in column order.
      for (int64_t i = 0; i < chunks; ++i) {
        Value own = arith::AndIOp::create(
            b, loc, arith::ShRUIOp::create(b, loc, mask, cst64(2 * i)),
            cst64(3));
        im.ifThen(cmp(arith::CmpIPredicate::ne, own, cst64(0)), [&] {
          uint64_t earlier = (uint64_t(1) << (2 * i)) - 1;
          uint64_t chunk = uint64_t(3) << (2 * i);
          Value rank = im.i32(0);
          for (int64_t j = 0; j < 4; ++j) {
            rank = arith::AddIOp::create(
                b, loc, rank,
                popc(arith::AndIOp::create(b, loc, quad[j], cst64(earlier))));
            Value lower = cmp(arith::CmpIPredicate::ult, im.i32(j), t32);
            rank = arith::AddIOp::create(
                b, loc, rank,
                arith::SelectOp::create(
                    b, loc, lower,
                    popc(arith::AndIOp::create(b, loc, quad[j], cst64(chunk))),
                    im.i32(0)));
          }
          Value own32 = arith::TruncIOp::create(b, loc, i32, own);
          for (int64_t e = 0; e < 2; ++e) {
            Value has = cmp(arith::CmpIPredicate::ne,
                            arith::AndIOp::create(b, loc, own32,
                                                  im.i32(1 << e)),
                            im.i32(0));
            Value pos = e ? arith::AddIOp::create(
                                b, loc, rank,
                                arith::AndIOp::create(b, loc, own32, im.i32(1)))
                                .getResult()
                          : rank;
            Value fits = cmp(arith::CmpIPredicate::ult, pos, im.i32(capacity));
            im.ifThen(arith::AndIOp::create(b, loc, has, fits), [&] {
              Value bits = arith::ExtUIOp::create(
                  b, loc, i32,
                  arith::BitcastOp::create(b, loc, i16, vals[2 * i + e]));
              Value colIn = arith::AddIOp::create(
                  b, loc, arith::MulIOp::create(b, loc, t32, im.i32(2)),
                  im.i32(8 * i + e));
              Value entry = arith::OrIOp::create(
                  b, loc,
                  arith::ShLIOp::create(b, loc, bits, im.i32(16)), colIn);
              Value slot = im.add(
                  arith::IndexCastUIOp::create(b, loc, b.getIndexType(), pos),
                  im.c(1));
              memref::StoreOp::create(b, loc, entry, words,
                                      ValueRange{row, tileIdx, slot});
            });
          }
        });
      }
      // The quad's leader writes the count word and counts the tile once.
      Value valid = im.andi(rowOk, tileOk);
      Value leads = im.andi(isLeader, valid);
      im.ifThen(leads, [&] {
        memref::StoreOp::create(b, loc, n, words,
                                ValueRange{row, tileIdx, im.c(0)});
      });
      counted = arith::AddIOp::create(
          b, loc, counted,
          arith::SelectOp::create(b, loc, leads, n, im.i32(0)));
      // Over capacity: the tile goes densely into the row's fallback and
      // the row is flagged (and counted once).
      Value over = cmp(arith::CmpIPredicate::ugt, n, im.i32(capacity));
      im.ifThen(im.andi(over, valid), [&] {
        im.ifThen(isLeader, [&] {
          Value old = memref::AtomicRMWOp::create(
              b, loc, arith::AtomicRMWKind::ori, im.i32(1), flags,
              ValueRange{row});
          im.ifThen(cmp(arith::CmpIPredicate::eq, old, im.i32(0)), [&] {
            memref::AtomicRMWOp::create(b, loc, arith::AtomicRMWKind::addi,
                                        im.i32(1), rows, ValueRange{im.c(0)});
          });
        });
        // The columns are computed again here, inside the rare branch,
        // rather than kept live across the packing above.
        for (int64_t i = 0; i < chunks; ++i)
          for (int64_t e = 0; e < 2; ++e) {
            Value col =
                im.add(col0, im.add(im.mul(at.t, 2), im.c(8 * i + e)));
            im.ifThen(colsOk[2 * i + e], [&] {
              memref::StoreOp::create(b, loc, vals[2 * i + e], fallback,
                                      ValueRange{row, col});
            });
          }
      });
    }
  }
  // The warp's share of the run's nonzero count: one atomic.
  Value total = warpInclusiveSum(b, loc, counted);
  im.ifThen(cmp(arith::CmpIPredicate::eq, lane32, im.i32(31)), [&] {
    memref::AtomicRMWOp::create(b, loc, arith::AtomicRMWKind::addi,
                                arith::ExtUIOp::create(b, loc, i64, total),
                                active, ValueRange{im.c(0)});
  });
}

/// Counters and flags := 0; one thread per row.
void buildClearKernel(OpBuilder &b, Location loc, gpu::GPUFuncOp func,
                      int64_t m) {
  IndexMath im{b, loc};
  Value rows = func.getArgument(0), active = func.getArgument(1),
        flags = func.getArgument(2);
  Value idx = im.add(
      im.mul(gpu::BlockIdOp::create(b, loc, gpu::Dimension::x), kClearThreads),
      gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x));
  im.ifThen(im.lt(idx, m), [&] {
    memref::StoreOp::create(b, loc, im.i32(0), flags, ValueRange{idx});
  });
  im.ifThen(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, idx,
                                  im.c(0)),
            [&] {
              memref::StoreOp::create(b, loc, im.i32(0), rows,
                                      ValueRange{im.c(0)});
              memref::StoreOp::create(b, loc, im.i64(0), active,
                                      ValueRange{im.c(0)});
            });
}

/// One warp per row: a flagged row's tiles that fit are written into its
/// fallback row from their entries (zeros, a warp barrier, then the
/// entries); tiles over capacity are there already.
void buildFixupKernel(OpBuilder &b, Location loc, gpu::GPUFuncOp func,
                      const ProducerShape &p) {
  IndexMath im{b, loc};
  Value words = func.getArgument(0), flags = func.getArgument(1),
        fallback = func.getArgument(2);
  Type i16 = b.getIntegerType(16);
  Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  Value lane = im.rem(tid, 32);
  Value row = im.add(
      im.mul(gpu::BlockIdOp::create(b, loc, gpu::Dimension::x), kFixupWarps),
      im.div(tid, 32));
  Value zeroT = arith::ConstantOp::create(b, loc, p.et, b.getZeroAttr(p.et));
  int64_t capacity = p.words - 1;
  im.ifThen(p.m % kFixupWarps ? im.lt(row, p.m) : Value(), [&] {
    Value flag = memref::LoadOp::create(b, loc, flags, ValueRange{row});
    im.ifThen(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, flag,
                                    im.i32(0)),
              [&] {
      im.forEach(im.c(0), im.c(p.tiles), im.c(1), [&](Value t) {
        Value n = memref::LoadOp::create(b, loc, words,
                                         ValueRange{row, t, im.c(0)});
        im.ifThen(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ule, n,
                                        im.i32(capacity)),
                  [&] {
          Value base = im.mul(t, p.tile);
          Value end = arith::MinUIOp::create(b, loc, im.add(base, p.tile),
                                             im.c(p.f));
          im.forEach(im.add(base, lane), end, im.c(32), [&](Value col) {
            memref::StoreOp::create(b, loc, zeroT, fallback,
                                    ValueRange{row, col});
          });
          // The zeros before the entries, across the warp's lanes.
          NVVM::SyncWarpOp::create(b, loc, im.i32(-1));
          Value count =
              arith::IndexCastUIOp::create(b, loc, b.getIndexType(), n);
          im.forEach(lane, count, im.c(32), [&](Value j) {
            Value w = memref::LoadOp::create(b, loc, words,
                                             ValueRange{row, t, im.add(j, 1)});
            Value colIn = arith::IndexCastUIOp::create(
                b, loc, b.getIndexType(),
                arith::AndIOp::create(b, loc, w, im.i32(0xFFFF)));
            Value v = arith::BitcastOp::create(
                b, loc, p.et,
                arith::TruncIOp::create(
                    b, loc, i16,
                    arith::ShRUIOp::create(b, loc, w, im.i32(16))));
            memref::StoreOp::create(b, loc, v, fallback,
                                    ValueRange{row, im.add(base, colIn)});
          });
        });
      });
    });
  });
}

} // namespace

std::string mlir::sgpu::whyNoFusedTwellProducer(MatmulOp matmul,
                                                TwellPackOp pack) {
  if (pack.getInput() != matmul.getResult())
    return "the packed value is not the matmul's result";
  if (matmul.getActivationOrNone() != Activation::relu)
    return "the matmul has no ReLU epilogue";
  if (!matmul->hasOneUse())
    return "the ReLU output has users other than the pack";
  auto x = cast<RankedTensorType>(matmul.getInput().getType());
  auto y = cast<RankedTensorType>(matmul.getResult().getType());
  if (y.getElementType() != x.getElementType())
    return "the matmul's result type differs from its inputs'";
  int64_t k = x.getDimSize(1);
  if (k % 8)
    return "K = " + std::to_string(k) +
           " is not a multiple of 8 (TMA rows must be 16-byte aligned)";
  int64_t tile = pack.getResult().getType().getLayout().getTile();
  if (tile != 64 && tile != 128 && tile != 256)
    return "tile " + std::to_string(tile) +
           " is not 64, 128 or 256 columns (one wgmma N)";
  return "";
}

TwellBuffers mlir::sgpu::lowerFusedTwellProducer(OpBuilder &b, MatmulOp matmul,
                                                 TwellPackOp pack,
                                                 KernelSink &sink,
                                                 size_t index,
                                                 const KernelBudget &budget,
                                                 int64_t cluster) {
  Location loc = pack.getLoc();
  TwellType tt = pack.getResult().getType();
  TwellLayoutAttr layout = tt.getLayout();
  auto xType = cast<RankedTensorType>(matmul.getInput().getType());
  ProducerShape p;
  p.m = tt.getRows();
  p.f = tt.getCols();
  p.k = xType.getDimSize(1);
  p.tile = layout.getTile();
  p.words = layout.getWordsPerTile();
  p.tiles = tt.getTilesPerRow();
  p.et = tt.getElementType();
  p.hasBias = static_cast<bool>(matmul.getBias());

  Value x = readBuffer(b, loc, matmul.getInput());
  Value w = readBuffer(b, loc, matmul.getWeight());
  Value bias = p.hasBias ? readBuffer(b, loc, matmul.getBias()) : Value();
  Value active;
  TwellBuffers out = allocTwellPackBuffers(b, pack, index, active);
  std::string suffix = std::to_string(index);
  Type ptrType = LLVM::LLVMPointerType::get(b.getContext());

  OpBuilder kb = sink.builder();
  auto clear = createKernel(
      kb, loc, sink.symbols, "sgpu_twell_clear_" + suffix,
      {out.fallbackRows.getType(), active.getType(), out.flags.getType()}, {},
      kClearThreads);
  buildClearKernel(kb, loc, clear, p.m);
  finishKernel(kb, loc, clear);

  // The producer: two tensor maps, then what the epilogue writes.
  SmallVector<Type> types = {ptrType, ptrType};
  SmallVector<Value> epilogueArgs;
  if (bias)
    epilogueArgs.push_back(bias);
  epilogueArgs.append({out.words, out.flags, out.fallback, out.fallbackRows,
                       active});
  for (Value v : epilogueArgs)
    types.push_back(v.getType());
  kb.setInsertionPointToEnd(sink.module.getBody());
  auto producer = gpu::GPUFuncOp::create(kb, loc,
                                         "sgpu_twell_producer_" + suffix,
                                         kb.getFunctionType(types, {}));
  producer->setAttr(gpu::GPUDialect::getKernelFuncAttrName(),
                    kb.getUnitAttr());
  producer.setKnownBlockSizeAttr(
      kb.getDenseI32ArrayAttr({int32_t(kProducerThreads), 1, 1}));
  producer->setAttr("sgpu.tensor_map_args", kb.getDenseI64ArrayAttr({0, 1}));
  producer->setAttr(NVVM::NVVMDialect::getMinctasmAttrName(),
                    kb.getI32IntegerAttr(1));
  sink.symbols.insert(producer);
  TmaSpmmConfig cfg =
      getTmaDenseConfig(p.m, p.f, p.k, kProducerTileN, budget, cluster);
  if (cluster > 1 && cfg.cluster == 1)
    pack.emitRemark() << "cluster=" << cluster
                      << " not used for the TwELL producer: "
                      << whyNoTmaCluster(cfg, budget, cluster);
  if (cfg.cluster > 1)
    producer->setAttr(NVVM::NVVMDialect::getClusterDimAttrName(),
                      kb.getDenseI32ArrayAttr({int32_t(cfg.cluster), 1, 1}));
  SpmmShape s{p.m, p.f, p.k, p.f, p.k, p.et, p.et, Activation::relu,
              p.hasBias};
  TmaDenseEpilogue epilogue = [&](OpBuilder &eb, ArrayRef<Value> acc,
                                  const TmaFragment &at, ValueRange args) {
    buildPackEpilogue(eb, loc, p, acc, at, args);
  };
  buildTmaDenseKernel(kb, loc, s, cfg, producer, epilogue);

  kb.setInsertionPointToEnd(sink.module.getBody());
  auto fixup = createKernel(
      kb, loc, sink.symbols, "sgpu_twell_fixup_" + suffix,
      {out.words.getType(), out.flags.getType(), out.fallback.getType()}, {},
      kFixupWarps * 32);
  buildFixupKernel(kb, loc, fixup, p);
  finishKernel(kb, loc, fixup);

  // The launches: clear, the GEMM (tensor maps of X and W, 128B swizzle),
  // the fallback fix-up.
  launchKernel(b, loc, clear, (p.m + kClearThreads - 1) / kClearThreads,
               kClearThreads, {out.fallbackRows, active, out.flags});
  auto tensorMap = [&](Value buf, ArrayRef<int64_t> box) -> Value {
    return TensorMapOp::create(b, loc, ptrType, buf,
                               b.getDenseI64ArrayAttr(box),
                               b.getI64IntegerAttr(128));
  };
  SmallVector<Value> args = {tensorMap(x, cfg.aBox), tensorMap(w, cfg.bBox)};
  args.append(epilogueArgs.begin(), epilogueArgs.end());
  auto c = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(b, loc, v);
  };
  auto launch = gpu::LaunchFuncOp::create(
      b, loc, producer, gpu::KernelDim3{c(cfg.gridSize), c(1), c(1)},
      gpu::KernelDim3{c(kProducerThreads), c(1), c(1)},
      arith::ConstantIntOp::create(b, loc, b.getI32Type(),
                                   cfg.dynamicSharedBytes),
      args);
  if (cfg.loopsOverTiles())
    setPersistentGrid(launch, cfg.gridX * cfg.gridY / cfg.cluster,
                      cfg.cluster, budget.reservedSMs);
  launchKernel(b, loc, fixup, (p.m + kFixupWarps - 1) / kFixupWarps,
               kFixupWarps * 32, {out.words, out.flags, out.fallback});
  return out;
}
