//===- AttentionDecodeMmaKernel.cpp - split-KV decode on mma.sync ---------===//
//
// The split kernel of the decode attention (AttentionDecodeKernel.cpp) on
// tensor cores: the query heads that share a key/value head (GQA) are the
// rows of one m16n8k16 tile, so a warp computes the scores of all of them
// for 8 keys per instruction, and P V likewise, where the CUDA-core kernel
// spends about 85 instructions per key on dot products, shuffles and
// conversions (and cannot keep up with an H200's memory).
//
// Block: kWarps warps of one (sequence b, key/value head, split s), the
// split's keys as in the CUDA-core kernel (the s-th of `splits` ranges of
// the keys 0..p). Warp w walks the range's tiles of 16 keys w, w + kWarps,
// ... with its own online softmax (base 2, as flash attention); the warps
// then merge through shared memory into one partial state per head and
// split, and sgpu_attention_combine merges the splits as before.
//
// Operands come straight from global memory in 16-byte loads, no shared
// memory, using two freedoms of the products:
//  * S = Q K^T sums over the head dimension, so Q and K may take it in any
//    common order. Lane (g, c) (g = lane / 4, c = lane % 4) loads 8
//    consecutive columns 32j + 8c .. of its key row and of its query row:
//    their 4 words are the B (and A) fragment words of k-steps 2j and
//    2j + 1, where the fragment layout would ask for columns 2c, 2c + 1,
//    2c + 8, 2c + 9 of each 16-column step.
//  * O = P V: the output columns are the kernel's to place, so lane (g, c)
//    gives output column n = g of d-tile j the head column (D / 8) g + j,
//    and loads the D / 8 consecutive columns (D / 8) g .. of the four key
//    rows its fragments need (keys 2c, 2c + 1, 2c + 8, 2c + 9 of the tile).
//    Two of them form one B word (a byte permute per word).
// P never leaves registers: the S accumulators of the tile's two 8-key
// n-tiles are the A fragment of its 16-key k-step (flash attention 2).
// Q's rows g >= group are zero and rows 8..15 of every A tile are zero;
// the results of those rows are never read.
//
// Keys past the range are masked to -inf and read the range's last row
// (memory the cache holds, never used), so every load is in bounds and a
// lane's loads never depend on another lane's.
//
//===----------------------------------------------------------------------===//

#include "AttentionKernels.h"
#include "FloatMath.h"
#include "GPUKernel.h"
#include "IndexMath.h"
#include "MmaSync.h"
#include "ModelOpsToGPU.h"

#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::sgpu;

namespace {

constexpr int64_t kWarps = 4;
constexpr int64_t kKeyTile = 16;
// Blocks of kWarps warps resident per multiprocessor: ptxas keeps each
// thread within the 168 registers that three such blocks share (at four,
// 128, it spilled).
constexpr int64_t kBlocksPerSM = 3;

struct DecodeMmaBuilder : FloatMath {
  IndexMath im;
  int64_t batch, heads, kvHeads, group, capacity, d, splits;
  float scale;
  Type et;

  /// Elements [col, col + 8) of row `idx` of `mem` (16 bytes, aligned: rows
  /// start 16-byte aligned and col is a multiple of 8) as 4 words.
  SmallVector<Value, 4> load8(Value mem, SmallVector<Value> idx, Value col) {
    idx.push_back(col);
    Value v = vector::LoadOp::create(b, loc, VectorType::get({8}, et), mem, idx,
                                     /*nontemporal=*/false, llvm::Align(16));
    Value w = vector::BitCastOp::create(
        b, loc, VectorType::get({4}, b.getI32Type()), v);
    SmallVector<Value, 4> out;
    for (int64_t i = 0; i < 4; ++i)
      out.push_back(vector::ExtractOp::create(b, loc, w, ArrayRef<int64_t>{i}));
    return out;
  }

  /// The 16-bit element `e` (0..7) of a row's 4 words, as one i16 value.
  Value half(ArrayRef<Value> words, int64_t e) {
    Value w = words[e / 2];
    if (e % 2)
      w = arith::ShRUIOp::create(b, loc, w, im.i32(16));
    return arith::TruncIOp::create(b, loc, b.getI16Type(), w);
  }

