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
// CHECK: block 16x256, hidden 512: max_rel_err {{.*}} (ok)
