//===- SpmmTMA.cpp - warp-specialized TMA sparse GEMM (sm_90a) ------------===//
//
// Y[M, N] = X[M, K] . W[N, K]^T, W 2:4-compressed (values + metadata in the
// mma.sp word order), on wgmma.mma_async.sp. The weight is the sparse A
// operand (features are the wgmma M), the tokens of X the dense B operand
// (K-major: X's rows as they are); the accumulator is Y^T and the epilogue
// stores it transposed.
//
// Block: 384 threads, three warpgroups.
//  * Warpgroup 0 produces: it gives registers back (setmaxnreg.dec 40) and
//    one thread issues, per k-tile of 64 logical K, three TMA loads into the
//    next free stage, all completing on that stage's `full` mbarrier:
//      A: compressed values, box 128 rows x 32 columns (64 B rows, 64B
//         swizzle), the block's 128 features;
//      B: X, box BN tokens x 64 K (128 B rows, 128B swizzle);
//      E: metadata words, box 8 sixteen-row tiles x 32 words (the two k32
//         steps of the tile, unswizzled; global view [N/16, KS*16]).
//    Out-of-bounds boxes read as zeros (M, N and K tails need no masks).
//  * Warpgroups 1 and 2 consume (setmaxnreg.inc 232): warpgroup c owns
//    features 64c..64c+63 of the block and all BN tokens, m64nBNk32. Per
//    k-tile: wait `full`, read its two metadata words (one per k32 step)
//    from shared memory, wgmma.fence, two wgmmas, commit, then
//    wgmma.wait_group 1: the previous tile's group is complete, so one lane
//    per warp arrives on that tile's `empty` mbarrier and the producer may
//    refill it. One wgmma group therefore stays in flight across k-tiles.
//
// Metadata registers of the in-flight group: ptxas treats the metadata
// operand like the other wgmma registers, and a write to it while its group
// is pending (the next tile's words loaded into the same register) makes it
// serialize every wgmma of the kernel (C7514); and once the wgmma has issued
// ptxas considers the register dead and may reuse it while the group still
// reads it (wrong results on the H200). The k-loop is therefore unrolled by
// two: consecutive tiles' words live in distinct registers (double-
// buffered), so tile i+1's loads never touch tile i's operand, and each
// tile's words are inputs of the next tile's wait_group 1, which retires
// the group that reads them, so they stay allocated until then.
//
// Shared memory (dynamic, aligned up to 1024 B at run time): stages of
// [A 8 KiB | B BN*128 B | E 1 KiB], each 1024-aligned so that the swizzle
// patterns start on their boundary (descriptor base offset 0), then (with
// the TMA-store epilogue) the staging boxes of the two consumer
// warpgroups, then the `full` and `empty` mbarriers (8 B each).
//
// Epilogue (cfg.tmaStore, the default where it applies; storeTileByTma):
// each consumer warpgroup writes its tile, bias and activation applied and
// rounded once, box by box of yBox[0] tokens into its 128B-swizzled staging
// box with stmatrix .trans, fences the writes for the async proxy, syncs
// on its named barrier, and one thread issues a TMA bulk tensor store into
// Y's tensor map (tails clipped by TMA); that thread waits for the store to
// have read the box before the box is written again and before the block
// exits. Otherwise the values go out from registers (SpmmEpilogue.h).
// Descriptors: A (SW64, K-major): SBO 512 B (8 rows x 64 B), k32 step
// +32 B, warpgroup c +4096 B; B (SW128, K-major): SBO 1024 B, k32 step
// +64 B. LBO is unused for swizzled K-major layouts (encoded 1).
//
// Fused 6:8 lift (cfg.fusedLift; the weight in the tiled window order,
// tile_groups 8): X is the original [M, K]; a stage holds 64 of its columns
// (k32 steps 0 and 1 as they are) and three wgmmas, the third on operands
// the producer's warps 1..3 gather in shared memory (buildGather): stage
// [A 8 KiB | A2 4 KiB (32 B rows, SW32) | X | O BN*64 B (SW64) | E 1.5 KiB],
// a fourth tensor map for A2, a `ready` mbarrier per stage. docs/design.md
// has the measurements behind using it only up to 16 tokens.
//
// Split 6:8 lift (cfg.liftByTma; the weight in the window order of
// tile_groups 16): the plain kernel over the lifted K', whose stages load
// their B tile from where those lifted columns already are. In that order
// the 192 lifted columns of 128 columns of X are X's 128 columns in place,
// then the shared windows of their 16 groups (window 1, columns 8g+2 ..
// 8g+5): k-tile 3T + r is X's columns 128T + 64r for r = 0, 1 and W1's
// columns 64T for r = 2, where W1 [M, K'/3] holds only the shared windows,
// copied by a small kernel (a third of the lifted bytes). Each stage is
// one plain B box; the map and the column are selected per k-tile, and
// everything else is the plain kernel's. (Two forms measured slower on the
// H200: three-step stages as in the fused lift, whose three 63 KiB stages,
// two held by the consumers' group in flight, leave one loading ahead, and
// per-step halves of 64-byte rows, 32 columns per box, 3-23% slower than
// the gather kernel's plain boxes at 16 to 512 tokens.)
//
// Dense mode (cfg.dense, getTmaDenseConfig): D[M, N] = A[M, K] . B[N, K]^T
// on the same pipeline with dense operands: stage [A 128 rows x 128 B |
// B BN rows x 128 B], both 128B-swizzled K-major (SBO 1024 B, k16 step
// +32 B, warpgroup c at +8 KiB of A), four wgmma.mma_async m64nBNk16 per
// stage and no metadata (the double-buffering carries nothing). The
// 128-row blocks run over A's rows (tokens, for the TwELL producer) and
// the BN-row blocks over B's; the epilogue is a callback, so the TwELL
// producer packs each output tile straight from the accumulators.
//
// The tile table (getTmaSpmmConfig and the other modes' configurations)
// is SpmmTMAConfig.cpp; the stage layouts and sizes both files read are
// SpmmTMALayout.h.
//
//===----------------------------------------------------------------------===//

#include "SpmmTMA.h"
#include "SpmmTMALayout.h"
#include "GPUKernel.h"
#include "IndexMath.h"
#include "SpmmEpilogue.h"
#include "WgmmaAsm.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace mlir::sgpu;
using namespace mlir::sgpu::tma;

namespace {

/// The block's loop over its tiles: tile = blockIdx, blockIdx + grid, ...
/// (one iteration unless the grid loops over tiles; then sized at load).
/// `body` gets the tile and the block's k-tile count before it (the ring
/// of stages continues from tile to tile). With a cluster the loop runs
/// over the cluster's tile pairs, clusterIdx, clusterIdx + clusters, ...,
/// the same in both blocks (they exchange B halves at every k-tile).
static void forEachTileOf(OpBuilder &b, Location loc, const TmaSpmmConfig &cfg,
                          Value bid, int64_t blockTiles,
                          function_ref<void(Value tile, Value itBase)> body) {
  IndexMath im{b, loc};
  int64_t total = cfg.gridX * cfg.gridY * cfg.splits / cfg.cluster;
  Value first = cfg.cluster > 1 ? im.div(bid, cfg.cluster) : bid;
  if (!cfg.loopsOverTiles()) {
    int64_t step = cfg.gridSize / cfg.cluster;
    scf::ForOp::create(
        b, loc, first, im.c(total), im.c(step), ValueRange{},
        [&](OpBuilder &, Location, Value tile, ValueRange) {
          Value ordinal = im.div(im.sub(tile, first), step);
          body(tile, im.mul(ordinal, blockTiles));
          scf::YieldOp::create(b, loc);
        });
    return;
  }
  Value step = im.div(gpu::GridDimOp::create(b, loc, gpu::Dimension::x),
                      cfg.cluster);
  scf::ForOp::create(
      b, loc, first, im.c(total), step, ValueRange{im.c(0)},
      [&](OpBuilder &, Location, Value tile, ValueRange itBase) {
        body(tile, itBase[0]);
        scf::YieldOp::create(b, loc, im.add(itBase[0], blockTiles));
      });
}

class TmaSpmmBuilder {
public:
  TmaSpmmBuilder(OpBuilder &b, Location loc, const SpmmShape &s,
                 const TmaSpmmConfig &cfg)
      : b(b), loc(loc), s(s), cfg(cfg), im{b, loc},
        nAcc(cfg.tokensPerBlock / 2), kSteps32(s.paddedK / 32),
        blockTiles(cfg.kTilesPerSplit), steps(cfg.steps),
        metaSteps(cfg.dense ? 0 : cfg.steps),
        layout(stageLayout(cfg.tokensPerBlock, cfg.fusedLift, cfg.dense,
                           cfg.gather != TmaGatherKind::none)),
        stride(layout.stride) {}

