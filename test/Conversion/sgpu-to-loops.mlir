// RUN: sparse-opt %s -split-input-file -convert-sgpu-to-loops | FileCheck %s

// The reference decodes each chunk's two kept values through the metadata:
// word ((n/16 * KS + c/8) * 8 + n%8) * 2 + (c/4)%2, nibble at 16*(n%16/8) + 4*(c%4).
// CHECK-LABEL: func @spmm
// CHECK-DAG: %[[XB:.*]] = bufferization.to_buffer %arg0 read_only : tensor<5x40xf16> to memref<5x40xf16>
// CHECK-DAG: %[[VB:.*]] = bufferization.to_buffer %arg1 read_only : tensor<32x32xf16> to memref<32x32xf16>
// CHECK-DAG: %[[MB:.*]] = bufferization.to_buffer %arg2 read_only : tensor<64xi32> to memref<64xi32>
// CHECK: %[[Y:.*]] = memref.alloc() : memref<5x20xf16>
// CHECK: scf.for %[[M:.*]] = %{{.*}} to %{{.*}} step
// CHECK: scf.for %[[N:.*]] = %{{.*}} to %{{.*}} step
// CHECK: %[[ACC:.*]] = scf.for %[[C:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%{{.*}} = %{{.*}}) -> (f32)
// CHECK: %[[E:.*]] = memref.load %[[MB]][%{{.*}}] : memref<64xi32>
// CHECK: arith.shrui %[[E]]
// CHECK: memref.load %[[XB]]
// CHECK: memref.load %[[VB]]
// CHECK: arith.mulf
// CHECK: arith.maximumf
// CHECK: arith.truncf %{{.*}} : f32 to f16
// CHECK: memref.store %{{.*}}, %[[Y]][%[[M]], %[[N]]] : memref<5x20xf16>
// CHECK: bufferization.to_tensor %[[Y]] restrict writable
// CHECK-NOT: sgpu.
func.func @spmm(%x: tensor<5x40xf16>, %v: tensor<32x32xf16>, %m: tensor<64xi32>) -> tensor<5x20xf16> {
  %w = sgpu.assemble %v, %m : tensor<32x32xf16>, tensor<64xi32> -> !sgpu.compressed<20x40xf16, #sgpu.nm<2:4>>
  %y = sgpu.spmm %x, %w {activation = #sgpu.activation<relu>} : tensor<5x40xf16>, !sgpu.compressed<20x40xf16, #sgpu.nm<2:4>> -> tensor<5x20xf16>
  return %y : tensor<5x20xf16>
}

// -----

// On a single rank every all-reduce is the identity.
// CHECK-LABEL: func @collectives
// CHECK-NOT: sgpu.
// CHECK: return %arg0, %arg0
func.func @collectives(%x: tensor<8x64xf32>) -> (tensor<8x64xf32>, tensor<8x64xf32>) {
  %a = sgpu.all_reduce %x : tensor<8x64xf32>
  %t = sgpu.all_reduce_start %x : tensor<8x64xf32>
  %b = sgpu.all_reduce_wait %t, %x : tensor<8x64xf32>
  return %a, %b : tensor<8x64xf32>, tensor<8x64xf32>
}

// -----

// The bias joins the f32 sum before the activation.
// CHECK-LABEL: func @bias
// CHECK: %[[BB:.*]] = bufferization.to_buffer %arg3 read_only : tensor<16xf32> to memref<16xf32>
// CHECK: scf.for
// CHECK: %[[ACC:.*]] = scf.for
// CHECK: %[[B:.*]] = memref.load %[[BB]]
// CHECK: arith.addf %[[ACC]], %[[B]] : f32
func.func @bias(%x: tensor<4x32xf16>, %v: tensor<16x16xf16>, %m: tensor<16xi32>, %b: tensor<16xf32>) -> tensor<4x16xf32> {
  %w = sgpu.assemble %v, %m : tensor<16x16xf16>, tensor<16xi32> -> !sgpu.compressed<16x32xf16, #sgpu.nm<2:4>>
  %y = sgpu.spmm %x, %w bias(%b : tensor<16xf32>) : tensor<4x32xf16>, !sgpu.compressed<16x32xf16, #sgpu.nm<2:4>> -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

// -----

// Normalizations view the input as [rows, features] and loop in f32.
// CHECK-LABEL: func @rms_norm
// CHECK: memref.collapse_shape %{{.*}} {{\[\[}}0, 1], [2]] : memref<2x3x8xf16> into memref<6x8xf16>
// CHECK: scf.for
// CHECK: math.rsqrt
// CHECK: arith.truncf %{{.*}} : f32 to f16
// CHECK-NOT: sgpu.
func.func @rms_norm(%x: tensor<2x3x8xf16>, %w: tensor<8xf16>) -> tensor<2x3x8xf16> {
  %y = sgpu.rms_norm %x, %w {epsilon = 1.0e-06 : f32} : tensor<2x3x8xf16>, tensor<8xf16> -> tensor<2x3x8xf16>
  return %y : tensor<2x3x8xf16>
}

// -----

// Attention: scores in an f32 scratch row, causal limit j <= i + (Sk - Sq).
// CHECK-LABEL: func @attention
// CHECK: %[[S:.*]] = memref.alloc() : memref<6xf32>
// CHECK: arith.cmpi sle
// CHECK: math.exp
// CHECK: memref.dealloc %[[S]]
// CHECK-NOT: sgpu.
func.func @attention(%q: tensor<1x4x2x8xf32>, %k: tensor<1x2x6x8xf32>, %v: tensor<1x2x6x8xf32>) -> tensor<1x4x2x8xf32> {
  %o = sgpu.attention %q, %k, %v {causal, scale = 0.35 : f32} : tensor<1x4x2x8xf32>, tensor<1x2x6x8xf32>, tensor<1x2x6x8xf32> -> tensor<1x4x2x8xf32>
  return %o : tensor<1x4x2x8xf32>
}

// -----

// The lift gathers x[m, g*2N + 2j + l] into column g*4(N-1) + 4j + l (6:8:
// N = 4, 12 lifted columns per group of 8), zero past K.
// CHECK-LABEL: func @lift
// CHECK: %[[OUT:.*]] = memref.alloc() : memref<3x36xf16>
// CHECK: scf.for
// CHECK: scf.for
// CHECK: %[[CH:.*]] = arith.divui %{{.*}}, %c4
// CHECK: arith.divui %[[CH]], %c3
// CHECK: arith.cmpi ult, %{{.*}}, %c20
// CHECK: memref.store %{{.*}}, %[[OUT]]
func.func @lift(%x: tensor<3x20xf16>) -> tensor<3x36xf16> {
  %y = sgpu.lift %x {pattern = #sgpu.nm<6:8>} : tensor<3x20xf16> -> tensor<3x36xf16>
  return %y : tensor<3x36xf16>
}
