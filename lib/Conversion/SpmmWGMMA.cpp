//===- SpmmWGMMA.cpp - warpgroup sparse-MMA spmm kernel (sm_90a) ----------===//
//
// Y[M, N] = X[M, K] . W[N, K]^T on wgmma.mma_async.sp (SS form): the sparse
// A operand is a 64-row tile of the compressed weight, B a tile of tokens of
// X (token rows with K contiguous: a K-major B), both staged in shared
// memory and described by 64-bit matrix descriptors. The accumulator is
// Y^T (features x tokens), stored transposed by the epilogue.
//
// Block: one warpgroup (128 threads); tile 64 features x T tokens
// (T = 128 when M > 128, else 64: the N of m64nTk32); K advances by 64
// logical columns per shared-memory stage (two k32 wgmmas).
//
// Shared memory (no swizzle, K-major canonical layout): a core matrix is 8
// rows x 16 bytes stored as 128 contiguous bytes.
//   A stage: 64 rows x 32 compressed columns (4 KiB); core matrix (rg, kc)
//     (rows 8rg.., compressed columns 8kc..) at byte (rg*4 + kc)*128:
//     LBO (next core matrix along K) = 128, SBO (next 8 rows) = 512; the
//     k32 step j starts 2 core matrices (256 B) further.
//   B stage: T tokens x 64 K (T*128 B); core matrix (ng, kc) at byte
//     (ng*8 + kc)*128: LBO = 128, SBO = 1024; step j starts at +512 B.
//   Metadata: each thread's own words (one per k32 step) of the stage.
// Thread tid copies the 16-byte vectors tid + 128j, row fastest: 8
// consecutive threads fill one core matrix (conflict-free) and read 8
// rows at one K offset (64 contiguous bytes per row per warp).
//
// Metadata: for wgmma m64nNk32 the thread (warp w, lane g*4+t) supplies, with
// selector 0 and t in {0,1}, the nibbles of rows 16w+g (low half) and
// 16w+g+8 (high half) for chunks 4(t&1)..4(t&1)+3 of the k32 step
// (notes/sparse-mma.md §2.2) -- the same per-thread content as mma.sp
// m16n8k32 for that warp's 16 rows (§1.4). So the stored format (word
// ((rt*KS + ks)*8 + g)*2 + p, rt = 16-row tile) is read as it is, with
// rt = 4*blockIdx.y + w (lanes t = 2, 3 load the same words as t = 0, 1, so
// either selector would do).
//
// This kernel serves activations whose rows are not 16-byte aligned
// (K % 8 != 0), which TMA cannot load; SpmmTMA.cpp takes every other
// problem. Tiles go global -> registers -> shared memory through two static
// stages (ping-pong); per k-tile i:
//   metadata of tile i from shared memory; load tile i+1 into registers
//   (masked pieces of the widest aligned width); wgmmas on stage i%2;
//   wait_group 0; store tile i+1 into the other stage;
//   fence.proxy.async; bar.sync.
// No wgmma group stays in flight across k-tiles (the register stores of the
// next tile would have to wait anyway); the loads of the next tile overlap
// the MMAs.
// The accumulators (T/2 f32 registers) pass through wgmma.fence and
// wait_group as tied asm operands, so no ordinary instruction touches them
// while a wgmma group is pending; the epilogue (bias, ReLU, conversion,
// masked transposed stores) is the mma.sp kernel's.
//
// Masking: weight rows past paddedN, compressed columns past paddedK/2 and
// tokens past M or K are zero-filled in shared memory; metadata words out of
// range are 0x44444444 (positions 0,1: a valid encoding of zeros).
//
//===----------------------------------------------------------------------===//

#include "SpmmWGMMA.h"
#include "SpmmEpilogue.h"
#include "IndexMath.h"
#include "WgmmaAsm.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace mlir::sgpu;

