// The ladder rewrite against the ladder equations, on the CPU reference (a
// tensor-parallel group of one rank: all-reduce is the identity).
// @model is the standard chain x_i = x_{i-1} + AR(f_i(norm(x_{i-1})))
// (element-wise ops as the importers write them); sgpu-ladder-residual and
// sgpu-async-collectives turn it into ladder form. @ladder writes the
// ladder equations by hand, x_i = x_{i-1} + AR(f_i(norm(x_{i-2}))) with
// x_{-1} = x_0; its adds carry sgpu.ladder_block, so the pass leaves it
// alone. Same ops in the same order: the two must agree exactly.
// RUN: sparse-opt %s --sgpu-ladder-residual --sgpu-async-collectives --sgpu-reference | \
// RUN:   mlir-runner -e main -entry-point-result=void \
// RUN:     -shared-libs=%mlir_runner_utils,%mlir_c_runner_utils | FileCheck %s
// Without the rewrite, the standard chain differs from the equations:
// RUN: sparse-opt %s --sgpu-reference | \
// RUN:   mlir-runner -e main -entry-point-result=void \
// RUN:     -shared-libs=%mlir_runner_utils,%mlir_c_runner_utils | FileCheck %s --check-prefix=STANDARD

#id = affine_map<(i, j) -> (i, j)>
func.func @model(%x0: tensor<2x4xf32>, %w: tensor<4xf32>, %s: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %n0 = sgpu.rms_norm %x0, %w {epsilon = 1.0e-05 : f32} : tensor<2x4xf32>, tensor<4xf32> -> tensor<2x4xf32>
  %f0e = tensor.empty() : tensor<2x4xf32>
  %f0 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%n0, %s : tensor<2x4xf32>, tensor<2x4xf32>) outs(%f0e : tensor<2x4xf32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %v = arith.mulf %p, %q : f32
    linalg.yield %v : f32
  } -> tensor<2x4xf32>
  %r0 = sgpu.all_reduce %f0 : tensor<2x4xf32>
  %x1e = tensor.empty() : tensor<2x4xf32>
  %x1 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x0, %r0 : tensor<2x4xf32>, tensor<2x4xf32>) outs(%x1e : tensor<2x4xf32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %v = arith.addf %p, %q : f32
    linalg.yield %v : f32
  } -> tensor<2x4xf32>
  %n1 = sgpu.rms_norm %x1, %w {epsilon = 1.0e-05 : f32} : tensor<2x4xf32>, tensor<4xf32> -> tensor<2x4xf32>
  %f1e = tensor.empty() : tensor<2x4xf32>
  %f1 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%n1, %n1 : tensor<2x4xf32>, tensor<2x4xf32>) outs(%f1e : tensor<2x4xf32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %v = arith.mulf %p, %q : f32
    linalg.yield %v : f32
  } -> tensor<2x4xf32>
  %r1 = sgpu.all_reduce %f1 : tensor<2x4xf32>
  %x2e = tensor.empty() : tensor<2x4xf32>
  %x2 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x1, %r1 : tensor<2x4xf32>, tensor<2x4xf32>) outs(%x2e : tensor<2x4xf32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %v = arith.addf %p, %q : f32
    linalg.yield %v : f32
  } -> tensor<2x4xf32>
  %n2 = sgpu.rms_norm %x2, %w {epsilon = 1.0e-05 : f32} : tensor<2x4xf32>, tensor<4xf32> -> tensor<2x4xf32>
  %f2e = tensor.empty() : tensor<2x4xf32>
  %f2 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%n2, %s : tensor<2x4xf32>, tensor<2x4xf32>) outs(%f2e : tensor<2x4xf32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %v = arith.mulf %p, %q : f32
    linalg.yield %v : f32
  } -> tensor<2x4xf32>
  %r2 = sgpu.all_reduce %f2 : tensor<2x4xf32>
  %x3e = tensor.empty() : tensor<2x4xf32>
  %x3 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x2, %r2 : tensor<2x4xf32>, tensor<2x4xf32>) outs(%x3e : tensor<2x4xf32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %v = arith.addf %p, %q : f32
    linalg.yield %v : f32
  } -> tensor<2x4xf32>
  %n3 = sgpu.rms_norm %x3, %w {epsilon = 1.0e-05 : f32} : tensor<2x4xf32>, tensor<4xf32> -> tensor<2x4xf32>
  %f3e = tensor.empty() : tensor<2x4xf32>
  %f3 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%n3, %n3 : tensor<2x4xf32>, tensor<2x4xf32>) outs(%f3e : tensor<2x4xf32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %v = arith.mulf %p, %q : f32
    linalg.yield %v : f32
  } -> tensor<2x4xf32>
  %r3 = sgpu.all_reduce %f3 : tensor<2x4xf32>
  %x4e = tensor.empty() : tensor<2x4xf32>
  %x4 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x3, %r3 : tensor<2x4xf32>, tensor<2x4xf32>) outs(%x4e : tensor<2x4xf32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %v = arith.addf %p, %q : f32
    linalg.yield %v : f32
  } -> tensor<2x4xf32>
  return %x4 : tensor<2x4xf32>
}

