// The pre-norm MLP block (examples/rmsnorm_mlp_block.mlir: the RMSNorm
// kernel, two cuBLASLt GEMMs, the residual-add kernel), compiled from the
// importers' linalg form and from the sgpu-op form and run on the GPU
// through the runtime, matches numpy within a few f16 roundings.
// REQUIRES: gpu
// RUN: rm -rf %t && mkdir -p %t
// RUN: sparse-opt %sparse_opt_src/examples/rmsnorm_mlp_block.mlir --sgpu-compile="output-dir=%t/linalg" -o /dev/null
// RUN: %python %S/check_block.py %t/linalg %sparse_opt_lib | FileCheck %s
// RUN: sparse-opt %sparse_opt_src/test/Target/Inputs/rmsnorm-mlp-block-sgpu.mlir --sgpu-compile="output-dir=%t/sgpu" -o /dev/null
// RUN: %python %S/check_block.py %t/sgpu %sparse_opt_lib | FileCheck %s
// The runtime times cuBLASLt's candidate algorithms for each gemm shape at
// load and keeps the fastest (the log names the heuristic's first and the
// chosen one); with autotuning off the heuristic's first runs. Both match.
// RUN: env SPARSEOPT_GEMM_AUTOTUNE_LOG=1 %python %S/check_block.py %t/linalg %sparse_opt_lib 2>&1 | FileCheck %s --check-prefix=AUTOTUNE
// RUN: env SPARSEOPT_GEMM_AUTOTUNE=0 SPARSEOPT_GEMM_AUTOTUNE_LOG=1 %python %S/check_block.py %t/linalg %sparse_opt_lib 2>&1 | FileCheck %s --check-prefix=HEURISTIC
// CHECK: block 16x256, hidden 512: max_rel_err {{.*}} (ok)
// AUTOTUNE-DAG: sparse-opt runtime: gemm m=16 n=512 k=256: the heuristic's first {{.*}} us, chosen candidate {{[0-9]+}} of {{[0-9]+}} {{.*}} us
// AUTOTUNE-DAG: block 16x256, hidden 512: max_rel_err {{.*}} (ok)
// HEURISTIC-NOT: sparse-opt runtime: gemm
// HEURISTIC: block 16x256, hidden 512: max_rel_err {{.*}} (ok)
