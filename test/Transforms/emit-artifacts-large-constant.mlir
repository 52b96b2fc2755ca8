// A splat constant is written into the artifact by expanding it in memory:
// one of 64 GiB is an error before anything is allocated.
// RUN: rm -rf %t && not sparse-opt %s --sgpu-compile="output-dir=%t" -o /dev/null 2>&1 | FileCheck %s
// CHECK: error: a constant of 68719476736 bytes: the artifact holds constants of at most 16 GiB (import large weights as params, weights=params)
func.func @big(%x: tensor<8x131072xf32>) -> tensor<8x131072xf32> {
  %w = arith.constant dense<1.0> : tensor<131072x131072xf32>
  %e = tensor.empty() : tensor<8x131072xf32>
  %z = arith.constant 0.0 : f32
  %a = linalg.fill ins(%z : f32) outs(%e : tensor<8x131072xf32>) -> tensor<8x131072xf32>
  %y = linalg.matmul ins(%x, %w : tensor<8x131072xf32>, tensor<131072x131072xf32>) outs(%a : tensor<8x131072xf32>) -> tensor<8x131072xf32>
  return %y : tensor<8x131072xf32>
}