  /// One word of two 16-bit elements, `lo` in the lower half.
  Value pack(Value lo, Value hi) {
    Type i32 = b.getI32Type();
    Value l = arith::ExtUIOp::create(b, loc, i32, lo);
    Value h = arith::ShLIOp::create(
        b, loc, arith::ExtUIOp::create(b, loc, i32, hi), im.i32(16));
    return arith::OrIOp::create(b, loc, l, h);
  }

  void build(gpu::GPUFuncOp func) {
    Value q = func.getArgument(0), k = func.getArgument(1),
          v = func.getArgument(2), positions = func.getArgument(3),
          pacc = func.getArgument(4), pml = func.getArgument(5);
    Value sml = func.getWorkgroupAttributions()[0],
          sacc = func.getWorkgroupAttributions()[1];
    Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
    Value lane = im.rem(tid, 32), warp = im.div(tid, 32);
    Value g = im.div(lane, 4), c = im.rem(lane, 4);
    Value bid = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
    Value split = im.rem(bid, splits), bk = im.div(bid, splits);
    Value kvh = im.rem(bk, kvHeads), bi = im.div(bk, kvHeads);
    Value zero = im.i32(0);
    Value negInf = f32(-std::numeric_limits<double>::infinity());

    // Keys [start, stop) of this split, as the CUDA-core kernel takes them.
    Value p = im.loadPosition(positions, bi, im.c(0));
    Value end = arith::MinSIOp::create(
        b, loc, im.c(capacity),
        arith::MaxSIOp::create(b, loc, im.add(p, 1), im.c(0)));
    Value chunk =
        arith::DivUIOp::create(b, loc, im.add(end, splits - 1), im.c(splits));
    Value start = arith::MulIOp::create(b, loc, split, chunk);
    Value stop = arith::MinSIOp::create(
        b, loc, end, arith::AddIOp::create(b, loc, start, chunk));
    Value keys = arith::MaxSIOp::create(b, loc, im.sub(stop, start), im.c(0));
    Value tiles = arith::DivUIOp::create(b, loc, im.add(keys, kKeyTile - 1),
                                         im.c(kKeyTile));
    Value last = arith::MaxSIOp::create(b, loc, im.sub(stop, im.c(1)), im.c(0));

    // The query rows: lane (g, c) holds head g's columns 32j + 8c .. + 8
    // (zero for g >= group); words 2h, 2h + 1 of chunk j are the A words
    // a0, a2 of k-step 2j + h.
    Value realRow = im.lt(g, group);
    Value h = im.add(im.mul(kvh, group),
                     arith::MinSIOp::create(b, loc, g, im.c(group - 1)));
    SmallVector<SmallVector<Value, 4>> qw;
    for (int64_t j = 0; j < d / 32; ++j) {
      SmallVector<Value, 4> words =
          load8(q, {bi, h, im.c(0)}, im.add(im.mul(c, 8), 32 * j));
      for (Value &w : words)
        w = arith::SelectOp::create(b, loc, realRow, w, zero);
      qw.push_back(words);
    }

    int64_t dTiles = d / 8;   // n-tiles of P V (8 output columns each)
    int64_t vChunks = d / 64; // 16-byte loads per V row per lane
    // State: m, l (the lane's part of the row sum), then the P V
    // accumulators c0, c1 of each d-tile.
    SmallVector<Value> init = {negInf, f32(0)};
    for (int64_t i = 0; i < 2 * dTiles; ++i)
      init.push_back(f32(0));
    Value scaleLog2 = f32(double(scale) * M_LOG2E);
    Value f0 = f32(0);

    auto loop = scf::ForOp::create(
        b, loc, warp, tiles, im.c(kWarps), init,
        [&](OpBuilder &, Location, Value t, ValueRange state) {
          Value key0 = im.add(start, im.mul(t, kKeyTile));
          auto rowOf = [&](Value key) {
            return arith::MinSIOp::create(b, loc, key, last).getResult();
          };
          // Loads first, all independent: K rows key0 + 8n + g (n-tile n),
          // V rows key0 + {2c, 2c + 1, 2c + 8, 2c + 9}.
          SmallVector<SmallVector<SmallVector<Value, 4>>> kw(2);
          for (int64_t n = 0; n < 2; ++n) {
            Value row = rowOf(im.add(im.add(key0, g), 8 * n));
            for (int64_t j = 0; j < d / 32; ++j)
              kw[n].push_back(
                  load8(k, {bi, kvh, row}, im.add(im.mul(c, 8), 32 * j)));
          }
          SmallVector<SmallVector<SmallVector<Value, 4>>> vrows; // [key][chunk]
          for (int64_t r : {0, 1, 8, 9}) {
            Value row = rowOf(im.add(im.add(key0, im.mul(c, 2)), r));
            SmallVector<SmallVector<Value, 4>> chunks;
            for (int64_t j = 0; j < vChunks; ++j)
              chunks.push_back(
                  load8(v, {bi, kvh, row}, im.add(im.mul(g, dTiles), 8 * j)));
            vrows.push_back(chunks);
          }

          // S for the two n-tiles: scores of head g, keys key0 + 8n + 2c
          // + e, in base 2; keys past the range are -inf.
          SmallVector<Value> sc; // [n][e]
          for (int64_t n = 0; n < 2; ++n) {
            SmallVector<Value, 4> acc = {f0, f0, f0, f0};
            for (int64_t j = 0; j < d / 32; ++j)
              for (int64_t hs = 0; hs < 2; ++hs)
                acc = mmaM16N8K16(
                    b, loc, et, {qw[j][2 * hs], zero, qw[j][2 * hs + 1], zero},
                    kw[n][j][2 * hs], kw[n][j][2 * hs + 1], acc);
            for (int64_t e = 0; e < 2; ++e) {
              Value key = im.add(im.add(key0, im.mul(c, 2)), 8 * n + e);
              sc.push_back(arith::SelectOp::create(
                  b, loc, im.slt(key, stop), mulf(acc[e], scaleLog2), negInf));
            }
          }
          // The online softmax of row g over the tile (the quad's lanes
          // hold its 16 scores, 4 each). key0 < stop, so the row maximum is
          // finite from the first tile on.
          Value mt = sc[0];
          for (int64_t i = 1; i < 4; ++i)
            mt = maxf(mt, sc[i]);
          Value mNew = maxf(state[0], quadReduce(b, loc, mt, /*max=*/true));
          Value corr = exp2Above(state[0], mNew);
          SmallVector<Value> pr;
          Value lNew = mulf(state[1], corr);
          for (Value s : sc) {
            pr.push_back(exp2Approx(subf(s, mNew)));
            lNew = addf(lNew, pr.back());
          }
          SmallVector<Value> next = {mNew, lNew};
          // O = O * corr + P V: A = P (rows g; keys 2c, 2c + 1 | 2c + 8,
          // 2c + 9), B = V (keys as A's, output column g of d-tile jd =
          // head column dTiles * g + jd).
          Value a0 = packF32Pair(b, loc, et, pr[0], pr[1]),
                a2 = packF32Pair(b, loc, et, pr[2], pr[3]);
          for (int64_t jd = 0; jd < dTiles; ++jd) {
            int64_t chunkIdx = jd / 8, e = jd % 8;
            auto elem = [&](int64_t r) { return half(vrows[r][chunkIdx], e); };
            Value b0 = pack(elem(0), elem(1)), b1 = pack(elem(2), elem(3));
            SmallVector<Value, 4> acc = {mulf(state[2 + 2 * jd], corr),
                                         mulf(state[3 + 2 * jd], corr), f0, f0};
            acc = mmaM16N8K16(b, loc, et, {a0, zero, a2, zero}, b0, b1, acc);
            next.push_back(acc[0]);
            next.push_back(acc[1]);
          }
          scf::YieldOp::create(b, loc, next);
        });

    // The warps' states to shared memory in mergeDecodeParts' layout (part
    // = warp): m and the quad's l from lane c = 0 of each real row, and the
    // accumulators, c0 / c1 of d-tile jd being head columns
    // dTiles * 2c + jd and dTiles * (2c + 1) + jd.
    Value lRow = quadReduce(b, loc, loop.getResult(1), /*max=*/false);
    im.ifThen(realRow, [&] {
      Value at = im.add(im.mul(warp, group), g);
      im.ifThen(
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, c, im.c(0)),
          [&] {
            memref::StoreOp::create(b, loc, loop.getResult(0), sml,
                                    im.mul(at, 2));
            memref::StoreOp::create(b, loc, lRow, sml,
                                    im.add(im.mul(at, 2), 1));
          });
      for (int64_t jd = 0; jd < dTiles; ++jd)
        for (int64_t e = 0; e < 2; ++e) {
          Value col = im.add(im.mul(im.add(im.mul(c, 2), e), dTiles), jd);
          memref::StoreOp::create(b, loc, loop.getResult(2 + 2 * jd + e), sacc,
                                  im.add(im.mul(at, d), col));
        }
    });
    gpu::BarrierOp::create(b, loc);
    mergeDecodeParts(b, loc, tid, kWarps * 32, kWarps, group, heads, d, splits,
                     sml, sacc, pacc, pml, bi, kvh, split);
  }
};

} // namespace

