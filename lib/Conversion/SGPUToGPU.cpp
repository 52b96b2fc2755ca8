//===- SGPUToGPU.cpp - sgpu ops to generated GPU kernels ------------------===//
//
// The driver of the GPU lowering. It checks that every op can be lowered
// (an error at each op that cannot, with why), then runs the lowerings as
// OpConversionPatterns, one partial conversion per op family in a fixed
// order, and ends with a conversion target that admits none of the ops
// it lowers, so that an op left unlowered is an error at its location.
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
#include "sparse-opt/Dialect/SGPU/ConstantWeights.h"
#include "sparse-opt/Dialect/SGPU/SGPU.h"
#include "sparse-opt/Conversion/TargetInfo.h"
#include "CollectivesToRuntime.h"
#include "ElementwiseToGPU.h"
#include "GPULoweringTarget.h"
#include "KernelSelection.h"
#include "LiftToGPU.h"
#include "MatmulToLibrary.h"
#include "ModelOpsToGPU.h"
#include "NormToGPU.h"
#include "ReductionToGPU.h"
#include "SpmmSelection.h"
#include "SpmmToGPU.h"
#include "TwellPatterns.h"
#include "TwellSelection.h"
#include "WeightPrepare.h"

// The dialects the pass creates ops of (Passes.td) must be complete here.
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

namespace mlir {
namespace sgpu {
#define GEN_PASS_DEF_CONVERTSGPUTOGPU
#include "sparse-opt/Conversion/Passes.h.inc"
} // namespace sgpu
} // namespace mlir

using namespace mlir;
using namespace mlir::sgpu;

