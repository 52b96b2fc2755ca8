//===- LiftToGPU.cpp - sgpu.lift as a generated gather kernel -------------===//
//
// The activation lift of the sliding-window decomposition as its own kernel:
// out[m, c'] = x[m, src(c')] with src(g*4(N-1) + 4j + l) = g*2N + 2j + l (or
// the tiled order's map, SlideIndex.h), and zero where src >= K. This is the
// separate pass over the activations that the fused lift (inside the GEMM's
// operand loads) is meant to replace; it is the correct, simple path every
// chip can run. Feeding the TMA spmm, it writes rows padded to the weight's
// padded K (lowerLiftToGPUPadded): the formula already gives zeros past K',
// and the 64-byte row pitch keeps the TMA loads of the GEMM at full speed.
//
// The kernel is a pure copy, so it is bound by memory traffic and by how
// many memory instructions carry it. Lifted columns come in chunks of 4
// (c' = 4*chunk + l), and in both window orders a chunk copies 4
// CONSECUTIVE source columns starting at an EVEN one (src = g*2N + 2j + l:
// a window is one chunk, wherever the order puts it). So one thread writes
// whole chunks: it computes the source index once per chunk, loads the
// chunk as two 32-bit words (source columns src, src+1 and src+2, src+3;
// ld.global.b32) and writes the chunk with one vector store. Each thread
// writes two adjacent chunks (16 bytes, st.global.v4.b32) where the row
// pitch is a multiple of 8 elements, else one (8 bytes, st.global.v2.b32);
// thread t writes the t-th 16 (8) bytes of the flat [M, pitch] buffer, so
// a warp's store covers 512 (256) contiguous bytes, fully coalesced. The
// loads stay 4-byte words: a chunk's source start is only 4-byte aligned
// (src = 2 mod 4 for odd windows); neighbouring threads read overlapping
// or adjacent words, which the L1 merges, so DRAM reads each source byte
// about once. Measured on an H200 (6:8, f16, M = 4096, K = 14336 ->
// K' = 21504, either order): 75 us, 3.9 TB/s, against 256-274 us for one
// thread per element and 72 us for a torch device copy of the same bytes;
// one chunk per thread took 86-88 us, and two 16-byte runs per thread (32
// lanes apart) were within 1% of one, so the kernel keeps one.
//
// Alignment: buffers are 16-byte aligned (the runtime checks it,
// docs/runtime.md), a source word starts at element row*K + src + 2w,
// even when K is, and a run at row*pitch + col0, a multiple of its
// 4 * chunks elements: hence the alignments the loads and stores claim.
//
// Zeros: with K even a word's two columns src+2w, src+2w+1 (src+2w even)
// are both below K or both not, so each word is selected against zero on
// its own (a chunk straddles K when K % 2N != 0; the padded pitch's
// columns past K' and the tiled order's groups past K read zeros). Words
// past K load from column 0 (a valid address) before the select; where no
// lifted column can have src >= K (pitch = K', every group full) the
// selects are left out.
//
// The split lift (lowerLiftWindowsToGPU; 6:8 in the order of tile_groups
// 16, for the TMA kernel that loads X itself): in that order a tile's
// lifted columns 0..127 are its 128 columns of X in place, so only the
// shared windows (window 1 of each group, columns 8g+2 .. 8g+5) need a
// copy. The same kernel writes them as W1 [M, K'/3], W1[m, 4g + l] =
// x[m, 8g + 2 + l]: a third of the lifted bytes, each chunk again two
// 4-byte words at an even column.
//
// The one-thread-per-element form stays as the fallback for shapes where
// the word form's alignment does not hold: an odd K (source rows are then
// not 4-byte aligned, and a word could straddle K) or a lifted pitch that
// is not a multiple of 4 (never produced today: K' = G*4(N-1) and the
// padded pitch is a multiple of 32), and for element types other than
// 16-bit (the op takes f16 and bf16 only, so this is defensive).
//
//===----------------------------------------------------------------------===//

#include "LiftToGPU.h"
#include "GPUKernel.h"
#include "IndexMath.h"
#include "SlideIndex.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace mlir::sgpu;

static constexpr int64_t kThreads = 256;

namespace {
/// What a thread of the lift kernel writes.
struct LiftMapping {
  /// Lifted chunks (4 columns) per thread; 0: one element per thread (the
  /// scalar fallback).
  int64_t chunks = 0;
  /// Elements per thread.
  int64_t elements() const { return chunks ? 4 * chunks : 1; }
};
} // namespace

