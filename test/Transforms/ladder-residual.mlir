// sgpu-ladder-residual: every converted block's norm reads the stream one
// block stale (x_{i-2}); the residual adds stay; the pass is idempotent.
// RUN: sparse-opt %s -split-input-file --sgpu-ladder-residual | FileCheck %s
// RUN: sparse-opt %s -split-input-file --sgpu-ladder-residual --sgpu-ladder-residual | FileCheck %s
// RUN: sparse-opt %s -split-input-file --sgpu-ladder-residual="layers=1" | FileCheck %s --check-prefix=LAST1
// RUN: sparse-opt %s -split-input-file --sgpu-ladder-residual --sgpu-async-collectives | FileCheck %s --check-prefix=ASYNC

// Two layers (attention-like and MLP-like blocks as a norm and a scale).
// Block i's norm reads x_{i-2} (the first two read x0); each residual add
// moves down to its first user, after the next block's all-reduce.
// CHECK-LABEL: func @chain
// CHECK-SAME: (%[[X0:[a-z0-9_]+]]: tensor<2x8xf32>
// CHECK: sgpu.rms_norm %[[X0]],
// CHECK: %[[R0:[0-9]+]] = sgpu.all_reduce
// CHECK: sgpu.rms_norm %[[X0]],
// CHECK: %[[R1:[0-9]+]] = sgpu.all_reduce
// CHECK: %[[X1:[0-9]+]] = arith.addf %[[X0]], %[[R0]] {sgpu.ladder_block}
// CHECK: sgpu.rms_norm %[[X1]],
// CHECK: %[[R2:[0-9]+]] = sgpu.all_reduce
// CHECK: %[[X2:[0-9]+]] = arith.addf %[[X1]], %[[R1]] {sgpu.ladder_block}
// CHECK: sgpu.rms_norm %[[X2]],
// CHECK: %[[R3:[0-9]+]] = sgpu.all_reduce
// CHECK: %[[X3:[0-9]+]] = arith.addf %[[X2]], %[[R2]] {sgpu.ladder_block}
// CHECK: %[[X4:[0-9]+]] = arith.addf %[[X3]], %[[R3]] {sgpu.ladder_block}
// The final norm reads the complete stream.
// CHECK: sgpu.rms_norm %[[X4]],
// layers=1: only the last layer's two blocks read one block stale.
// LAST1-LABEL: func @chain
// LAST1-SAME: (%[[X0:[a-z0-9_]+]]: tensor<2x8xf32>
// LAST1: sgpu.rms_norm %[[X0]],
// LAST1: %[[X1:[0-9]+]] = arith.addf %[[X0]], %{{.*}} : tensor<2x8xf32>
// LAST1: sgpu.rms_norm %[[X1]],
// LAST1: %[[X2:[0-9]+]] = arith.addf %[[X1]], %{{.*}} : tensor<2x8xf32>
// LAST1: sgpu.rms_norm %[[X1]],
// LAST1: sgpu.rms_norm %[[X2]],
// LAST1: %[[X3:[0-9]+]] = arith.addf %[[X2]], %{{.*}} {sgpu.ladder_block}
// LAST1: arith.addf %[[X3]], %{{.*}} {sgpu.ladder_block}
// With async collectives, block i+1's work sits between block i's start
// and its wait.
// ASYNC-LABEL: func @chain
// ASYNC: %[[T0:[0-9]+]] = sgpu.all_reduce_start
// ASYNC-NEXT: sgpu.rms_norm
// ASYNC: %[[T1:[0-9]+]] = sgpu.all_reduce_start
// ASYNC-NEXT: sgpu.all_reduce_wait %[[T0]]
// ASYNC-NEXT: arith.addf
// ASYNC-NEXT: sgpu.rms_norm
// ASYNC: %[[T2:[0-9]+]] = sgpu.all_reduce_start
// ASYNC-NEXT: sgpu.all_reduce_wait %[[T1]]
func.func @chain(%x0: tensor<2x8xf32>, %w: tensor<8xf32>, %s: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %n0 = sgpu.rms_norm %x0, %w {epsilon = 1.0e-05 : f32} : tensor<2x8xf32>, tensor<8xf32> -> tensor<2x8xf32>
  %f0 = arith.mulf %n0, %s : tensor<2x8xf32>
  %r0 = sgpu.all_reduce %f0 : tensor<2x8xf32>
  %x1 = arith.addf %x0, %r0 : tensor<2x8xf32>
  %n1 = sgpu.rms_norm %x1, %w {epsilon = 1.0e-05 : f32} : tensor<2x8xf32>, tensor<8xf32> -> tensor<2x8xf32>
  %f1 = arith.mulf %n1, %n1 : tensor<2x8xf32>
  %r1 = sgpu.all_reduce %f1 : tensor<2x8xf32>
  %x2 = arith.addf %x1, %r1 : tensor<2x8xf32>
  %n2 = sgpu.rms_norm %x2, %w {epsilon = 1.0e-05 : f32} : tensor<2x8xf32>, tensor<8xf32> -> tensor<2x8xf32>
  %f2 = arith.mulf %n2, %s : tensor<2x8xf32>
  %r2 = sgpu.all_reduce %f2 : tensor<2x8xf32>
  %x3 = arith.addf %x2, %r2 : tensor<2x8xf32>
  %n3 = sgpu.rms_norm %x3, %w {epsilon = 1.0e-05 : f32} : tensor<2x8xf32>, tensor<8xf32> -> tensor<2x8xf32>
  %f3 = arith.mulf %n3, %n3 : tensor<2x8xf32>
  %r3 = sgpu.all_reduce %f3 : tensor<2x8xf32>
  %x4 = arith.addf %x3, %r3 : tensor<2x8xf32>
  %out = sgpu.rms_norm %x4, %w {epsilon = 1.0e-05 : f32} : tensor<2x8xf32>, tensor<8xf32> -> tensor<2x8xf32>
  return %out : tensor<2x8xf32>
}
