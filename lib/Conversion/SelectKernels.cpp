//===- SelectKernels.cpp - record every kernel choice on its op -----------===//
//
// sgpu-select-kernels: the policy half of the GPU lowering as a pass of its
// own (KernelSelection.h), so the choices can be read, tested and edited
// before convert-sgpu-to-gpu builds them.
//
//===----------------------------------------------------------------------===//

#include "KernelSelection.h"
#include "sparse-opt/Conversion/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"

namespace mlir {
namespace sgpu {
#define GEN_PASS_DEF_SGPUSELECTKERNELS
#include "sparse-opt/Conversion/Passes.h.inc"
} // namespace sgpu
} // namespace mlir

using namespace mlir;
using namespace mlir::sgpu;

namespace {

struct SGPUSelectKernelsPass
    : public sgpu::impl::SGPUSelectKernelsBase<SGPUSelectKernelsPass> {
  using Base::Base;
  // Reads the options the base declares (protected there).
  friend KernelSelectionOptions selectionOptionsOf<>(const SGPUSelectKernelsPass &);

  void runOnOperation() override {
    ModuleOp module = getOperation();
    FailureOr<KernelSelection> selection = KernelSelection::parse(
        selectionOptionsOf(*this), module, getArgument());
    if (failed(selection) || failed(selection->select(module)))
      return signalPassFailure();
  }
};

} // namespace
