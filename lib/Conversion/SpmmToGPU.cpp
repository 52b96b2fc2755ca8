//===- SpmmToGPU.cpp - sgpu.spmm as a generated sparse kernel -------------===//
//
// Builds what an spmm's plan (SpmmSelection.h, from its #sgpu.spmm_config)
// says: the kernel, the lift it takes in, and the launch on the host. The
// TMA kernel reads its operands through tensor maps that the runtime
// encodes from the buffers (sgpu.tensor_map); the other kernels take the
// buffers themselves.
//
//===----------------------------------------------------------------------===//

#include "SpmmToGPU.h"
#include "GPUKernel.h"
#include "IndexMath.h"
#include "LiftToGPU.h"
#include "SpmmMMA.h"
#include "SpmmTMA.h"
#include "SpmmWGMMA.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"

using namespace mlir;
using namespace mlir::sgpu;

namespace {

/// The memref types of one spmm's operands and workspace.
struct SpmmTypes {
  MemRefType x, values, meta, y, bias;
  /// Split-K's f32 partial sums [splits, M, N].
  MemRefType workspace;
};

SpmmTypes spmmTypes(SpmmOp spmm, const SpmmPlan &plan) {
  CompressedType wType = spmm.getWeight().getType();
  SpmmTypes t;
  t.x = memrefTypeOf(plan.xType);
  t.values = memrefTypeOf(wType.getValuesType());
  t.meta = memrefTypeOf(wType.getMetadataType());
  t.y = memrefTypeOf(spmm.getResult().getType());
  if (Value bias = spmm.getBias())
    t.bias = memrefTypeOf(bias.getType());
  t.workspace = MemRefType::get({plan.tma.splits, plan.shape.m, plan.shape.n},
                                Float32Type::get(spmm.getContext()));
  return t;
}

bool isSplitK(const SpmmPlan &plan) {
  return plan.useTma && plan.tma.splits > 1;
}

/// Threads per block of the plan's kernel.
int64_t spmmThreads(const SpmmPlan &plan) {
  if (plan.useTma)
    return plan.tma.threads;
  if (plan.kernel == SpmmKernelKind::wgmma)
    return getWgmmaSpmmLaunch(plan.shape).threads;
  return 32 * kMmaSpmmWarps;
}

/// Whether `part` (a weight's values or metadata) is the same at every run:
/// a constant, or a buffer that a prepare-stage kernel writes when the
/// params are bound (WeightPrepare.cpp). Such a buffer is written by that
/// kernel only: run-stage kernels read a prepared weight, and TempArena
/// keeps prepare-stage buffers out of the run's shared arena.
bool isRunInvariant(Value part) {
  if (matchPattern(part, m_Constant()))
    return true;
  auto toTensor = part.getDefiningOp<bufferization::ToTensorOp>();
  if (!toTensor || !toTensor.getBuffer().getDefiningOp<memref::AllocOp>())
    return false;
  return llvm::any_of(toTensor.getBuffer().getUsers(), [](Operation *user) {
    return isa<gpu::LaunchFuncOp>(user) &&
           user->hasAttr(SGPUDialect::kStageAttr);
  });
}

/// Whether the spmm's weight (sgpu.assemble of values and metadata) is the
/// same at every run, so its kernel may load it before it waits for the
/// kernel before it (TmaSpmmConfig::prefetchWeights).
bool weightIsRunInvariant(SpmmOp spmm) {
  auto assemble = spmm.getWeight().getDefiningOp<AssembleOp>();
  return assemble && isRunInvariant(assemble.getValues()) &&
         isRunInvariant(assemble.getMetadata());
}

/// The kernel `name` of `plan` in the sink. Its arguments: the TMA
/// kernel's tensor maps (X, the values, for the fused lift the values
/// again in their second box, for the split lift the shared windows, the
/// metadata, and Y when stored by TMA: with `ySliceStarts`, one map per
/// column slice), or the other kernels' X, values and metadata buffers;
/// then the workspace (split-K) or the bias and Y.
gpu::GPUFuncOp buildSpmmKernel(SpmmOp spmm, const SpmmPlan &plan,
                               const SpmmTypes &t, KernelSink &sink,
                               const std::string &name,
                               ArrayRef<int64_t> ySliceStarts) {
  Location loc = spmm.getLoc();
  const TmaSpmmConfig &tma = plan.tma;
  OpBuilder b = sink.builder();
  Type ptrType = LLVM::LLVMPointerType::get(b.getContext());
  SmallVector<Type> argTypes = {t.x, t.values, t.meta};
  int64_t yMaps =
      plan.yByTma ? std::max<int64_t>(1, ySliceStarts.size()) : 0;
  int64_t tensorMaps = 3 + plan.fused + plan.splitLift + yMaps;
  if (plan.useTma)
    argTypes = SmallVector<Type>(tensorMaps, ptrType);
  if (isSplitK(plan)) {
    argTypes.push_back(t.workspace);
  } else {
    if (t.bias)
      argTypes.push_back(t.bias);
    if (!plan.yByTma)
      argTypes.push_back(t.y);
  }
  auto func =
      gpu::GPUFuncOp::create(b, loc, name, b.getFunctionType(argTypes, {}));
  func->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), b.getUnitAttr());
  func.setKnownBlockSizeAttr(
      b.getDenseI32ArrayAttr({int32_t(spmmThreads(plan)), 1, 1}));
  sink.symbols.insert(func);
  if (plan.useTma) {
    // The tensor maps arrive as by-value grid-constant parameters; one
    // block per multiprocessor caps the registers at entry, which
    // setmaxnreg needs.
    func->setAttr("sgpu.tensor_map_args",
                  b.getDenseI64ArrayAttr(
                      llvm::to_vector(llvm::seq<int64_t>(0, tensorMaps))));
    func->setAttr(NVVM::NVVMDialect::getMinctasmAttrName(),
                  b.getI32IntegerAttr(1));
    if (tma.cluster > 1)
      func->setAttr(NVVM::NVVMDialect::getClusterDimAttrName(),
                    b.getDenseI32ArrayAttr({int32_t(tma.cluster), 1, 1}));
    TmaSpmmConfig cfg = tma;
    cfg.ySliceStarts.assign(ySliceStarts.begin(), ySliceStarts.end());
    cfg.prefetchWeights = sink.programmaticLaunch && !cfg.dense &&
                          cfg.gather == TmaGatherKind::none &&
                          !cfg.fusedLift && cfg.cluster == 1 &&
                          weightIsRunInvariant(spmm);
    buildTmaSpmmKernel(b, loc, plan.shape, cfg, func);
  } else if (plan.kernel == SpmmKernelKind::wgmma) {
    buildWgmmaSpmmKernel(b, loc, plan.shape, func);
  } else {
    buildMmaSpmmKernel(b, loc, plan.shape, func);
  }
  return func;
}

