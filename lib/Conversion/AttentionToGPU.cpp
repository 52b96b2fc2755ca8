//===- AttentionToGPU.cpp - sgpu.attention as a generated kernel ----------===//
//
// A first, correct kernel for every sgpu.attention the verifier accepts
// (any dtype, GQA, causal, i1 or float masks broadcast over B x H x Sq x
// Sk, per-query positions over a KV cache), with head sizes up to 256.
// Mapping: one warp per query row (batch b, head h, position i),
// `rows_per_block` warps per block (#sgpu.attention_config; default 4, 1
// over a KV cache). Lane l holds q[c] and the f32 accumulator for the
// columns c = l + 32a. The warp walks the keys j visible to the row once,
// with the online softmax of flash attention:
//
//   s    = scale * sum_c q[c] k[j, c]        (one butterfly sum per key)
//   m'   = max(m, s);  corr = e^(m - m');  p = e^(s - m')
//   l    = l * corr + p;  acc = acc * corr + p * v[j, :]
//
// and writes acc / l. A causal row stops at key i + (Sk - Sq), so the
// masked half of the keys is never read. A row whose every key is masked
// gives 0/0 = NaN, as the CPU reference and torch do.
//
// This kernel runs on CUDA cores and reads K and V once per query row
// (from L2 for all but the first row of a block): it is the correctness
// baseline, taken for what the tensor-core kernel (AttentionMmaKernel.cpp)
// does not cover: f32, explicit masks, other head sizes.
// resolveAttentionConfig picks the kernel (#sgpu.attention_config `kernel`:
// auto takes the split-KV decode kernels, then cuDNN's fused attention
// (AttentionToLibrary.cpp), then tensor cores, wherever they apply) and this
// pattern builds the one it names.
//
//===----------------------------------------------------------------------===//

#include "AttentionKernels.h"
#include "FloatMath.h"
#include "GPUKernel.h"
#include "IndexMath.h"
#include "ModelOpsToGPU.h"

#include "mlir/Dialect/Math/IR/Math.h"

#include <limits>

using namespace mlir;
using namespace mlir::sgpu;

namespace {

constexpr int64_t kWarp = 32;
constexpr int64_t kMaxHeadSize = 256;

/// Builds the kernel body; see the file comment.
struct AttentionKernelBuilder : FloatMath {
  IndexMath im;
  AttentionOp op;
  int64_t batch, heads, sq, d, group, sk, dv, warps;
  float scale;

  AttentionKernelBuilder(OpBuilder &b, Location loc, AttentionOp op,
                         int64_t warps)
      : FloatMath{b, loc}, im{b, loc}, op(op), warps(warps) {
    auto qt = op.getQuery().getType(), kt = op.getKey().getType(),
         vt = op.getValue().getType();
    batch = qt.getDimSize(0);
    heads = qt.getDimSize(1);
    sq = qt.getDimSize(2);
    d = qt.getDimSize(3);
    group = heads / kt.getDimSize(1);
    sk = kt.getDimSize(2);
    dv = vt.getDimSize(3);
    scale = op.getScale().convertToFloat();
  }

  /// `mem[idx..., c]` in f32 for c = lane + 32a, 0 past `n` columns.
  Value loadColumn(Value mem, SmallVector<Value> idx, Value lane, int64_t a,
                   int64_t n) {
    Value c = im.add(lane, a * kWarp);
    Value in = (a + 1) * kWarp <= n ? Value() : im.lt(c, n);
    idx.push_back(im.clamp(c, in));
    Value v = im.loadF32(mem, idx);
    return in ? arith::SelectOp::create(b, loc, in, v, f32(0)).getResult()
              : v;
  }