/// The word form needs 16-bit elements, an even K (every chunk's two words
/// 4-byte aligned, each all inside or all outside K) and whole chunks per
/// row (an 8-byte aligned store per chunk).
static LiftMapping chooseMapping(Type et, int64_t k, int64_t pitch) {
  if (!et.isIntOrFloat() || et.getIntOrFloatBitWidth() != 16 || k % 2 != 0 ||
      pitch % 4 != 0)
    return {};
  return {pitch % 8 == 0 ? 2 : 1};
}

/// Which source column an output column copies: the lift's map, or for
/// the split lift's shared windows 8 * (col / 4) + 2 + col % 4.
struct SourceMap {
  int64_t fam = 0, tileGroups = 0;
  bool windowsOnly = false;
  Value operator()(IndexMath &im, Value col) const {
    if (!windowsOnly)
      return liftedSourceIndex(im, col, fam, tileGroups);
    return im.add(im.add(im.mul(im.div(col, 4), 8), 2), im.rem(col, 4));
  }
};

/// The scalar body: thread `t` < M * pitch writes out[t / pitch, t % pitch].
static void buildElementBody(IndexMath &im, Value x, Value y, Value t,
                             int64_t k, int64_t pitch, const SourceMap &map,
                             Type et) {
  OpBuilder &b = im.b;
  Location loc = im.loc;
  Value row = im.div(t, pitch), col = im.rem(t, pitch);
  Value src = map(im, col);
  Value inK = im.lt(src, k);
  Value v = memref::LoadOp::create(b, loc, x, ValueRange{row, im.clamp(src, inK)});
  Value zero = arith::ConstantOp::create(b, loc, et, b.getZeroAttr(et));
  v = arith::SelectOp::create(b, loc, inK, v, zero);
  memref::StoreOp::create(b, loc, v, y, ValueRange{row, col});
}

/// The chunk body: thread `t` < M * pitch / (4 * chunks) writes the
/// `4 * chunks` lifted columns from col0 = (t * 4 * chunks) % pitch of row
/// (t * 4 * chunks) / pitch: per chunk two aligned 32-bit loads (vector<2x
/// et>) of the source row, then one vector store of the whole run.
/// `mayPad`: some lifted column's source may be >= K (select zeros).
static void buildChunkBody(IndexMath &im, Value x, Value y, Value t, int64_t k,
                           int64_t pitch, const SourceMap &map, Type et,
                           int64_t chunks, bool mayPad) {
  OpBuilder &b = im.b;
  Location loc = im.loc;
  int64_t perRow = pitch / (4 * chunks);
  Value row = im.div(t, perRow);
  Value col0 = im.mul(im.rem(t, perRow), 4 * chunks);
  auto wordType = VectorType::get({2}, et);
  Value zeroWord = arith::ConstantOp::create(
      b, loc, wordType, DenseElementsAttr::get(wordType, b.getZeroAttr(et)));
  // The words in column order: chunk c's words 2c and 2c+1.
  SmallVector<Value, 4> words;
  for (int64_t c = 0; c < chunks; ++c) {
    // Lane 0 of the chunk: the chunk's first (even) source column.
    Value src = map(im, im.add(col0, 4 * c));
    for (int64_t w = 0; w < 2; ++w) {
      Value s = im.add(src, 2 * w);
      Value inK = mayPad ? im.lt(s, k) : Value();
      Value v = vector::LoadOp::create(b, loc, wordType, x,
                                       ValueRange{row, im.clamp(s, inK)},
                                       /*nontemporal=*/false, llvm::Align(4));
      if (inK)
        v = arith::SelectOp::create(b, loc, inK, v, zeroWord);
      words.push_back(v);
    }
  }
  // One vector of the run: (w0 w1) for one chunk, ((w0 w1) (w2 w3)) for
  // two.
  auto concat = [&](Value lo, Value hi) -> Value {
    int64_t n = cast<VectorType>(lo.getType()).getNumElements();
    return vector::ShuffleOp::create(b, loc, lo, hi,
                                     llvm::to_vector(llvm::seq<int64_t>(2 * n)));
  };
  Value run = concat(words[0], words[1]);
  if (chunks == 2)
    run = concat(run, concat(words[2], words[3]));
  // 16-bit elements: 8 (16) bytes, aligned as the pitch and col0 are
  // multiples of 4 * chunks elements.
  vector::StoreOp::create(b, loc, run, y, ValueRange{row, col0},
                          /*nontemporal=*/false, llvm::Align(8 * chunks));
}