/// At `b`, before the spmm: the buffer of X the kernel reads. With the
/// lift in the kernel, X before the lift (and, split, the shared windows
/// written by the lift's kernel into `w1`); with a padded lift, the padded
/// rows; else the spmm's input. A lift taken in joins `state`.
Value spmmInputBuffer(OpBuilder &b, SpmmOp spmm, const SpmmPlan &plan,
                      const SpmmTypes &t, KernelSink &sink,
                      SpmmLowering &state, Value &w1) {
  Location loc = spmm.getLoc();
  LiftOp lift = plan.lift;
  if (!plan.fused && !plan.splitLift && !(plan.useTma && plan.padLift))
    return readBuffer(b, loc, spmm.getInput());
  state.loweredLifts.insert(lift);
  if (plan.fused || plan.splitLift) {
    // The kernel reads X itself (and, split, the shared windows W1).
    Value x = readBuffer(b, loc, lift.getInput());
    if (plan.splitLift) {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPoint(lift);
      w1 = lowerLiftWindowsToGPU(b, lift, sink);
    }
    return x;
  }
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(lift);
  return lowerLiftToGPUPadded(b, lift, plan.shape.paddedK, sink);
}

/// The TMA kernel's tensor maps over the buffers (X, values, metadata and
/// the split lift's W1), in its argument order up to Y.
SmallVector<Value> spmmTensorMaps(OpBuilder &b, Location loc,
                                  const SpmmPlan &plan, const SpmmTypes &t,
                                  Value xBuf, Value vBuf, Value mBuf,
                                  Value w1Buf) {
  const TmaSpmmConfig &tma = plan.tma;
  Type ptrType = LLVM::LLVMPointerType::get(b.getContext());
  auto tensorMap = [&](Value buf, ArrayRef<int64_t> box,
                       int64_t swizzle) -> Value {
    return TensorMapOp::create(b, loc, ptrType, buf,
                               b.getDenseI64ArrayAttr(box),
                               b.getI64IntegerAttr(swizzle));
  };
  // The metadata words seen as [N/16 row tiles, KS*16 words].
  int64_t rowTiles = plan.shape.paddedN / 16;
  auto meta2d = memref::ExpandShapeOp::create(
      b, loc,
      MemRefType::get({rowTiles, t.meta.getDimSize(0) / rowTiles},
                      t.meta.getElementType()),
      mBuf, ArrayRef<ReassociationIndices>{{0, 1}});
  SmallVector<Value> maps = {tensorMap(xBuf, tma.bBox, tma.bSwizzle),
                             tensorMap(vBuf, tma.aBox, tma.aSwizzle)};
  if (plan.fused)
    maps.push_back(tensorMap(vBuf, tma.a2Box, tma.a2Swizzle));
  if (plan.splitLift)
    maps.push_back(tensorMap(w1Buf, tma.bBox, tma.bSwizzle));
  maps.push_back(tensorMap(meta2d, tma.metaBox, 0));
  return maps;
}

