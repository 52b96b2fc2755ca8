// The reference semantics of a KV cache: sgpu.cache_update writes the new
// keys and values of each sequence at its own positions (-1: padding, not
// written) into state arguments that keep them between calls, and
// sgpu.attention with positions attends over the cache, query at position p
// seeing keys 0..p (a padding query gives zeros). A prefill of two
// sequences (lengths 2 and 1) then a decode step; zero queries make every
// visible key weigh the same, so the outputs are means of cached values.
// RUN: sparse-opt %s --sgpu-reference | \
// RUN:   mlir-runner -e main -entry-point-result=void \
// RUN:     -shared-libs=%mlir_runner_utils,%mlir_c_runner_utils | FileCheck %s

func.func private @printMemrefF32(memref<*xf32>)

func.func @step_prefill(%q: tensor<2x1x2x2xf32>, %k: tensor<2x1x2x2xf32>, %v: tensor<2x1x2x2xf32>, %pos: tensor<2x2xi64>,
                        %kc: tensor<2x1x4x2xf32> {sgpu.param = "k", sgpu.state},
                        %vc: tensor<2x1x4x2xf32> {sgpu.param = "v", sgpu.state}) -> tensor<2x1x2x2xf32> {
  %k2 = sgpu.cache_update %kc, %k, %pos : tensor<2x1x4x2xf32>, tensor<2x1x2x2xf32>, tensor<2x2xi64> -> tensor<2x1x4x2xf32>
  %v2 = sgpu.cache_update %vc, %v, %pos : tensor<2x1x4x2xf32>, tensor<2x1x2x2xf32>, tensor<2x2xi64> -> tensor<2x1x4x2xf32>
  %o = sgpu.attention %q, %k2, %v2 positions(%pos : tensor<2x2xi64>) {causal, scale = 1.0 : f32} : tensor<2x1x2x2xf32>, tensor<2x1x4x2xf32>, tensor<2x1x4x2xf32> -> tensor<2x1x2x2xf32>
  return %o : tensor<2x1x2x2xf32>
}

func.func @step_decode(%q: tensor<2x1x1x2xf32>, %k: tensor<2x1x1x2xf32>, %v: tensor<2x1x1x2xf32>, %pos: tensor<2x1xi32>,
                       %kc: tensor<2x1x4x2xf32> {sgpu.param = "k", sgpu.state},
                       %vc: tensor<2x1x4x2xf32> {sgpu.param = "v", sgpu.state}) -> tensor<2x1x1x2xf32> {
  %k2 = sgpu.cache_update %kc, %k, %pos : tensor<2x1x4x2xf32>, tensor<2x1x1x2xf32>, tensor<2x1xi32> -> tensor<2x1x4x2xf32>
  %v2 = sgpu.cache_update %vc, %v, %pos : tensor<2x1x4x2xf32>, tensor<2x1x1x2xf32>, tensor<2x1xi32> -> tensor<2x1x4x2xf32>
  %o = sgpu.attention %q, %k2, %v2 positions(%pos : tensor<2x1xi32>) {causal, scale = 1.0 : f32} : tensor<2x1x1x2xf32>, tensor<2x1x4x2xf32>, tensor<2x1x4x2xf32> -> tensor<2x1x1x2xf32>
  return %o : tensor<2x1x1x2xf32>
}

func.func @main() {
  %zero = arith.constant dense<0.0> : tensor<2x1x4x2xf32>
  %kc = bufferization.alloc_tensor() copy(%zero) : tensor<2x1x4x2xf32>
  %vc = bufferization.alloc_tensor() copy(%zero) : tensor<2x1x4x2xf32>
  %q = arith.constant dense<0.0> : tensor<2x1x2x2xf32>
  %k = arith.constant dense<[[[[1.0, 0.0], [0.0, 1.0]]], [[[2.0, 0.0], [9.0, 9.0]]]]> : tensor<2x1x2x2xf32>
  %v = arith.constant dense<[[[[1.0, 2.0], [3.0, 4.0]]], [[[5.0, 6.0], [7.0, 7.0]]]]> : tensor<2x1x2x2xf32>
  %pos = arith.constant dense<[[0, 1], [0, -1]]> : tensor<2x2xi64>
  %o1 = func.call @step_prefill(%q, %k, %v, %pos, %kc, %vc)
      : (tensor<2x1x2x2xf32>, tensor<2x1x2x2xf32>, tensor<2x1x2x2xf32>, tensor<2x2xi64>, tensor<2x1x4x2xf32>, tensor<2x1x4x2xf32>) -> tensor<2x1x2x2xf32>
  %m1 = bufferization.to_buffer %o1 : tensor<2x1x2x2xf32> to memref<2x1x2x2xf32>
  %u1 = memref.cast %m1 : memref<2x1x2x2xf32> to memref<*xf32>
  // Sequence 0: [1, 2] alone, then the mean of [1, 2] and [3, 4]; sequence
  // 1: [5, 6], then its padding token: zeros.
  // CHECK: rank = 4 offset = 0 sizes = [2, 1, 2, 2]
  // CHECK: [1,   2],
  // CHECK-NEXT: [2,   3]
  // CHECK: [5,   6],
  // CHECK-NEXT: [0,   0]
  call @printMemrefF32(%u1) : (memref<*xf32>) -> ()

  %q1 = arith.constant dense<0.0> : tensor<2x1x1x2xf32>
  %kd = arith.constant dense<0.0> : tensor<2x1x1x2xf32>
  %vd = arith.constant dense<[[[[5.0, 6.0]]], [[[1.0, 1.0]]]]> : tensor<2x1x1x2xf32>
  %pd = arith.constant dense<[[2], [1]]> : tensor<2x1xi32>
  %o2 = func.call @step_decode(%q1, %kd, %vd, %pd, %kc, %vc)
      : (tensor<2x1x1x2xf32>, tensor<2x1x1x2xf32>, tensor<2x1x1x2xf32>, tensor<2x1xi32>, tensor<2x1x4x2xf32>, tensor<2x1x4x2xf32>) -> tensor<2x1x1x2xf32>
  %m2 = bufferization.to_buffer %o2 : tensor<2x1x1x2xf32> to memref<2x1x1x2xf32>
  %u2 = memref.cast %m2 : memref<2x1x1x2xf32> to memref<*xf32>
  // The decode sees what the prefill wrote: (1+3+5)/3, (2+4+6)/3; (5+1)/2, (6+1)/2.
  // CHECK: rank = 4 offset = 0 sizes = [2, 1, 1, 2]
  // CHECK: [3,   4]
  // CHECK: [3,   3.5]
  call @printMemrefF32(%u2) : (memref<*xf32>) -> ()

  // The value cache after both steps: the padding token left row 1 of
  // sequence 1 for the decode step's value.
  %mv = bufferization.to_buffer %vc : tensor<2x1x4x2xf32> to memref<2x1x4x2xf32>
  %uv = memref.cast %mv : memref<2x1x4x2xf32> to memref<*xf32>
  // CHECK: rank = 4 offset = 0 sizes = [2, 1, 4, 2]
  // CHECK: [1,   2],
  // CHECK-NEXT: [3,   4],
  // CHECK-NEXT: [5,   6],
  // CHECK-NEXT: [0,   0]
  // CHECK: [5,   6],
  // CHECK-NEXT: [1,   1],
  // CHECK-NEXT: [0,   0],
  // CHECK-NEXT: [0,   0]
  call @printMemrefF32(%uv) : (memref<*xf32>) -> ()
  return
}
