//===- NormToGPU.cpp - sgpu.rms_norm / sgpu.layer_norm as kernels ---------===//
//
// The normalizations over the last dimension D as generated kernels, with
// the formulas of the CPU reference (BlocksToLoops.cpp), in f32:
//
//   rms_norm:   y = x * rsqrt(sum(x^2) / D + eps) * w
//   add_rms_norm: s = round(x + r) (written), then rms_norm of s
//   layer_norm: y = (x - mu) * rsqrt(sum((x - mu)^2) / D + eps) * w + b,
//               mu = sum(x) / D (biased variance)
//
// rounded once to the element type. Only the order of the additions in the
// sums differs from the reference (a tree instead of a left-to-right chain),
// and the backend may fuse a multiply and an add into an FMA.
//
// Mapping: one block per row (rows = the product of the leading
// dimensions; the host views the buffers as [rows, D]). Two forms of the
// block's work, chosen from D and the element type (normLayout):
//
// - Register-resident (rows whose bytes are a multiple of 16 and fit
//   kMaxChunks 16-byte vectors per thread: up to D = 16384 in bf16). Each
//   thread reads its columns once, as C chunks of V consecutive elements
//   (one 16-byte load each; chunk c at columns (c T + t) V, so a warp's
//   loads are consecutive), together with the same columns of w (and b),
//   all loads issued before any arithmetic; the reductions and the output
//   then come from registers. A decode step normalizes one row per
//   launch, so the kernel's time is the latency of its dependent memory
//   round trips: one here, where a strided loop pays one per column it
//   walks.
// - Strided (any other D): thread t accumulates columns t, t + T, t + 2T,
//   ... in f32 (consecutive threads read consecutive columns, so every load
//   of a warp is coalesced), and reads the row again for each pass. The
//   variance takes two passes (mean, then the squared deviations) rather
//   than Welford's update: it is the reference's formula, and the second
//   read of a row hits in L1/L2.
//
// Both reduce the partial sums the same way: xor shuffles inside each
// warp, lane 0 of each warp writes its warp's sum to shared memory, and
// after one barrier every warp reads all the warp sums and reduces them
// again with shuffles, so every thread ends with the row's total and no
// second barrier is needed to broadcast it. Layer norm's two reductions
// use separate shared-memory slots, so the second never overwrites a
// partial that a slower warp is still reading from the first.
//
//===----------------------------------------------------------------------===//

#include "NormToGPU.h"
#include "FloatMath.h"
#include "GPUKernel.h"
#include "IndexMath.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace mlir::sgpu;

namespace {

// Block size: rows of transformer models have 512 to 8192 features, so 256
// threads give every thread 2 to 32 columns (independent loads in flight to
// hide the memory latency) while the cross-warp step stays 8 values, and
// several blocks fit on a multiprocessor when there are many rows. A row
// narrower than that gets only the warps that have a column (or a chunk).
constexpr int64_t kMaxThreads = 256;
constexpr int64_t kWarpSize = 32;
// The register-resident form holds at most this many 16-byte chunks of the
// row per thread (32 f32 registers for bf16 and f16): D up to 16384 in
// 16-bit types and 8192 in f32 at 256 threads.
constexpr int64_t kMaxChunks = 8;
constexpr int64_t kChunkBytes = 16;

/// How one block covers a row of D elements.
struct NormLayout {
  int64_t threads;
  /// Register-resident form: elements per chunk (16 bytes) and chunks per
  /// thread. chunks == 0: the strided form.
  int64_t vec = 1, chunks = 0;
};

NormLayout normLayout(int64_t d, Type et) {
  int64_t vec = kChunkBytes / (et.getIntOrFloatBitWidth() / 8);
  if (d % vec == 0) {
    int64_t slots = d / vec;
    int64_t threads =
        std::min(kMaxThreads, (slots + kWarpSize - 1) / kWarpSize * kWarpSize);
    int64_t chunks = (slots + threads - 1) / threads;
    if (chunks <= kMaxChunks)
      return {threads, vec, chunks};
  }
  int64_t threads = std::min(
      kMaxThreads,
      std::max<int64_t>(1, (d + kWarpSize - 1) / kWarpSize) * kWarpSize);
  return {threads};
}

/// Builds the body of one normalization kernel.
struct NormKernelBuilder : FloatMath {
  IndexMath im;
  int64_t d;
  NormLayout layout;
  int64_t threads, warps;
  Value tid, lane, warp, smem, row;
  /// sgpu.add_rms_norm: the residual [rows, D] added to x, and the sum's
  /// buffer; null for the plain norms.
  Value residual, sum;

