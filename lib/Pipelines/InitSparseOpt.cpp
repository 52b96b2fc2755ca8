//===- InitSparseOpt.cpp - everything the SparseOpt compiler registers ----===//

#include "sparse-opt/InitSparseOpt.h"

#include "sparse-opt/Conversion/Passes.h"
#include "sparse-opt/Dialect/SGPU/SGPU.h"
#include "sparse-opt/Pipelines/Pipelines.h"
#include "sparse-opt/Transforms/Passes.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"

#include <mutex>

void mlir::sgpu::registerSparseOptDialectsAndExtensions(
    DialectRegistry &registry) {
  registerAllDialects(registry);
  registerAllExtensions(registry);
  registerAllToLLVMIRTranslations(registry);
  registry.insert<SGPUDialect>();
}

void mlir::sgpu::registerSparseOptPassesAndPipelines() {
  // Pass registration is global and a pipeline registered twice is a fatal
  // error, so the registration runs exactly once per process.
  static std::once_flag once;
  std::call_once(once, [] {
    registerAllPasses();
    registerSparseOptTransformsPasses();
    registerSparseOptConversionPasses();
    registerSparseOptPipelines();
  });
}
