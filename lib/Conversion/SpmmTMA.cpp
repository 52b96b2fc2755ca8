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
// Epilogue (cfg.tmaStore, the default where it applies;
// TileEpilogue::storeByTma): each consumer warpgroup writes its tile, bias
// and activation applied and rounded once, box by box of yBox[0] tokens
// into its 128B-swizzled staging box with stmatrix .trans, fences the
// writes for the async proxy, syncs on its named barrier, and one thread
// issues a TMA bulk tensor store into Y's tensor map (tails clipped by
// TMA); that thread waits for the store to have read the box before the
// box is written again and before the block exits. Otherwise the values go
// out from registers (SpmmEpilogue.h).
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
// This file composes the kernel from the pipeline's parts, one file each
// under Kernels/ (TmaPipeline.h names them: the mbarrier ring, the tile
// scheduler, the producer and its operand loaders, the MMA step, the
// consumers and the epilogues). The tile table (getTmaSpmmConfig and the
// other modes' configurations) is SpmmTMAConfig.cpp; the stage layouts and
// sizes are SpmmTMALayout.h.
//
//===----------------------------------------------------------------------===//

#include "SpmmTMA.h"
#include "GPUKernel.h"
#include "Kernels/TmaPipeline.h"
#include "SpmmEpilogue.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace mlir::sgpu;
using namespace mlir::sgpu::tma;

namespace {

/// Composes the pipeline's parts (Kernels/TmaPipeline.h) into one kernel:
/// binds the arguments, aligns the shared memory, initializes the ring,
/// and gives warpgroup 0 the producer's role and warpgroups 1 and 2 the
/// consumers'.
class TmaKernelDriver {
public:
  TmaKernelDriver(OpBuilder &b, Location loc, const SpmmShape &s,
                  const TmaSpmmConfig &cfg)
      : k(b, loc, s, cfg), ring(k), tiles(k), b(b), loc(loc), im(k.im),
        cfg(cfg) {}

  void build(gpu::GPUFuncOp func, const TmaDenseEpilogue *denseEpilogue) {
    k.denseEpilogue = denseEpilogue;
    Block &entry = func.getBody().front();
    b.setInsertionPointToStart(&entry);
    Value y = bindArguments(entry);
    k.tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
    k.bid = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
    alignSharedMemory();

    // Barrier initialization by thread 0, visible to the async proxy
    // before anyone uses the barriers.
    Value isThread0 = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                            k.tid, im.c(0));
    ring.init(isThread0);
    if (cfg.cluster > 1) {
      // Blocks nc .. nc + n - 1 form cluster c of n (the grid is tiled by
      // clusters in x; the rank is %cluster_ctarank): the other blocks'
      // barriers must be initialized before a multicast or a remote
      // arrival reaches them. `peer` is the other rank of a pair.
      Value rank32 = NVVM::ClusterId::create(b, loc, b.getI32Type());
      k.rank = arith::IndexCastUIOp::create(b, loc, b.getIndexType(), rank32);
      if (cfg.cluster == 2)
        k.peer = arith::SubIOp::create(b, loc, im.i32(1), rank32);
      k.clusterBarrier();
    } else {
      gpu::BarrierOp::create(b, loc);
    }

    Value warpGroup = im.div(k.tid, 128);
    Value isProducer = arith::CmpIOp::create(
        b, loc, arith::CmpIPredicate::eq, warpGroup, im.c(0));
    auto roles = scf::IfOp::create(b, loc, isProducer, /*else=*/true);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(&roles.getThenRegion().front());
      if (cfg.gather != TmaGatherKind::none) {
        GatherProducer(k, ring, tiles).build(isThread0);
        b.setInsertionPointToStart(&roles.getElseRegion().front());
        GatherConsumer(k, ring, tiles).build(im.sub(warpGroup, im.c(1)));
      } else {
        TmaProducer producer(k, ring, tiles);
        producer.build(isThread0);
        if (cfg.fusedLift)
          producer.buildFusedLiftGather();
        b.setInsertionPointToStart(&roles.getElseRegion().front());
        TmaConsumer(k, ring, tiles).build(y, im.sub(warpGroup, im.c(1)));
      }
    }
    b.setInsertionPointToEnd(&entry);
    // No block leaves while its peer may still multicast into its shared
    // memory or arrive on its barriers.
    if (cfg.cluster > 1)
      k.clusterBarrier();
    gpu::ReturnOp::create(b, loc);
  }