  NormKernelBuilder(OpBuilder &b, Location loc, int64_t d, NormLayout layout)
      : FloatMath{b, loc}, im{b, loc}, d(d), layout(layout),
        threads(layout.threads), warps(threads / kWarpSize) {}

  Value load(Value mem, ValueRange idx) { return im.loadF32(mem, idx); }

  /// `v` rounded to the element type of `mem` and back to f32: the value a
  /// store and a reload of it would give.
  Value rounded(Value v, Value mem) {
    Type et = cast<MemRefType>(mem.getType()).getElementType();
    if (et == v.getType())
      return v;
    return im.toF32(arith::TruncFOp::create(b, loc, et, v));
  }

  /// The normalized row's element (row, j): x, or with a residual the sum
  /// x + residual rounded to the element type (what the reference
  /// normalizes).
  Value input(Value x, Value j) {
    Value v = load(x, {row, j});
    if (residual)
      v = rounded(addf(v, load(residual, {row, j})), x);
    return v;
  }
  /// Stores the f32 `v` rounded to the buffer's element type.
  void store(Value v, Value mem, ValueRange idx) {
    im.storeRounded(v, mem, idx);
  }

  /// acc = 0; for j = tid; j < D; j += T: acc = body(j, acc). This
  /// thread's partial sum over its columns.
  Value columnSum(function_ref<Value(Value, Value)> body) {
    Value end = im.c(d), step = im.c(threads), zero = f32(0);
    return im.reduce(tid, end, step, zero, body);
  }

  /// for j = tid; j < D; j += T: body(j).
  void forColumns(function_ref<void(Value)> body) {
    Value end = im.c(d), step = im.c(threads);
    im.forEach(tid, end, step, body);
  }

  /// The sum of `v` over the 32 lanes of the warp, in every lane (an xor
  /// butterfly: after the step with offset o every lane holds the sum of
  /// its 2o-lane group).
  Value warpSum(Value v) {
    return warpAllSum(b, loc, v);
  }