  void build(gpu::GPUFuncOp func) {
    Value q = func.getArgument(0), k = func.getArgument(1),
          v = func.getArgument(2);
    // Arguments: q, k, v, then the mask or the positions when present, then
    // the result.
    Value extra = (op.getMask() || op.getPositions()) ? func.getArgument(3)
                                                      : Value();
    Value mask = op.getMask() ? extra : Value();
    Value positions = op.getPositions() ? extra : Value();
    Value out = func.getArgument(extra ? 4 : 3);
    Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
    Value lane = im.rem(tid, kWarp), warp = im.div(tid, kWarp);
    Value row = im.add(
        im.mul(gpu::BlockIdOp::create(b, loc, gpu::Dimension::x), warps),
        warp);
    int64_t nq = (d + kWarp - 1) / kWarp, nv = (dv + kWarp - 1) / kWarp;
    Value negInf = f32(-std::numeric_limits<double>::infinity());

    im.ifThen(im.lt(row, batch * heads * sq), [&] {
      Value i = im.rem(row, sq), bh = im.div(row, sq);
      Value h = im.rem(bh, heads), bi = im.div(bh, heads);
      Value hk = im.div(h, group);
      SmallVector<Value> qv;
      for (int64_t a = 0; a < nq; ++a)
        qv.push_back(loadColumn(q, {bi, h, i}, lane, a, d));
      // Keys [0, end): all of them, or up to i + (Sk - Sq) when causal.
      Value end = im.c(sk);
      if (positions) {
        // A KV cache: keys 0..positions[b, i]; none for padding (< 0).
        Value last = im.add(im.loadPosition(positions, bi, i), 1);
        end = arith::MinSIOp::create(
            b, loc, im.c(sk), arith::MaxSIOp::create(b, loc, last, im.c(0)));
      } else if (op.getCausal()) {
        Value last = arith::AddIOp::create(b, loc, i, im.c(sk - sq + 1));
        end = arith::MinSIOp::create(
            b, loc, im.c(sk), arith::MaxSIOp::create(b, loc, last, im.c(0)));
      }
      SmallVector<Value> init = {negInf, f32(0)};
      for (int64_t a = 0; a < nv; ++a)
        init.push_back(f32(0));
      auto loop = scf::ForOp::create(
          b, loc, im.c(0), end, im.c(1), init,
          [&](OpBuilder &, Location, Value j, ValueRange state) {
            Value dot = f32(0);
            for (int64_t a = 0; a < nq; ++a)
              dot = addf(dot,
                         mulf(qv[a], loadColumn(k, {bi, hk, j}, lane, a, d)));
            Value s = mulf(warpAllSum(b, loc, dot), f32(scale));
            if (mask)
              s = applyMask(mask, s, {bi, h, i, j}, negInf);
            Value m = state[0];
            Value mNew = arith::MaximumFOp::create(b, loc, m, s);
            // Nothing visible yet: keep the exponents finite (corr = 1).
            Value none = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ,
                                               mNew, negInf);
            Value base = arith::SelectOp::create(b, loc, none, f32(0), mNew);
            Value corr = exp(arith::SubFOp::create(b, loc, m, base));
            Value p = exp(arith::SubFOp::create(b, loc, s, base));
            SmallVector<Value> next = {mNew, addf(mulf(state[1], corr), p)};
            for (int64_t a = 0; a < nv; ++a)
              next.push_back(
                  addf(mulf(state[2 + a], corr),
                       mulf(p, loadColumn(v, {bi, hk, j}, lane, a, dv))));
            scf::YieldOp::create(b, loc, next);
          });
      Value l = loop.getResult(1);
      for (int64_t a = 0; a < nv; ++a) {
        Value c = im.add(lane, a * kWarp);
        Value result = arith::DivFOp::create(b, loc, loop.getResult(2 + a), l);
        if (positions) // a padding row (no key) is zeros, not 0/0
          result = arith::SelectOp::create(
              b, loc,
              arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sgt, end,
                                    im.c(0)),
              result, f32(0));
        auto store = [&] { im.storeRounded(result, out, {bi, h, i, c}); };
        im.ifThen((a + 1) * kWarp <= dv ? Value() : im.lt(c, dv), store);
      }
    });
  }

  /// The score `s` of position (b, h, i, j) under the mask, broadcast from
  /// its trailing dimensions: a false i1 removes the key, a float is added.
  Value applyMask(Value mask, Value s, ArrayRef<Value> full, Value negInf) {
    auto mt = cast<MemRefType>(mask.getType());
    SmallVector<Value> idx;
    for (int64_t a = 0; a < mt.getRank(); ++a) {
      int64_t dim = 4 - mt.getRank() + a;
      idx.push_back(mt.getDimSize(a) == 1 ? im.c(0) : full[dim]);
    }
    Value m = memref::LoadOp::create(b, loc, mask, idx);
    if (mt.getElementType().isInteger(1))
      return arith::SelectOp::create(b, loc, m, s, negInf);
    return addf(s, im.toF32(m));
  }
};