std::string mlir::sgpu::whyNoAttentionDecodeMma(AttentionOp op) {
  std::string why = whyNoAttentionDecode(op);
  if (!why.empty())
    return why;
  auto qt = op.getQuery().getType();
  Type et = qt.getElementType();
  if (!et.isF16() && !et.isBF16())
    return "tensor cores take f16 or bf16 operands here";
  int64_t d = qt.getDimSize(3);
  if (d != 64 && d != 128)
    return "the head size must be 64 or 128 (got " + std::to_string(d) + ")";
  int64_t group = qt.getDimSize(1) / op.getKey().getType().getDimSize(1);
  if (group > 8)
    return std::to_string(group) +
           " query heads per key/value head exceed the 8 rows a tile gives "
           "them";
  return "";
}

int64_t mlir::sgpu::attentionDecodeMmaSplits(AttentionOp op, int64_t numSMs) {
  if (int64_t s = attentionConfig(op).getSplits())
    return s;
  auto qt = op.getQuery().getType(), kt = op.getKey().getType();
  int64_t rows = qt.getDimSize(0) * kt.getDimSize(1);
  int64_t slots = kBlocksPerSM * numSMs;
  // One wave of blocks where the rows leave room for it; where they fill
  // a wave already, at least two waves, so the last one is not mostly
  // empty
  // (Llama-3-8B shape on the H100, one process: batch 64 (512 rows) 182 us
  // with 2 splits, 194 with 1; batch 8 (64 rows) 32.3 us with the one
  // wave's 6, 32.7 with 3, 35.1 with 12).
  int64_t splits = rows >= slots ? (2 * slots + rows - 1) / rows : slots / rows;
  // Blocks long enough that each warp walks at least 4 tiles at full
  // capacity: a short block's merge and partial state cost more than its
  // keys (batch 1 (8 rows): 10.2 us with 16 splits, 16.9 with the one
  // wave's 49).
  int64_t most = kt.getDimSize(2) / (4 * kWarps * kKeyTile);
  return std::max<int64_t>(1, std::min(splits, most));
}

