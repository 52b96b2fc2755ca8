//===- TmaPipeline.h - the warp-specialized TMA pipeline's parts -*- C++ -*-===//
//
// The kernels of SpmmTMA.cpp (the sparse GEMM in all its modes, the dense
// GEMM of the TwELL producer, the gathered GEMMs of the TwELL tensor-core
// consumer) are one pipeline: a producer warpgroup fills a ring of
// shared-memory stages by TMA, two consumer warpgroups run wgmma on them,
// and each output tile ends in an epilogue. This header names its parts;
// each is one file of this directory:
//
//   TmaPipeline     the kernel's shared state: builder, shape and
//                   configuration, kernel arguments, thread and block ids,
//                   the aligned shared-memory base (TmaPipeline.cpp)
//   StageRing       the mbarrier ring: full/empty/ready barriers per stage,
//                   their initialization, waits and releases (StageRing.cpp)
//   TileScheduler   which output tiles a block computes and in what order:
//                   plain, persistent (grid-strided), split-K, clusters, and
//                   the gathered mode's block-major walk (TileScheduler.cpp)
//   TmaProducer     the producer warp's loop and its operand loaders: plain
//                   TMA boxes, clusters' multicast halves, the split lift's
//                   selected map, and the fused lift's gather of the shared
//                   windows in shared memory (TmaProducer.cpp, FusedLift.cpp)
//   GatherProducer  the gathered modes' loaders: rows by cp.async or by
//                   one-row TMA boxes (GatherProducer.cpp)
//   WgmmaStep       the MMA step of one stage: descriptors, metadata words,
//                   sparse (and the fused lift's third) or dense wgmma
//                   (WgmmaStep.cpp)
//   TmaConsumer     the consumer warpgroups' k-loop around the MMA step,
//                   double-buffered metadata, releases (TmaConsumer.cpp);
//                   GatherConsumer the same for the gathered modes
//                   (GatherConsumer.cpp)
//   TileEpilogue    an output tile's end: from registers (split-K partials
//                   included) or through a swizzled staging box and a TMA
//                   bulk store (TileEpilogue.cpp); the dense modes' epilogue
//                   is the caller's TmaDenseEpilogue
//
// SpmmTMA.cpp composes them into a kernel. The generated IR depends on the
// order in which these parts create ops, so a change that moves code
// between them keeps that order (scripts/compile-reference-set.sh).
//
//===----------------------------------------------------------------------===//

#ifndef SPARSEOPT_LIB_CONVERSION_KERNELS_TMAPIPELINE_H
#define SPARSEOPT_LIB_CONVERSION_KERNELS_TMAPIPELINE_H

#include "IndexMath.h"
#include "SpmmTMALayout.h"

#include <string>

namespace mlir {
namespace sgpu {
namespace tma {

/// Where one output tile lies: its first feature (A row) and token (B
/// row), its split (null without split-K) and its first k-tile.
struct TileCoords {
  Value aRow0, bRow0, split, kt0;
};

/// The state every part of one pipeline kernel reads.
struct TmaPipeline {
  TmaPipeline(OpBuilder &b, Location loc, const SpmmShape &s,
              const TmaSpmmConfig &cfg);

  OpBuilder &b;
  Location loc;
  const SpmmShape &s;
  const TmaSpmmConfig &cfg;
  IndexMath im;
  /// Accumulator registers per consumer thread; k32 steps of the padded
  /// weight; k-tiles of one block (its split); wgmma k-steps and metadata
  /// words per stage (none in dense mode).
  int64_t nAcc, kSteps32, blockTiles, steps, metaSteps;
  StageLayout layout;
  int64_t stride;

  // Kernel arguments (tensor maps as i64 addresses).
  Value tmB, tmA, tmA2, tmO, tmE, tmY, bias;
  /// With cfg.ySliceStarts: the tensor map of every slice of Y (tmY is the
  /// first).
  SmallVector<Value> tmYSlices;
  /// Gathered mode: B's source rows, the index lists and the counts.
  Value gatherSource, gatherIdx, gatherCount;
  /// Gathered mode by TMA: the source's tensor map.
  Value tmS;
  ValueRange epilogueArgs;
  /// Dense and gathered modes: the epilogue to build for each output tile.
  const TmaDenseEpilogue *denseEpilogue = nullptr;

  Value tid, bid, baseIdx, padWords, words;
  /// With a cluster: this block's rank (index) and its peer's (i32).
  Value rank, peer;