/// The launch grid of the plan's kernel: (x, y) blocks and its dynamic
/// shared memory (0: static only).
struct SpmmGrid {
  int64_t x, y, sharedBytes;
};

SpmmGrid spmmGrid(const SpmmPlan &plan) {
  const SpmmShape &shape = plan.shape;
  if (plan.useTma)
    return {plan.tma.gridSize, 1, plan.tma.dynamicSharedBytes};
  if (plan.kernel == SpmmKernelKind::wgmma) {
    WgmmaSpmmLaunch wg = getWgmmaSpmmLaunch(shape);
    return {wg.gridX, wg.gridY, 0};
  }
  return {int64_t(llvm::divideCeil(shape.m, kMmaSpmmTokensPerBlock)),
          int64_t(llvm::divideCeil(shape.paddedN,
                                   kMmaSpmmWarps * kMmaSpmmRowsPerWarp)),
          0};
}

/// The column slices that read the whole of `spmm`'s result, in column
/// order, when they are its only users and cut its columns into consecutive
/// ranges (the siblings sgpu-fuse-sibling-spmm fused); empty otherwise.
SmallVector<tensor::ExtractSliceOp> columnSlices(SpmmOp spmm) {
  auto y = cast<RankedTensorType>(spmm.getResult().getType());
  SmallVector<tensor::ExtractSliceOp> slices;
  for (Operation *user : spmm.getResult().getUsers()) {
    auto slice = dyn_cast<tensor::ExtractSliceOp>(user);
    if (!slice || !slice.hasUnitStride() || slice.getType().getRank() != 2 ||
        ShapedType::isDynamicShape(slice.getStaticOffsets()) ||
        !slice.getType().hasStaticShape() ||
        slice.getStaticOffsets()[0] != 0 ||
        slice.getType().getDimSize(0) != y.getDimSize(0))
      return {};
    slices.push_back(slice);
  }
  llvm::sort(slices, [](tensor::ExtractSliceOp a, tensor::ExtractSliceOp b) {
    return a.getStaticOffsets()[1] < b.getStaticOffsets()[1];
  });
  int64_t next = 0;
  for (tensor::ExtractSliceOp slice : slices) {
    if (slice.getStaticOffsets()[1] != next)
      return {};
    next += slice.getType().getDimSize(1);
  }
  if (slices.size() < 2 || next != y.getDimSize(1))
    return {};
  return slices;
}