  /// The sum of `v` over the block, in every thread. `slot` selects this
  /// reduction's words of shared memory.
  Value blockSum(Value v, int64_t slot) {
    v = warpSum(v);
    if (warps == 1)
      return v;
    int64_t base = slot * warps;
    Value first =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, lane, im.c(0));
    auto ifFirst = scf::IfOp::create(b, loc, first, /*withElseRegion=*/false);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(&ifFirst.getThenRegion().front());
      memref::StoreOp::create(b, loc, v, smem, ValueRange{im.add(warp, base)});
    }
    gpu::BarrierOp::create(b, loc);
    // Every warp reduces the warp sums (lanes past the warp count add 0).
    Value has = im.lt(lane, warps);
    Value partial = memref::LoadOp::create(
        b, loc, smem, ValueRange{im.add(im.clamp(lane, has), base)});
    return warpSum(arith::SelectOp::create(b, loc, has, partial, f32(0)));
  }

  /// 1 / sqrt(var + eps). rsqrt as 1 / sqrt, the way convert-math-to-llvm
  /// lowers the reference's math.rsqrt on the CPU, both correctly rounded
  /// (sqrt.rn.f32 and rcp.rn.f32 in the PTX), so the scale equals the
  /// reference's for the same sum. In convert-gpu-to-nvvm math.rsqrt would
  /// become a call of libdevice's __nv_rsqrtf (an approximation), and
  /// math.sqrt or llvm.intr.sqrt one of __nv_sqrtf: libdevice needs the CUDA
  /// toolkit at compile time. The NVVM intrinsic names the rounding itself.
  Value inverseRoot(Value var, float eps) {
    Value root =
        LLVM::CallIntrinsicOp::create(b, loc, b.getF32Type(),
                                      b.getStringAttr("llvm.nvvm.sqrt.rn.f"),
                                      ValueRange{addf(var, f32(eps))})
            .getResult(0);
    return divf(f32(1.0), root);
  }

  /// Builds `func`'s body: arguments x [rows, D], (add: the residual
  /// [rows, D]), w [D], (layer norm: b [D]), (add: the sum [rows, D]), y
  /// [rows, D]; one workgroup buffer of f32 words when the block has several
  /// warps.
  void build(gpu::GPUFuncOp func, bool layerNorm, bool add, float eps) {
    Block &entry = func.getBody().front();
    b.setInsertionPointToStart(&entry);
    unsigned a = 0;
    Value x = func.getArgument(a++);
    if (add)
      residual = func.getArgument(a++);
    Value w = func.getArgument(a++);
    Value beta = layerNorm ? func.getArgument(a++) : Value();
    if (add)
      sum = func.getArgument(a++);
    Value y = func.getArgument(a);
    if (warps > 1)
      smem = func.getWorkgroupAttributions()[0];
    tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
    row = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
    if (warps > 1) {
      lane = im.rem(tid, kWarpSize);
      warp = im.div(tid, kWarpSize);
    }
    if (layout.chunks)
      buildResident(x, w, beta, y, layerNorm, eps);
    else
      buildStrided(x, w, beta, y, layerNorm, eps);
    b.setInsertionPointToEnd(&entry);
    gpu::ReturnOp::create(b, loc);
  }

  /// The strided form: each pass walks the thread's columns of the row.
  void buildStrided(Value x, Value w, Value beta, Value y, bool layerNorm,
                    float eps) {
    Value n = f32(double(d));
    // mu = 0 for RMS norm: (x - 0) is x, so the subtraction is skipped.
    Value mu;
    if (layerNorm)
      mu = divf(blockSum(columnSum([&](Value j, Value acc) {
                          return addf(acc, input(x, j));
                        }),
                        0),
               n);
    Value sq = columnSum([&](Value j, Value acc) {
      Value c = input(x, j);
      if (mu)
        c = subf(c, mu);
      return addf(acc, mulf(c, c));
    });
    Value inv = inverseRoot(divf(blockSum(sq, layerNorm ? 1 : 0), n), eps);
    forColumns([&](Value j) {
      Value c = input(x, j);
      if (sum)
        store(c, sum, {row, j});
      if (mu)
        c = subf(c, mu);
      Value v = mulf(c, inv);
      v = mulf(v, load(w, {j}));
      if (beta)
        v = addf(v, load(beta, {j}));
      store(v, y, {row, j});
    });
  }

  /// One 16-byte chunk of the row in a thread's registers: its first
  /// column, whether the thread has it (null: always), and the elements of
  /// x, w and b there in f32.
  struct Chunk {
    Value col, valid;
    SmallVector<Value> x, w, beta;
  };

  /// The V elements of `mem` at `idx`, one 16-byte load, in f32.
  SmallVector<Value> loadChunk(Value mem, ValueRange idx) {
    Type et = cast<MemRefType>(mem.getType()).getElementType();
    Value v = vector::LoadOp::create(
        b, loc, VectorType::get({layout.vec}, et), mem, idx,
        /*nontemporal=*/false, llvm::Align(kChunkBytes));
    SmallVector<Value> lanes;
    for (int64_t i = 0; i < layout.vec; ++i)
      lanes.push_back(
          im.toF32(vector::ExtractOp::create(b, loc, v, ArrayRef<int64_t>{i})));
    return lanes;
  }

  /// The f32 `lanes` rounded to the element type of `mem`, one 16-byte
  /// store at `idx`.
  void storeChunk(ArrayRef<Value> lanes, Value mem, ValueRange idx) {
    Type et = cast<MemRefType>(mem.getType()).getElementType();
    SmallVector<Value> rounded;
    for (Value v : lanes)
      rounded.push_back(
          et == v.getType() ? v : arith::TruncFOp::create(b, loc, et, v));
    Value v = vector::FromElementsOp::create(
        b, loc, VectorType::get({layout.vec}, et), rounded);
    vector::StoreOp::create(b, loc, v, mem, idx, /*nontemporal=*/false,
                            llvm::Align(kChunkBytes));
  }

  /// This thread's sum of f(x) over its chunks (0 for chunks it lacks).
  Value chunkSum(ArrayRef<Chunk> chunks, function_ref<Value(Value)> f) {
    Value acc = f32(0);
    for (const Chunk &ch : chunks) {
      Value part = f(ch.x.front());
      for (Value v : ArrayRef<Value>(ch.x).drop_front())
        part = addf(part, f(v));
      if (ch.valid)
        part = arith::SelectOp::create(b, loc, ch.valid, part, f32(0));
      acc = addf(acc, part);
    }
    return acc;
  }

  /// The register-resident form: chunk c of thread t covers columns
  /// (c T + t) V .. + V; only the last chunk can be past the row's end (then
  /// its address is clamped to column 0 and its store skipped).
  void buildResident(Value x, Value w, Value beta, Value y, bool layerNorm,
                     float eps) {
    int64_t slots = d / layout.vec;
    SmallVector<Chunk> chunks(layout.chunks);
    for (int64_t c = 0; c < layout.chunks; ++c) {
      Value slot = im.add(tid, c * threads);
      if (c == layout.chunks - 1 && slots % threads)
        chunks[c].valid = im.lt(slot, slots);
      chunks[c].col = im.mul(im.clamp(slot, chunks[c].valid), layout.vec);
      chunks[c].x = loadChunk(x, {row, chunks[c].col});
    }
    // With a residual the row is the rounded sum (residual chunks loaded
    // after all of x's, so every load is in flight before any add).
    if (residual) {
      for (Chunk &ch : chunks) {
        SmallVector<Value> r = loadChunk(residual, {row, ch.col});
        for (int64_t i = 0; i < layout.vec; ++i)
          ch.x[i] = rounded(addf(ch.x[i], r[i]), x);
      }
      for (Chunk &ch : chunks)
        im.ifThen(ch.valid, [&] { storeChunk(ch.x, sum, {row, ch.col}); });
    }
    // The parameters do not depend on the sums: loaded now, their latency
    // overlaps the reductions'.
    for (Chunk &ch : chunks) {
      ch.w = loadChunk(w, {ch.col});
      if (beta)
        ch.beta = loadChunk(beta, {ch.col});
    }
    Value n = f32(double(d));
    Value mu;
    if (layerNorm)
      mu = divf(blockSum(chunkSum(chunks, [](Value v) { return v; }), 0), n);
    Value sq = chunkSum(chunks, [&](Value v) {
      if (mu)
        v = subf(v, mu);
      return mulf(v, v);
    });
    Value inv = inverseRoot(divf(blockSum(sq, layerNorm ? 1 : 0), n), eps);
    for (Chunk &ch : chunks) {
      SmallVector<Value> out;
      for (int64_t i = 0; i < layout.vec; ++i) {
        Value v = ch.x[i];
        if (mu)
          v = subf(v, mu);
        v = mulf(mulf(v, inv), ch.w[i]);
        if (beta)
          v = addf(v, ch.beta[i]);
        out.push_back(v);
      }
      im.ifThen(ch.valid, [&] { storeChunk(out, y, {row, ch.col}); });
    }
  }
};

} // namespace

