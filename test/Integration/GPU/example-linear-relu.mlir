// The shipped example, compiled and run on the GPU through the runtime,
// matches numpy within one fp16 rounding of the output.
// REQUIRES: gpu
// RUN: rm -rf %t && sparse-opt %sparse_opt_src/examples/linear_relu_24.mlir --sgpu-compile="output-dir=%t" -o /dev/null
// RUN: sparse-opt-run %t --iters 3 --warmup 1 | FileCheck %s --check-prefix=CLI
// RUN: %python %S/check_linear_relu.py %t %sparse_opt_lib 128 256 512 | FileCheck %s
// CLI: program {{.*}}: 1 input(s), 1 output(s), 1 launch(es)
// CLI: output 0: 131072 bytes, checksum
// CHECK: max_rel_err {{.*}} (ok)
