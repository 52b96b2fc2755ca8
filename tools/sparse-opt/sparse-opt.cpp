//===- sparse-opt.cpp - the SparseOpt compiler driver ---------------------===//
//
// An mlir-opt style driver: the sgpu dialect, SparseOpt's passes and
// pipelines, and the upstream dialects and passes they build on.
//
//===----------------------------------------------------------------------===//

#include "sparse-opt/InitSparseOpt.h"
#include "sparse-opt/Pipelines/InputNesting.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

static const char *const kHelp =
  "SparseOpt: an MLIR compiler for sparse and communication-aware "
  "transformer inference on NVIDIA GPUs.\n\n"
  "SparseOpt passes:\n"
  "  --sgpu-slide-sparse        N:M-sparse linalg.matmul -> sgpu.spmm "
  "(constant weights compressed at compile time; kept dense where the "
  "sparse kernel measured slower)\n"
  "  --sgpu-fuse-sibling-spmm   sparse GEMMs of one activation with weight "
  "params (q, k, v) -> one GEMM on their concatenation, sliced\n"
  "  --sgpu-dense-matmul        dense linear-layer linalg.matmul -> "
  "sgpu.matmul (a cuBLASLt call on the GPU)\n"
  "  --sgpu-ladder-residual     the tensor-parallel residual chain in "
  "ladder form (opt-in: changes the model; layers=K)\n"
  "  --sgpu-async-collectives   sgpu.all_reduce -> start + wait at the "
  "first use (communication overlaps compute)\n"
  "  --sgpu-fuse-epilogue       fuse a bias add and a ReLU into the "
  "sgpu.spmm / sgpu.matmul epilogue\n"
  "  --sgpu-sparsify-ffn        ReLU FFNs -> sgpu.twell_pack + "
  "sgpu.twell_ffn over the active neurons (opt-in; tile=T "
  "compression=C)\n"
  "  --convert-sgpu-to-loops    sgpu ops -> reference scf loops (CPU "
  "semantics)\n"
  "  --convert-sgpu-to-gpu      sgpu ops -> generated sparse tensor-core "
  "kernels + host launches, library GEMM calls\n"
  "  --sgpu-tensor-map-params   tensor map kernel arguments -> by-value "
  "grid-constant params (after convert-gpu-to-nvvm)\n"
  "  --sgpu-emit-artifacts      write kernels.ptx, program.txt and "
  "constants for the runtime\n"
  "Pipelines:\n"
  "  --sgpu-compile=\"chip=sm_90a features=+ptx85 output-dir=DIR\"   input "
  "IR -> PTX + runtime program (sparse-policy=auto|sparse)\n"
  "  --sgpu-reference           input IR -> CPU reference loops in the "
  "LLVM dialect (for mlir-runner)\n";

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  // The same registration as the C API (lib/CAPI), so both accept the same
  // IR and pipelines.
  mlir::DialectRegistry registry;
  mlir::sgpu::registerSparseOptDialectsAndExtensions(registry);
  mlir::sgpu::registerSparseOptPassesAndPipelines();

  auto [inputFilename, outputFilename] =
      mlir::registerAndParseCLIOptions(argc, argv, kHelp, registry);
  mlir::MlirOptMainConfig config =
      mlir::MlirOptMainConfig::createFromCLOptions();
  // --show-dialects and --list-passes read no input.
  if (config.shouldShowDialects() || config.shouldListPasses())
    return mlir::asMainReturnCode(mlir::MlirOptMain(
        argc, argv, inputFilename, outputFilename, registry));

  // The input is read here, not by MlirOptMain, so that text nested deeper
  // than the parser's stack takes is refused before parsing.
  std::string error;
  std::unique_ptr<llvm::MemoryBuffer> input =
      mlir::openInputFile(inputFilename, &error);
  if (!input) {
    llvm::errs() << error << "\n";
    return 1;
  }
  if (unsigned line = mlir::sgpu::lineNestedTooDeep(input->getBuffer())) {
    llvm::errs() << input->getBufferIdentifier() << ":" << line
                 << ":1: error: brackets nested more than "
                 << mlir::sgpu::kMaxInputNesting
                 << " levels deep: the parser would exhaust its stack\n";
    return 1;
  }
  std::unique_ptr<llvm::ToolOutputFile> output =
      mlir::openOutputFile(outputFilename, &error);
  if (!output) {
    llvm::errs() << error << "\n";
    return 1;
  }
  if (mlir::failed(
          mlir::MlirOptMain(output->os(), std::move(input), registry, config)))
    return 1;
  output->keep();
  return 0;
}