  /// Shared address (i32) of byte `offset` after the aligned base.
  Value smemAddr(Value offset);
  /// Shared address (i32) of the constant byte `offset`.
  Value smemAddr(int64_t offset) { return smemAddr(im.c(offset)); }
  /// Byte offset of stage `st`'s piece at `within` (A 0, B, E).
  Value stageOffset(Value st, int64_t within);
  Value toI64Ptr(Value ptr);
  Value toI32(Value index);
  /// All threads of every block of the cluster (the NVVM ops, whose
  /// intrinsics are convergent: LLVM never duplicates them into divergent
  /// paths, which the .aligned forms forbid).
  void clusterBarrier();
  /// A 2-D TMA tile load (coordinates innermost first) into shared `dst`,
  /// completing on the mbarrier `bar`.
  void load2d(Value dst, Value tmap, Value c0, Value c1, Value bar);
  /// "r,r": one k-tile's metadata words as asm inputs.
  std::string metaConstraints() const;
  bool gatherRows() const { return cfg.gather == TmaGatherKind::rows; }
};

/// What every part of the pipeline keeps: the kernel's state and the
/// pieces of it that its code reads most.
class PipelinePart {
protected:
  explicit PipelinePart(TmaPipeline &k)
      : k(k), b(k.b), loc(k.loc), im(k.im), s(k.s), cfg(k.cfg),
        layout(k.layout) {}

  TmaPipeline &k;
  OpBuilder &b;
  Location loc;
  IndexMath &im;
  const SpmmShape &s;
  const TmaSpmmConfig &cfg;
  const StageLayout &layout;
};

/// The mbarrier ring of cfg.stages stages. Per stage: `full` (the
/// producer's loads landed: one expect_tx arrival plus the TMA bytes, or in
/// the cp.async gathered mode also one arrival per copying thread),
/// `empty` (one release per consumer warp of every block reading the
/// stage) and, with the fused lift, `ready` (the gathered step-2 columns
/// are in place: one arrival per gathering thread).
class StageRing : PipelinePart {
public:
  explicit StageRing(TmaPipeline &k) : PipelinePart(k) {}

  /// Thread 0 initializes every barrier, fenced for the async proxy.
  void init(Value isThread0);
  Value full(Value st);
  Value empty(Value st);
  Value ready(Value st);
  /// Spins until the mbarrier at `addr` completes the phase of parity
  /// `parity` (i32 0/1).
  void wait(Value addr, Value parity);
  /// Releases a stage for the producer (this block's `empty` barrier at
  /// `addr` and, with a cluster, the others' at the same offset).
  void release(Value addr);

private:
  int64_t fullOffset(int64_t st) const;
  int64_t emptyOffset(int64_t st) const;
  int64_t readyOffset(int64_t st) const;
};

/// The output tiles of a block and their order.
class TileScheduler : PipelinePart {
public:
  explicit TileScheduler(TmaPipeline &k) : PipelinePart(k) {}

  /// The block's loop over its tiles: `body` gets the tile and the block's
  /// k-tiles before it (the ring of stages runs on from tile to tile).
  void forEachTile(function_ref<void(Value tile, Value itBase)> body);
  /// The coordinates of tile `tile`, built at the insertion point.
  TileCoords coordinates(Value tile);
  /// Gathered modes: the block's tiles, each a 64-row block `blk` and a
  /// column tile `nt`, with its k-tile count `nk` and the block's k-tiles
  /// `it` before it.
  void forEachGatherTile(
      function_ref<void(Value blk, Value nt, Value nk, Value it)> body);
  /// The k-tiles of one output tile: kt = 0 .. count - 1, the block's
  /// k-tile it = before + kt (the ring runs on across tiles) and its stage
  /// st = it % stages. `body` builds one iteration (no results).
  void forEachKTile(Value count, Value before,
                    function_ref<void(Value kt, Value it, Value st)> body);
};

/// Warpgroup 0 of the plain, lifted and dense modes: one thread loads every
/// k-tile's operands into the next free stage; with the fused lift, warps
/// 1..3 then gather the step-2 columns (FusedLift.cpp).
class TmaProducer : PipelinePart {
public:
  TmaProducer(TmaPipeline &k, StageRing &ring, TileScheduler &tiles)
      : PipelinePart(k), ring(ring), tiles(tiles) {}