namespace {

/// What the checks found for the conversions: the spmms' plans, the
/// matmuls that fused TwELL producers replace, and the element-wise and
/// reduction ops of the host functions (generalized before lowering).
struct LoweringWork {
  SpmmLowering spmm;
  llvm::SmallPtrSet<Operation *, 4> fusedProducers;
  SmallVector<linalg::LinalgOp> elementwise, reductions;
  /// Whether any op becomes a kernel (else the module gets no gpu.module).
  bool kernels = false;
};

/// The checks of one sgpu.spmm: a kernel the target runs, a weight the
/// lowering can read, a plan that fits (planFromConfig).
LogicalResult checkSpmm(SpmmOp spmm, const KernelSelection &selection,
                        StringRef chip, StringRef features,
                        LoweringWork &work) {
  auto config = spmm->getAttrOfType<SpmmConfigAttr>(SGPUDialect::kConfigAttr);
  if (!config)
    return spmm.emitError() << "sgpu.spmm has no #sgpu.spmm_config (its "
                               "sgpu.config)";
  std::string why =
      whyNoSpmmKernel(config.getKernel(), selection.target, chip, features);
  if (!why.empty())
    return spmm.emitError() << why;
  Operation *producer = spmm.getWeight().getDefiningOp();
  if (!isa_and_nonnull<AssembleOp>(producer) &&
      !(producer && isPreparableWeight(producer)))
    return spmm.emitError()
           << "the sparse weight must be a constant, sgpu.assemble of its "
              "parts, or an argument of the function that only this matmul "
              "reads (compressed on the GPU when the program's params are "
              "bound); a weight computed in the function is not supported";
  FailureOr<SpmmPlan> plan = planFromConfig(spmm, config, selection.budget);
  if (failed(plan))
    return failure();
  work.spmm.plans[spmm] = *plan;
  return success();
}

/// The checks of one sgpu.twell_pack: only TwELL consumers read its value
/// (its parts are buffers handed to their kernels), and its configuration
/// fits the target.
LogicalResult checkTwellPack(TwellPackOp pack, const TargetInfo &target,
                             LoweringWork &work) {
  for (Operation *user : pack->getUsers())
    if (!isa<TwellFFNOp>(user))
      return pack.emitError()
             << "the TwELL value is used by '" << user->getName()
             << "'; the GPU lowering supports TwELL values read only by "
                "sgpu.twell_ffn";
  std::string why = whyNoTwellLowering(pack, target);
  if (!why.empty())
    return pack.emitError() << why;
  if (getTwellPackConfig(pack).getForm() == TwellPackForm::fused_producer)
    work.fusedProducers.insert(pack.getInput().getDefiningOp());
  return success();
}

/// The checks of one sgpu.twell_ffn: its pack is in the same function, and
/// the CUDA-core consumer's limits (tile entries staged in shared memory,
/// the output row in registers).
LogicalResult checkTwellFFN(TwellFFNOp ffn) {
  if (!ffn.getPacked().getDefiningOp<TwellPackOp>())
    return ffn.emitError() << "the TwELL activations must come from "
                              "sgpu.twell_pack in the same function; a "
                              "!sgpu.twell value from elsewhere has no "
                              "concrete buffers here";
  auto config = ffn->getAttrOfType<TwellFFNConfigAttr>(SGPUDialect::kConfigAttr);
  // No configuration: reported at the pack (whyNoTwellLowering). The
  // tensor-core consumer has neither CUDA-core limit.
  if (!config || config.getConsumer() == TwellConsumerKind::tensor_cores)
    return success();
  int64_t entries = ffn.getPacked().getType().getLayout().getCapacity();
  if (entries > kTwellMaxTileEntries)
    return ffn.emitError() << "sgpu.twell_ffn with " << entries
                           << " entries per tile: the GPU consumer stages a "
                              "tile's entries in shared memory, at most "
                           << kTwellMaxTileEntries
                           << " (use a smaller tile or a larger compression)";
  int64_t d = cast<RankedTensorType>(ffn.getResult().getType()).getDimSize(1);
  if (d > kTwellMaxOutputFeatures)
    return ffn.emitError() << "sgpu.twell_ffn with " << d
                           << " output features: the GPU consumer keeps its "
                              "f32 output row in registers, at most "
                           << kTwellMaxOutputFeatures << " features";
  return success();
}

/// A linalg op of a host function: element-wise ones and reductions become
/// kernels, the rest has no lowering.
LogicalResult checkHostLinalg(linalg::LinalgOp op, LoweringWork &work) {
  std::string why = whyNotElementwise(op);
  if (why.empty()) {
    work.elementwise.push_back(op);
    return success();
  }
  // Reductions no rewrite took (ReductionToGPU.h).
  if (op.getNumReductionLoops() > 0) {
    why = whyNotReduction(op);
    if (why.empty()) {
      work.reductions.push_back(op);
      work.kernels = true;
      return success();
    }
  }
  return op->emitError() << "'" << op->getName()
                         << "' has no GPU lowering: " << why;
}

/// Whether `op` is lowered by the model-block patterns (ModelOpsToGPU.h).
bool isModelBlockOp(Operation *op) {
  if (isa<EmbeddingOp, RopeOp, AttentionOp, CacheUpdateOp>(op))
    return true;
  if (auto slice = dyn_cast<tensor::ExtractSliceOp>(op))
    return isStaticSlice(slice);
  if (auto concat = dyn_cast<tensor::ConcatOp>(op))
    return concat.getResultType().hasStaticShape();
  return false;
}

/// The check of one op of the module: an error at each op without a GPU
/// lowering, with why.
LogicalResult checkOp(Operation *op, const KernelSelection &selection,
                      StringRef chip, StringRef features, LoweringWork &work) {
  if (auto spmm = dyn_cast<SpmmOp>(op)) {
    work.kernels = true;
    return checkSpmm(spmm, selection, chip, features, work);
  }
  if (auto attn = dyn_cast<AttentionOp>(op)) {
    std::string why = whyNoAttentionKernel(attn);
    if (!why.empty())
      return attn.emitError() << "'sgpu.attention' has no GPU lowering: "
                              << why;
    if (attn.getSeqMajor() && !selection.spelled.attentionLibrary &&
        attentionConfig(attn).getKernel() == AttentionKernelKind::chosen)
      return attn.emitError()
             << "'sgpu.attention' has no GPU lowering: a seq_major "
                "attention runs only through cuDNN's fused attention, and "
                "attention-library=false keeps every attention on the "
                "generated kernels";
  }
  if (isa<LiftOp, RMSNormOp, AddRMSNormOp, LayerNormOp>(op) ||
      isModelBlockOp(op)) {
    work.kernels = true;
    return success();
  }
  // Dense GEMMs are library calls, collectives runtime steps.
  if (isa<MatmulOp, AllReduceOp, AllReduceStartOp, AllReduceWaitOp>(op))
    return success();
  if (auto pack = dyn_cast<TwellPackOp>(op)) {
    work.kernels = true;
    return checkTwellPack(pack, selection.target, work);
  }
  if (auto ffn = dyn_cast<TwellFFNOp>(op))
    return checkTwellFFN(ffn);
  if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op)) {
    if (op->getParentOfType<gpu::GPUModuleOp>())
      return success();
    return checkHostLinalg(linalgOp, work);
  }
  // Compressed-weight producers are reported through their spmm users.
  if (isa<AssembleOp>(op) ||
      (isa<CompressOp, NMDecomposeOp>(op) && !op->use_empty() &&
       llvm::all_of(op->getUsers(),
                    [](Operation *u) { return isa<SpmmOp>(u); })))
    return success();
  if (op->getDialect() && isa<SGPUDialect>(op->getDialect()))
    return op->emitError() << "'" << op->getName()
                           << "' has no GPU lowering yet";
  return success();
}

