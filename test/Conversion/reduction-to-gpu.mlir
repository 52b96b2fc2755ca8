// Reductions that no rewrite took become thread-per-result kernels
// (ReductionToGPU.h): a row sum reading its init, an f32 matmul (no
// library GEMM for f32) whose zero fill stays a kernel the reduction reads,
// and a sum over a middle dimension.
// RUN: sparse-opt %s -split-input-file -convert-sgpu-to-gpu | FileCheck %s

// CHECK-LABEL: func.func @row_sum
// CHECK: gpu.launch_func @sgpu_kernels::@sgpu_reduction_0 blocks in (%c1, %{{.*}}, %{{.*}}) threads in (%c256,
// CHECK-SAME: args(%{{.*}} : memref<4x64xf32>, %{{.*}} : memref<4xf32>, %{{.*}} : memref<4xf32>)
// CHECK: gpu.func @sgpu_reduction_0
// CHECK: memref.load
// CHECK: scf.for %{{.*}} = %c0 to %c64 step %c1 iter_args
// CHECK: arith.addf
// CHECK: scf.yield
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @row_sum(%x: tensor<4x64xf32>, %init: tensor<4xf32>) -> tensor<4xf32> {
  %s = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<4x64xf32>) outs(%init : tensor<4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %a, %o : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  return %s : tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @f32_matmul
// CHECK: gpu.launch_func @sgpu_kernels::@sgpu_elementwise_0
// CHECK: gpu.launch_func @sgpu_kernels::@sgpu_reduction_0
// CHECK-SAME: args(%{{.*}} : memref<4x8xf32>, %{{.*}} : memref<8x16xf32>, %{{.*}} : memref<4x16xf32>, %{{.*}} : memref<4x16xf32>)
// CHECK: gpu.func @sgpu_reduction_0
// CHECK: scf.for %{{.*}} = %c0 to %c8 step %c1 iter_args
// CHECK: arith.mulf
// CHECK: arith.addf
func.func @f32_matmul(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>) -> tensor<4x16xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x16xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
  %y = linalg.matmul ins(%x, %w : tensor<4x8xf32>, tensor<8x16xf32>) outs(%f : tensor<4x16xf32>) -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

// -----

// CHECK-LABEL: func.func @middle_sum
// CHECK: gpu.launch_func @sgpu_kernels::@sgpu_reduction_0
// CHECK: gpu.func @sgpu_reduction_0
// CHECK: scf.for %{{.*}} = %c0 to %c5 step %c1 iter_args
#in = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#out = affine_map<(d0, d1, d2) -> (d0, d2)>
func.func @middle_sum(%x: tensor<2x5x3xf16>, %init: tensor<2x3xf16>) -> tensor<2x3xf16> {
  %s = linalg.generic {indexing_maps = [#in, #out], iterator_types = ["parallel", "reduction", "parallel"]} ins(%x : tensor<2x5x3xf16>) outs(%init : tensor<2x3xf16>) {
  ^bb0(%a: f16, %o: f16):
    %r = arith.addf %a, %o : f16
    linalg.yield %r : f16
  } -> tensor<2x3xf16>
  return %s : tensor<2x3xf16>
}
