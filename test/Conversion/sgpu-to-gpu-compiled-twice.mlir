// A compiled module given back to the compiler is one error, not one per
// op the lowering left for the runtime.
// RUN: sparse-opt %s --sgpu-compile -o %t.mlir
// RUN: not sparse-opt %t.mlir --sgpu-compile -o /dev/null 2>&1 | FileCheck %s
// CHECK: error: the module is already compiled (it holds generated GPU kernels): compile the input IR, not a compiled module
// CHECK-NOT: error:
func.func @add(%x: tensor<64xf32>, %y: tensor<64xf32>) -> tensor<64xf32> {
  %z = arith.addf %x, %y : tensor<64xf32>
  return %z : tensor<64xf32>
}