  /// Dense mode: the epilogue to build for each output tile.
  const TmaDenseEpilogue *denseEpilogue = nullptr;

  void build(gpu::GPUFuncOp func) {
    Block &entry = func.getBody().front();
    b.setInsertionPointToStart(&entry);
    unsigned arg = 0;
    Value y;
    if (cfg.gather != TmaGatherKind::none) {
      tmA = toI64Ptr(entry.getArgument(arg++));
      gatherSource = entry.getArgument(arg++);
      if (cfg.gatherByTma)
        tmS = toI64Ptr(gatherSource);
      gatherIdx = entry.getArgument(arg++);
      gatherCount = entry.getArgument(arg++);
      epilogueArgs = entry.getArguments().drop_front(arg);
    } else if (cfg.dense) {
      tmA = toI64Ptr(entry.getArgument(arg++));
      tmB = toI64Ptr(entry.getArgument(arg++));
      epilogueArgs = entry.getArguments().drop_front(arg);
    } else {
      tmB = toI64Ptr(entry.getArgument(arg++));
      tmA = toI64Ptr(entry.getArgument(arg++));
      if (cfg.fusedLift)
        tmA2 = toI64Ptr(entry.getArgument(arg++));
      if (cfg.liftByTma)
        tmO = toI64Ptr(entry.getArgument(arg++));
      tmE = toI64Ptr(entry.getArgument(arg++));
      if (cfg.tmaStore)
        tmY = toI64Ptr(entry.getArgument(arg++));
      bias = s.hasBias && cfg.splits == 1 ? entry.getArgument(arg) : Value();
      if (!cfg.tmaStore)
        y = entry.getArguments().back();
    }

    tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
    bid = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);

    // Shared memory: the dynamic window, aligned up to 1024 bytes.
    auto wg = gpu::AddressSpaceAttr::get(b.getContext(),
                                         gpu::AddressSpace::Workgroup);
    auto [dyn, raw] = dynamicShared(b, loc);
    Value pad = im.rem(im.sub(im.c(kAlignSlack), im.rem(raw, kAlignSlack)),
                       kAlignSlack);
    baseIdx = im.add(raw, pad);
    padWords = im.div(pad, 4);
    words = memref::ViewOp::create(
        b, loc,
        MemRefType::get({(cfg.dynamicSharedBytes) / 4}, b.getI32Type(),
                        MemRefLayoutAttrInterface(), wg),
        dyn, im.c(0), ValueRange{});

    // Barrier initialization by thread 0, visible to the async proxy
    // before anyone uses the barriers.
    Value isThread0 = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                            tid, im.c(0));
    {
      auto init = scf::IfOp::create(b, loc, isThread0, false);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(&init.getThenRegion().front());
      for (int64_t st = 0; st < cfg.stages; ++st) {
        // Gathered mode: the TMA thread's arrival and one cp.async
        // arrival per producer thread.
        int64_t fullArrivals =
            cfg.gather != TmaGatherKind::none && !cfg.gatherByTma
                ? 1 + kGatherCopyThreads
                : 1;
        asmVoid(b, loc, "mbarrier.init.shared::cta.b64 [$0], $1;",
                {barrier(fullOffset(st)), im.i32(fullArrivals)}, "r,r");
        // One release per consumer warp of every block that reads the
        // stage: with a cluster, the peer's consumers release it too (its
        // B half is multicast into both blocks).
        asmVoid(b, loc, "mbarrier.init.shared::cta.b64 [$0], $1;",
                {barrier(emptyOffset(st)), im.i32(kConsumerWarps * cfg.cluster)},
                "r,r");
        if (cfg.fusedLift)
          asmVoid(b, loc, "mbarrier.init.shared::cta.b64 [$0], $1;",
                  {barrier(readyOffset(st)), im.i32(kGatherThreads)}, "r,r");
      }
      asmVoid(b, loc, "fence.mbarrier_init.release.cluster;", {}, "");
    }
    if (cfg.cluster > 1) {
      // Blocks nc .. nc + n - 1 form cluster c of n (the grid is tiled by
      // clusters in x; the rank is %cluster_ctarank): the other blocks'
      // barriers must be initialized before a multicast or a remote
      // arrival reaches them. `peer` is the other rank of a pair.
      Value rank32 = NVVM::ClusterId::create(b, loc, b.getI32Type());
      rank = arith::IndexCastUIOp::create(b, loc, b.getIndexType(), rank32);
      if (cfg.cluster == 2)
        peer = arith::SubIOp::create(b, loc, im.i32(1), rank32);
      clusterBarrier();
    } else {
      gpu::BarrierOp::create(b, loc);
    }

    Value warpGroup = im.div(tid, 128);
    Value isProducer = arith::CmpIOp::create(
        b, loc, arith::CmpIPredicate::eq, warpGroup, im.c(0));
    auto roles = scf::IfOp::create(b, loc, isProducer, /*else=*/true);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(&roles.getThenRegion().front());
      if (cfg.gather != TmaGatherKind::none) {
        buildGatherProducer(isThread0);
        b.setInsertionPointToStart(&roles.getElseRegion().front());
        buildGatherConsumer(im.sub(warpGroup, im.c(1)));
      } else {
        buildProducer(isThread0);
        if (cfg.fusedLift)
          buildGather();
        b.setInsertionPointToStart(&roles.getElseRegion().front());
        buildConsumer(y, im.sub(warpGroup, im.c(1)));
      }
    }
    b.setInsertionPointToEnd(&entry);
    // No block leaves while its peer may still multicast into its shared
    // memory or arrive on its barriers.
    if (cfg.cluster > 1)
      clusterBarrier();
    gpu::ReturnOp::create(b, loc);
  }