namespace {

constexpr int64_t kThreads = 128;   // one warpgroup
constexpr int64_t kRows = 64;       // features per block (wgmma M)
constexpr int64_t kKTile = 64;      // logical K per shared-memory stage
constexpr int64_t kSteps = kKTile / 32; // k32 wgmmas per stage
constexpr int64_t kVec = 8;         // 16-bit elements per 16-byte vector
constexpr int64_t kCoreBytes = 128; // one core matrix: 8 rows x 16 bytes
// Core matrices along K in one stage row: A holds kKTile/2 compressed
// columns, B kKTile columns.
constexpr int64_t kACoresK = kKTile / 2 / kVec; // 4
constexpr int64_t kBCoresK = kKTile / kVec;     // 8
constexpr int64_t kAStageElems = kRows * kKTile / 2;
// 8-row groups one pass of 128 threads (one 16-byte vector each) covers.
constexpr int64_t kAGroupsPerPass = kThreads / (8 * kACoresK); // 4
constexpr int64_t kBGroupsPerPass = kThreads / (8 * kBCoresK); // 2

int64_t tokensPerBlock(const SpmmShape &s) { return s.m > 128 ? 128 : 64; }

class WgmmaSpmmBuilder {
public:
  WgmmaSpmmBuilder(OpBuilder &b, Location loc, const SpmmShape &s)
      : b(b), loc(loc), s(s), im{b, loc}, nt(tokensPerBlock(s)),
        nAcc(nt / 2), kSteps32(s.paddedK / 32),
        kTiles((s.paddedK / 32 + kSteps - 1) / kSteps) {}

  void build(gpu::GPUFuncOp func) {
    Block &entry = func.getBody().front();
    b.setInsertionPointToStart(&entry);
    x = entry.getArgument(0);
    vals = entry.getArgument(1);
    meta = entry.getArgument(2);
    bias = s.hasBias ? entry.getArgument(3) : Value();
    Value y = entry.getArguments().back();

    Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
    Value bx = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
    Value by = gpu::BlockIdOp::create(b, loc, gpu::Dimension::y);
    this->tid = tid;
    Value warp = im.div(tid, 32), lane = im.rem(tid, 32);
    g = im.div(lane, 4);
    t = im.rem(lane, 4);
    f0 = im.mul(by, kRows);
    tok0 = im.mul(bx, nt);
    rowTile = im.add(im.mul(by, kRows / 16), warp);
    // Cooperative copies: thread tid moves the 16-byte vectors tid + 128j;
    // row (r8) fastest, so 8 consecutive threads fill one 128-byte core
    // matrix (conflict-free stores) and read 8 rows at one K offset.
    r8 = im.rem(tid, 8);
    kcA = im.rem(im.div(tid, 8), kACoresK);
    rgA = im.div(tid, 8 * kACoresK);
    kcB = im.rem(im.div(tid, 8), kBCoresK);
    ngB = im.div(tid, 8 * kBCoresK);

    SmallVector<Value> acc = buildRegisterMainloop(func);
    buildEpilogue(y, acc, warp);
    b.setInsertionPointToEnd(&entry);
    gpu::ReturnOp::create(b, loc);
  }

private:
  /// Mainloop when K % 8 != 0 (activation rows not 16-byte aligned): tiles
  /// go global -> registers -> shared memory, two stages (ping-pong) in
  /// static shared memory.
  SmallVector<Value> buildRegisterMainloop(gpu::GPUFuncOp func) {
    auto wg = gpu::AddressSpaceAttr::get(b.getContext(),
                                         gpu::AddressSpace::Workgroup);
    smemA = func.addWorkgroupAttribution(
        MemRefType::get({2 * kAStageElems}, s.elementType,
                        MemRefLayoutAttrInterface(), wg),
        loc);
    smemB = func.addWorkgroupAttribution(
        MemRefType::get({2 * bStageElems()}, s.elementType,
                        MemRefLayoutAttrInterface(), wg),
        loc);
    // This thread's metadata words of each stage, read back right before
    // the wgmmas (no register chain across iterations).
    smemMeta = func.addWorkgroupAttribution(
        MemRefType::get({2 * kThreads * kSteps}, b.getI32Type(),
                        MemRefLayoutAttrInterface(), wg),
        loc);
    metaStageWords = kThreads * kSteps;
    metaOffsetWords = 0;
    // Descriptor-addressed tiles start 16-byte aligned (128, as the copies
    // are 16-byte vector stores and for any later swizzled layout).
    for (unsigned i = 0; i < 3; ++i)
      func.setWorkgroupAttributionAttr(i, LLVM::LLVMDialect::getAlignAttrName(),
                                       b.getI64IntegerAttr(128));
    // Descriptors of stage 0, k32 step 0 (start address field only varies).
    Value descA0 = smemDescriptor(b, loc, address(smemA), /*lbo=*/kCoreBytes,
                                  /*sbo=*/kACoresK * kCoreBytes,
                                  SmemSwizzle::None);
    Value descB0 = smemDescriptor(b, loc, address(smemB), /*lbo=*/kCoreBytes,
                                  /*sbo=*/kBCoresK * kCoreBytes,
                                  SmemSwizzle::None);

    // Prologue: tile 0 into stage 0.
    Tile first = loadTile(im.c(0));
    storeTile(first, im.c(0));
    asmVoid(b, loc, "fence.proxy.async.shared::cta;", {}, "");
    gpu::BarrierOp::create(b, loc);

    // Carried: the accumulators.
    SmallVector<Value> init(nAcc, zeroF32());
    auto loop = scf::ForOp::create(
        b, loc, im.c(0), im.c(kTiles), im.c(1), init,
        [&](OpBuilder &, Location, Value i, ValueRange acc) {
          Value stage = im.rem(i, 2);
          SmallVector<Value> metaCur = readStageMeta(stage, i);
          Value nextStage = arith::SubIOp::create(b, loc, im.c(1), stage);
          // Loads of the next tile, issued before the MMAs so that their
          // latency overlaps tensor-core work (the last iteration reloads
          // the last tile into the unused stage).
          Value nextTile = arith::MinUIOp::create(b, loc, im.add(i, 1),
                                                  im.c(kTiles - 1));
          Tile next = loadTile(nextTile);

          SmallVector<Value> d = mmaStage(
              stepDescriptor(descA0, stage, kAStageElems * 2, 0),
              stepDescriptor(descB0, stage, bStageElems() * 2, 0), metaCur,
              acc);
          // The other stage was last read by group i-1, which every warp
          // waited for before the barrier that ended iteration i-1.
          storeTile(next, nextStage);
          asmVoid(b, loc, "fence.proxy.async.shared::cta;", {}, "");
          gpu::BarrierOp::create(b, loc);
          scf::YieldOp::create(b, loc, d);
        });
    return SmallVector<Value>(loop.getResults());
  }

