//===- SGPUToGPU.cpp - sgpu ops to generated GPU kernels ------------------===//
//
// Generates, for every sgpu.spmm, a gpu.func running on sparse tensor cores
// and replaces the op by a host-side gpu.launch_func over buffers: on
// sm_90a (kernel=auto or wgmma) the warp-specialized TMA kernel of
// SpmmTMA.cpp, or SpmmWGMMA.cpp's register-staged one when K is not a
// multiple of 8; elsewhere (kernel=mma) the mma.sp::ordered_metadata
// m16n8k32 kernel of SpmmMMA.cpp. A lift feeding a TMA spmm is lowered with it.
// sgpu.matmul (dense) is no kernel: it becomes sgpu.gemm_call, a cuBLASLt
// call of the runtime program, and the all-reduces become NCCL steps of the
// program (CollectivesToRuntime.cpp). A sparse weight that is a function argument
// is compressed by a generated kernel of the program's prepare stage
// (WeightPrepare.cpp), once, when the runtime binds it. sgpu.rms_norm and
// sgpu.layer_norm become one-block-per-row kernels (NormToGPU.cpp); a TwELL
// pack becomes a one-block-per-row pack kernel (TwellToGPU.cpp) or, with
// twell-producer=fused on sm_90a, the epilogue of a tensor-core GEMM
// (TwellProducerGPU.cpp); a TwELL consumer becomes a one-block-per-row
// CUDA-core kernel (TwellConsumerGPU.cpp, which can also take the pack in,
// reading H) or, on sm_90a, the wgmma consumer over blocks of 64 rows
// (TwellTensorCoreGPU.cpp); every element-wise linalg op of the host
// (residual adds, activations, broadcasts, fills) becomes a
// one-thread-per-element kernel (ElementwiseToGPU.cpp); any other linalg
// op left in the host is an error at the op.
//
//===----------------------------------------------------------------------===//

#include "sparse-opt/Conversion/Passes.h"
#include "sparse-opt/Dialect/SGPU/BufferLimits.h"
#include "sparse-opt/Dialect/SGPU/ConstantWeights.h"
#include "sparse-opt/Dialect/SGPU/SGPU.h"
#include "sparse-opt/Conversion/DeviceInfo.h"
#include "sparse-opt/Conversion/TargetInfo.h"
#include "CollectivesToRuntime.h"
#include "ElementwiseToGPU.h"
#include "IndexMath.h"
#include "LiftToGPU.h"
#include "KernelSelection.h"
#include "SpmmSelection.h"
#include "TwellSelection.h"
#include "ModelOpsToGPU.h"
#include "NormToGPU.h"
#include "ReductionToGPU.h"
#include "TwellToGPU.h"
#include "WeightPrepare.h"
#include "SpmmMMA.h"
#include "SpmmTMA.h"
#include "SpmmWGMMA.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/DenseSet.h"

#include <optional>

namespace mlir {
namespace sgpu {
#define GEN_PASS_DEF_CONVERTSGPUTOGPU
#include "sparse-opt/Conversion/Passes.h.inc"
} // namespace sgpu
} // namespace mlir

using namespace mlir;
using namespace mlir::sgpu;

