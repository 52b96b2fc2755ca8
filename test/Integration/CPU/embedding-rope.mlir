// The reference semantics of sgpu.embedding (ids outside the table give a
// zero row) and sgpu.rope (rotate-half form, tables broadcast over heads),
// run on the CPU. Values are exact in f32, so the check is exact.
// RUN: sparse-opt %s --sgpu-reference | \
// RUN:   mlir-runner -e main -entry-point-result=void \
// RUN:     -shared-libs=%mlir_runner_utils,%mlir_c_runner_utils | FileCheck %s

func.func private @printMemrefF32(memref<*xf32>)

func.func @main() {
  %table = arith.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]]> : tensor<3x3xf32>
  %ids = arith.constant dense<[[2, 0], [3, -1]]> : tensor<2x2xi64>
  %e = sgpu.embedding %table, %ids : tensor<3x3xf32>, tensor<2x2xi64> -> tensor<2x2x3xf32>
  %em = bufferization.to_buffer %e : tensor<2x2x3xf32> to memref<2x2x3xf32>
  %eu = memref.cast %em : memref<2x2x3xf32> to memref<*xf32>
  // CHECK: rank = 3 offset = 0 sizes = [2, 2, 3]
  // CHECK: [7,   8,   9],
  // CHECK-NEXT: [1,   2,   3]
  // CHECK: [0,   0,   0],
  // CHECK-NEXT: [0,   0,   0]
  call @printMemrefF32(%eu) : (memref<*xf32>) -> ()

  // x: 2 heads x 2 positions x 4; cos/sin: one table of 2 positions x 4.
  %x = arith.constant dense<[[[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0]],
                             [[-1.0, -2.0, -3.0, -4.0], [0.5, 1.5, 2.5, 3.5]]]> : tensor<2x2x4xf32>
  %cos = arith.constant dense<[[[1.0, 1.0, 1.0, 1.0], [0.5, 0.5, 0.5, 0.5]]]> : tensor<1x2x4xf32>
  %sin = arith.constant dense<[[[0.0, 0.0, 0.0, 0.0], [2.0, 2.0, 2.0, 2.0]]]> : tensor<1x2x4xf32>
  %y = sgpu.rope %x, %cos, %sin : tensor<2x2x4xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32> -> tensor<2x2x4xf32>
  %ym = bufferization.to_buffer %y : tensor<2x2x4xf32> to memref<2x2x4xf32>
  %yu = memref.cast %ym : memref<2x2x4xf32> to memref<*xf32>
  // Position 0: y = x. Position 1: y = 0.5 x + 2 (-x[2], -x[3], x[0], x[1]).
  // CHECK: rank = 3 offset = 0 sizes = [2, 2, 4]
  // CHECK: [1,   2,   3,   4],
  // CHECK-NEXT: [-11.5,   -13,   13.5,   16]
  // CHECK: [-1,   -2,   -3,   -4],
  // CHECK-NEXT: [-4.75,   -6.25,   2.25,   4.75]
  call @printMemrefF32(%yu) : (memref<*xf32>) -> ()
  return
}
