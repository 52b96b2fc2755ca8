// sgpu-async-collectives: each all-reduce starts where it was and is waited
// for right before its first use; running the pass again changes nothing.
// RUN: sparse-opt %s -split-input-file --sgpu-async-collectives | FileCheck %s
// RUN: sparse-opt %s -split-input-file --sgpu-async-collectives --sgpu-async-collectives | FileCheck %s

// Independent work between the all-reduce and its use overlaps the
// communication; the wait keeps the input alive.
// CHECK-LABEL: func @overlap
// CHECK-SAME: (%[[X:.*]]: tensor<8x64xf32>, %[[H:.*]]: tensor<8x64xf32>, %[[G:.*]]: tensor<64xf32>)
// CHECK-NEXT: %[[T:.*]] = sgpu.all_reduce_start %[[X]] {kind = #sgpu.reduce<max>} : tensor<8x64xf32>
// CHECK-NEXT: %[[N:.*]] = sgpu.rms_norm %[[H]], %[[G]]
// CHECK-NEXT: %[[R:.*]] = sgpu.all_reduce_wait %[[T]], %[[X]] : tensor<8x64xf32>
// CHECK-NEXT: %[[S:.*]] = arith.addf %[[R]], %[[N]]
// CHECK-NEXT: return %[[S]]
func.func @overlap(%x: tensor<8x64xf32>, %h: tensor<8x64xf32>, %g: tensor<64xf32>) -> tensor<8x64xf32> {
  %r = sgpu.all_reduce %x {kind = #sgpu.reduce<max>} : tensor<8x64xf32>
  %n = sgpu.rms_norm %h, %g {epsilon = 1.0e-05 : f32} : tensor<8x64xf32>, tensor<64xf32> -> tensor<8x64xf32>
  %s = arith.addf %r, %n : tensor<8x64xf32>
  return %s : tensor<8x64xf32>
}

// -----

// Two all-reduces start in program order; each wait sinks to its own use.
// CHECK-LABEL: func @two
// CHECK-NEXT: %[[TA:.*]] = sgpu.all_reduce_start %arg0
// CHECK-NEXT: %[[TB:.*]] = sgpu.all_reduce_start %arg1
// CHECK-NEXT: %[[B:.*]] = sgpu.all_reduce_wait %[[TB]], %arg1
// CHECK-NEXT: %[[B2:.*]] = arith.mulf %[[B]], %[[B]]
// CHECK-NEXT: %[[A:.*]] = sgpu.all_reduce_wait %[[TA]], %arg0
// CHECK-NEXT: arith.addf %[[A]], %[[B2]]
func.func @two(%a: tensor<4x8xbf16>, %b: tensor<4x8xbf16>) -> tensor<4x8xbf16> {
  %ra = sgpu.all_reduce %a : tensor<4x8xbf16>
  %rb = sgpu.all_reduce %b : tensor<4x8xbf16>
  %b2 = arith.mulf %rb, %rb : tensor<4x8xbf16>
  %s = arith.addf %ra, %b2 : tensor<4x8xbf16>
  return %s : tensor<4x8xbf16>
}

// -----

// A use inside a region: the wait goes before the op that holds it. An
// unused result is still waited for, before the terminator.
// CHECK-LABEL: func @nested_use
// CHECK: %[[T:.*]] = sgpu.all_reduce_start %arg0
// CHECK: %[[U:.*]] = sgpu.all_reduce_start %arg1
// CHECK: %[[R:.*]] = sgpu.all_reduce_wait %[[T]], %arg0
// CHECK-NEXT: scf.for
// CHECK: arith.addf %{{.*}}, %[[R]]
// CHECK: sgpu.all_reduce_wait %[[U]], %arg1
// CHECK-NEXT: return
func.func @nested_use(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %r = sgpu.all_reduce %x : tensor<4xf32>
  %u = sgpu.all_reduce %y : tensor<4xf32>
  %acc = scf.for %i = %c0 to %c4 step %c1 iter_args(%a = %x) -> tensor<4xf32> {
    %n = arith.addf %a, %r : tensor<4xf32>
    scf.yield %n : tensor<4xf32>
  }
  return %acc : tensor<4xf32>
}