namespace {

struct ConvertSGPUToGPUPass
    : public sgpu::impl::ConvertSGPUToGPUBase<ConvertSGPUToGPUPass> {
  using Base::Base;
  // Reads the options the base declares (protected there).
  friend KernelSelectionOptions selectionOptionsOf<>(const ConvertSGPUToGPUPass &);

  void runOnOperation() override {
    ModuleOp module = getOperation();
    // Already lowered (compiled.mlir given back to the compiler): one clear
    // error instead of one per op the lowering left for the runtime.
    if (module->hasAttr(gpu::GPUDialect::getContainerModuleAttrName())) {
      module.emitError()
          << "the module is already compiled (it holds generated GPU "
             "kernels): compile the input IR, not a compiled module";
      return signalPassFailure();
    }
    // A runtime program is one host function: calls have nothing to call.
    WalkResult calls = module.walk([&](func::CallOp call) {
      call.emitError() << "calls are not supported: the runtime program is "
                          "one host function; inline @"
                       << call.getCallee()
                       << " (the inline pass) before compiling";
      return WalkResult::interrupt();
    });
    if (calls.wasInterrupted())
      return signalPassFailure();
    // The choices: those recorded on the ops (sgpu-select-kernels, or by
    // hand), the options' for the ops that arrive without one. (The
    // selection checks the buffer limits first.)
    FailureOr<KernelSelection> selection = KernelSelection::parse(
        selectionOptionsOf(*this), module, getArgument());
    if (failed(selection) || failed(selection->select(module)))
      return signalPassFailure();
    const TargetInfo &target = selection->target;
    budget = selection->budget;

    // Weights that are constants are compressed now, at compile time.
    if (failed(foldConstantCompresses(getOperation())))
      return signalPassFailure();

    // Every sgpu op must be lowerable here; report the rest at their ops.
    bool failedAny = false;
    std::vector<std::pair<SpmmOp, SpmmPlan>> spmms;
    // Dense GEMMs a fused TwELL producer replaces.
    llvm::SmallPtrSet<Operation *, 4> fusedProducers;
    SmallVector<LiftOp> lifts;
    SmallVector<MatmulOp> matmuls;
    SmallVector<Operation *> norms;
    SmallVector<linalg::LinalgOp> elementwise, reductions;
    // TwELL packs and their consumers, in program order.
    SmallVector<Operation *> twellOps;
    // Weight arguments compressed by a generated kernel at bind time.
    // Each compressed weight once, however many spmms read it.
    llvm::SetVector<Operation *> prepares;
    size_t modelOps = 0;
    module.walk([&](Operation *op) {
      if (auto spmm = dyn_cast<SpmmOp>(op)) {
        auto config =
            spmm->getAttrOfType<SpmmConfigAttr>(SGPUDialect::kConfigAttr);
        if (!config) {
          spmm.emitError() << "sgpu.spmm has no #sgpu.spmm_config (its "
                              "sgpu.config)";
          failedAny = true;
          return;
        }
        std::string why =
            whyNoSpmmKernel(config.getKernel(), target, chip, features);
        if (!why.empty()) {
          spmm.emitError() << why;
          failedAny = true;
        } else if (Operation *producer = spmm.getWeight().getDefiningOp();
                   !isa_and_nonnull<AssembleOp>(producer) &&
                   !(producer && isPreparableWeight(producer))) {
          spmm.emitError() << "the sparse weight must be a constant, "
                              "sgpu.assemble of its parts, or an argument of "
                              "the function that only this matmul reads "
                              "(compressed on the GPU when the program's "
                              "params are bound); a weight computed in the "
                              "function is not supported";
          failedAny = true;
        } else if (FailureOr<SpmmPlan> plan =
                       planFromConfig(spmm, config, budget);
                   failed(plan)) {
          failedAny = true;
        } else {
          if (!isa<AssembleOp>(producer))
            prepares.insert(producer);
          spmms.push_back({spmm, *plan});
        }
        return;
      }
      if (auto lift = dyn_cast<LiftOp>(op)) {
        lifts.push_back(lift);
        return;
      }
      if (auto matmul = dyn_cast<MatmulOp>(op)) {
        matmuls.push_back(matmul);
        return;
      }
      // Collectives are runtime steps (CollectivesToRuntime.cpp).
      if (isa<AllReduceOp, AllReduceStartOp, AllReduceWaitOp>(op))
        return;
      if (isa<RMSNormOp, LayerNormOp>(op)) {
        norms.push_back(op);
        return;
      }
      // Model-block ops: conversion patterns (ModelOpsToGPU.h).
      if (auto attn = dyn_cast<AttentionOp>(op)) {
        std::string why = whyNoAttentionKernel(attn);
        if (!why.empty()) {
          attn.emitError() << "'sgpu.attention' has no GPU lowering: " << why;
          failedAny = true;
          return;
        }
      }
      if (isa<EmbeddingOp, RopeOp, AttentionOp, CacheUpdateOp>(op)) {
        ++modelOps;
        return;
      }
      if (auto slice = dyn_cast<tensor::ExtractSliceOp>(op)) {
        modelOps += isStaticSlice(slice);
        return;
      }
      if (auto concat = dyn_cast<tensor::ConcatOp>(op)) {
        modelOps += concat.getResultType().hasStaticShape();
        return;
      }
      // TwELL: the pack's concrete parts are buffers handed to the consumer
      // kernels, so a packed value may only be read by sgpu.twell_ffn.
      if (auto pack = dyn_cast<TwellPackOp>(op)) {
        for (Operation *user : pack->getUsers())
          if (!isa<TwellFFNOp>(user)) {
            pack.emitError()
                << "the TwELL value is used by '" << user->getName()
                << "'; the GPU lowering supports TwELL values read only by "
                   "sgpu.twell_ffn";
            failedAny = true;
            return;
          }
        std::string why = whyNoTwellLowering(pack, target);
        if (!why.empty()) {
          pack.emitError() << why;
          failedAny = true;
          return;
        }
        twellOps.push_back(op);
        if (getTwellPackConfig(pack).getForm() == TwellPackForm::fused_producer)
          fusedProducers.insert(pack.getInput().getDefiningOp());
        return;
      }
      if (auto ffn = dyn_cast<TwellFFNOp>(op)) {
        int64_t d =
            cast<RankedTensorType>(ffn.getResult().getType()).getDimSize(1);
        if (!ffn.getPacked().getDefiningOp<TwellPackOp>()) {
          ffn.emitError() << "the TwELL activations must come from "
                             "sgpu.twell_pack in the same function; a "
                             "!sgpu.twell value from elsewhere has no "
                             "concrete buffers here";
          failedAny = true;
        } else if (auto config = ffn->getAttrOfType<TwellFFNConfigAttr>(
                       SGPUDialect::kConfigAttr);
                   !config) {
          // Reported at the pack (whyNoTwellLowering).
        } else if (config.getConsumer() == TwellConsumerKind::tensor_cores) {
          // The tensor-core consumer has neither CUDA-core limit.
          twellOps.push_back(op);
        } else if (int64_t entries =
                       ffn.getPacked().getType().getLayout().getCapacity();
                   entries > kTwellMaxTileEntries) {
          ffn.emitError() << "sgpu.twell_ffn with " << entries
                          << " entries per tile: the GPU consumer stages a "
                             "tile's entries in shared memory, at most "
                          << kTwellMaxTileEntries
                          << " (use a smaller tile or a larger compression)";
          failedAny = true;
        } else if (d > kTwellMaxOutputFeatures) {
          ffn.emitError() << "sgpu.twell_ffn with " << d
                          << " output features: the GPU consumer keeps its "
                             "f32 output row in registers, at most "
                          << kTwellMaxOutputFeatures << " features";
          failedAny = true;
        } else {
          twellOps.push_back(op);
        }
        return;
      }
      // Linalg ops of the host functions: element-wise ones become kernels,
      // the rest has no lowering.
      if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op)) {
        if (op->getParentOfType<gpu::GPUModuleOp>())
          return;
        std::string why = whyNotElementwise(linalgOp);
        if (why.empty()) {
          elementwise.push_back(linalgOp);
          return;
        }
        // Reductions no rewrite took (ReductionToGPU.h).
        if (linalgOp.getNumReductionLoops() > 0) {
          why = whyNotReduction(linalgOp);
          if (why.empty()) {
            reductions.push_back(linalgOp);
            return;
          }
        }
        op->emitError() << "'" << op->getName()
                        << "' has no GPU lowering: " << why;
        failedAny = true;
        return;
      }
      // Compressed-weight producers are reported through their spmm users.
      if (isa<AssembleOp>(op) ||
          (isa<CompressOp, NMDecomposeOp>(op) && !op->use_empty() &&
           llvm::all_of(op->getUsers(),
                        [](Operation *u) { return isa<SpmmOp>(u); })))
        return;
      if (op->getDialect() && isa<SGPUDialect>(op->getDialect())) {
        op->emitError() << "'" << op->getName()
                        << "' has no GPU lowering yet";
        failedAny = true;
      }
    });
    if (failedAny)
      return signalPassFailure();
    // Dense GEMMs are library calls, not kernels, except those that a
    // fused TwELL producer replaces.
    for (MatmulOp matmul : matmuls)
      if (!fusedProducers.contains(matmul))
        lowerMatmulToCall(matmul);
    // So are all-reduces: NCCL on the communicator's stream.
    if (failed(lowerCollectivesToRuntime(module)))
      return signalPassFailure();
    // Named element-wise ops (fill, add, transpose, ...) become generics,
    // so that one lowering covers them all. One whose result only
    // initializes others that never read it (the usual fill of an `outs`
    // tensor) is dead once those are lowered: it gets no kernel and is
    // erased after them.
    SmallVector<linalg::GenericOp> generics, deadInits, kernels;
    for (linalg::LinalgOp op : elementwise) {
      FailureOr<linalg::GenericOp> generic = generalizeElementwise(op);
      if (failed(generic))
        return signalPassFailure();
      generics.push_back(*generic);
    }
    for (linalg::GenericOp op : generics)
      (isOnlyUnreadInit(op) ? deadInits : kernels).push_back(op);
    SmallVector<linalg::GenericOp> reductionGenerics;
    for (linalg::LinalgOp op : reductions) {
      FailureOr<linalg::GenericOp> generic = generalizeElementwise(op);
      if (failed(generic))
        return signalPassFailure();
      reductionGenerics.push_back(*generic);
    }
    if (spmms.empty() && lifts.empty() && norms.empty() && kernels.empty() &&
        twellOps.empty() && modelOps == 0 && reductionGenerics.empty()) {
      eraseDeadInits(module, deadInits);
      return;
    }