  void build(Value isThread0);
  void buildFusedLiftGather();

private:
  Value beginStage(Value it, Value st);
  int64_t prefetchWeights();
  /// One stage's operand loads for global k-tile `kt32` (i32).
  void loadStage(Value st, Value kt32, Value featRow0, Value rowTile0,
                 Value tokRow0, Value full);
  Value loadValues(Value st, Value kt32, Value featRow0, Value full);
  void loadMetadata(Value st, Value kt32, Value rowTile0, Value full);
  void loadX(Value st, Value kt32, Value tokRow0, Value full);
  void loadB(Value st, Value col, Value row0, Value full);
  void loadSplitLiftB(Value st, Value kt32, Value row0, Value full);
  void loadBFrom(Value tmap, Value st, Value col, Value row0, Value full);

  StageRing &ring;
  TileScheduler &tiles;
};

/// Warpgroup 0 of the gathered modes.
class GatherProducer : PipelinePart {
public:
  GatherProducer(TmaPipeline &k, StageRing &ring, TileScheduler &tiles)
      : PipelinePart(k), ring(ring), tiles(tiles) {}

  void build(Value isThread0);

private:
  void buildByCopies(Value isThread0);
  void buildByTma(Value isThread0);
  void copy16(Value dst, Value src, Value valid);
  Value beginStage(Value itk, Value st, Value kt, Value blk, Value isThread0,
                   int64_t txBytes);

  StageRing &ring;
  TileScheduler &tiles;
};

/// The MMA step of one stage for consumer warpgroup `c`: the stage-0
/// descriptors, the stage's metadata words (sparse), and the wgmmas.
class WgmmaStep : PipelinePart {
public:
  explicit WgmmaStep(TmaPipeline &k) : PipelinePart(k) {}

  /// Builds the stage-0 descriptors of warpgroup `c`.
  void prepare(Value c);
  /// This thread's metadata words of stage `st` for the tile's k-tile `kt`
  /// (`eWord0`: its first word inside a stage's E box; `rowTileOk`: null or
  /// whether its row tile lies inside the weight).
  SmallVector<Value> readMetadata(Value st, Value kt, Value kt0, Value eWord0,
                                  Value rowTileOk);
  /// wgmma.fence, the stage's wgmmas on `acc`, commit.
  SmallVector<Value> issue(Value st, ValueRange acc, ArrayRef<Value> meta);

private:
  Value descA0, descB0, descA20, descO0;
};

/// An output tile's end in a consumer warpgroup.
class TileEpilogue : PipelinePart {
public:
  explicit TileEpilogue(TmaPipeline &k) : PipelinePart(k) {}

  /// Through the staging box and a TMA bulk store (cfg.tmaStore).
  void storeByTma(ArrayRef<Value> acc, const TileCoords &tile, Value c,
                  Value warp, Value g, Value lane, Value ctid);
  /// From registers into `y` (or the split-K workspace).
  void storeFromRegisters(ArrayRef<Value> acc, const TileCoords &tile,
                          Value y, Value c, Value warp, Value g, Value t);
  /// After the last tile: the staging box outlives the last bulk store.
  void finish(Value ctid);

private:
  Value isStoreIssuer(Value ctid);
  void warpgroupBarrier(Value c);
};

/// Consumer warpgroups 1 and 2 of the plain, lifted and dense modes.
class TmaConsumer : PipelinePart {
public:
  TmaConsumer(TmaPipeline &k, StageRing &ring, TileScheduler &tiles)
      : PipelinePart(k), ring(ring), tiles(tiles), mma(k), epilogue(k) {}

  /// Consumer warpgroup `c` (0 or 1); `y` is the output of the register
  /// epilogue.
  void build(Value y, Value c);

private:
  template <typename StepFn>
  SmallVector<Value> mainloop(StepFn &tileStep, Value zero);

  StageRing &ring;
  TileScheduler &tiles;
  WgmmaStep mma;
  TileEpilogue epilogue;
};

/// Consumer warpgroups of the gathered modes.
class GatherConsumer : PipelinePart {
public:
  GatherConsumer(TmaPipeline &k, StageRing &ring, TileScheduler &tiles)
      : PipelinePart(k), ring(ring), tiles(tiles) {}

  void build(Value c);

private:
  StageRing &ring;
  TileScheduler &tiles;
};

} // namespace tma
} // namespace sgpu
} // namespace mlir

#endif // SPARSEOPT_LIB_CONVERSION_KERNELS_TMAPIPELINE_H
