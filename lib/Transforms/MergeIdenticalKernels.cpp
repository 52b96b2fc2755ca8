//===- MergeIdenticalKernels.cpp - one copy of each generated kernel -------===//
//
// Kernels are compared by their printed form with the symbol name cleared,
// which covers the body, every attribute, the workgroup buffers and the
// known block size in one string. Printing is linear in the kernel's size;
// a 32-layer model has a few hundred kernels before merging.
//
//===----------------------------------------------------------------------===//

#include "sparse-opt/Transforms/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/raw_ostream.h"

namespace mlir {
namespace sgpu {
#define GEN_PASS_DEF_SGPUMERGEIDENTICALKERNELS
#include "sparse-opt/Transforms/Passes.h.inc"
} // namespace sgpu
} // namespace mlir

using namespace mlir;

namespace {

/// `func` printed with its name replaced by a fixed one.
std::string printedWithoutName(gpu::GPUFuncOp func) {
  StringAttr name = func.getNameAttr();
  func.setName("k");
  std::string text;
  llvm::raw_string_ostream os(text);
  func->print(os, OpPrintingFlags().useLocalScope());
  func.setName(name);
  return text;
}

struct MergeIdenticalKernelsPass
    : public sgpu::impl::SGPUMergeIdenticalKernelsBase<
          MergeIdenticalKernelsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    // (gpu.module name, kernel name) -> the kernel it merges into.
    DenseMap<std::pair<StringAttr, StringAttr>, StringAttr> replacement;
    SmallVector<Operation *> erased;
    for (auto gpuModule : module.getOps<gpu::GPUModuleOp>()) {
      llvm::StringMap<StringAttr> first;
      for (auto func : gpuModule.getOps<gpu::GPUFuncOp>()) {
        if (!func.isKernel())
          continue;
        auto [it, inserted] =
            first.try_emplace(printedWithoutName(func), func.getNameAttr());
        if (inserted)
          continue;
        replacement[{gpuModule.getNameAttr(), func.getNameAttr()}] =
            it->second;
        erased.push_back(func);
      }
    }
    if (erased.empty())
      return;
    module.walk([&](gpu::LaunchFuncOp launch) {
      SymbolRefAttr kernel = launch.getKernel();
      auto it = replacement.find(
          {kernel.getRootReference(), kernel.getLeafReference()});
      if (it == replacement.end())
        return;
      launch.setKernelAttr(SymbolRefAttr::get(
          kernel.getRootReference(), {FlatSymbolRefAttr::get(it->second)}));
    });
    for (Operation *op : erased)
      op->erase();
  }
};

} // namespace