    OpBuilder b(module.getContext());
    module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                    b.getUnitAttr());
    b.setInsertionPointToEnd(module.getBody());
    auto targetAttr = NVVM::NVVMTargetAttr::get(
        module.getContext(), /*optLevel=*/3, "nvptx64-nvidia-cuda", chip,
        features);
    auto gpuModule = gpu::GPUModuleOp::create(b, module.getLoc(),
                                              "sgpu_kernels",
                                              b.getArrayAttr({targetAttr}));
    SymbolTable symbols(gpuModule);

    // Weight arguments first: their compression becomes sgpu.assemble of
    // what the prepare kernel writes, which the spmms then read.
    for (auto [idx, op] : llvm::enumerate(prepares))
      lowerWeightPrepare(op, gpuModule, symbols, idx);
    // Spmms next: a TMA spmm lowers the lift that feeds it itself (into
    // rows padded to the weight's padded K); the other lifts follow.
    for (auto [idx, spmm] : llvm::enumerate(spmms))
      lowerSpmm(spmm.first, spmm.second, gpuModule, symbols, idx);
    for (LiftOp lift : lifts)
      if (!loweredLifts.contains(lift))
        lowerLiftToGPU(lift, gpuModule, symbols, liftCount++);
    for (LiftOp lift : lifts)
      if (loweredLifts.contains(lift))
        lift.erase();
    llvm::StringMap<size_t> normCount;
    for (Operation *norm : norms)
      lowerNormToGPU(norm, gpuModule, symbols,
                     normCount[norm->getName().getStringRef()]++);
    for (auto [idx, op] : llvm::enumerate(kernels))
      lowerElementwiseToGPU(op, gpuModule, symbols, idx);
    for (auto [idx, op] : llvm::enumerate(reductionGenerics))
      lowerReductionToGPU(op, gpuModule, symbols, idx);
    KernelSink sink(gpuModule, symbols);
    sink.budget = budget;
    if (modelOps && failed(convertModelOpsToGPU(module, sink)))
      return signalPassFailure();
    // TwELL: each pack before its consumers (program order), the packs
    // erased once every consumer reads their buffers.
    DenseMap<Value, TwellBuffers> packed;
    DenseMap<Value, TwellBlocks> blockPacked;
    // Packs fused into their consumer: H and the nonzero stat.
    DenseMap<Value, std::pair<Value, Value>> fromH;
    SmallVector<TwellPackOp> packs;
    size_t ffnCount = 0, transposeCount = 0;
    DenseMap<Value, Value> downAtBind;
    for (Operation *op : twellOps) {
      if (auto pack = dyn_cast<TwellPackOp>(op)) {
        TwellPackConfigAttr config = getTwellPackConfig(pack);
        if (config.getForm() == TwellPackForm::blocks) {
          blockPacked[pack.getResult()] =
              lowerTwellPackToBlocks(pack, gpuModule, symbols, packs.size());
          packs.push_back(pack);
          continue;
        }
        if (config.getForm() == TwellPackForm::in_consumer) {
          fromH[pack.getResult()] = lowerTwellPackIntoConsumer(
              pack, gpuModule, symbols, packs.size());
          packs.push_back(pack);
          continue;
        }
        packed[pack.getResult()] =
            config.getForm() == TwellPackForm::fused_producer
                ? lowerFusedTwellProducer(
                      pack.getInput().getDefiningOp<MatmulOp>(), pack,
                      gpuModule, symbols, packs.size(), budget,
                      config.getCluster())
                : lowerTwellPackToGPU(pack, gpuModule, symbols, packs.size());
        packs.push_back(pack);
      } else {
        auto ffn = cast<TwellFFNOp>(op);
        auto config =
            ffn->getAttrOfType<TwellFFNConfigAttr>(SGPUDialect::kConfigAttr);
        Value downT = transposeTwellDown(ffn, downAtBind, gpuModule, symbols,
                                         transposeCount);
        auto blocks = blockPacked.find(ffn.getPacked());
        auto unpacked = fromH.find(ffn.getPacked());
        if (unpacked != fromH.end())
          lowerTwellFFNFromH(ffn, unpacked->second.first,
                             unpacked->second.second, downT, gpuModule,
                             symbols, ffnCount++);
        else if (blocks != blockPacked.end())
          lowerTwellFFNToTensorCores(ffn, blocks->second, downT, gpuModule,
                                     symbols, ffnCount++, budget,
                                     config.getTmaGather());
        else
          lowerTwellFFNToGPU(ffn, packed.lookup(ffn.getPacked()), downT,
                             gpuModule, symbols, ffnCount++,
                             config.getPasses());
      }
    }
    for (TwellPackOp pack : packs)
      pack.erase();
    for (Operation *matmul : fusedProducers)
      matmul->erase();
    eraseDeadInits(module, deadInits);

    // Drop compressed-weight views no longer used.
    module.walk([](AssembleOp op) {
      if (op->use_empty())
        op->erase();
    });
  }

  /// What the device gives the kernels (device and reserve-sms options).
  KernelBudget budget;

  /// Lifts already lowered with the spmm they feed, and the lift kernels
  /// generated so far (their names).
  llvm::SmallPtrSet<Operation *, 4> loweredLifts;
  size_t liftCount = 0;

  /// Erases the element-wise ops that only initialized lowered ones (last
  /// first: one may initialize another) and the tensor.empty ops left
  /// unused in the host functions.
  static void eraseDeadInits(ModuleOp module,
                             ArrayRef<linalg::GenericOp> deadInits) {
    for (linalg::GenericOp op : llvm::reverse(deadInits))
      if (op->use_empty())
        op.erase();
    for (auto func : module.getOps<func::FuncOp>())
      func.walk([](tensor::EmptyOp empty) {
        if (empty->use_empty())
          empty.erase();
      });
  }

  /// sgpu.matmul becomes sgpu.gemm_call on buffers: the runtime program
  /// runs it with cuBLASLt, in order with the kernel launches.
  static void lowerMatmulToCall(MatmulOp op) {
    OpBuilder b(op);
    Location loc = op.getLoc();
    auto yType = cast<RankedTensorType>(op.getResult().getType());
    Value x = readBuffer(b, loc, op.getInput());
    Value w = readBuffer(b, loc, op.getWeight());
    Value bias = op.getBias() ? readBuffer(b, loc, op.getBias()) : Value();
    Value y = memref::AllocOp::create(b, loc, memrefTypeOf(yType));
    GemmCallOp::create(b, loc, x, w, bias, y, op.getActivationAttr());
    Value result = bufferization::ToTensorOp::create(
        b, loc, yType, y, /*restrict=*/b.getUnitAttr(),
        /*writable=*/b.getUnitAttr());
    op.replaceAllUsesWith(result);
    op.erase();
  }

  /// Builds `plan` (planFromConfig, from the op's #sgpu.spmm_config) for
  /// `spmm`: its kernel, the lift it lowers with it, and the host launch.
  void lowerSpmm(SpmmOp spmm, const SpmmPlan &plan,
                 gpu::GPUModuleOp gpuModule, SymbolTable &symbols,
                 size_t idx) {
    Location loc = spmm.getLoc();
    CompressedType wType = spmm.getWeight().getType();
    auto yType = cast<RankedTensorType>(spmm.getResult().getType());
    auto assemble = spmm.getWeight().getDefiningOp<AssembleOp>();
    MemRefType vm = memrefTypeOf(wType.getValuesType()),
               mm = memrefTypeOf(wType.getMetadataType()), ym = memrefTypeOf(yType);

    const SpmmShape &shape = plan.shape;
    RankedTensorType xType = plan.xType;
    LiftOp lift = plan.lift;
    bool padLift = plan.padLift, fused = plan.fused,
         splitLift = plan.splitLift, useTma = plan.useTma,
         yByTma = plan.yByTma,
         useWgmma = plan.kernel == SpmmKernelKind::wgmma;
    const TmaSpmmConfig &tma = plan.tma;
    OpBuilder b(gpuModule.getBodyRegion());
    b.setInsertionPointToEnd(gpuModule.getBody());
    Type ptrType = LLVM::LLVMPointerType::get(b.getContext());
    WgmmaSpmmLaunch wg = getWgmmaSpmmLaunch(shape);
    MemRefType xm = memrefTypeOf(xType);
    // Split-K: the kernel writes f32 partial sums [splits, M, N] and a
    // reduce kernel applies the epilogue.
    bool splitKernel = useTma && tma.splits > 1;
    auto wsType =
        MemRefType::get({tma.splits, shape.m, shape.n}, b.getF32Type());
    SmallVector<Type> argTypes = {xm, vm, mm};
    if (useTma)
      argTypes =
          SmallVector<Type>((fused ? 4 : 3) + splitLift + yByTma, ptrType);
    MemRefType biasType;
    if (spmm.getBias())
      biasType = memrefTypeOf(cast<RankedTensorType>(spmm.getBias().getType()));
    if (splitKernel) {
      argTypes.push_back(wsType);
    } else {
      if (biasType)
        argTypes.push_back(biasType);
      if (!yByTma)
        argTypes.push_back(ym);
    }
    auto fnType = b.getFunctionType(argTypes, {});
    auto func = gpu::GPUFuncOp::create(
        b, loc, ("sgpu_spmm_" + std::to_string(idx)), fnType);
    func->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), b.getUnitAttr());
    int64_t threads = useTma ? tma.threads
                      : useWgmma ? wg.threads
                                 : 32 * kMmaSpmmWarps;
    func.setKnownBlockSizeAttr(
        b.getDenseI32ArrayAttr({int32_t(threads), 1, 1}));
    symbols.insert(func);
    if (useTma) {
      // The tensor maps arrive as by-value grid-constant parameters; one
      // block per multiprocessor caps the registers at entry, which
      // setmaxnreg needs.
      func->setAttr("sgpu.tensor_map_args",
                    b.getDenseI64ArrayAttr(llvm::to_vector(llvm::seq<int64_t>(
                        0, 3 + fused + splitLift + yByTma))));
      func->setAttr(NVVM::NVVMDialect::getMinctasmAttrName(),
                    b.getI32IntegerAttr(1));
      if (tma.cluster > 1)
        func->setAttr(NVVM::NVVMDialect::getClusterDimAttrName(),
                      b.getDenseI32ArrayAttr({int32_t(tma.cluster), 1, 1}));
      buildTmaSpmmKernel(b, loc, shape, tma, func);
    } else if (useWgmma) {
      buildWgmmaSpmmKernel(b, loc, shape, func);
    } else {
      buildMmaSpmmKernel(b, loc, shape, func);
    }

    // The host launch.
    b.setInsertionPoint(spmm);
    auto toBuffer = [&](Value v, MemRefType t) -> Value {
      return bufferization::ToBufferOp::create(b, loc, t, v,
                                               /*read_only=*/b.getUnitAttr());
    };
    Value xBuf, w1Buf;
    if (fused || splitLift) {
      // The kernel reads X itself (and, split, the shared windows W1).
      xBuf =
          toBuffer(lift.getInput(),
                   memrefTypeOf(cast<RankedTensorType>(lift.getInput().getType())));
      if (splitLift)
        w1Buf = lowerLiftWindowsToGPU(lift, gpuModule, symbols, liftCount++);
      loweredLifts.insert(lift);
    } else if (useTma && padLift) {
      xBuf = lowerLiftToGPUPadded(lift, shape.paddedK, gpuModule, symbols,
                                  liftCount++);
      loweredLifts.insert(lift);
    } else {
      xBuf = toBuffer(spmm.getInput(), xm);
    }
    Value vBuf = toBuffer(assemble.getValues(), vm);
    Value mBuf = toBuffer(assemble.getMetadata(), mm);
    SmallVector<Value> args = {xBuf, vBuf, mBuf};
    if (useTma) {
      auto tensorMap = [&](Value buf, ArrayRef<int64_t> box,
                           int64_t swizzle) -> Value {
        return TensorMapOp::create(b, loc, ptrType, buf,
                                   b.getDenseI64ArrayAttr(box),
                                   b.getI64IntegerAttr(swizzle));
      };
      // The metadata words seen as [N/16 row tiles, KS*16 words].
      int64_t rowTiles = shape.paddedN / 16;
      auto meta2d = memref::ExpandShapeOp::create(
          b, loc,
          MemRefType::get({rowTiles, mm.getDimSize(0) / rowTiles},
                          mm.getElementType()),
          mBuf, ArrayRef<ReassociationIndices>{{0, 1}});
      args = {tensorMap(xBuf, tma.bBox, tma.bSwizzle),
              tensorMap(vBuf, tma.aBox, tma.aSwizzle)};
      if (fused)
        args.push_back(tensorMap(vBuf, tma.a2Box, tma.a2Swizzle));
      if (splitLift)
        args.push_back(tensorMap(w1Buf, tma.bBox, tma.bSwizzle));
      args.push_back(tensorMap(meta2d, tma.metaBox, 0));
    }
    Value biasBuf;
    if (Value bias = spmm.getBias())
      biasBuf = toBuffer(bias, biasType);
    Value yBuf = memref::AllocOp::create(b, loc, ym);
    Value wsBuf;
    if (splitKernel) {
      wsBuf = memref::AllocOp::create(b, loc, wsType);
      args.push_back(wsBuf);
    } else {
      if (yByTma)
        args.push_back(TensorMapOp::create(b, loc, ptrType, yBuf,
                                           b.getDenseI64ArrayAttr(tma.yBox),
                                           b.getI64IntegerAttr(128)));
      if (biasBuf)
        args.push_back(biasBuf);
      if (!yByTma)
        args.push_back(yBuf);
    }
    auto c = [&](int64_t v) -> Value {
      return arith::ConstantIndexOp::create(b, loc, v);
    };
    int64_t gridX = llvm::divideCeil(shape.m, kMmaSpmmTokensPerBlock);
    int64_t gridY = llvm::divideCeil(shape.paddedN,
                                     kMmaSpmmWarps * kMmaSpmmRowsPerWarp);
    int64_t smem = 0;
    if (useTma) {
      gridX = tma.gridSize;
      gridY = 1;
      smem = tma.dynamicSharedBytes;
    } else if (useWgmma) {
      gridX = wg.gridX;
      gridY = wg.gridY; // static shared memory only
    }
    Value smemBytes;
    if (smem)
      smemBytes = arith::ConstantIntOp::create(b, loc, b.getI32Type(), smem);
    gpu::LaunchFuncOp::create(b, loc, func,
                              gpu::KernelDim3{c(gridX), c(gridY), c(1)},
                              gpu::KernelDim3{c(threads), c(1), c(1)},
                              /*dynamicSharedMemorySize=*/smemBytes, args);
    if (splitKernel) {
      SmallVector<Value> reduceArgs = {wsBuf};
      SmallVector<Type> reduceTypes = {wsType};
      if (biasBuf) {
        reduceArgs.push_back(biasBuf);
        reduceTypes.push_back(biasType);
      }
      reduceArgs.push_back(yBuf);
      reduceTypes.push_back(ym);
      OpBuilder kb(gpuModule.getBodyRegion());
      kb.setInsertionPointToEnd(gpuModule.getBody());
      auto reduce = gpu::GPUFuncOp::create(
          kb, loc, "sgpu_spmm_" + std::to_string(idx) + "_reduce",
          kb.getFunctionType(reduceTypes, {}));
      reduce->setAttr(gpu::GPUDialect::getKernelFuncAttrName(),
                      kb.getUnitAttr());
      reduce.setKnownBlockSizeAttr(kb.getDenseI32ArrayAttr(
          {int32_t(kSplitKReduceThreads), 1, 1}));
      symbols.insert(reduce);
      buildSplitKReduceKernel(kb, loc, shape, tma.splits, reduce);
      int64_t elems = shape.m * shape.n;
      gpu::LaunchFuncOp::create(
          b, loc, reduce,
          gpu::KernelDim3{
              c((elems + kSplitKReduceThreads - 1) / kSplitKReduceThreads),
              c(1), c(1)},
          gpu::KernelDim3{c(kSplitKReduceThreads), c(1), c(1)},
          /*dynamicSharedMemorySize=*/Value(), reduceArgs);
    }
    Value result = bufferization::ToTensorOp::create(
        b, loc, yType, yBuf, /*restrict=*/b.getUnitAttr(),
        /*writable=*/b.getUnitAttr());
    spmm.replaceAllUsesWith(result);
    spmm.erase();
  }
};

} // namespace