/// The first column of each of `slices` when every one starts at a
/// multiple of 64 (a TMA-store box of 64 features then lies in one slice);
/// empty otherwise.
SmallVector<int64_t> tmaStoreSliceStarts(ArrayRef<tensor::ExtractSliceOp> slices) {
  SmallVector<int64_t> starts;
  for (tensor::ExtractSliceOp slice : slices) {
    int64_t start = slice.getStaticOffsets()[1];
    if (start % 64 != 0)
      return {};
    starts.push_back(start);
  }
  return starts;
}

/// Split-K's second kernel `name`, reducing the partial sums of `ws` into
/// `yBufs` with the epilogue (and `biasBuf`), and its launch at `b`: Y, or
/// the consecutive column ranges of Y (columnSlices) as buffers of their
/// own.
void launchSplitKReduce(OpBuilder &b, Location loc, const SpmmPlan &plan,
                        const SpmmTypes &t, KernelSink &sink,
                        const std::string &name, Value ws, Value biasBuf,
                        ArrayRef<Value> yBufs) {
  SmallVector<Value> args = {ws};
  SmallVector<Type> types = {t.workspace};
  if (biasBuf) {
    args.push_back(biasBuf);
    types.push_back(t.bias);
  }
  SmallVector<int64_t> columns;
  for (Value y : yBufs) {
    args.push_back(y);
    types.push_back(y.getType());
    if (yBufs.size() > 1)
      columns.push_back(cast<MemRefType>(y.getType()).getDimSize(1));
  }
  OpBuilder kb = sink.builder();
  auto reduce =
      gpu::GPUFuncOp::create(kb, loc, name, kb.getFunctionType(types, {}));
  reduce->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), kb.getUnitAttr());
  reduce.setKnownBlockSizeAttr(
      kb.getDenseI32ArrayAttr({int32_t(kSplitKReduceThreads), 1, 1}));
  sink.symbols.insert(reduce);
  buildSplitKReduceKernel(kb, loc, plan.shape, plan.tma.splits, reduce,
                          columns);
  int64_t elems = plan.shape.m * plan.shape.n;
  auto c = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(b, loc, v);
  };
  // One call, as the spmm's own launch: the order of the dimension
  // constants is the C++ compiler's order of evaluating arguments.
  gpu::LaunchFuncOp::create(
      b, loc, reduce,
      gpu::KernelDim3{
          c((elems + kSplitKReduceThreads - 1) / kSplitKReduceThreads), c(1),
          c(1)},
      gpu::KernelDim3{c(kSplitKReduceThreads), c(1), c(1)},
      /*dynamicSharedMemorySize=*/Value(), args);
}

struct SpmmToGPU : StatefulKernelPattern<SpmmOp, SpmmLowering> {
  using StatefulKernelPattern::StatefulKernelPattern;

