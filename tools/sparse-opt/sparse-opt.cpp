//===- sparse-opt.cpp - the SparseOpt compiler driver ---------------------===//
//
// An mlir-opt style driver: the sgpu dialect, SparseOpt's passes and
// pipelines, and the upstream dialects and passes they build on.
//
//===----------------------------------------------------------------------===//

#include "sparse-opt/InitSparseOpt.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  // The same registration as the C API (lib/CAPI), so both accept the same
  // IR and pipelines.
  mlir::DialectRegistry registry;
  mlir::sgpu::registerSparseOptDialectsAndExtensions(registry);
  mlir::sgpu::registerSparseOptPassesAndPipelines();

  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv,
      "SparseOpt: an MLIR compiler for sparse and communication-aware "
      "transformer inference on NVIDIA GPUs.\n\n"
      "SparseOpt passes:\n"
      "  --sgpu-slide-sparse        N:M-sparse linalg.matmul -> sgpu.spmm "
      "(constant weights compressed at compile time; kept dense where the "
      "sparse kernel measured slower)\n"
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
      "LLVM dialect (for mlir-runner)\n",
      registry));
}