private:
  /// All threads of both blocks of the cluster (the NVVM ops, whose
  /// intrinsics are convergent: LLVM never duplicates them into divergent
  /// paths, which the .aligned forms forbid).
  void clusterBarrier() {
    NVVM::ClusterArriveOp::create(b, loc, b.getUnitAttr());
    NVVM::ClusterWaitOp::create(b, loc, b.getUnitAttr());
  }

  /// Releases a stage for the producers: one arrival on this block's
  /// `empty` barrier at `addr` and, with a cluster, one on the peer's
  /// barrier at the same offset (its producer multicasts into this block).
  /// The remote arrival has the default semantics (release, CTA scope), as
  /// CUTLASS's cluster barriers do: it only orders this warp's shared
  /// memory reads, which the wgmma wait already completed. With
  /// `.release.cluster` the kernel measured 1.7x slower on the H200
  /// (bench/results/spmm_cluster_ab_h200.json).
  void releaseStage(Value addr) {
    asmVoid(b, loc, "mbarrier.arrive.shared::cta.b64 _, [$0];", {addr}, "r");
    // Clusters of four: the three other ranks, (rank + j) % 4.
    for (int64_t j = 1; j < cfg.cluster; ++j) {
      Value other = cfg.cluster == 2
                        ? peer
                        : arith::RemUIOp::create(
                              b, loc,
                              arith::AddIOp::create(b, loc, toI32(rank),
                                                    im.i32(j)),
                              im.i32(cfg.cluster));
      asmVoid(b, loc,
              "{\n.reg .b32 remote;\n"
              "mapa.shared::cluster.u32 remote, $0, $1;\n"
              "mbarrier.arrive.shared::cluster.b64 _, [remote];\n}",
              {addr, other}, "r,r");
    }
  }

  /// Sets the coordinates of output tile `tile` (split, first k-tile,
  /// first feature, first token) at the insertion point.
  ///
  /// Tile order: a one-dimensional index walked in groups of kGroup token
  /// blocks, feature blocks fastest inside a group, so that the tiles in
  /// flight at one time share a few token blocks of X and a band of W in
  /// L2 (row-major order re-streams all of X for every pair of feature
  /// blocks once X outgrows L2). Split-K: the split is the slowest index.
  void setTile(Value tile) {
    Value lin = tile;
    if (cfg.splits > 1) {
      int64_t perSplit = cfg.gridX * cfg.gridY;
      split = im.div(lin, perSplit);
      lin = im.rem(lin, perSplit);
      kt0 = im.mul(split, cfg.kTilesPerSplit);
    } else {
      kt0 = im.c(0);
    }
    // With a cluster, `tile` numbers pairs of A blocks (2p, 2p + 1) of one
    // B block; the block of rank r takes A block 2p + r.
    int64_t gridY = cfg.gridY / cfg.cluster;
    int64_t perGroup = kGroup * gridY;
    Value inGroup = im.rem(lin, perGroup);
    Value first = im.mul(im.div(lin, perGroup), kGroup);
    Value rows = arith::MinUIOp::create(b, loc, im.sub(im.c(cfg.gridX), first),
                                        im.c(kGroup));
    Value bx = im.add(first, arith::RemUIOp::create(b, loc, inGroup, rows));
    Value by = arith::DivUIOp::create(b, loc, inGroup, rows);
    if (cfg.cluster > 1)
      by = im.add(im.mul(by, cfg.cluster), rank);
    aRow0 = im.mul(by, kBlockRows);
    bRow0 = im.mul(bx, cfg.tokensPerBlock);
  }

  /// The block's loop over its tiles (forEachTileOf).
  void forEachTile(function_ref<void(Value tile, Value itBase)> body) {
    forEachTileOf(b, loc, cfg, bid, blockTiles, body);
  }

  // --- shared-memory addresses (i32, shared window) ---------------------
  int64_t aOffset(int64_t st) const { return st * stride; }
  /// The TMA-store staging buffer: after the stages.
  int64_t stagingOffset() const { return cfg.stages * stride; }
  int64_t barriersOffset() const { return cfg.barriersOffset; }
  int64_t fullOffset(int64_t st) const { return barriersOffset() + 8 * st; }
  int64_t emptyOffset(int64_t st) const {
    return barriersOffset() + 8 * (cfg.stages + st);
  }
  int64_t readyOffset(int64_t st) const {
    return barriersOffset() + 8 * (2 * cfg.stages + st);
  }
  /// Shared address (i32) of byte `offset` (a constant) after the aligned
  /// base.
  Value barrier(int64_t offset) { return smemAddr(im.c(offset)); }
  /// Shared address (i32) of byte `offset` after the aligned base.
  Value smemAddr(Value offset) {
    return arith::IndexCastUIOp::create(b, loc, b.getI32Type(),
                                        im.add(baseIdx, offset));
  }
  /// Byte offset of stage `st`'s piece at `within` (A 0, B, E).
  Value stageOffset(Value st, int64_t within) {
    return im.add(im.mul(st, stride), within);
  }
  /// Byte offset of stage `st`'s mbarrier of the given kind.
  Value fullBarrier(Value st) {
    return smemAddr(im.add(im.mul(st, 8), barriersOffset()));
  }
  Value emptyBarrier(Value st) {
    return smemAddr(im.add(im.mul(st, 8), barriersOffset() + 8 * cfg.stages));
  }
  /// Fused lift: the gathered columns of the stage are in shared memory.
  Value readyBarrier(Value st) {
    return smemAddr(
        im.add(im.mul(st, 8), barriersOffset() + 16 * cfg.stages));
  }

  /// Spins until the mbarrier at `addr` completes the phase of parity
  /// `parity` (i32 0/1).
  /// The wait has the default semantics (acquire, CTA scope) also for the
  /// empty barriers that the peer block arrives on: the producer's next
  /// writes into the peer are TMA copies, ordered by the barrier itself
  /// (CUTLASS's pattern; measured, bench/results/spmm_cluster_ab_h200.json).
  void waitBarrier(Value addr, Value parity) {
    asmVoid(b, loc,
            "{\n.reg .pred p;\nwait_again:\n"
            "mbarrier.try_wait.parity.shared::cta.b64 p, [$0], $1;\n"
            "@!p bra wait_again;\n}",
            {addr, parity}, "r,r");
  }

  Value toI64Ptr(Value ptr) {
    return LLVM::PtrToIntOp::create(b, loc, b.getI64Type(), ptr);
  }
  Value toI32(Value index) {
    return arith::IndexCastUIOp::create(b, loc, b.getI32Type(), index);
  }

  /// "r,r": one k-tile's metadata words as asm inputs.
  std::string metaConstraints() const {
    std::string c;
    for (int64_t j = 0; j < metaSteps; ++j)
      c += j ? ",r" : "r";
    return c;
  }

  /// One thread issues every k-tile's loads once its stage is free.
  void buildProducer(Value isThread0) {
    asmVoid(b, loc,
            "setmaxnreg.dec.sync.aligned.u32 " +
                std::to_string(cfg.fusedLift ? kGatherProducerRegs
                                             : kProducerRegs) +
                ";",
            {}, "");
    auto only = scf::IfOp::create(b, loc, isThread0, false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&only.getThenRegion().front());
    for (Value tm : {tmB, tmA, tmA2, tmO, tmE, tmY})
      if (tm)
        asmVoid(b, loc, "prefetch.tensormap [$0];", {tm}, "l");
    int64_t txBytes = layout.txBytes;
    forEachTile([&](Value tile, Value itBase) {
      setTile(tile);
      Value rowTile0 = toI32(im.div(aRow0, 16));
      Value featRow0 = toI32(aRow0);
      Value tokRow0 = toI32(bRow0);
      scf::ForOp::create(
          b, loc, im.c(0), im.c(blockTiles), im.c(1), ValueRange{},
          [&](OpBuilder &, Location, Value kt, ValueRange) {
            Value it = im.add(itBase, kt);
            Value st = im.rem(it, cfg.stages);
            // Free once the consumers released it; the first pass over
            // the stages waits on the parity of the phase before the
            // first (complete from the start).
            Value parity =
                toI32(im.rem(im.add(im.div(it, cfg.stages), 1), 2));
            waitBarrier(emptyBarrier(st), parity);
            Value full = fullBarrier(st);
            asmVoid(b, loc,
                    "mbarrier.arrive.expect_tx.shared::cta.b64 _, [$0], $1;",
                    {full, im.i32(txBytes)}, "r,r");
            // Coordinates of the tile's global k-tile.
            Value kt32 = toI32(im.add(kt0, kt));
            auto mul32 = [&](Value v, int64_t c) {
              return arith::MulIOp::create(b, loc, v, im.i32(c)).getResult();
            };
            // Values: 16 per k32 step and row; X: 64 original columns
            // (the lifted ones of the fused lift's step 2 are gathered
            // from them); metadata: 16 words per step and row tile.
            if (cfg.dense) {
              // A's 128 rows and B's BN rows, 64 columns of each.
              Value col = mul32(kt32, kKTile);
              load2d(smemAddr(stageOffset(st, layout.a)), tmA, col, featRow0,
                     full);
              loadB(st, col, tokRow0, full);
              scf::YieldOp::create(b, loc);
              return;
            }
            Value valCol = mul32(kt32, steps * 16);
            load2d(smemAddr(stageOffset(st, layout.a)), tmA, valCol,
                   featRow0, full);
            if (cfg.fusedLift)
              load2d(smemAddr(stageOffset(st, layout.a2)), tmA2,
                     arith::AddIOp::create(b, loc, valCol, im.i32(32)),
                     featRow0, full);
            if (cfg.liftByTma)
              loadSplitLiftB(st, kt32, tokRow0, full);
            else
              loadB(st, mul32(kt32, kKTile), tokRow0, full);
            load2d(smemAddr(stageOffset(st, layout.e)), tmE,
                   mul32(kt32, steps * 16), rowTile0, full);
            scf::YieldOp::create(b, loc);
          });
    });
  }

  /// Fused lift: producer warps 1..3 build each stage's step-2 operand once
  /// its TMA loads landed. The tiled window order puts, per 64 columns of
  /// X, window 1 of group g (original columns 8g+2 .. 8g+5) at lifted
  /// columns 64 + 4g .. 64 + 4g + 3: 8 bytes from the middle of every 16-byte
  /// chunk of the X row. A unit of work is (row r, destination chunk c): read
  /// X chunks 2c and 2c+1 (at their 128B-swizzled places, chunk q ^ (r & 7)),
  /// keep words 1 and 2 of each and store the four words as chunk c of the
  /// row's 64-byte O row (64B swizzle: c ^ ((r >> 1) & 3)).
  ///
  /// Thread e (0..95; lane l, warp w) takes c = l / 8 and the rows
  /// r0 + 24i, r0 = 8w + l % 8: eight consecutive lanes read eight rows of
  /// one chunk (eight distinct 16-byte bank groups per quarter-warp), and
  /// since 24i keeps r & 7 and (r >> 1) & 3, every address of the thread is
  /// a constant offset from its first (+3072 B per row step in X, +1536 B
  /// in O). The units are unrolled in groups of kGatherBatch, each one asm
  /// statement with all its loads before its stores (ptxas cannot move a
  /// load above a store it cannot prove disjoint). Then fence.proxy.async
  /// (generic stores read by wgmma) and one arrival per thread on the
  /// stage's `ready` barrier.
  void buildGather() {
    Value isGather = im.lt(im.c(31), tid);
    auto only = scf::IfOp::create(b, loc, isGather, false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&only.getThenRegion().front());
    Value e = im.sub(tid, im.c(32));
    Value lane = im.rem(e, 32), l8 = im.rem(lane, 8);
    Value c = im.div(lane, 8);
    Value r0 = im.add(im.mul(im.div(e, 32), 8), l8);
    auto xorI = [&](Value a, Value v) -> Value {
      return arith::XOrIOp::create(b, loc, a, v);
    };
    Value c2 = im.mul(c, 2);
    Value src0 = im.add(im.mul(r0, 128), im.mul(xorI(c2, l8), 16));
    Value src1 = im.add(im.mul(r0, 128), im.mul(xorI(im.add(c2, 1), l8), 16));
    Value dst = im.add(im.mul(r0, 64),
                       im.mul(xorI(c, im.rem(im.div(r0, 2), 4)), 16));
    int64_t bn = cfg.tokensPerBlock;
    int64_t units = (bn + 23) / 24;
    // Units valid for every thread (r0 <= 23), then the guarded tail.
    int64_t always = 0;
    while (always < units && 24 * always + 23 < bn)
      ++always;
    forEachTile([&](Value, Value itBase) {
      scf::ForOp::create(
          b, loc, im.c(0), im.c(blockTiles), im.c(1), ValueRange{},
          [&](OpBuilder &, Location, Value kt, ValueRange) {
            Value it = im.add(itBase, kt);
            Value st = im.rem(it, cfg.stages);
            waitBarrier(fullBarrier(st),
                        toI32(im.rem(im.div(it, cfg.stages), 2)));
            Value xs0 = smemAddr(im.add(stageOffset(st, layout.x), src0));
            Value xs1 = smemAddr(im.add(stageOffset(st, layout.x), src1));
            Value od = smemAddr(im.add(stageOffset(st, layout.o), dst));
            // Unit i of a batch uses registers t[8i .. 8i+7].
            auto reg = [](int64_t i, int64_t j) {
              return "t" + std::to_string(8 * i + j);
            };
            auto batch = [&](int64_t first, int64_t count) {
              std::string text = "{\n.reg .b32 t<" +
                                 std::to_string(8 * count) + ">;\n";
              for (int64_t i = 0; i < count; ++i) {
                std::string off = std::to_string(3072 * (first + i));
                text += "ld.shared.v4.b32 {" + reg(i, 0) + ", " + reg(i, 1) +
                        ", " + reg(i, 2) + ", " + reg(i, 3) + "}, [$0+" + off +
                        "];\n";
                text += "ld.shared.v4.b32 {" + reg(i, 4) + ", " + reg(i, 5) +
                        ", " + reg(i, 6) + ", " + reg(i, 7) + "}, [$1+" + off +
                        "];\n";
              }
              for (int64_t i = 0; i < count; ++i)
                text += "st.shared.v4.b32 [$2+" +
                        std::to_string(1536 * (first + i)) + "], {" +
                        reg(i, 1) + ", " + reg(i, 2) + ", " + reg(i, 5) +
                        ", " + reg(i, 6) + "};\n";
              text += "}";
              asmVoid(b, loc, text, {xs0, xs1, od}, "r,r,r");
            };
            for (int64_t u = 0; u < always; u += kGatherBatch)
              batch(u, std::min(kGatherBatch, always - u));
            for (int64_t u = always; u < units; ++u) {
              auto tail = scf::IfOp::create(
                  b, loc, im.lt(im.add(r0, 24 * u), bn), false);
              OpBuilder::InsertionGuard g(b);
              b.setInsertionPointToStart(&tail.getThenRegion().front());
              batch(u, 1);
            }
            asmVoid(b, loc, "fence.proxy.async.shared::cta;", {}, "");
            asmVoid(b, loc, "mbarrier.arrive.shared::cta.b64 _, [$0];",
                    {readyBarrier(st)}, "r");
            scf::YieldOp::create(b, loc);
          });
    });
  }

  /// The B tile of stage `st` (rows from `row0`, columns from `col`): one
  /// load, or with a cluster this block's half of the rows, multicast into
  /// both blocks at the same offset (each block's `full` barrier counts the
  /// whole tile's bytes).
  void loadB(Value st, Value col, Value row0, Value full) {
    loadBFrom(tmB, st, col, row0, full);
  }

  /// The split lift's B tile of global k-tile `kt32` (i32), kt32 = 3T + r:
  /// X's columns 128T + 64r for r < 2, else W1's columns 64T (the map and
  /// the column are selected at run time).
  void loadSplitLiftB(Value st, Value kt32, Value row0, Value full) {
    auto i32 = [&](int64_t v) { return im.i32(v); };
    Value t = arith::DivUIOp::create(b, loc, kt32, i32(3));
    Value r = arith::RemUIOp::create(b, loc, kt32, i32(3));
    Value inX =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, r, i32(2));
    Value xCol = arith::AddIOp::create(
        b, loc, arith::MulIOp::create(b, loc, t, i32(2 * kKTile)),
        arith::MulIOp::create(b, loc, r, i32(kKTile)));
    Value wCol = arith::MulIOp::create(b, loc, t, i32(kKTile));
    loadBFrom(arith::SelectOp::create(b, loc, inX, tmB, tmO), st,
              arith::SelectOp::create(b, loc, inX, xCol, wCol), row0, full);
  }

  /// loadB from the tensor map `tmap` (X's, or the split lift's W1).
  void loadBFrom(Value tmap, Value st, Value col, Value row0, Value full) {
    Value dst = smemAddr(stageOffset(st, layout.x));
    if (cfg.cluster == 1) {
      load2d(dst, tmap, col, row0, full);
      return;
    }
    int64_t half = cfg.tokensPerBlock / cfg.cluster;
    Value rank32 = toI32(rank);
    Value offset = arith::MulIOp::create(b, loc, rank32, im.i32(half * 128));
    Value rowOffset = arith::MulIOp::create(b, loc, rank32, im.i32(half));
    asmVoid(b, loc,
            "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::"
            "complete_tx::bytes.multicast::cluster [$0], [$1, {$2, $3}], "
            "[$4], $5;",
            {arith::AddIOp::create(b, loc, dst, offset), tmap, col,
             arith::AddIOp::create(b, loc, row0, rowOffset), full,
             arith::ConstantIntOp::create(b, loc, b.getIntegerType(16),
                                          (1 << cfg.cluster) - 1)},
            "r,l,r,r,r,h");
  }

  /// A 2-D TMA tile load (coordinates innermost first) completing on the
  /// mbarrier `bar`.
  void load2d(Value dst, Value tmap, Value c0, Value c1, Value bar) {
    asmVoid(b, loc,
            "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::"
            "complete_tx::bytes [$0], [$1, {$2, $3}], [$4];",
            {dst, tmap, c0, c1, bar}, "r,l,r,r,r");
  }

  void buildConsumer(Value y, Value c) {
    asmVoid(b, loc,
            "setmaxnreg.inc.sync.aligned.u32 " +
                std::to_string(cfg.fusedLift ? kGatherConsumerRegs
                                             : kConsumerRegs) +
                ";",
            {}, "");
    Value ctid = im.rem(tid, 128);
    Value warp = im.div(ctid, 32), lane = im.rem(ctid, 32);
    Value g = im.div(lane, 4), t = im.rem(lane, 4);
    // This thread's metadata words inside a stage's E box: row tile
    // 4c + w of the block, word 16 j + 2 g + (t & 1) for k32 step j.
    Value rtLocal = im.add(im.mul(c, 4), warp);
    Value eWord0 = im.add(im.mul(rtLocal, steps * 16),
                          im.add(im.mul(g, 2), im.rem(t, 2)));
    // Row tiles past the padded weight read zeros: use the valid encoding
    // (set per output tile).
    Value rowTileOk;
    Value isLane0 = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                          lane, im.c(0));

    // Descriptors of stage 0: A at the warpgroup's 64 rows, B.
    Value base64 = arith::IndexCastUIOp::create(b, loc, b.getI64Type(),
                                                baseIdx);
    // Warpgroup c's 64 rows of A: 64 B rows of compressed values, or in
    // dense mode 128 B rows (SW128, SBO 8 rows x 128 B).
    int64_t aRowBytes = cfg.dense ? kKTile * 2 : kKTile;
    Value aAddr = arith::AddIOp::create(
        b, loc, base64,
        arith::MulIOp::create(
            b, loc,
            arith::IndexCastUIOp::create(b, loc, b.getI64Type(), c),
            im.i64(64 * aRowBytes)));
    Value descA0 =
        cfg.dense
            ? smemDescriptor(b, loc, aAddr, 16, 1024, SmemSwizzle::B128)
            : smemDescriptor(b, loc, aAddr, 16, 8 * kKTile, SmemSwizzle::B64);
    Value descB0 = smemDescriptor(
        b, loc, arith::AddIOp::create(b, loc, base64, im.i64(layout.x)), 16,
        1024, SmemSwizzle::B128);
    // Fused lift, step 2: A from its 32-byte rows (SBO 8 rows x 32 B,
    // warpgroup c at +64 rows), B from the gathered 64-byte O rows.
    Value descA20, descO0;
    if (cfg.fusedLift) {
      Value a2Addr = arith::AddIOp::create(
          b, loc, base64,
          arith::AddIOp::create(
              b, loc, im.i64(layout.a2),
              arith::MulIOp::create(
                  b, loc,
                  arith::IndexCastUIOp::create(b, loc, b.getI64Type(), c),
                  im.i64(64 * 32))));
      descA20 = smemDescriptor(b, loc, a2Addr, 16, 256, SmemSwizzle::B32);
      descO0 = smemDescriptor(
          b, loc, arith::AddIOp::create(b, loc, base64, im.i64(layout.o)), 16,
          512, SmemSwizzle::B64);
    }

    Value zero = arith::ConstantOp::create(b, loc, b.getF32Type(),
                                           b.getF32FloatAttr(0.0f));
    // One k-tile: wait for its stage, read its metadata words, issue its
    // wgmmas, then retire the previous tile's group and release that stage.
    // `keep`: the metadata words of the group still in flight when this
    // tile's loads run; they are inputs of this tile's wait_group 1, which
    // retires that group, so ptxas keeps them allocated and unchanged until
    // then. Returns the accumulators, then this tile's metadata words.
    // `kt` counts the k-tiles of the output tile, `itBase` the block's
    // k-tiles before it: the ring of stages runs on across tiles.
    Value itBase;
    auto tileStep = [&](Value kt, ValueRange acc,
                        ValueRange keep) -> SmallVector<Value> {
      Value it = im.add(itBase, kt);
      Value st = im.rem(it, cfg.stages);
      Value phase = toI32(im.rem(im.div(it, cfg.stages), 2));
      waitBarrier(fullBarrier(st), phase);
      if (cfg.fusedLift)
        waitBarrier(readyBarrier(st), phase);
      SmallVector<Value> e;
      for (int64_t j = 0; j < metaSteps; ++j) {
        Value idx = im.add(
            im.add(padWords, im.div(stageOffset(st, layout.e), 4)),
            im.add(eWord0, j * 16));
        Value w = memref::LoadOp::create(b, loc, words, ValueRange{idx});
        Value ok = rowTileOk;
        // Steps past the weight read zeros: an odd step count leaves the
        // last tile's second step out, and the last split may run past K.
        if ((cfg.splits * cfg.kTilesPerSplit - 1) * steps + j >= kSteps32)
          ok = im.andi(ok, im.lt(im.add(im.mul(im.add(kt0, kt), steps), j),
                                 kSteps32));
        if (ok)
          w = arith::SelectOp::create(
              b, loc, ok, w, im.i32(static_cast<int32_t>(kEmptyMetadata)));
        e.push_back(w);
      }
      Value stOff64 = arith::IndexCastUIOp::create(b, loc, b.getI64Type(),
                                                   im.mul(st, stride / 16));
      Value descA = arith::AddIOp::create(b, loc, descA0, stOff64);
      Value descB = arith::AddIOp::create(b, loc, descB0, stOff64);
      SmallVector<Value> d =
          asmOnAcc(b, loc, "wgmma.fence.sync.aligned;", {}, "", acc);
      // Dense: four k16 steps of 32 bytes in both operands' rows.
      for (int64_t j = 0; cfg.dense && j < kKTile / 16; ++j)
        d = denseWgmma(
            b, loc, s.elementType,
            arith::AddIOp::create(b, loc, descA, im.i64(j * 32 / 16)),
            arith::AddIOp::create(b, loc, descB, im.i64(j * 32 / 16)), d);
      for (int64_t j = 0; !cfg.dense && j < kSteps; ++j)
        d = sparseWgmma(
            b, loc, s.elementType,
            arith::AddIOp::create(b, loc, descA, im.i64(j * 32 / 16)),
            arith::AddIOp::create(b, loc, descB, im.i64(j * 64 / 16)), e[j], d);
      if (cfg.fusedLift)
        d = sparseWgmma(b, loc, s.elementType,
                        arith::AddIOp::create(b, loc, descA20, stOff64),
                        arith::AddIOp::create(b, loc, descO0, stOff64), e[2],
                        d);
      asmVoid(b, loc, "wgmma.commit_group.sync.aligned;", {}, "");
      d = asmOnAcc(b, loc, "wgmma.wait_group.sync.aligned 1;", keep,
                   metaConstraints(), d);
      // The previous tile's group is complete: release its stage.
      Value release = im.andi(
          isLane0, arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ugt,
                                         kt, im.c(0)));
      auto rel = scf::IfOp::create(b, loc, release, false);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(&rel.getThenRegion().front());
      Value prev = im.rem(im.add(it, cfg.stages - 1), cfg.stages);
      releaseStage(emptyBarrier(prev));
      d.append(e.begin(), e.end());
      return d;
    };

    // Two k-tiles per iteration (A, B): the metadata words of consecutive
    // tiles are distinct registers, so loading tile i+1's words never
    // overwrites the operand of tile i's group, which is still in flight
    // (ptxas serializes every wgmma when it sees such a write, C7514). Tile
    // B's words are carried around the loop to tile A's wait.
    forEachTile([&](Value tile, Value base) {
      setTile(tile);
      itBase = base;
      rowTileOk = Value();
      if (!cfg.dense && (s.paddedN / 16) % (kBlockRows / 16) != 0)
        rowTileOk = im.lt(im.add(im.div(aRow0, 16), rtLocal), s.paddedN / 16);
      SmallVector<Value> acc = mainloop(tileStep, zero);
      // The tile's last group is complete: release its stage for the
      // producer, which is already loading the next tile.
      auto rel = scf::IfOp::create(b, loc, isLane0, false);
      {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToStart(&rel.getThenRegion().front());
        Value lastSt = im.rem(im.add(itBase, blockTiles - 1), cfg.stages);
        releaseStage(emptyBarrier(lastSt));
      }
      if (cfg.dense) {
        TmaFragment at{im.add(im.add(aRow0, im.mul(c, 64)), im.mul(warp, 16)),
                       bRow0, g, t, lane};
        (*denseEpilogue)(b, acc, at, epilogueArgs);
        return;
      }
      if (cfg.tmaStore) {
        storeTileByTma(acc, c, warp, g, lane, ctid);
        return;
      }
      epilogue(acc, y, c, warp, g, t);
    });
    // The staging buffer must outlive the last bulk store's reads.
    if (cfg.tmaStore)
      im.ifThen(isStoreIssuer(ctid), [&] {
        asmVoid(b, loc, "cp.async.bulk.wait_group.read 0;", {}, "");
      });
  }

  /// The warpgroup thread that issues (and waits for) its bulk stores:
  /// bulk async-groups belong to the thread that commits them.
  Value isStoreIssuer(Value ctid) {
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, ctid,
                                 im.c(0));
  }

  /// The 128 threads of consumer warpgroup `c` (named barrier 1 + c;
  /// barrier 0 is the block's). The NVVM op, whose intrinsic is
  /// convergent: it follows issuer-only code, and LLVM must not sink or
  /// duplicate it into that branch.
  void warpgroupBarrier(Value c) {
    NVVM::BarrierOp::create(b, loc, Type(), toI32(im.add(c, 1)), im.i32(128),
                            NVVM::BarrierReductionAttr(), Value());
  }

  /// The TMA-store epilogue (cfg.tmaStore) of consumer warpgroup `c`: per
  /// box of cfg.yBox[0] tokens, wait until the previous bulk store has
  /// read the staging buffer, write the box's values (bias and activation
  /// in f32, rounded once) with stmatrix .trans, which turns the
  /// accumulator fragment (features x tokens) into Y's token-major rows,
  /// then fence the generic writes for the async proxy and let one thread
  /// issue the bulk tensor store; the consumers go on to the next tile
  /// while the copy engine writes.
  ///
  /// Staging layout, per warpgroup: box-token rows of 128 B (its 64
  /// features), 128B-swizzled as the tensor map expects: the 16-byte chunk
  /// of features 8u..8u+7 of token row r sits at chunk u ^ (r % 8). One
  /// stmatrix.x4 stores the 8x8 matrices (q, h) for token groups q, q + 1
  /// and feature halves h = 0, 1 of the warp's 16 features (registers:
  /// acc 4q + 2h + {0, 1} as a 16-bit pair); lane l gives the address of
  /// row l % 8 of matrix l / 8, so the eight rows of a matrix land in eight
  /// distinct chunks (no bank conflicts), and instruction i is 16 rows
  /// (2048 B) after instruction 0.
  void storeTileByTma(ArrayRef<Value> acc, Value c, Value warp, Value g,
                      Value lane, Value ctid) {
    Type i32 = b.getI32Type();
    Value featBase = im.add(im.add(aRow0, im.mul(c, 64)), im.mul(warp, 16));
    SmallVector<Value> vals = applyBiasAndActivation(
        b, loc, im, s, acc, bias, featBase, g, s.n % kBlockRows == 0);
    auto pairType = VectorType::get({2}, s.resultType);
    auto wordType = VectorType::get({1}, i32);
    auto pack = [&](int64_t i) -> Value {
      Value lo = arith::TruncFOp::create(b, loc, s.resultType, vals[i]);
      Value hi = arith::TruncFOp::create(b, loc, s.resultType, vals[i + 1]);
      Value pair = vector::FromElementsOp::create(b, loc, pairType,
                                                  ValueRange{lo, hi});
      Value word = vector::BitCastOp::create(b, loc, wordType, pair);
      return vector::ExtractOp::create(b, loc, word, ArrayRef<int64_t>{0});
    };
    int64_t boxT = cfg.yBox[0];
    int64_t boxBytes = boxT * 128;
    Value stage = im.add(im.c(stagingOffset()), im.mul(c, boxBytes));
    Value m = im.div(lane, 8), j = im.rem(lane, 8);
    Value row = im.add(im.mul(im.div(m, 2), 8), j);
    Value chunk = im.add(im.mul(warp, 2), im.rem(m, 2));
    Value swizzled = arith::XOrIOp::create(b, loc, chunk, j);
    Value rowAddr =
        smemAddr(im.add(stage, im.add(im.mul(row, 128), im.mul(swizzled, 16))));
    Value stageAddr = smemAddr(stage);
    Value issuer = isStoreIssuer(ctid);
    Value feat0 = toI32(im.add(aRow0, im.mul(c, 64)));
    for (int64_t box = 0; box < cfg.tokensPerBlock / boxT; ++box) {
      im.ifThen(issuer, [&] {
        asmVoid(b, loc, "cp.async.bulk.wait_group.read 0;", {}, "");
      });
      warpgroupBarrier(c);
      for (int64_t i = 0; i < boxT / 16; ++i) {
        int64_t q = box * (boxT / 8) + 2 * i;
        Value addr = arith::AddIOp::create(b, loc, rowAddr, im.i32(2048 * i));
        asmVoid(b, loc,
                "stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [$0], "
                "{$1, $2, $3, $4};",
                {addr, pack(4 * q), pack(4 * q + 2), pack(4 * q + 4),
                 pack(4 * q + 6)},
                "r,r,r,r,r");
      }
      asmVoid(b, loc, "fence.proxy.async.shared::cta;", {}, "");
      warpgroupBarrier(c);
      Value tok0 = toI32(im.add(bRow0, box * boxT));
      im.ifThen(issuer, [&] {
        asmVoid(b, loc,
                "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group "
                "[$0, {$1, $2}], [$3];",
                {tmY, feat0, tok0, stageAddr}, "l,r,r,r");
        asmVoid(b, loc, "cp.async.bulk.commit_group;", {}, "");
      });
    }
  }

  /// One output tile's k-loop on `tileStep`; returns the accumulators once
  /// every group has completed.
  ///
  /// Two k-tiles per iteration (A, B): the metadata words of consecutive
  /// tiles are distinct registers, so loading tile i+1's words never
  /// overwrites the operand of tile i's group, which is still in flight
  /// (ptxas serializes every wgmma when it sees such a write, C7514). Tile
  /// B's words are carried around the loop to tile A's wait.
  template <typename StepFn>
  SmallVector<Value> mainloop(StepFn &tileStep, Value zero) {
    SmallVector<Value> init(nAcc, zero);
    for (int64_t j = 0; j < metaSteps; ++j)
      init.push_back(im.i32(static_cast<int32_t>(kEmptyMetadata)));
    auto pairs = scf::ForOp::create(
        b, loc, im.c(0), im.c(blockTiles / 2), im.c(1), init,
        [&](OpBuilder &, Location, Value i, ValueRange carried) {
          Value kt = im.mul(i, 2);
          SmallVector<Value> a = tileStep(kt, carried.take_front(nAcc),
                                          carried.drop_front(nAcc));
          SmallVector<Value> d =
              tileStep(im.add(kt, 1), ArrayRef<Value>(a).take_front(nAcc),
                       ArrayRef<Value>(a).drop_front(nAcc));
          scf::YieldOp::create(b, loc, d);
        });
    SmallVector<Value> last(pairs.getResults());
    if (blockTiles % 2)
      last = tileStep(im.c(blockTiles - 1),
                      ArrayRef<Value>(last).take_front(nAcc),
                      ArrayRef<Value>(last).drop_front(nAcc));
    return asmOnAcc(b, loc, "wgmma.wait_group.sync.aligned 0;",
                    ArrayRef<Value>(last).drop_front(nAcc), metaConstraints(),
                    ArrayRef<Value>(last).take_front(nAcc));
  }

  // --- gathered mode (cfg.gather) ---------------------------------------

  bool gatherRows() const { return cfg.gather == TmaGatherKind::rows; }

  /// The block's loop over its gathered-mode tiles, tile = blockIdx,
  /// blockIdx + grid, ..., each a 64-row block `blk` and a column tile
  /// `nt`. `body` gets them, the tile's k-tile count (0 for a skipped
  /// tile; from the block's count in kRows mode) and the block's k-tiles
  /// before it, which the loop carries (the ring of stages runs on).
  void forEachGatherTile(
      function_ref<void(Value blk, Value nt, Value nk, Value it)> body) {
    int64_t total = cfg.gridX * cfg.gridY;
    scf::ForOp::create(
        b, loc, bid, im.c(total), im.c(cfg.gridSize), ValueRange{im.c(0)},
        [&](OpBuilder &, Location, Value tile, ValueRange carried) {
          // Block-major: the column tiles of a block run at the same time
          // on neighbouring blocks of the grid, sharing its A rows in L2.
          // rows: the column tile is skewed by the block (nt = (tile + blk)
          // mod gridX): the live tiles are each block's first ones, and
          // with a grid stride that is a multiple of gridX (132 = 6 x 22 at
          // F = 5632) a block of the grid would otherwise always get the
          // same column tile, live for every block or for none.
          Value blk = im.div(tile, cfg.gridX);
          Value nt = im.rem(tile, cfg.gridX);
          if (gatherRows())
            nt = im.rem(im.add(nt, blk), cfg.gridX);
          Value count = arith::IndexCastOp::create(
              b, loc, b.getIndexType(),
              memref::LoadOp::create(b, loc, gatherCount, ValueRange{blk}));
          Value nk;
          if (gatherRows())
            nk = arith::SelectOp::create(
                b, loc, im.lt(im.mul(nt, kTmaGatherCols), count),
                im.c(cfg.kTilesPerSplit), im.c(0));
          else
            nk = im.div(im.add(count, kKTile - 1), kKTile);
          body(blk, nt, nk, carried[0]);
          scf::YieldOp::create(b, loc, ValueRange{im.add(carried[0], nk)});
        });
  }

  /// cp.async of 16 bytes from global `src` (i64) to shared `dst` (i32),
  /// zero-filled when `valid` is false (source size 0).
  void copy16(Value dst, Value src, Value valid) {
    Value size = arith::SelectOp::create(b, loc, valid, im.i32(16), im.i32(0));
    asmVoid(b, loc, "cp.async.cg.shared.global [$0], [$1], 16, $2;",
            {dst, src, size}, "r,l,r");
  }

  /// Gathered mode: waits until stage `st` (the block's k-tile `itk`, the
  /// tile's `kt`) is free, then thread 0 expects `txBytes` on its `full`
  /// barrier and loads the A box of block `blk`; returns that barrier.
  Value beginGatherStage(Value itk, Value st, Value kt, Value blk,
                         Value isThread0, int64_t txBytes) {
    waitBarrier(emptyBarrier(st),
                toI32(im.rem(im.add(im.div(itk, cfg.stages), 1), 2)));
    Value full = fullBarrier(st);
    im.ifThen(isThread0, [&] {
      asmVoid(b, loc, "mbarrier.arrive.expect_tx.shared::cta.b64 _, [$0], $1;",
              {full, im.i32(txBytes)}, "r,r");
      load2d(smemAddr(stageOffset(st, layout.a)), tmA,
             toI32(im.mul(kt, kKTile)), toI32(im.mul(blk, kTmaGatherRows)),
             full);
    });
    return full;
  }

  /// Gathered mode, warpgroup 0: thread 0 loads each stage's A box by TMA;
  /// all 128 threads copy the stage's B rows with cp.async into their
  /// 128B-swizzled places (16-byte chunk q of smem row r at q ^ (r % 8))
  /// and arrive on the stage's `full` barrier when their copies land
  /// (cp.async.mbarrier.arrive.noinc: the barrier counts 1 + 128).
  ///  * rows: thread p copies chunk p % 8 (8 columns of K) of the tile's
  ///    rows p / 8 + 16 i; their source rows are read once per tile.
  ///  * kRows: thread p copies chunk p % 32 (8 columns of N) of K rows
  ///    p / 32 + 4 i: a warp reads 512 contiguous bytes of one source row.
  ///    Chunk q lands in MN atom column q / 8 (8 KiB each: 64 K rows of
  ///    128 B) at chunk (q % 8) ^ (k % 8) of row k.
  void buildGatherProducer(Value isThread0) {
    asmVoid(b, loc,
            "setmaxnreg.dec.sync.aligned.u32 " +
                std::to_string(kGatherProducerRegs) + ";",
            {}, "");
    im.ifThen(isThread0, [&] {
      asmVoid(b, loc, "prefetch.tensormap [$0];", {tmA}, "l");
      if (tmS)
        asmVoid(b, loc, "prefetch.tensormap [$0];", {tmS}, "l");
    });
    if (cfg.gatherByTma) {
      buildGatherProducerByTma(isThread0);
      return;
    }
    Type i64 = b.getI64Type();
    auto toI64 = [&](Value v) -> Value {
      return arith::IndexCastUIOp::create(b, loc, i64, v);
    };
    Value srcBase = toI64(
        memref::ExtractAlignedPointerAsIndexOp::create(b, loc, gatherSource));
    int64_t rowBytes = s.k * 2;
    auto xorI = [&](Value a, Value v) -> Value {
      return arith::XOrIOp::create(b, loc, a, v);
    };
    auto rowOffset = [&](Value blk, Value pos) -> Value {
      Value n = memref::LoadOp::create(b, loc, gatherIdx, ValueRange{blk, pos});
      return arith::MulIOp::create(
          b, loc, arith::ExtUIOp::create(b, loc, i64, n), im.i64(rowBytes));
    };
    Value ptid = tid;
    forEachGatherTile([&](Value blk, Value nt, Value nk, Value it) {
      // rows: the thread's 16 source rows, fixed for the tile.
      SmallVector<Value> tileRows;
      Value chunk, r0;
      if (gatherRows()) {
        chunk = im.rem(ptid, 8);
        r0 = im.div(ptid, 8);
        for (int64_t i = 0; i < kGatherCopiesPerThread; ++i)
          tileRows.push_back(rowOffset(
              blk, im.add(im.mul(nt, kTmaGatherCols), im.add(r0, 16 * i))));
      }
      scf::ForOp::create(
          b, loc, im.c(0), nk, im.c(1), ValueRange{},
          [&](OpBuilder &, Location, Value kt, ValueRange) {
            Value itk = im.add(it, kt);
            Value st = im.rem(itk, cfg.stages);
            // kRows: this k-tile's 16 source rows, read before the wait.
            SmallVector<Value> kRowsOff;
            Value q = im.rem(ptid, 32), k0 = im.div(ptid, 32);
            if (!gatherRows())
              for (int64_t i = 0; i < kGatherCopiesPerThread; ++i)
                kRowsOff.push_back(rowOffset(
                    blk, im.add(im.mul(kt, kKTile), im.add(k0, 4 * i))));
            Value full = beginGatherStage(itk, st, kt, blk, isThread0,
                                          layout.txBytes);
            Value stB = stageOffset(st, layout.x);
            if (gatherRows()) {
              Value col = im.add(im.mul(kt, kKTile), im.mul(chunk, 8));
              Value valid = im.lt(col, s.k);
              Value colBytes = toI64(arith::SelectOp::create(
                  b, loc, valid, im.mul(col, 2), im.c(0)));
              Value dst0 = im.add(
                  stB, im.add(im.mul(r0, 128),
                              im.mul(xorI(chunk, im.rem(r0, 8)), 16)));
              for (int64_t i = 0; i < kGatherCopiesPerThread; ++i)
                copy16(smemAddr(im.add(dst0, 2048 * i)),
                       arith::AddIOp::create(
                           b, loc, srcBase,
                           arith::AddIOp::create(b, loc, tileRows[i],
                                                 colBytes)),
                       valid);
            } else {
              Value feat = im.add(im.mul(nt, kTmaGatherCols), im.mul(q, 8));
              Value valid = im.lt(feat, s.k);
              Value featBytes = toI64(arith::SelectOp::create(
                  b, loc, valid, im.mul(feat, 2), im.c(0)));
              Value atom = im.mul(im.div(q, 8), kGatherAtomColumnBytes);
              Value cc = im.rem(q, 8);
              for (int64_t i = 0; i < kGatherCopiesPerThread; ++i) {
                Value k = im.add(k0, 4 * i);
                Value dst = im.add(
                    stB, im.add(atom, im.add(im.mul(k, 128),
                                             im.mul(xorI(cc, im.rem(k, 8)),
                                                    16))));
                copy16(smemAddr(dst),
                       arith::AddIOp::create(
                           b, loc, srcBase,
                           arith::AddIOp::create(b, loc, kRowsOff[i],
                                                 featBytes)),
                       valid);
              }
            }
            asmVoid(b, loc,
                    "cp.async.mbarrier.arrive.noinc.shared::cta.b64 [$0];",
                    {full}, "r");
            scf::YieldOp::create(b, loc);
          });
    });
  }

  /// Gathered mode with cfg.gatherByTma: thread 0 expects the stage's A and
  /// B bytes and loads A; every producer thread loads its B rows as TMA
  /// boxes of one row and 64 columns into the places the cp.async path
  /// fills (the 128B swizzle follows the destination address), completing
  /// on the stage's `full` barrier.
  ///  * rows: thread p takes rows p and p + 128 of the tile (their source
  ///    rows read once per tile), one box per k-tile each.
  ///  * kRows: thread p takes K row p % 64 and the atom columns 2 (p / 64)
  ///    and 2 (p / 64) + 1 (64 columns each).
  void buildGatherProducerByTma(Value isThread0) {
    Value ptid = tid;
    auto idxAt = [&](Value blk, Value pos) -> Value {
      return memref::LoadOp::create(b, loc, gatherIdx, ValueRange{blk, pos});
    };
    int64_t txBytes = kGatherABytes + kGatherBBytes;
    forEachGatherTile([&](Value blk, Value nt, Value nk, Value it) {
      SmallVector<Value> tileRows;
      if (gatherRows())
        for (int64_t i = 0; i < 2; ++i)
          tileRows.push_back(idxAt(
              blk, im.add(im.mul(nt, kTmaGatherCols), im.add(ptid, 128 * i))));
      scf::ForOp::create(
          b, loc, im.c(0), nk, im.c(1), ValueRange{},
          [&](OpBuilder &, Location, Value kt, ValueRange) {
            Value itk = im.add(it, kt);
            Value st = im.rem(itk, cfg.stages);
            Value k = im.rem(ptid, kKTile), pair = im.div(ptid, kKTile);
            Value kRow;
            if (!gatherRows())
              kRow = idxAt(blk, im.add(im.mul(kt, kKTile), k));
            Value full =
                beginGatherStage(itk, st, kt, blk, isThread0, txBytes);
            Value stB = stageOffset(st, layout.x);
            if (gatherRows()) {
              for (int64_t i = 0; i < 2; ++i)
                load2d(smemAddr(im.add(stB, im.mul(im.add(ptid, 128 * i), 128))),
                       tmS, toI32(im.mul(kt, kKTile)), tileRows[i], full);
            } else {
              for (int64_t j = 0; j < 2; ++j) {
                Value atom = im.add(im.mul(pair, 2), im.c(j));
                load2d(smemAddr(im.add(
                           stB, im.add(im.mul(atom, kGatherAtomColumnBytes),
                                       im.mul(k, 128)))),
                       tmS,
                       toI32(im.add(im.mul(nt, kTmaGatherCols),
                                    im.mul(atom, 64))),
                       kRow, full);
              }
            }
            scf::YieldOp::create(b, loc);
          });
    });
  }

  /// Gathered mode, consumer warpgroup `c` (columns 128c .. 128c + 127 of
  /// the tile, all 64 rows): per k-tile wait `full`, fence the cp.async
  /// writes for the async proxy, four wgmma m64n128k16 (A K-major SW128;
  /// B K-major SW128 in rows mode, MN-major SW128 with LBO 8 KiB between
  /// the atom columns and SBO 1 KiB between groups of 8 K rows in kRows
  /// mode), commit, wait_group 1, release the previous k-tile's stage.
  void buildGatherConsumer(Value c) {
    asmVoid(b, loc,
            "setmaxnreg.inc.sync.aligned.u32 " +
                std::to_string(kGatherConsumerRegs) + ";",
            {}, "");
    Value ctid = im.rem(tid, 128);
    Value warp = im.div(ctid, 32), lane = im.rem(ctid, 32);
    Value g = im.div(lane, 4), t = im.rem(lane, 4);
    Value isLane0 = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                          lane, im.c(0));
    Type i64 = b.getI64Type();
    Value base64 = arith::IndexCastUIOp::create(b, loc, i64, baseIdx);
    Value c64 = arith::IndexCastUIOp::create(b, loc, i64, c);
    Value descA0 = smemDescriptor(b, loc, base64, 16, 1024, SmemSwizzle::B128);
    bool rows = gatherRows();
    int64_t half = rows ? (kTmaGatherCols / 2) * 128 : 2 * kGatherAtomColumnBytes;
    Value bAddr = arith::AddIOp::create(
        b, loc, base64,
        arith::AddIOp::create(b, loc, im.i64(layout.x),
                              arith::MulIOp::create(b, loc, c64, im.i64(half))));
    Value descB0 =
        rows ? smemDescriptor(b, loc, bAddr, 16, 1024, SmemSwizzle::B128)
             : smemDescriptor(b, loc, bAddr, kGatherAtomColumnBytes, 1024,
                              SmemSwizzle::B128);
    // k16 steps: 32 bytes along a K-major row, 16 K rows (2 KiB) MN-major.
    int64_t bStep = rows ? 32 / 16 : 2048 / 16;
    int64_t nAcc = kTmaGatherCols / 2 / 2;
    Value zero = arith::ConstantOp::create(b, loc, b.getF32Type(),
                                           b.getF32FloatAttr(0.0f));
    forEachGatherTile([&](Value blk, Value nt, Value nk, Value it) {
      auto tileBody = [&] {
        SmallVector<Value> init(nAcc, zero);
        auto loop = scf::ForOp::create(
            b, loc, im.c(0), nk, im.c(1), init,
            [&](OpBuilder &, Location, Value kt, ValueRange acc) {
              Value itk = im.add(it, kt);
              Value st = im.rem(itk, cfg.stages);
              waitBarrier(fullBarrier(st),
                          toI32(im.rem(im.div(itk, cfg.stages), 2)));
              // cp.async writes are the generic proxy's; TMA's are not.
              if (!cfg.gatherByTma)
                asmVoid(b, loc, "fence.proxy.async.shared::cta;", {}, "");
              Value stOff = arith::IndexCastUIOp::create(
                  b, loc, i64, im.mul(st, stride / 16));
              Value descA = arith::AddIOp::create(b, loc, descA0, stOff);
              Value descB = arith::AddIOp::create(b, loc, descB0, stOff);
              SmallVector<Value> d =
                  asmOnAcc(b, loc, "wgmma.fence.sync.aligned;", {}, "", acc);
              for (int64_t j = 0; j < kKTile / 16; ++j)
                d = denseWgmma(
                    b, loc, s.elementType,
                    arith::AddIOp::create(b, loc, descA, im.i64(j * 32 / 16)),
                    arith::AddIOp::create(b, loc, descB, im.i64(j * bStep)), d,
                    /*transB=*/!rows);
              asmVoid(b, loc, "wgmma.commit_group.sync.aligned;", {}, "");
              d = asmOnAcc(b, loc, "wgmma.wait_group.sync.aligned 1;", {}, "",
                           d);
              im.ifThen(im.andi(isLane0, arith::CmpIOp::create(
                                             b, loc, arith::CmpIPredicate::ugt,
                                             kt, im.c(0))),
                        [&] {
                          releaseStage(emptyBarrier(
                              im.rem(im.add(itk, cfg.stages - 1), cfg.stages)));
                        });
              scf::YieldOp::create(b, loc, d);
            });
        SmallVector<Value> acc =
            asmOnAcc(b, loc, "wgmma.wait_group.sync.aligned 0;", {}, "",
                     SmallVector<Value>(loop.getResults()));
        im.ifThen(
            im.andi(isLane0, arith::CmpIOp::create(
                                 b, loc, arith::CmpIPredicate::ugt, nk,
                                 im.c(0))),
            [&] {
              releaseStage(emptyBarrier(
                  im.rem(im.add(it, im.sub(nk, im.c(1))), cfg.stages)));
            });
        TmaFragment at{im.add(im.mul(blk, kTmaGatherRows), im.mul(warp, 16)),
                       im.add(im.mul(nt, kTmaGatherCols), im.mul(c, 128)), g,
                       t, lane};
        (*denseEpilogue)(b, acc, at, epilogueArgs);
      };
      if (rows)
        im.ifThen(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ugt, nk,
                                        im.c(0)),
                  tileBody);
      else
        tileBody();
    });
  }

  /// Stores one output tile's accumulators (consumer warpgroup `c`).
  void epilogue(ArrayRef<Value> acc, Value y, Value c, Value warp, Value g,
                Value t) {
    Value featBase = im.add(im.add(aRow0, im.mul(c, 64)), im.mul(warp, 16));
    Value row0 = im.add(featBase, g);
    bool fullM = s.m % cfg.tokensPerBlock == 0;
    bool fullN = s.n % kBlockRows == 0;
    // Split-K: the raw f32 partial sums go to the workspace.
    SpmmShape out = s;
    Value outBias = bias;
    if (cfg.splits > 1) {
      out.hasBias = false;
      out.activation = Activation::none;
      out.resultType = b.getF32Type();
      outBias = Value();
    }
    // Pairs of adjacent features per store where rows allow 4-byte stores.
    if (s.n % 2 == 0) {
      buildSpmmEpiloguePaired(b, loc, im, out, acc, outBias, y, featBase, g,
                              t, bRow0, fullM, fullN, split);
      return;
    }
    buildSpmmEpilogue(b, loc, im, out, acc, outBias, y, row0, bRow0, t, fullM,
                      fullN, split);
  }

  OpBuilder &b;
  Location loc;
  const SpmmShape &s;
  const TmaSpmmConfig &cfg;
  IndexMath im;
  /// k-tiles of one block (its split); wgmma k-steps and metadata words
  /// per stage (none in dense mode).
  int64_t nAcc, kSteps32, blockTiles, steps, metaSteps;
  StageLayout layout;
  int64_t stride;
  Value tmB, tmA, tmA2, tmO, tmE, tmY, bias;
  /// Gathered mode: B's source rows, the index lists and the counts.
  Value gatherSource, gatherIdx, gatherCount;
  /// Gathered mode by TMA: the source's tensor map.
  Value tmS;
  ValueRange epilogueArgs;
  Value tid, bid, baseIdx, padWords, words;
  /// With a cluster: this block's rank (index) and its peer's (i32).
  Value rank, peer;
  /// The current output tile: first feature and token, its split (null
  /// without split-K) and first k-tile.
  Value aRow0, bRow0, split, kt0;
};

} // namespace