  /// The wgmmas of one stage (kSteps k32 steps from the stage's
  /// descriptors), committed as one group and waited for (wait_group 0):
  /// no group stays in flight across stages, because ptxas does not keep
  /// the sparse-metadata register of an in-flight wgmma allocated (it reused
  /// it for the next stage's address arithmetic; with one group left in
  /// flight, 128-token tiles gave wrong results on the H200). The
  /// accumulators pass through the fence and the wait as tied operands.
  SmallVector<Value> mmaStage(Value descA, Value descB, ValueRange metaCur,
                              ValueRange acc) {
    // The accumulators pass through the fence, so any register write to
    // them (the zero initialization) is ordered before it.
    SmallVector<Value> d = asmOnAcc(b, loc, "wgmma.fence.sync.aligned;", {}, "", acc);
    for (int64_t j = 0; j < kSteps; ++j)
      d = sparseWgmma(b, loc, s.elementType,
                      stepDescriptor(descA, Value(), 0, j * 2 * kCoreBytes),
                      stepDescriptor(descB, Value(), 0, j * 4 * kCoreBytes),
                      metaCur[j], d);
    asmVoid(b, loc, "wgmma.commit_group.sync.aligned;", {}, "");
    return asmOnAcc(b, loc, "wgmma.wait_group.sync.aligned 0;", {}, "", d);
  }

  /// This thread's metadata words of tile `kt` from `stage`.
  SmallVector<Value> readStageMeta(Value stage, Value kt) {
    SmallVector<Value> words;
    for (int64_t j = 0; j < kSteps; ++j) {
      Value idx = im.add(im.add(im.mul(stage, metaStageWords), metaOffsetWords),
                         im.add(im.mul(tid, kSteps), j));
      Value e = memref::LoadOp::create(b, loc, smemMeta, ValueRange{idx});
      if (Value ok = metaInRange(im.add(im.mul(kt, kSteps), j)))
        e = arith::SelectOp::create(b, loc, ok, e,
                                    im.i32(static_cast<int32_t>(kEmptyMetadata)));
      words.push_back(e);
    }
    return words;
  }

  /// Whether k32 step `ks` of this warp's 16-row tile exists in the stored
  /// metadata (null: always).
  Value metaInRange(Value ks) {
    bool fullRowTiles = s.paddedN % kRows == 0;
    bool fullSteps = kSteps32 % kSteps == 0;
    return im.andi(fullRowTiles ? Value() : im.lt(rowTile, s.paddedN / 16),
                   fullSteps ? Value() : im.lt(ks, kSteps32));
  }

  /// Metadata word of this thread for k32 step `ks` of its 16-row tile:
  /// ((rt*KS + ks)*8 + g)*2 + (t&1).
  Value metaWord(Value ks) {
    return im.add(
        im.mul(im.add(im.mul(im.add(im.mul(rowTile, kSteps32), ks), 8), g), 2),
        im.rem(t, 2));
  }

  Value zeroF32() {
    return arith::ConstantOp::create(b, loc, b.getF32Type(),
                                     b.getF32FloatAttr(0.0f));
  }
  /// The address of a memref's first element as i64 (the shared-window
  /// address for workgroup memory).
  Value address(Value mem) {
    return toI64(memref::ExtractAlignedPointerAsIndexOp::create(b, loc, mem));
  }