/// One partial conversion: `patterns` rewrite the ops that `mark` makes
/// illegal; every other op stays as it is.
LogicalResult convert(ModuleOp module, RewritePatternSet &&patterns,
                      function_ref<void(ConversionTarget &)> mark) {
  ConversionTarget target(*module.getContext());
  mark(target);
  target.markUnknownOpDynamicallyLegal([](Operation *) { return true; });
  return applyPartialConversion(module, target, std::move(patterns));
}

struct ConvertSGPUToGPUPass
    : public sgpu::impl::ConvertSGPUToGPUBase<ConvertSGPUToGPUPass> {
  using Base::Base;
  // Reads the options the base declares (protected there).
  friend KernelSelectionOptions selectionOptionsOf<>(const ConvertSGPUToGPUPass &);

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (failed(checkInput(module)))
      return signalPassFailure();
    // The choices: those recorded on the ops (sgpu-select-kernels, or by
    // hand), the options' for the ops that arrive without one. (The
    // selection checks the buffer limits first.)
    FailureOr<KernelSelection> selection = KernelSelection::parse(
        selectionOptionsOf(*this), module, getArgument());
    if (failed(selection) || failed(selection->select(module)))
      return signalPassFailure();
    // Weights that are constants are compressed now, at compile time.
    if (failed(foldConstantCompresses(module)))
      return signalPassFailure();
    // Every op must be lowerable here; report the rest at their ops.
    LoweringWork work;
    bool failedAny = false;
    module.walk([&](Operation *op) {
      failedAny |= failed(checkOp(op, *selection, chip, features, work));
    });
    if (failedAny || failed(checkCollectivesAtTopLevel(module)))
      return signalPassFailure();
    if (failed(lowerHostSteps(module, work)))
      return signalPassFailure();
    if (work.kernels && failed(lowerKernels(module, work, selection->budget)))
      return signalPassFailure();
    eraseDeadInits(module, deadInits);
    // Drop compressed-weight views no longer used.
    module.walk([](AssembleOp op) {
      if (op->use_empty())
        op->erase();
    });
    // Nothing the lowering replaces may remain.
    if (failed(convert(module, RewritePatternSet(&getContext()),
                       addLoweredOpsIllegal)))
      return signalPassFailure();
  }

  /// The module must be the input IR, one host function without calls.
  static LogicalResult checkInput(ModuleOp module) {
    // Already lowered (compiled.mlir given back to the compiler): one clear
    // error instead of one per op the lowering left for the runtime.
    if (module->hasAttr(gpu::GPUDialect::getContainerModuleAttrName()))
      return module.emitError()
             << "the module is already compiled (it holds generated GPU "
                "kernels): compile the input IR, not a compiled module";
    // A runtime program is one host function: calls have nothing to call.
    WalkResult calls = module.walk([&](func::CallOp call) {
      call.emitError() << "calls are not supported: the runtime program is "
                          "one host function; inline @"
                       << call.getCallee()
                       << " (the inline pass) before compiling";
      return WalkResult::interrupt();
    });
    return failure(calls.wasInterrupted());
  }

  /// The steps that are no kernels: dense GEMMs become library calls
  /// (except those a fused TwELL producer replaces), all-reduces NCCL
  /// steps; the named element-wise ops become generics (one lowering
  /// covers them all), and those that only initialize others that never
  /// read them (the usual fill of an `outs` tensor) are set aside, to be
  /// erased once those are lowered.
  LogicalResult lowerHostSteps(ModuleOp module, LoweringWork &work) {
    MLIRContext *ctx = module.getContext();
    RewritePatternSet matmuls(ctx);
    populateMatmulToLibraryPatterns(matmuls);
    if (failed(convert(module, std::move(matmuls), [&](ConversionTarget &t) {
          t.addDynamicallyLegalOp<MatmulOp>([&](MatmulOp op) {
            return work.fusedProducers.contains(op);
          });
        })))
      return failure();
    RewritePatternSet collectives(ctx);
    populateCollectivesToRuntimePatterns(collectives);
    if (failed(convert(module, std::move(collectives), [](ConversionTarget &t) {
          t.addIllegalOp<AllReduceOp, AllReduceStartOp, AllReduceWaitOp>();
        })))
      return failure();
    for (linalg::LinalgOp op : work.elementwise) {
      FailureOr<linalg::GenericOp> generic = generalizeElementwise(op);
      if (failed(generic))
        return failure();
      if (isOnlyUnreadInit(*generic)) {
        deadInits.push_back(*generic);
      } else {
        kernelGenerics.insert(*generic);
        work.kernels = true;
      }
    }
    for (linalg::LinalgOp op : work.reductions) {
      FailureOr<linalg::GenericOp> generic = generalizeElementwise(op);
      if (failed(generic))
        return failure();
      reductionGenerics.insert(*generic);
    }
    return success();
  }

  /// The kernels, family by family in a fixed order (their names and their
  /// order in the gpu.module follow it): weight preparation first (its
  /// sgpu.assemble is what the spmms read), the spmms with the lifts they
  /// take in, the other lifts, norms, element-wise ops, reductions, the
  /// model-block ops, TwELL.
  LogicalResult lowerKernels(ModuleOp module, LoweringWork &work,
                             const KernelBudget &budget) {
    MLIRContext *ctx = module.getContext();
    OpBuilder b(ctx);
    module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                    b.getUnitAttr());
    b.setInsertionPointToEnd(module.getBody());
    auto targetAttr = NVVM::NVVMTargetAttr::get(
        ctx, /*optLevel=*/3, "nvptx64-nvidia-cuda", chip, features);
    auto gpuModule = gpu::GPUModuleOp::create(b, module.getLoc(),
                                              "sgpu_kernels",
                                              b.getArrayAttr({targetAttr}));
    SymbolTable symbols(gpuModule);
    KernelSink sink(gpuModule, symbols);
    sink.budget = budget;
    sink.attentionLibrary = attentionLibrary;
    sink.programmaticLaunch = programmaticLaunch;
    sink.slicedTmaStore = slicedTmaStore;
    TwellLowering twell;

    auto family = [&](auto populate, auto mark) {
      RewritePatternSet patterns(ctx);
      populate(patterns);
      return convert(module, std::move(patterns), mark);
    };
    auto illegalGenerics = [](const llvm::SmallPtrSetImpl<Operation *> &set) {
      return [&set](ConversionTarget &t) {
        t.addDynamicallyLegalOp<linalg::GenericOp>(
            [&set](linalg::GenericOp op) { return !set.contains(op); });
      };
    };
    bool lowered =
        succeeded(family(
            [&](RewritePatternSet &p) { populateWeightPreparePatterns(p, sink); },
            [](ConversionTarget &t) {
              t.addDynamicallyLegalOp<CompressOp, NMDecomposeOp>(
                  [](Operation *op) { return !isPreparableWeight(op); });
            })) &&
        (eraseDeadWeightConcats(module), true) &&
        succeeded(family(
            [&](RewritePatternSet &p) {
              populateSpmmToGPUPatterns(p, sink, work.spmm);
            },
            [](ConversionTarget &t) { t.addIllegalOp<SpmmOp>(); })) &&
        succeeded(family(
            [&](RewritePatternSet &p) {
              populateLiftToGPUPatterns(p, sink, work.spmm.loweredLifts);
            },
            [](ConversionTarget &t) { t.addIllegalOp<LiftOp>(); })) &&
        succeeded(family(
            [&](RewritePatternSet &p) { populateNormToGPUPatterns(p, sink); },
            [](ConversionTarget &t) {
              t.addIllegalOp<RMSNormOp, AddRMSNormOp, LayerNormOp>();
            })) &&
        succeeded(family(
            [&](RewritePatternSet &p) {
              populateElementwiseToGPUPatterns(p, sink);
            },
            illegalGenerics(kernelGenerics))) &&
        succeeded(family(
            [&](RewritePatternSet &p) {
              populateReductionToGPUPatterns(p, sink);
            },
            illegalGenerics(reductionGenerics))) &&
        succeeded(convertModelOpsToGPU(module, sink)) &&
        succeeded(family(
            [&](RewritePatternSet &p) {
              populateTwellToGPUPatterns(p, sink, twell);
            },
            [](ConversionTarget &t) {
              t.addIllegalOp<TwellPackOp, TwellFFNOp>();
            }));
    // Ops that became library calls (a prefill attention) leave no kernel:
    // a program of host steps alone has no module.
    if (lowered && gpuModule.getOps<gpu::GPUFuncOp>().empty())
      gpuModule.erase();
    return success(lowered);
  }

  /// The generics that become element-wise kernels and reduction kernels,
  /// and those that only initialized lowered ones.
  llvm::SmallPtrSet<Operation *, 16> kernelGenerics, reductionGenerics;
  SmallVector<linalg::GenericOp> deadInits;

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
};

} // namespace