void mlir::sgpu::buildTmaDenseKernel(OpBuilder &b, Location loc,
                                     const SpmmShape &s,
                                     const TmaSpmmConfig &cfg,
                                     gpu::GPUFuncOp func,
                                     const TmaDenseEpilogue &epilogue) {
  TmaSpmmBuilder builder(b, loc, s, cfg);
  builder.denseEpilogue = &epilogue;
  builder.build(func);
}

void mlir::sgpu::buildTmaSpmmKernel(OpBuilder &b, Location loc,
                                    const SpmmShape &s,
                                    const TmaSpmmConfig &cfg,
                                    gpu::GPUFuncOp func) {
  TmaSpmmBuilder(b, loc, s, cfg).build(func);
}

void mlir::sgpu::buildSplitKReduceKernel(OpBuilder &b, Location loc,
                                         const SpmmShape &s, int64_t splits,
                                         gpu::GPUFuncOp func) {
  Block &entry = func.getBody().front();
  b.setInsertionPointToStart(&entry);
  IndexMath im{b, loc};
  Value ws = entry.getArgument(0);
  Value bias = s.hasBias ? entry.getArgument(1) : Value();
  Value y = entry.getArguments().back();
  // Consecutive threads take consecutive features: coalesced reads of each
  // split's row and coalesced stores.
  Value idx = im.add(
      im.mul(gpu::BlockIdOp::create(b, loc, gpu::Dimension::x),
             kSplitKReduceThreads),
      gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x));
  Value tok = im.div(idx, s.n), feat = im.rem(idx, s.n);
  auto inside = scf::IfOp::create(b, loc, im.lt(tok, s.m), false);
  b.setInsertionPointToStart(&inside.getThenRegion().front());
  Value sum = memref::LoadOp::create(b, loc, ws, ValueRange{im.c(0), tok, feat});
  for (int64_t i = 1; i < splits; ++i)
    sum = arith::AddFOp::create(
        b, loc, sum,
        memref::LoadOp::create(b, loc, ws, ValueRange{im.c(i), tok, feat}));
  Value biasF32 =
      bias ? im.toF32(memref::LoadOp::create(b, loc, bias, feat)) : Value();
  Value zero = arith::ConstantOp::create(b, loc, b.getF32Type(),
                                         b.getF32FloatAttr(0.0f));
  storeEpilogueValue(b, loc, im, s, sum, biasF32, zero, y, tok, feat,
                     /*fullM=*/true, /*fullN=*/true);
  b.setInsertionPointToEnd(&entry);
  gpu::ReturnOp::create(b, loc);
}