  /// One k-tile in registers: the 16-byte vectors of A and B this thread
  /// copies, and its metadata words (one per k32 step).
  struct Tile {
    SmallVector<Value> a, b, meta;
  };

  int64_t bStageElems() const { return nt * kKTile; }
  static int64_t aStageBytes() { return kAStageElems * 2; }
  int64_t aVecsPerThread() const { return kAStageElems / kVec / kThreads; }
  int64_t bVecsPerThread() const { return bStageElems() / kVec / kThreads; }

  VectorType vecType(int64_t n) { return VectorType::get({n}, s.elementType); }
  Value zeroVec(int64_t n) {
    VectorType vt = vecType(n);
    return arith::ConstantOp::create(
        b, loc, vt, DenseElementsAttr::get(vt, b.getZeroAttr(s.elementType)));
  }
  Value toI64(Value index) {
    return arith::IndexCastUIOp::create(b, loc, b.getI64Type(), index);
  }

  /// `desc` advanced by `stage` (null: 0) stages of `stageBytes`, plus
  /// `bytes` (the start address field counts 16-byte units).
  Value stepDescriptor(Value desc, Value stage, int64_t stageBytes,
                       int64_t bytes) {
    Value off = im.i64(bytes >> 4);
    if (stage)
      off = arith::AddIOp::create(
          b, loc,
          arith::MulIOp::create(b, loc, toI64(stage), im.i64(stageBytes >> 4)),
          off);
    else if (bytes == 0)
      return desc;
    return arith::AddIOp::create(b, loc, desc, off);
  }

  /// Loads `width` elements of X at [tok, k], zero when out of bounds
  /// (`ok`); the caller guarantees the group is all in or all out.
  Value loadX(Value tok, Value k, int64_t width, Value ok) {
    Value tokc = im.clamp(tok, ok), kc = im.clamp(k, ok);
    Value v;
    if (width == 1) {
      Value e = memref::LoadOp::create(b, loc, x, ValueRange{tokc, kc});
      v = vector::FromElementsOp::create(b, loc, vecType(1), e);
    } else {
      v = vector::LoadOp::create(b, loc, vecType(width), x,
                                 ValueRange{tokc, kc},
                                 /*nontemporal=*/false,
                                 llvm::Align(2 * width));
    }
    if (ok)
      v = arith::SelectOp::create(b, loc, ok, v, zeroVec(width));
    return v;
  }

  Tile loadTile(Value kt) {
    Tile tile;
    // A: compressed rows f0 + 8rg + r8, columns kt*32 + 8kc.
    bool fullRows = s.paddedN % kRows == 0;
    bool fullCols = (s.paddedK / 2) % (kKTile / 2) == 0;
    Value colA = im.add(im.mul(kt, kKTile / 2), im.mul(kcA, kVec));
    Value colOk = fullCols ? Value() : im.lt(colA, s.paddedK / 2);
    for (int64_t j = 0; j < aVecsPerThread(); ++j) {
      Value rg = im.add(rgA, j * kAGroupsPerPass);
      Value row = im.add(im.add(f0, im.mul(rg, 8)), r8);
      Value ok = im.andi(fullRows ? Value() : im.lt(row, s.paddedN), colOk);
      Value v = vector::LoadOp::create(
          b, loc, vecType(kVec), vals,
          ValueRange{im.clamp(row, ok), im.clamp(colA, ok)},
          /*nontemporal=*/false, llvm::Align(16));
      if (ok)
        v = arith::SelectOp::create(b, loc, ok, v, zeroVec(kVec));
      tile.a.push_back(v);
    }
    // B: tokens tok0 + 8ng + r8, K columns kt*64 + 8kc. The widest vector
    // that divides K keeps every piece entirely inside or outside [0, K)
    // and aligned.
    int64_t width = s.k % 8 == 0 ? 8 : s.k % 4 == 0 ? 4 : s.k % 2 == 0 ? 2 : 1;
    bool fullM = s.m % nt == 0;
    bool fullK = s.k % kKTile == 0;
    Value kB = im.add(im.mul(kt, kKTile), im.mul(kcB, kVec));
    for (int64_t j = 0; j < bVecsPerThread(); ++j) {
      Value tok = im.add(
          im.add(tok0, im.mul(im.add(ngB, j * kBGroupsPerPass), 8)),
          r8);
      Value tokOk = fullM ? Value() : im.lt(tok, s.m);
      if (width == kVec) {
        Value ok = im.andi(tokOk, fullK ? Value() : im.lt(kB, s.k));
        tile.b.push_back(loadX(tok, kB, kVec, ok));
        continue;
      }
      SmallVector<Value, kVec> elems;
      for (int64_t p = 0; p < kVec / width; ++p) {
        Value kp = im.add(kB, p * width);
        Value piece = loadX(tok, kp, width, im.andi(tokOk, im.lt(kp, s.k)));
        for (int64_t e = 0; e < width; ++e)
          elems.push_back(vector::ExtractOp::create(b, loc, piece,
                                                    ArrayRef<int64_t>{e}));
      }
      tile.b.push_back(
          vector::FromElementsOp::create(b, loc, vecType(kVec), elems));
    }
    // Metadata: this thread's words for the tile's k32 steps.
    for (int64_t j = 0; j < kSteps; ++j) {
      Value ks = im.add(im.mul(kt, kSteps), j);
      Value ok = metaInRange(ks);
      // (Out-of-range words are replaced when read back: readStageMeta.)
      tile.meta.push_back(memref::LoadOp::create(
          b, loc, meta, ValueRange{im.clamp(metaWord(ks), ok)}));
    }
    return tile;
  }