/// Builds the gather kernel `sgpu_lift_<n>` in the sink and its launch at
/// `host` into a new `M x pitch` buffer (pitch 0: the lifted width, or
/// with `windowsOnly` the shared-window width K'/3), which it returns.
static Value buildLift(OpBuilder &host, LiftOp op, int64_t pitch,
                       KernelSink &sink, bool windowsOnly = false) {
  Location loc = op.getLoc();
  auto xt = cast<RankedTensorType>(op.getInput().getType());
  auto lifted = cast<RankedTensorType>(op.getResult().getType());
  int64_t liftedK = lifted.getDimSize(1);
  if (pitch == 0)
    pitch = windowsOnly ? liftedK / 3 : liftedK;
  Type et = xt.getElementType();
  auto yt = RankedTensorType::get({xt.getDimSize(0), pitch}, et);
  int64_t m = xt.getDimSize(0), k = xt.getDimSize(1);
  int64_t fam = op.getPattern().getFamilyN();
  int64_t tileGroups = getTileGroups(op);
  LiftMapping map = chooseMapping(et, k, pitch);
  SourceMap source{fam, tileGroups, windowsOnly};
  // One thread per `map.elements()` consecutive elements of the flat
  // M x pitch buffer (pitch is a multiple of it).
  int64_t items = m * pitch / map.elements();
  // Every lifted column copies a column below K when the pitch is K' and
  // the K' columns hold only whole groups of K (K = groups * 2N).
  bool mayPad = windowsOnly ? pitch / 4 * 8 != k
                            : pitch != liftedK ||
                                  liftedK / (4 * (fam - 1)) * 2 * fam != k;
  auto xm = MemRefType::get(xt.getShape(), et);
  auto ym = MemRefType::get(yt.getShape(), et);

  // The kernel.
  OpBuilder b = sink.builder();
  auto func = createKernel(b, loc, sink.symbols, sink.name("sgpu_lift"),
                           {xm, ym}, {}, kThreads);
  Block &entry = func.getBody().front();
  IndexMath im{b, loc};
  Value x = entry.getArgument(0), y = entry.getArgument(1);
  Value tid = im.add(im.mul(gpu::BlockIdOp::create(b, loc, gpu::Dimension::x),
                            kThreads),
                     gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x));
  im.ifThen(im.lt(tid, items), [&] {
    if (map.chunks)
      buildChunkBody(im, x, y, tid, k, pitch, source, et, map.chunks, mayPad);
    else
      buildElementBody(im, x, y, tid, k, pitch, source, et);
  });
  b.setInsertionPointToEnd(&entry);
  gpu::ReturnOp::create(b, loc);

  // The host launch.
  Value xb = bufferization::ToBufferOp::create(host, loc, xm, op.getInput(),
                                               host.getUnitAttr());
  Value yb = memref::AllocOp::create(host, loc, ym);
  launchKernel(host, loc, func, (items + kThreads - 1) / kThreads, kThreads,
               ValueRange{xb, yb});
  return yb;
}

namespace {

/// sgpu.lift: the launch of its gather kernel, or nothing when the spmm it
/// feeds lowered it into its own kernel or buffer.
struct LiftToGPU : OpConversionPattern<LiftOp> {
  KernelSink &sink;
  const llvm::SmallPtrSetImpl<Operation *> &loweredWithSpmm;
  LiftToGPU(MLIRContext *ctx, KernelSink &sink,
            const llvm::SmallPtrSetImpl<Operation *> &loweredWithSpmm)
      : OpConversionPattern(ctx), sink(sink),
        loweredWithSpmm(loweredWithSpmm) {}

  LogicalResult
  matchAndRewrite(LiftOp op, OpAdaptor,
                  ConversionPatternRewriter &rewriter) const override {
    if (loweredWithSpmm.contains(op)) {
      rewriter.eraseOp(op);
      return success();
    }
    Value yb = buildLift(rewriter, op, 0, sink);
    rewriter.replaceOpWithNewOp<bufferization::ToTensorOp>(
        op, op.getResult().getType(), yb, rewriter.getUnitAttr(),
        rewriter.getUnitAttr());
    return success();
  }
};

} // namespace

void mlir::sgpu::populateLiftToGPUPatterns(
    RewritePatternSet &patterns, KernelSink &sink,
    const llvm::SmallPtrSetImpl<Operation *> &loweredWithSpmm) {
  patterns.add<LiftToGPU>(patterns.getContext(), sink, loweredWithSpmm);
}

Value mlir::sgpu::lowerLiftToGPUPadded(OpBuilder &host, LiftOp op,
                                       int64_t pitch, KernelSink &sink) {
  return buildLift(host, op, pitch, sink);
}

Value mlir::sgpu::lowerLiftWindowsToGPU(OpBuilder &host, LiftOp op,
                                        KernelSink &sink) {
  assert(op.getPattern().getM() == 8 &&
         getTileGroups(op) == kSplitLiftTileGroups &&
         "the split lift is the 6:8 order of 16 groups'");
  return buildLift(host, op, 0, sink, /*windowsOnly=*/true);
}