gpu::GPUFuncOp mlir::sgpu::buildAttentionDecodeMmaSplit(
    OpBuilder &kb, Location loc, AttentionOp op, KernelSink &sink,
    ArrayRef<Type> argTypes, int64_t splits) {
  auto qt = op.getQuery().getType(), kt = op.getKey().getType();
  DecodeMmaBuilder builder{{kb, loc},
                           IndexMath{kb, loc},
                           qt.getDimSize(0),
                           qt.getDimSize(1),
                           kt.getDimSize(1),
                           qt.getDimSize(1) / kt.getDimSize(1),
                           kt.getDimSize(2),
                           qt.getDimSize(3),
                           splits,
                           op.getScale().convertToFloat(),
                           qt.getElementType()};
  Type f32 = kb.getF32Type();
  int64_t threads = kWarps * 32;
  auto func = createKernel(
      kb, loc, sink.symbols, sink.name("sgpu_attention_split_mma"), argTypes,
      {workgroupBuffer(kb, kWarps * builder.group * 2, f32),
       workgroupBuffer(kb, kWarps * builder.group * builder.d, f32)},
      threads);
  func->setAttr("nvvm.minctasm", kb.getI32IntegerAttr(kBlocksPerSM));
  builder.build(func);
  finishKernel(kb, loc, func);
  return func;
}

int64_t mlir::sgpu::attentionDecodeMmaThreads() { return kWarps * 32; }