  /// Stores a tile's vectors into `stage` in the core-matrix layout.
  void storeTile(const Tile &tile, Value stage) {
    Value baseA = im.mul(stage, kAStageElems);
    for (auto [j, v] : llvm::enumerate(tile.a)) {
      Value rg = im.add(rgA, int64_t(j) * kAGroupsPerPass);
      Value core = im.add(im.mul(rg, kACoresK), kcA);
      Value off = im.add(baseA, im.mul(im.add(im.mul(core, 8), r8), kVec));
      vector::StoreOp::create(b, loc, v, smemA, ValueRange{off},
                              /*nontemporal=*/false, llvm::Align(16));
    }
    for (auto [j, e] : llvm::enumerate(tile.meta)) {
      Value idx = im.add(im.mul(stage, metaStageWords),
                         im.add(im.mul(tid, kSteps), int64_t(j)));
      memref::StoreOp::create(b, loc, e, smemMeta, ValueRange{idx});
    }
    Value baseB = im.mul(stage, bStageElems());
    for (auto [j, v] : llvm::enumerate(tile.b)) {
      Value ng = im.add(ngB, int64_t(j) * kBGroupsPerPass);
      Value core = im.add(im.mul(ng, kBCoresK), kcB);
      Value off = im.add(baseB, im.mul(im.add(im.mul(core, 8), r8), kVec));
      vector::StoreOp::create(b, loc, v, smemB, ValueRange{off},
                              /*nontemporal=*/false, llvm::Align(16));
    }
  }

  /// Accumulator 4q+e holds D[16w + g + 8(e/2)][8q + 2t + e%2], i.e.
  /// Y[tok0 + 8q + 2t + e%2][f0 + 16w + g + 8(e/2)].
  void buildEpilogue(Value y, ArrayRef<Value> acc, Value warp) {
    Value row0 = im.add(im.add(f0, im.mul(warp, 16)), g);
    buildSpmmEpilogue(b, loc, im, s, acc, bias, y, row0, tok0, t,
                      s.m % nt == 0, s.n % kRows == 0);
  }

  OpBuilder &b;
  Location loc;
  const SpmmShape &s;
  IndexMath im;
  int64_t nt;       // tokens per block (wgmma N)
  int64_t nAcc;     // f32 accumulators per thread: nt / 2
  int64_t kSteps32; // k32 steps of the padded weight (KS)
  int64_t kTiles;   // shared-memory stages to run: ceil(KS / kSteps)

  Value x, vals, meta, bias;
  Value smemA, smemB;          // register mainloop: the two stages
  Value smemMeta; // metadata words of the stages (i32)
  int64_t metaStageWords = 0, metaOffsetWords = 0; // their place in smemMeta
  Value tid, g, t, f0, tok0, rowTile;
  Value r8, kcA, rgA, kcB, ngB;
};

} // namespace

WgmmaSpmmLaunch mlir::sgpu::getWgmmaSpmmLaunch(const SpmmShape &s) {
  int64_t nt = tokensPerBlock(s);
  return {nt, kThreads, (s.m + nt - 1) / nt, (s.paddedN + kRows - 1) / kRows};
}

void mlir::sgpu::buildWgmmaSpmmKernel(OpBuilder &b, Location loc,
                                      const SpmmShape &s,
                                      gpu::GPUFuncOp func) {
  WgmmaSpmmBuilder(b, loc, s).build(func);
}