namespace {

/// `op` (sgpu.rms_norm, sgpu.add_rms_norm or sgpu.layer_norm) as a launch
/// at `b` of a kernel `sgpu_rms_norm_<n>` / `sgpu_add_rms_norm_<n>` /
/// `sgpu_layer_norm_<n>`, one block per row: returns the result tensors
/// (add_rms_norm: the sum, then the normalized rows).
SmallVector<Value> buildNormLaunch(OpBuilder &b, Operation *op,
                                   KernelSink &sink) {
  auto layer = dyn_cast<LayerNormOp>(op);
  auto rms = dyn_cast<RMSNormOp>(op);
  auto add = dyn_cast<AddRMSNormOp>(op);
  assert((layer || rms || add) && "expected a normalization op");
  Location loc = op->getLoc();
  Value input = op->getOperand(0);
  Value residual = add ? add.getResidual() : Value();
  Value weight = op->getOperand(add ? 2 : 1);
  Value bias = layer ? layer.getBias() : Value();
  float eps = (layer  ? layer.getEpsilon()
               : rms ? rms.getEpsilon()
                     : add.getEpsilon())
                  .convertToFloat();
  auto t = cast<RankedTensorType>(input.getType());
  int64_t d = t.getShape().back();
  int64_t elems = t.getNumElements();
  int64_t rows = elems ? elems / d : 0;
  Type et = t.getElementType();
  std::string name = sink.name(layer ? "sgpu_layer_norm"
                               : add ? "sgpu_add_rms_norm"
                                     : "sgpu_rms_norm");

  Value out = memref::AllocOp::create(b, loc, memrefTypeOf(t));
  Value sum = add ? memref::AllocOp::create(b, loc, memrefTypeOf(t)) : Value();
  if (elems != 0) {
    // The kernel.
    OpBuilder kb = sink.builder();
    NormKernelBuilder builder(kb, loc, d, normLayout(d, et));
    auto rowsType = MemRefType::get({rows, d}, et);
    auto paramType = MemRefType::get({d}, et);
    SmallVector<Type> argTypes = {rowsType};
    if (add)
      argTypes.push_back(rowsType);
    argTypes.push_back(paramType);
    if (layer)
      argTypes.push_back(paramType);
    if (add)
      argTypes.push_back(rowsType);
    argTypes.push_back(rowsType);
    // One f32 word per warp and reduction (layer norm reduces twice).
    SmallVector<Type> workgroup;
    if (builder.warps > 1)
      workgroup.push_back(workgroupBuffer(
          kb, (layer ? 2 : 1) * builder.warps, kb.getF32Type()));
    auto func = createKernel(kb, loc, sink.symbols, name, argTypes, workgroup,
                             builder.threads);
    builder.build(func, static_cast<bool>(layer), static_cast<bool>(add), eps);

    // The host launch: one block per row.
    SmallVector<Value> args = {viewAsRows(b, loc, readBuffer(b, loc, input))};
    if (add)
      args.push_back(viewAsRows(b, loc, readBuffer(b, loc, residual)));
    args.push_back(readBuffer(b, loc, weight));
    if (bias)
      args.push_back(readBuffer(b, loc, bias));
    if (add)
      args.push_back(viewAsRows(b, loc, sum));
    args.push_back(viewAsRows(b, loc, out));
    launchKernel(b, loc, func, rows, builder.threads, args);
  }
  SmallVector<Value> results;
  for (Value buf : add ? SmallVector<Value>{sum, out} : SmallVector<Value>{out})
    results.push_back(bufferization::ToTensorOp::create(
        b, loc, t, buf, /*restrict=*/b.getUnitAttr(),
        /*writable=*/b.getUnitAttr()));
  return results;
}

} // namespace

namespace {

/// sgpu.add_rms_norm: one kernel, two results (the sum and the norm).
struct AddRMSNormToGPU : OpConversionPattern<AddRMSNormOp> {
  KernelSink &sink;
  AddRMSNormToGPU(MLIRContext *ctx, KernelSink &sink)
      : OpConversionPattern(ctx), sink(sink) {}

  LogicalResult
  matchAndRewrite(AddRMSNormOp op, OpAdaptor,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOp(op, buildNormLaunch(rewriter, op, sink));
    return success();
  }
};

} // namespace

void mlir::sgpu::populateNormToGPUPatterns(RewritePatternSet &patterns,
                                           KernelSink &sink) {
  MLIRContext *ctx = patterns.getContext();
  patterns.add<KernelLaunchPattern<RMSNormOp>>(
      ctx, sink, [](OpBuilder &b, RMSNormOp op, KernelSink &sink) {
        return buildNormLaunch(b, op, sink).front();
      });
  patterns.add<KernelLaunchPattern<LayerNormOp>>(
      ctx, sink, [](OpBuilder &b, LayerNormOp op, KernelSink &sink) {
        return buildNormLaunch(b, op, sink).front();
      });
  patterns.add<AddRMSNormToGPU>(ctx, sink);
}
