// sgpu-fuse-elementwise: a chain of element-wise generics becomes one
// generic (one kernel) when each producer has one user; reductions and
// producers with several users stay apart.
// RUN: sparse-opt %s -split-input-file -sgpu-fuse-elementwise | FileCheck %s

// SwiGLU: silu(gate) * up, one generic computing the SiLU in its body.
// CHECK-LABEL: func.func @swiglu
// CHECK-SAME: (%[[G:.*]]: tensor<1x1x64xbf16>, %[[U:.*]]: tensor<1x1x64xbf16>)
// CHECK: %[[R:.*]] = linalg.generic {{.*}} ins(%[[G]], %[[U]] : tensor<1x1x64xbf16>, tensor<1x1x64xbf16>)
// CHECK: ^bb0(%[[A:.*]]: bf16, %[[B:.*]]: bf16, %{{.*}}: bf16):
// CHECK: %[[NEG:.*]] = arith.negf %[[A]] : bf16
// CHECK: %[[E:.*]] = math.exp %[[NEG]] : bf16
// CHECK: %[[DEN:.*]] = arith.addf %[[E]], %{{.*}} : bf16
// CHECK: %[[SIG:.*]] = arith.divf %{{.*}}, %[[DEN]] : bf16
// CHECK: %[[SILU:.*]] = arith.mulf %[[A]], %[[SIG]] : bf16
// CHECK: %[[OUT:.*]] = arith.mulf %[[SILU]], %[[B]] : bf16
// CHECK: linalg.yield %[[OUT]] : bf16
// CHECK-NOT: linalg.generic
// CHECK: return %[[R]]
#id = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func @swiglu(%g: tensor<1x1x64xbf16>, %u: tensor<1x1x64xbf16>) -> tensor<1x1x64xbf16> {
  %e = tensor.empty() : tensor<1x1x64xbf16>
  %s = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%g : tensor<1x1x64xbf16>) outs(%e : tensor<1x1x64xbf16>) {
  ^bb0(%a: bf16, %o: bf16):
    %n = arith.negf %a : bf16
    %x = math.exp %n : bf16
    %one = arith.constant 1.0 : bf16
    %d = arith.addf %one, %x : bf16
    %r = arith.divf %one, %d : bf16
    %y = arith.mulf %a, %r : bf16
    linalg.yield %y : bf16
  } -> tensor<1x1x64xbf16>
  %e2 = tensor.empty() : tensor<1x1x64xbf16>
  %m = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%s, %u : tensor<1x1x64xbf16>, tensor<1x1x64xbf16>) outs(%e2 : tensor<1x1x64xbf16>) {
  ^bb0(%a: bf16, %b: bf16, %o: bf16):
    %y = arith.mulf %a, %b : bf16
    linalg.yield %y : bf16
  } -> tensor<1x1x64xbf16>
  return %m : tensor<1x1x64xbf16>
}

// -----

// A producer with two users stays its own op (fusing would compute it
// twice); so does a reduction consumer. (The consumer reading the same
// value twice reads it once.)
// CHECK-LABEL: func.func @kept_apart
// CHECK: %[[SQ:.*]] = linalg.generic {{.*}} ins(%{{.*}} : tensor<4x8xf32>)
// CHECK: arith.mulf
// CHECK: linalg.generic {{.*}} ins(%[[SQ]] : tensor<4x8xf32>)
// CHECK: arith.addf %[[IN:.*]], %[[IN]] : f32
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]{{.*}} ins(%[[SQ]]
#id2 = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (i)>
func.func @kept_apart(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4xf32>) {
  %e = tensor.empty() : tensor<4x8xf32>
  %sq = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %y = arith.mulf %a, %a : f32
    linalg.yield %y : f32
  } -> tensor<4x8xf32>
  %sum2 = linalg.generic {indexing_maps = [#id2, #id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%sq, %sq : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %y = arith.addf %a, %b : f32
    linalg.yield %y : f32
  } -> tensor<4x8xf32>
  %z = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<4xf32>
  %acc = linalg.fill ins(%z : f32) outs(%e1 : tensor<4xf32>) -> tensor<4xf32>
  %red = linalg.generic {indexing_maps = [#id2, #row], iterator_types = ["parallel", "reduction"]}
      ins(%sq : tensor<4x8xf32>) outs(%acc : tensor<4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %y = arith.addf %a, %o : f32
    linalg.yield %y : f32
  } -> tensor<4xf32>
  return %sum2, %red : tensor<4x8xf32>, tensor<4xf32>
}