struct AttentionToGPU : OpConversionPattern<AttentionOp> {
  KernelSink &sink;
  AttentionToGPU(MLIRContext *ctx, KernelSink &sink)
      : OpConversionPattern(ctx), sink(sink) {}

  LogicalResult
  matchAndRewrite(AttentionOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    std::string why = whyNoAttentionKernel(op);
    if (!why.empty())
      return rewriter.notifyMatchFailure(op, why);
    // The kernels read only the op's configuration, resolved first: an op
    // that arrives without one is configured as sgpu-select-kernels would,
    // and what a hand-written one leaves open (auto, 0) is chosen.
    AttentionConfigAttr config =
        resolveAttentionConfig(op, sink.budget.numSMs, sink.attentionLibrary);
    if (config != op->getAttr(SGPUDialect::kConfigAttr))
      rewriter.modifyOpInPlace(
          op, [&] { op->setAttr(SGPUDialect::kConfigAttr, config); });
    AttentionKernelKind kernel = config.getKernel();
    Location loc = op.getLoc();
    auto rt = op.getResult().getType();
    int64_t warps = config.getRowsPerBlock();
    int64_t rows = rt.getDimSize(0) * rt.getDimSize(1) * rt.getDimSize(2);
    Value out = memref::AllocOp::create(rewriter, loc, memrefTypeOf(rt));
    if (kernel == AttentionKernelKind::library) {
      buildAttentionCall(rewriter, loc, op,
                         {readBuffer(rewriter, loc, adaptor.getQuery()),
                          readBuffer(rewriter, loc, adaptor.getKey()),
                          readBuffer(rewriter, loc, adaptor.getValue())},
                         out);
    } else if (rt.getNumElements() != 0 &&
               (kernel == AttentionKernelKind::decode ||
                kernel == AttentionKernelKind::decode_tensor_cores)) {
      buildAttentionDecode(
          rewriter, loc, op, sink,
          {readBuffer(rewriter, loc, adaptor.getQuery()),
           readBuffer(rewriter, loc, adaptor.getKey()),
           readBuffer(rewriter, loc, adaptor.getValue()),
           readBuffer(rewriter, loc, adaptor.getPositions())},
          out);
    } else if (rt.getNumElements() != 0 &&
               kernel == AttentionKernelKind::tensor_cores) {
      OpBuilder kb = sink.builder();
      SmallVector<Type> argTypes = {memrefTypeOf(op.getQuery().getType()),
                                    memrefTypeOf(op.getKey().getType()),
                                    memrefTypeOf(op.getValue().getType()),
                                    memrefTypeOf(rt)};
      SmallVector<Value> args = {readBuffer(rewriter, loc, adaptor.getQuery()),
                                 readBuffer(rewriter, loc, adaptor.getKey()),
                                 readBuffer(rewriter, loc, adaptor.getValue()),
                                 out};
      int64_t threads = 32 * attentionMmaWarps(op);
      auto func = createKernel(kb, loc, sink.symbols,
                               sink.name("sgpu_attention_mma"), argTypes, {},
                               threads);
      // `min_blocks_per_sm`: ptxas caps the registers so that many blocks
      // fit on a multiprocessor (nvvm.minctasm).
      if (int64_t minBlocks = config.getMinBlocksPerSm())
        func->setAttr("nvvm.minctasm", kb.getI32IntegerAttr(minBlocks));
      buildAttentionMmaKernel(kb, loc, op, func);
      finishKernel(kb, loc, func);
      launchKernel(rewriter, loc, func, attentionMmaBlocks(op), threads, args,
                   attentionMmaSharedBytes(op));
    } else if (rt.getNumElements() != 0) {
      OpBuilder kb = sink.builder();
      SmallVector<Type> argTypes = {memrefTypeOf(op.getQuery().getType()),
                                    memrefTypeOf(op.getKey().getType()),
                                    memrefTypeOf(op.getValue().getType())};
      SmallVector<Value> args = {readBuffer(rewriter, loc, adaptor.getQuery()),
                                 readBuffer(rewriter, loc, adaptor.getKey()),
                                 readBuffer(rewriter, loc, adaptor.getValue())};
      if (Value mask = adaptor.getMask()) {
        argTypes.push_back(memrefTypeOf(mask.getType()));
        args.push_back(readBuffer(rewriter, loc, mask));
      } else if (Value positions = adaptor.getPositions()) {
        argTypes.push_back(memrefTypeOf(positions.getType()));
        args.push_back(readBuffer(rewriter, loc, positions));
      }
      argTypes.push_back(memrefTypeOf(rt));
      args.push_back(out);
      auto func = createKernel(kb, loc, sink.symbols,
                               sink.name("sgpu_attention"), argTypes, {},
                               warps * kWarp);
      AttentionKernelBuilder(kb, loc, op, warps).build(func);
      finishKernel(kb, loc, func);
      launchKernel(rewriter, loc, func, (rows + warps - 1) / warps,
                   warps * kWarp, args);
    }
    rewriter.replaceOpWithNewOp<bufferization::ToTensorOp>(
        op, rt, out, /*restrict=*/rewriter.getUnitAttr(),
        /*writable=*/rewriter.getUnitAttr());
    return success();
  }
};

} // namespace