func.func @ladder(%x0: tensor<2x4xf32>, %w: tensor<4xf32>, %s: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %n0 = sgpu.rms_norm %x0, %w {epsilon = 1.0e-05 : f32} : tensor<2x4xf32>, tensor<4xf32> -> tensor<2x4xf32>
  %f0e = tensor.empty() : tensor<2x4xf32>
  %f0 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%n0, %s : tensor<2x4xf32>, tensor<2x4xf32>) outs(%f0e : tensor<2x4xf32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %v = arith.mulf %p, %q : f32
    linalg.yield %v : f32
  } -> tensor<2x4xf32>
  %r0 = sgpu.all_reduce %f0 : tensor<2x4xf32>
  %x1e = tensor.empty() : tensor<2x4xf32>
  %x1 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x0, %r0 : tensor<2x4xf32>, tensor<2x4xf32>) outs(%x1e : tensor<2x4xf32>) attrs = {sgpu.ladder_block} {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %v = arith.addf %p, %q : f32
    linalg.yield %v : f32
  } -> tensor<2x4xf32>
  %n1 = sgpu.rms_norm %x0, %w {epsilon = 1.0e-05 : f32} : tensor<2x4xf32>, tensor<4xf32> -> tensor<2x4xf32>
  %f1e = tensor.empty() : tensor<2x4xf32>
  %f1 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%n1, %n1 : tensor<2x4xf32>, tensor<2x4xf32>) outs(%f1e : tensor<2x4xf32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %v = arith.mulf %p, %q : f32
    linalg.yield %v : f32
  } -> tensor<2x4xf32>
  %r1 = sgpu.all_reduce %f1 : tensor<2x4xf32>
  %x2e = tensor.empty() : tensor<2x4xf32>
  %x2 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x1, %r1 : tensor<2x4xf32>, tensor<2x4xf32>) outs(%x2e : tensor<2x4xf32>) attrs = {sgpu.ladder_block} {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %v = arith.addf %p, %q : f32
    linalg.yield %v : f32
  } -> tensor<2x4xf32>
  %n2 = sgpu.rms_norm %x1, %w {epsilon = 1.0e-05 : f32} : tensor<2x4xf32>, tensor<4xf32> -> tensor<2x4xf32>
  %f2e = tensor.empty() : tensor<2x4xf32>
  %f2 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%n2, %s : tensor<2x4xf32>, tensor<2x4xf32>) outs(%f2e : tensor<2x4xf32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %v = arith.mulf %p, %q : f32
    linalg.yield %v : f32
  } -> tensor<2x4xf32>
  %r2 = sgpu.all_reduce %f2 : tensor<2x4xf32>
  %x3e = tensor.empty() : tensor<2x4xf32>
  %x3 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x2, %r2 : tensor<2x4xf32>, tensor<2x4xf32>) outs(%x3e : tensor<2x4xf32>) attrs = {sgpu.ladder_block} {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %v = arith.addf %p, %q : f32
    linalg.yield %v : f32
  } -> tensor<2x4xf32>
  %n3 = sgpu.rms_norm %x2, %w {epsilon = 1.0e-05 : f32} : tensor<2x4xf32>, tensor<4xf32> -> tensor<2x4xf32>
  %f3e = tensor.empty() : tensor<2x4xf32>
  %f3 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%n3, %n3 : tensor<2x4xf32>, tensor<2x4xf32>) outs(%f3e : tensor<2x4xf32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %v = arith.mulf %p, %q : f32
    linalg.yield %v : f32
  } -> tensor<2x4xf32>
  %r3 = sgpu.all_reduce %f3 : tensor<2x4xf32>
  %x4e = tensor.empty() : tensor<2x4xf32>
  %x4 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x3, %r3 : tensor<2x4xf32>, tensor<2x4xf32>) outs(%x4e : tensor<2x4xf32>) attrs = {sgpu.ladder_block} {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %v = arith.addf %p, %q : f32
    linalg.yield %v : f32
  } -> tensor<2x4xf32>
  return %x4 : tensor<2x4xf32>
}

func.func @main() {
  %x = arith.constant dense<[[1.0, -2.0, 0.5, 3.0], [0.25, 1.5, -1.0, 2.0]]> : tensor<2x4xf32>
  %w = arith.constant dense<[1.0, 0.5, 2.0, -1.0]> : tensor<4xf32>
  %s = arith.constant dense<[[0.5, 1.0, -1.0, 2.0], [1.0, -0.5, 0.25, 1.0]]> : tensor<2x4xf32>
  %a = call @model(%x, %w, %s) : (tensor<2x4xf32>, tensor<4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %b = call @ladder(%x, %w, %s) : (tensor<2x4xf32>, tensor<4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %de = tensor.empty() : tensor<2x4xf32>
  %ad = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a, %b : tensor<2x4xf32>, tensor<2x4xf32>) outs(%de : tensor<2x4xf32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %d = arith.subf %p, %q : f32
    %v = math.absf %d : f32
    linalg.yield %v : f32
  } -> tensor<2x4xf32>
  %zf = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<f32>
  %init = linalg.fill ins(%zf : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %m = linalg.reduce ins(%ad : tensor<2x4xf32>) outs(%init : tensor<f32>) dimensions = [0, 1]
    (%v: f32, %acc: f32) {
      %mx = arith.maximumf %v, %acc : f32
      linalg.yield %mx : f32
    }
  %mv = tensor.extract %m[] : tensor<f32>
  %sum = linalg.reduce ins(%a : tensor<2x4xf32>) outs(%init : tensor<f32>) dimensions = [0, 1]
    (%v: f32, %acc: f32) {
      %t = arith.addf %v, %acc : f32
      linalg.yield %t : f32
    }
  %sv = tensor.extract %sum[] : tensor<f32>
  // CHECK: max_abs_diff
  // CHECK-NEXT: 0
  vector.print str "max_abs_diff\n"
  vector.print %mv : f32
  // STANDARD: max_abs_diff
  // STANDARD-NEXT: 21.409
  // CHECK-NEXT: sum
  // CHECK-NEXT: 13.1575
  // STANDARD-NEXT: sum
  // STANDARD-NEXT: 28.8267
  vector.print str "sum\n"
  vector.print %sv : f32
  return
}