  LogicalResult
  matchAndRewrite(SpmmOp spmm, OpAdaptor,
                  ConversionPatternRewriter &b) const override {
    auto found = state.plans.find(spmm);
    if (found == state.plans.end())
      return b.notifyMatchFailure(spmm, "no plan");
    const SpmmPlan &plan = found->second;
    Location loc = spmm.getLoc();
    SpmmTypes t = spmmTypes(spmm, plan);
    // A result only cut into column slices (sibling GEMMs fused into one)
    // is written as the slices themselves: by the split-K reduction, or
    // (sliced-tma-store) by the TMA stores into one map per slice where
    // each starts at a multiple of 64. Otherwise Y is stored and the
    // slices are copies.
    SmallVector<tensor::ExtractSliceOp> slices = columnSlices(spmm);
    SmallVector<int64_t> yStarts;
    if (!isSplitK(plan) && plan.yByTma && !slices.empty() &&
        sink.slicedTmaStore)
      yStarts = tmaStoreSliceStarts(slices);
    if (!isSplitK(plan) && yStarts.empty())
      slices.clear();
    std::string name = sink.name("sgpu_spmm");
    gpu::GPUFuncOp func = buildSpmmKernel(spmm, plan, t, sink, name, yStarts);

    // The host launch.
    Value w1Buf;
    Value xBuf = spmmInputBuffer(b, spmm, plan, t, sink, state, w1Buf);
    auto assemble = spmm.getWeight().getDefiningOp<AssembleOp>();
    Value vBuf = readBuffer(b, loc, assemble.getValues());
    Value mBuf = readBuffer(b, loc, assemble.getMetadata());
    SmallVector<Value> args = {xBuf, vBuf, mBuf};
    if (plan.useTma)
      args = spmmTensorMaps(b, loc, plan, t, xBuf, vBuf, mBuf, w1Buf);
    Value biasBuf = spmm.getBias() ? readBuffer(b, loc, spmm.getBias()) : Value();
    SmallVector<Value> sliceBufs;
    for (tensor::ExtractSliceOp slice : slices)
      sliceBufs.push_back(
          memref::AllocOp::create(b, loc, memrefTypeOf(slice.getType())));
    Value yBuf =
        slices.empty() ? memref::AllocOp::create(b, loc, t.y) : Value();
    Value wsBuf;
    if (isSplitK(plan)) {
      wsBuf = memref::AllocOp::create(b, loc, t.workspace);
      args.push_back(wsBuf);
    } else {
      if (plan.yByTma)
        for (Value y : slices.empty() ? SmallVector<Value>{yBuf} : sliceBufs)
          args.push_back(TensorMapOp::create(
              b, loc, LLVM::LLVMPointerType::get(b.getContext()), y,
              b.getDenseI64ArrayAttr(plan.tma.yBox),
              b.getI64IntegerAttr(128)));
      if (biasBuf)
        args.push_back(biasBuf);
      if (!plan.yByTma)
        args.push_back(yBuf);
    }
    auto c = [&](int64_t v) -> Value {
      return arith::ConstantIndexOp::create(b, loc, v);
    };
    SpmmGrid grid = spmmGrid(plan);
    Value smemBytes;
    if (grid.sharedBytes)
      smemBytes = arith::ConstantIntOp::create(b, loc, b.getI32Type(),
                                               grid.sharedBytes);
    int64_t threads = spmmThreads(plan);
    auto launch = gpu::LaunchFuncOp::create(
        b, loc, func, gpu::KernelDim3{c(grid.x), c(grid.y), c(1)},
        gpu::KernelDim3{c(threads), c(1), c(1)},
        /*dynamicSharedMemorySize=*/smemBytes, args);
    if (plan.useTma && plan.tma.loopsOverTiles())
      setPersistentGrid(launch,
                        plan.tma.gridX * plan.tma.gridY * plan.tma.splits /
                            plan.tma.cluster,
                        plan.tma.cluster, sink.budget.reservedSMs);
    if (isSplitK(plan))
      launchSplitKReduce(b, loc, plan, t, sink, name + "_reduce", wsBuf,
                         biasBuf,
                         slices.empty() ? SmallVector<Value>{yBuf} : sliceBufs);
    if (!slices.empty()) {
      for (auto [slice, buf] : llvm::zip(slices, sliceBufs))
        b.replaceOp(slice, bufferization::ToTensorOp::create(
                               b, loc, slice.getType(), buf,
                               /*restrict=*/b.getUnitAttr(),
                               /*writable=*/b.getUnitAttr()));
      b.eraseOp(spmm);
      return success();
    }
    b.replaceOpWithNewOp<bufferization::ToTensorOp>(
        spmm, spmm.getResult().getType(), yBuf, /*restrict=*/b.getUnitAttr(),
        /*writable=*/b.getUnitAttr());
    return success();
  }
};

} // namespace

void mlir::sgpu::populateSpmmToGPUPatterns(RewritePatternSet &patterns,
                                           KernelSink &sink,
                                           SpmmLowering &state) {
  patterns.add<SpmmToGPU>(patterns.getContext(), sink, state);
}