AttentionConfigAttr mlir::sgpu::resolveAttentionConfig(AttentionOp op,
                                                       int64_t numSMs,
                                                       bool allowLibrary) {
  AttentionConfigAttr config = attentionConfig(op);
  AttentionKernelKind kernel = config.getKernel();
  // auto: the split-KV decode kernels wherever they apply, else cuDNN's
  // fused attention (unless a parameter of a generated kernel was given),
  // else tensor cores wherever they apply, else CUDA cores.
  bool generatedKernelConfigured = config.getWarps() != 4 ||
                                   config.getMinBlocksPerSm() ||
                                   config.getRowsPerBlock();
  // A seq_major op has the library or nothing (whyNoAttentionKernel says
  // why).
  if (kernel == AttentionKernelKind::chosen && op.getSeqMajor())
    kernel = allowLibrary ? AttentionKernelKind::library
                          : AttentionKernelKind::cuda_cores;
  // The tensor-core decode kernel unless a parameter of the CUDA-core one
  // was given.
  bool cudaCoreDecodeConfigured = config.getUnroll() || config.getLanesPerKey();
  if (kernel == AttentionKernelKind::chosen && !cudaCoreDecodeConfigured &&
      whyNoAttentionDecodeMma(op).empty())
    kernel = AttentionKernelKind::decode_tensor_cores;
  if (kernel == AttentionKernelKind::chosen)
    kernel = whyNoAttentionDecode(op).empty() ? AttentionKernelKind::decode
             : allowLibrary && !generatedKernelConfigured &&
                     whyNoAttentionLibrary(op).empty()
                 ? AttentionKernelKind::library
             : whyNoAttentionMma(op).empty() ? AttentionKernelKind::tensor_cores
                                             : AttentionKernelKind::cuda_cores;
  MLIRContext *ctx = op.getContext();
  switch (kernel) {
  case AttentionKernelKind::decode: {
    AttentionDecodeChoice c{0, 0, 0};
    if (op.getResult().getType().getNumElements() != 0)
      c = chooseAttentionDecode(op, numSMs);
    return AttentionConfigAttr::get(ctx, kernel, 0, 4, 0, c.splits, c.unroll,
                                    c.lanesPerKey);
  }
  case AttentionKernelKind::decode_tensor_cores: {
    int64_t splits = 0;
    if (op.getResult().getType().getNumElements() != 0)
      splits = attentionDecodeMmaSplits(op, numSMs);
    return AttentionConfigAttr::get(ctx, kernel, 0, 4, 0, splits, 0, 0);
  }
  case AttentionKernelKind::library:
    return AttentionConfigAttr::get(ctx, kernel, 0, 4, 0, 0, 0, 0);
  case AttentionKernelKind::tensor_cores:
    return AttentionConfigAttr::get(ctx, kernel, 0, config.getWarps(),
                                    config.getMinBlocksPerSm(), 0, 0, 0);
  default: {
    // Over a KV cache a row walks up to the whole cache: one row per block
    // spreads the rows over the most multiprocessors.
    int64_t rows = config.getRowsPerBlock();
    if (!rows)
      rows = op.getPositions() ? 1 : 4;
    return AttentionConfigAttr::get(ctx, AttentionKernelKind::cuda_cores, rows,
                                    4, 0, 0, 0, 0);
  }
  }
}

