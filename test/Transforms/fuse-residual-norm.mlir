// RUN: sparse-opt %s -split-input-file -convert-elementwise-to-linalg -sgpu-fuse-residual-norm | FileCheck %s

// The residual stream of a pre-norm block: x + attn is normalized for the
// MLP and also carried on (returned here). One sgpu.add_rms_norm gives both.
// CHECK-LABEL: func.func @stream
// CHECK-SAME: (%[[X:.*]]: tensor<2x8x64xbf16>, %[[A:.*]]: tensor<2x8x64xbf16>, %[[W:.*]]: tensor<64xbf16>)
// CHECK: %[[S:.*]], %[[Y:.*]] = sgpu.add_rms_norm %[[X]], %[[A]], %[[W]] {epsilon = 9.99999974E-6 : f32} : tensor<2x8x64xbf16>, tensor<2x8x64xbf16>, tensor<64xbf16> -> tensor<2x8x64xbf16>, tensor<2x8x64xbf16>
// CHECK-NOT: linalg.generic
// CHECK-NOT: sgpu.rms_norm
// CHECK: return %[[S]], %[[Y]]
func.func @stream(%x: tensor<2x8x64xbf16>, %a: tensor<2x8x64xbf16>, %w: tensor<64xbf16>) -> (tensor<2x8x64xbf16>, tensor<2x8x64xbf16>) {
  %s = arith.addf %x, %a : tensor<2x8x64xbf16>
  %y = sgpu.rms_norm %s, %w {epsilon = 1.0e-05 : f32} : tensor<2x8x64xbf16>, tensor<64xbf16> -> tensor<2x8x64xbf16>
  return %s, %y : tensor<2x8x64xbf16>, tensor<2x8x64xbf16>
}

// -----

// A user of the sum between the add and the norm still sees the sum: the
// fused op sits where the add was.
// CHECK-LABEL: func.func @use_before_norm
// CHECK: %[[S:.*]], %[[Y:.*]] = sgpu.add_rms_norm
// CHECK: %[[T:.*]] = linalg.generic {{.*}} ins(%[[S]], %[[S]] :
// CHECK: return %[[T]], %[[Y]]
func.func @use_before_norm(%x: tensor<4x32xf16>, %a: tensor<4x32xf16>, %w: tensor<32xf16>) -> (tensor<4x32xf16>, tensor<4x32xf16>) {
  %s = arith.addf %x, %a : tensor<4x32xf16>
  %t = arith.mulf %s, %s : tensor<4x32xf16>
  %y = sgpu.rms_norm %s, %w {epsilon = 1.0e-06 : f32} : tensor<4x32xf16>, tensor<32xf16> -> tensor<4x32xf16>
  return %t, %y : tensor<4x32xf16>, tensor<4x32xf16>
}

// -----

// Not an add of two same-typed tensors: a subtraction, and an add with a
// broadcast (a bias), stay as they are.
// CHECK-LABEL: func.func @not_residual
// CHECK-NOT: sgpu.add_rms_norm
// CHECK: sgpu.rms_norm
// CHECK: sgpu.rms_norm
func.func @not_residual(%x: tensor<4x32xf16>, %a: tensor<4x32xf16>, %b: tensor<32xf16>, %w: tensor<32xf16>) -> (tensor<4x32xf16>, tensor<4x32xf16>) {
  %d = arith.subf %x, %a : tensor<4x32xf16>
  %y = sgpu.rms_norm %d, %w {epsilon = 1.0e-06 : f32} : tensor<4x32xf16>, tensor<32xf16> -> tensor<4x32xf16>
  %e = tensor.empty() : tensor<4x32xf16>
  %bb = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (i, j)>],
                        iterator_types = ["parallel", "parallel"]}
      ins(%x, %b : tensor<4x32xf16>, tensor<32xf16>) outs(%e : tensor<4x32xf16>) {
  ^bb0(%p: f16, %q: f16, %o: f16):
    %r = arith.addf %p, %q : f16
    linalg.yield %r : f16
  } -> tensor<4x32xf16>
  %z = sgpu.rms_norm %bb, %w {epsilon = 1.0e-06 : f32} : tensor<4x32xf16>, tensor<32xf16> -> tensor<4x32xf16>
  return %y, %z : tensor<4x32xf16>, tensor<4x32xf16>
}

// -----

// A weight defined after the add (here: computed from the sum) cannot move
// up to it: left as it is.
// CHECK-LABEL: func.func @late_weight
// CHECK-NOT: sgpu.add_rms_norm
// CHECK: sgpu.rms_norm
func.func @late_weight(%x: tensor<32xf16>, %a: tensor<32xf16>) -> tensor<32xf16> {
  %s = arith.addf %x, %a : tensor<32xf16>
  %w = arith.negf %s : tensor<32xf16>
  %y = sgpu.rms_norm %s, %w {epsilon = 1.0e-06 : f32} : tensor<32xf16>, tensor<32xf16> -> tensor<32xf16>
  return %y : tensor<32xf16>
}