private:
  /// Reads the kernel's arguments into the pipeline state (SpmmToGPU.cpp
  /// and the TwELL lowerings pass them in this order); returns the output
  /// of the register epilogue (null otherwise).
  Value bindArguments(Block &entry) {
    unsigned arg = 0;
    if (cfg.gather != TmaGatherKind::none) {
      k.tmA = k.toI64Ptr(entry.getArgument(arg++));
      k.gatherSource = entry.getArgument(arg++);
      if (cfg.gatherByTma)
        k.tmS = k.toI64Ptr(k.gatherSource);
      k.gatherIdx = entry.getArgument(arg++);
      k.gatherCount = entry.getArgument(arg++);
      k.epilogueArgs = entry.getArguments().drop_front(arg);
      return Value();
    }
    if (cfg.dense) {
      k.tmA = k.toI64Ptr(entry.getArgument(arg++));
      k.tmB = k.toI64Ptr(entry.getArgument(arg++));
      k.epilogueArgs = entry.getArguments().drop_front(arg);
      return Value();
    }
    k.tmB = k.toI64Ptr(entry.getArgument(arg++));
    k.tmA = k.toI64Ptr(entry.getArgument(arg++));
    if (cfg.fusedLift)
      k.tmA2 = k.toI64Ptr(entry.getArgument(arg++));
    if (cfg.liftByTma)
      k.tmO = k.toI64Ptr(entry.getArgument(arg++));
    k.tmE = k.toI64Ptr(entry.getArgument(arg++));
    if (cfg.tmaStore) {
      for (size_t i = 0; i < std::max<size_t>(1, cfg.ySliceStarts.size()); ++i)
        k.tmYSlices.push_back(k.toI64Ptr(entry.getArgument(arg++)));
      k.tmY = k.tmYSlices.front();
    }
    k.bias = k.s.hasBias && cfg.splits == 1 ? entry.getArgument(arg) : Value();
    return cfg.tmaStore ? Value() : entry.getArguments().back();
  }

  /// Shared memory: the dynamic window, aligned up to 1024 bytes.
  void alignSharedMemory() {
    auto wg = gpu::AddressSpaceAttr::get(b.getContext(),
                                         gpu::AddressSpace::Workgroup);
    auto [dyn, raw] = dynamicShared(b, loc);
    Value pad = im.rem(im.sub(im.c(kAlignSlack), im.rem(raw, kAlignSlack)),
                       kAlignSlack);
    k.baseIdx = im.add(raw, pad);
    k.padWords = im.div(pad, 4);
    k.words = memref::ViewOp::create(
        b, loc,
        MemRefType::get({(cfg.dynamicSharedBytes) / 4}, b.getI32Type(),
                        MemRefLayoutAttrInterface(), wg),
        dyn, im.c(0), ValueRange{});
  }

  TmaPipeline k;
  StageRing ring;
  TileScheduler tiles;
  OpBuilder &b;
  Location loc;
  IndexMath &im;
  const TmaSpmmConfig &cfg;
};

} // namespace

void mlir::sgpu::buildTmaDenseKernel(OpBuilder &b, Location loc,
                                     const SpmmShape &s,
                                     const TmaSpmmConfig &cfg,
                                     gpu::GPUFuncOp func,
                                     const TmaDenseEpilogue &epilogue) {
  TmaKernelDriver(b, loc, s, cfg).build(func, &epilogue);
}

void mlir::sgpu::buildTmaSpmmKernel(OpBuilder &b, Location loc,
                                    const SpmmShape &s,
                                    const TmaSpmmConfig &cfg,
                                    gpu::GPUFuncOp func) {
  TmaKernelDriver(b, loc, s, cfg).build(func, nullptr);
}

void mlir::sgpu::buildSplitKReduceKernel(OpBuilder &b, Location loc,
                                         const SpmmShape &s, int64_t splits,
                                         gpu::GPUFuncOp func,
                                         ArrayRef<int64_t> columns) {
  Block &entry = func.getBody().front();
  b.setInsertionPointToStart(&entry);
  IndexMath im{b, loc};
  Value ws = entry.getArgument(0);
  Value bias = s.hasBias ? entry.getArgument(1) : Value();
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
  auto store = [&](Value y, Value col) {
    storeEpilogueValue(b, loc, im, s, sum, biasF32, zero, y, tok, col,
                       /*fullM=*/true, /*fullN=*/true);
  };
  if (columns.empty()) {
    store(entry.getArguments().back(), feat);
  } else {
    // Column `feat` belongs to the first output whose columns end past it.
    unsigned firstY = entry.getNumArguments() - columns.size();
    std::function<void(size_t, int64_t)> pick = [&](size_t j, int64_t start) {
      Value y = entry.getArgument(firstY + j);
      auto here = [&] { store(y, im.sub(feat, im.c(start))); };
      if (j + 1 == columns.size())
        return here();
      int64_t end = start + columns[j];
      im.ifThen(im.lt(feat, end), here, [&] { pick(j + 1, end); });
    };
    pick(0, 0);
  }
  b.setInsertionPointToEnd(&entry);
  gpu::ReturnOp::create(b, loc);
}