std::string mlir::sgpu::whyNoAttentionKernel(AttentionOp op) {
  int64_t d = op.getQuery().getType().getDimSize(3),
          dv = op.getValue().getType().getDimSize(3);
  if (d > kMaxHeadSize || dv > kMaxHeadSize)
    return "the attention kernel keeps a head's columns in registers, at "
           "most " +
           std::to_string(kMaxHeadSize) + " per head (got " +
           std::to_string(d) + " and " + std::to_string(dv) + ")";
  // The configuration's ranges are its attribute's verifier's; what is
  // left is whether the kernels it names can run `op`.
  AttentionConfigAttr config = attentionConfig(op);
  if (op.getSeqMajor()) {
    // The library or nothing: auto resolves to it (resolveAttentionConfig),
    // so what it cannot take is an error here, before anything is built.
    if (config.getKernel() != AttentionKernelKind::library &&
        config.getKernel() != AttentionKernelKind::chosen)
      return "the generated attention kernels read B x H x S x D operands; "
             "a seq_major attention runs through cuDNN's fused attention "
             "(kernel = library, with the attention library allowed)";
    std::string why = whyNoAttentionLibrary(op);
    if (!why.empty())
      return "a seq_major attention runs only through cuDNN's fused "
             "attention, which does not take it: " +
             why;
  }
  // An explicit choice of the decode kernel's that it cannot take is an
  // error, not a silent fallback.
  if (config.getLanesPerKey() || config.getSplits() || config.getUnroll()) {
    std::string why = whyNoAttentionDecode(op);
    if (!why.empty())
      return "lanes_per_key, splits and unroll configure the decode kernels, "
             "which do not take it: " +
             why;
  }
  if (config.getKernel() == AttentionKernelKind::decode &&
      !whyNoAttentionDecode(op).empty())
    return "the decode kernel does not take it: " + whyNoAttentionDecode(op);
  if (config.getKernel() == AttentionKernelKind::decode_tensor_cores &&
      !whyNoAttentionDecodeMma(op).empty())
    return "the tensor-core decode kernel does not take it: " +
           whyNoAttentionDecodeMma(op);
  if (config.getKernel() == AttentionKernelKind::library &&
      !whyNoAttentionLibrary(op).empty())
    return "cuDNN's fused attention does not take it: " +
           whyNoAttentionLibrary(op);
  if (config.getKernel() == AttentionKernelKind::tensor_cores &&
      !whyNoAttentionMma(op).empty())
    return "the tensor-core kernel does not take it: " + whyNoAttentionMma(op);
  return "";
}

void mlir::sgpu::populateAttentionToGPUPatterns(RewritePatternSet &patterns,
                                                KernelSink &sink) {
  patterns.add<AttentionToGPU>(patterns.getContext(), sink);
}
