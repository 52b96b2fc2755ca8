//===- ProgrammaticLaunch.cpp - kernels that may start before their input --===//
//
// A decode step is hundreds of short kernels in a row, and each one pays
// its launch and its ramp-up (blocks placed, barriers set up, the first
// loads in flight) after the kernel before it has ended. On sm_90 a kernel
// launched programmatically may start while its predecessor still runs,
// provided it waits for the predecessor's results itself
// (`griddepcontrol.wait`), and the predecessor says when its dependents may
// start (`griddepcontrol.launch_dependents`).
//
// The pass gives every generated kernel both, in that order, at its entry
// (a kernel that has them already placed them itself: the spmm producer
// loads its run-invariant weight before it waits):
// the wait before any load or store keeps every kernel exactly as ordered
// as a plain launch (it also keeps the chain transitive: a kernel ends only
// after the one before it ended), and the trigger right after it lets the
// next kernel be launched and placed while this one runs. The run-stage
// launches of those kernels are marked `sgpu.programmatic`, which the
// program writes as `pdl`. Without a programmatic predecessor the wait
// returns at once, so the marked kernels stay correct under a plain launch
// (SPARSEOPT_PDL=0, an older driver).
//
//===----------------------------------------------------------------------===//

#include "sparse-opt/Dialect/SGPU/SGPU.h"
#include "sparse-opt/Transforms/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/IR/BuiltinOps.h"

namespace mlir {
namespace sgpu {
#define GEN_PASS_DEF_SGPUPROGRAMMATICLAUNCH
#include "sparse-opt/Transforms/Passes.h.inc"
} // namespace sgpu
} // namespace mlir

using namespace mlir;

namespace {

/// The compute capability of an "sm_90a"-style chip name, or 0.
int chipVersion(StringRef chip) {
  int version = 0;
  if (!chip.consume_front("sm_"))
    return 0;
  chip = chip.take_while([](char c) { return c >= '0' && c <= '9'; });
  return chip.getAsInteger(10, version) ? 0 : version;
}

/// Whether every NVVM target of `module` has griddepcontrol (sm_90 and
/// newer; PTX 7.8, below every PTX version the sm_90 targets take).
bool hasGridDependencyControl(gpu::GPUModuleOp module) {
  ArrayAttr targets = module.getTargetsAttr();
  if (!targets || targets.empty())
    return false;
  return llvm::all_of(targets, [](Attribute a) {
    auto target = dyn_cast<NVVM::NVVMTargetAttr>(a);
    return target && chipVersion(target.getChip()) >= 90;
  });
}

struct ProgrammaticLaunchPass
    : public sgpu::impl::SGPUProgrammaticLaunchBase<ProgrammaticLaunchPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    // A program with collectives keeps plain launches: kernels launched
    // early sit on multiprocessors while they wait, which the NCCL kernels
    // of the communication stream may need (reserve-sms keeps those free
    // of GEMM grids only). Unmeasured, so not risked.
    if (module.walk([](sgpu::AllReduceCallOp) { return WalkResult::interrupt(); })
            .wasInterrupted())
      return;
    // (gpu.module, kernel) of every kernel that now waits at its entry.
    DenseSet<std::pair<StringAttr, StringAttr>> waiting;
    for (auto gpuModule : module.getOps<gpu::GPUModuleOp>()) {
      if (!hasGridDependencyControl(gpuModule))
        continue;
      for (auto func : gpuModule.getOps<gpu::GPUFuncOp>()) {
        if (!func.isKernel() || func.getBody().empty())
          continue;
        // A kernel that placed its own wait (the spmm producer, after the
        // loads of its run-invariant weight) keeps it where it is.
        bool placed = func.walk([](NVVM::GriddepcontrolOp) {
                            return WalkResult::interrupt();
                          }).wasInterrupted();
        waiting.insert({gpuModule.getNameAttr(), func.getNameAttr()});
        if (placed)
          continue;
        OpBuilder b = OpBuilder::atBlockBegin(&func.getBody().front());
        NVVM::GriddepcontrolOp::create(b, func.getLoc(),
                                       NVVM::GridDepActionKind::wait);
        NVVM::GriddepcontrolOp::create(
            b, func.getLoc(), NVVM::GridDepActionKind::launch_dependents);
      }
    }
    if (waiting.empty())
      return;
    Builder b(module.getContext());
    module.walk([&](gpu::LaunchFuncOp launch) {
      // Prepare-stage kernels run once, at bind: nothing to overlap.
      if (launch->hasAttr(sgpu::SGPUDialect::kStageAttr))
        return;
      SymbolRefAttr kernel = launch.getKernel();
      if (waiting.contains({kernel.getRootReference(),
                            kernel.getLeafReference()}))
        launch->setAttr(sgpu::SGPUDialect::kProgrammaticAttr, b.getUnitAttr());
    });
  }
};

} // namespace
