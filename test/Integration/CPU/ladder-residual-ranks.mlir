// The ladder rewrite of a tensor-parallel model, run with two simulated
// ranks on the CPU reference and compared with the ladder equations of the
// unsharded model.
//
// @model is one rank of a two-layer (four-block) pre-norm model with the
// standard residual chain x_i = x_{i-1} + AR(f_i(norm(x_{i-1}))), where
// f_i(n) = relu(n . W1^T) . W2^T: W1_r is the rank's rows of W1 (a
// column-parallel linear layer, [h/R x d]) and W2_r its columns of W2 (a
// row-parallel one, [d x h/R]); the all-reduce sums the ranks' partial
// products. Blocks 0 and 2 use one pair of weights (a, standing in for
// attention), blocks 1 and 3 another (b, the MLP). The hidden size is
// dynamic, so the same function runs sharded (h/R = 2) and whole (h = 4).
//
// sgpu-simulate-ranks writes the two-rank @model into the declared
// @model_ranks2 (both ranks' results), and rewrites @model itself for one
// rank, which @main calls with the whole weights. @ladder and @standard are
// the ladder and standard equations of the unsharded model (W1 = the
// shards' rows stacked, W2 = their columns side by side, built by
// tensor.concat), written by hand with the whole weights and no collective.
//
// Exact comparison: every rank computes the norms, the first matmul's hidden
// units and the residual adds exactly as the unsharded model does (same ops,
// same order). Only the second matmul's reduction over the hidden units is
// associated differently: the unsharded sum is ((p0 + p1) + p2) + p3, the
// two ranks give (p0 + p1) + (p2 + p3). The second rank's W2 shard has a zero
// in every row (each output reads at most one of its hidden units), so
// p2 + p3 adds an exact zero and both sums round the same way: the results
// agree bit for bit and max_abs_diff prints 0.
//
// With the ladder rewrite, asynchronous collectives (the start/wait form):
// RUN: sparse-opt %s --sgpu-ladder-residual --sgpu-async-collectives \
// RUN:     --sgpu-simulate-ranks="ranks=2 func=model into=model_ranks2" \
// RUN:     --sgpu-simulate-ranks="ranks=1 func=model" --sgpu-reference | \
// RUN:   mlir-runner -e main -entry-point-result=void \
// RUN:     -shared-libs=%mlir_runner_utils,%mlir_c_runner_utils | FileCheck %s --check-prefixes=CHECK,LADDER
// and with blocking all-reduces:
// RUN: sparse-opt %s --sgpu-ladder-residual \
// RUN:     --sgpu-simulate-ranks="ranks=2 func=model into=model_ranks2" \
// RUN:     --sgpu-simulate-ranks="ranks=1 func=model" --sgpu-reference | \
// RUN:   mlir-runner -e main -entry-point-result=void \
// RUN:     -shared-libs=%mlir_runner_utils,%mlir_c_runner_utils | FileCheck %s --check-prefixes=CHECK,LADDER
// Without the rewrite the model is the standard chain, which differs from
// the ladder equations; with one rank and the whole weights it is the
// unsharded standard chain:
// RUN: sparse-opt %s --sgpu-async-collectives \
// RUN:     --sgpu-simulate-ranks="ranks=2 func=model into=model_ranks2" \
// RUN:     --sgpu-simulate-ranks="ranks=1 func=model" --sgpu-reference | \
// RUN:   mlir-runner -e main -entry-point-result=void \
// RUN:     -shared-libs=%mlir_runner_utils,%mlir_c_runner_utils | FileCheck %s --check-prefixes=CHECK,STANDARD

#id = affine_map<(i, j) -> (i, j)>
#mx = affine_map<(m, n, k) -> (m, k)>
#mw = affine_map<(m, n, k) -> (n, k)>
#my = affine_map<(m, n, k) -> (m, n)>

func.func @model(%x0: tensor<2x4xf32> {sgpu.replicated}, %g: tensor<4xf32> {sgpu.replicated},
                 %w1a: tensor<?x4xf32>, %w2a: tensor<4x?xf32>,
                 %w1b: tensor<?x4xf32>, %w2b: tensor<4x?xf32>) -> tensor<2x4xf32> {
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %de = tensor.empty() : tensor<2x4xf32>
  %n0 = sgpu.rms_norm %x0, %g {epsilon = 1.0e-05 : f32} : tensor<2x4xf32>, tensor<4xf32> -> tensor<2x4xf32>
  %h0 = tensor.dim %w1a, %c0 : tensor<?x4xf32>
  %he0 = tensor.empty(%h0) : tensor<2x?xf32>
  %hz0 = linalg.fill ins(%zero : f32) outs(%he0 : tensor<2x?xf32>) -> tensor<2x?xf32>
  %a0 = linalg.matmul indexing_maps = [#mx, #mw, #my]
      ins(%n0, %w1a : tensor<2x4xf32>, tensor<?x4xf32>) outs(%hz0 : tensor<2x?xf32>) -> tensor<2x?xf32>
  %b0 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a0 : tensor<2x?xf32>) outs(%he0 : tensor<2x?xf32>) {
  ^bb0(%p: f32, %o: f32):
    %v = arith.maximumf %p, %zero : f32
    linalg.yield %v : f32
  } -> tensor<2x?xf32>
  %fz0 = linalg.fill ins(%zero : f32) outs(%de : tensor<2x4xf32>) -> tensor<2x4xf32>
  %f0 = linalg.matmul indexing_maps = [#mx, #mw, #my]
      ins(%b0, %w2a : tensor<2x?xf32>, tensor<4x?xf32>) outs(%fz0 : tensor<2x4xf32>) -> tensor<2x4xf32>
  %r0 = sgpu.all_reduce %f0 : tensor<2x4xf32>
  %x1 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x0, %r0 : tensor<2x4xf32>, tensor<2x4xf32>) outs(%de : tensor<2x4xf32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %v = arith.addf %p, %q : f32
    linalg.yield %v : f32
  } -> tensor<2x4xf32>
  %n1 = sgpu.rms_norm %x1, %g {epsilon = 1.0e-05 : f32} : tensor<2x4xf32>, tensor<4xf32> -> tensor<2x4xf32>
  %h1 = tensor.dim %w1b, %c0 : tensor<?x4xf32>
  %he1 = tensor.empty(%h1) : tensor<2x?xf32>
  %hz1 = linalg.fill ins(%zero : f32) outs(%he1 : tensor<2x?xf32>) -> tensor<2x?xf32>
  %a1 = linalg.matmul indexing_maps = [#mx, #mw, #my]
      ins(%n1, %w1b : tensor<2x4xf32>, tensor<?x4xf32>) outs(%hz1 : tensor<2x?xf32>) -> tensor<2x?xf32>
  %b1 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a1 : tensor<2x?xf32>) outs(%he1 : tensor<2x?xf32>) {
  ^bb0(%p: f32, %o: f32):
    %v = arith.maximumf %p, %zero : f32
    linalg.yield %v : f32
  } -> tensor<2x?xf32>
  %fz1 = linalg.fill ins(%zero : f32) outs(%de : tensor<2x4xf32>) -> tensor<2x4xf32>
  %f1 = linalg.matmul indexing_maps = [#mx, #mw, #my]
      ins(%b1, %w2b : tensor<2x?xf32>, tensor<4x?xf32>) outs(%fz1 : tensor<2x4xf32>) -> tensor<2x4xf32>
  %r1 = sgpu.all_reduce %f1 : tensor<2x4xf32>
  %x2 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x1, %r1 : tensor<2x4xf32>, tensor<2x4xf32>) outs(%de : tensor<2x4xf32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %v = arith.addf %p, %q : f32
    linalg.yield %v : f32
  } -> tensor<2x4xf32>
  %n2 = sgpu.rms_norm %x2, %g {epsilon = 1.0e-05 : f32} : tensor<2x4xf32>, tensor<4xf32> -> tensor<2x4xf32>
  %h2 = tensor.dim %w1a, %c0 : tensor<?x4xf32>
  %he2 = tensor.empty(%h2) : tensor<2x?xf32>
  %hz2 = linalg.fill ins(%zero : f32) outs(%he2 : tensor<2x?xf32>) -> tensor<2x?xf32>
  %a2 = linalg.matmul indexing_maps = [#mx, #mw, #my]
      ins(%n2, %w1a : tensor<2x4xf32>, tensor<?x4xf32>) outs(%hz2 : tensor<2x?xf32>) -> tensor<2x?xf32>
  %b2 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a2 : tensor<2x?xf32>) outs(%he2 : tensor<2x?xf32>) {
  ^bb0(%p: f32, %o: f32):
    %v = arith.maximumf %p, %zero : f32
    linalg.yield %v : f32
  } -> tensor<2x?xf32>
  %fz2 = linalg.fill ins(%zero : f32) outs(%de : tensor<2x4xf32>) -> tensor<2x4xf32>
  %f2 = linalg.matmul indexing_maps = [#mx, #mw, #my]
      ins(%b2, %w2a : tensor<2x?xf32>, tensor<4x?xf32>) outs(%fz2 : tensor<2x4xf32>) -> tensor<2x4xf32>
  %r2 = sgpu.all_reduce %f2 : tensor<2x4xf32>
  %x3 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x2, %r2 : tensor<2x4xf32>, tensor<2x4xf32>) outs(%de : tensor<2x4xf32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %v = arith.addf %p, %q : f32
    linalg.yield %v : f32
  } -> tensor<2x4xf32>
  %n3 = sgpu.rms_norm %x3, %g {epsilon = 1.0e-05 : f32} : tensor<2x4xf32>, tensor<4xf32> -> tensor<2x4xf32>
  %h3 = tensor.dim %w1b, %c0 : tensor<?x4xf32>
  %he3 = tensor.empty(%h3) : tensor<2x?xf32>
  %hz3 = linalg.fill ins(%zero : f32) outs(%he3 : tensor<2x?xf32>) -> tensor<2x?xf32>
  %a3 = linalg.matmul indexing_maps = [#mx, #mw, #my]
      ins(%n3, %w1b : tensor<2x4xf32>, tensor<?x4xf32>) outs(%hz3 : tensor<2x?xf32>) -> tensor<2x?xf32>
  %b3 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a3 : tensor<2x?xf32>) outs(%he3 : tensor<2x?xf32>) {
  ^bb0(%p: f32, %o: f32):
    %v = arith.maximumf %p, %zero : f32
    linalg.yield %v : f32
  } -> tensor<2x?xf32>
  %fz3 = linalg.fill ins(%zero : f32) outs(%de : tensor<2x4xf32>) -> tensor<2x4xf32>
  %f3 = linalg.matmul indexing_maps = [#mx, #mw, #my]
      ins(%b3, %w2b : tensor<2x?xf32>, tensor<4x?xf32>) outs(%fz3 : tensor<2x4xf32>) -> tensor<2x4xf32>
  %r3 = sgpu.all_reduce %f3 : tensor<2x4xf32>
  %x4 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x3, %r3 : tensor<2x4xf32>, tensor<2x4xf32>) outs(%de : tensor<2x4xf32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %v = arith.addf %p, %q : f32
    linalg.yield %v : f32
  } -> tensor<2x4xf32>
  return %x4 : tensor<2x4xf32>
}

// Filled by sgpu-simulate-ranks: the replicated x and g once, then rank 0's
// shards (w1a, w2a, w1b, w2b), then rank 1's; rank 0's result, rank 1's.
func.func private @model_ranks2(tensor<2x4xf32>, tensor<4xf32>,
    tensor<?x4xf32>, tensor<4x?xf32>, tensor<?x4xf32>, tensor<4x?xf32>,
    tensor<?x4xf32>, tensor<4x?xf32>, tensor<?x4xf32>, tensor<4x?xf32>)
    -> (tensor<2x4xf32>, tensor<2x4xf32>)

// f(n) = relu(n . W1^T) . W2^T, unsharded.
func.func @ffn(%n: tensor<2x4xf32>, %w1: tensor<4x4xf32>, %w2: tensor<4x4xf32>) -> tensor<2x4xf32> {
  %zero = arith.constant 0.0 : f32
  %he = tensor.empty() : tensor<2x4xf32>
  %hz = linalg.fill ins(%zero : f32) outs(%he : tensor<2x4xf32>) -> tensor<2x4xf32>
  %a = linalg.matmul indexing_maps = [#mx, #mw, #my]
      ins(%n, %w1 : tensor<2x4xf32>, tensor<4x4xf32>) outs(%hz : tensor<2x4xf32>) -> tensor<2x4xf32>
  %b = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<2x4xf32>) outs(%he : tensor<2x4xf32>) {
  ^bb0(%p: f32, %o: f32):
    %v = arith.maximumf %p, %zero : f32
    linalg.yield %v : f32
  } -> tensor<2x4xf32>
  %fe = tensor.empty() : tensor<2x4xf32>
  %fz = linalg.fill ins(%zero : f32) outs(%fe : tensor<2x4xf32>) -> tensor<2x4xf32>
  %f = linalg.matmul indexing_maps = [#mx, #mw, #my]
      ins(%b, %w2 : tensor<2x4xf32>, tensor<4x4xf32>) outs(%fz : tensor<2x4xf32>) -> tensor<2x4xf32>
  return %f : tensor<2x4xf32>
}

// One residual step: x + f(norm(s)), s the stream the block reads.
func.func @step(%x: tensor<2x4xf32>, %s: tensor<2x4xf32>, %g: tensor<4xf32>,
                %w1: tensor<4x4xf32>, %w2: tensor<4x4xf32>) -> tensor<2x4xf32> {
  %n = sgpu.rms_norm %s, %g {epsilon = 1.0e-05 : f32} : tensor<2x4xf32>, tensor<4xf32> -> tensor<2x4xf32>
  %f = call @ffn(%n, %w1, %w2) : (tensor<2x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %e = tensor.empty() : tensor<2x4xf32>
  %y = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %f : tensor<2x4xf32>, tensor<2x4xf32>) outs(%e : tensor<2x4xf32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %v = arith.addf %p, %q : f32
    linalg.yield %v : f32
  } -> tensor<2x4xf32>
  return %y : tensor<2x4xf32>
}

// Ladder equations: x_i = x_{i-1} + f_i(norm(x_{i-2})), with x_{-1} = x_0.
func.func @ladder(%x0: tensor<2x4xf32>, %g: tensor<4xf32>, %w1a: tensor<4x4xf32>, %w2a: tensor<4x4xf32>,
                  %w1b: tensor<4x4xf32>, %w2b: tensor<4x4xf32>) -> tensor<2x4xf32> {
  %x1 = call @step(%x0, %x0, %g, %w1a, %w2a) : (tensor<2x4xf32>, tensor<2x4xf32>, tensor<4xf32>, tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %x2 = call @step(%x1, %x0, %g, %w1b, %w2b) : (tensor<2x4xf32>, tensor<2x4xf32>, tensor<4xf32>, tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %x3 = call @step(%x2, %x1, %g, %w1a, %w2a) : (tensor<2x4xf32>, tensor<2x4xf32>, tensor<4xf32>, tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %x4 = call @step(%x3, %x2, %g, %w1b, %w2b) : (tensor<2x4xf32>, tensor<2x4xf32>, tensor<4xf32>, tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  return %x4 : tensor<2x4xf32>
}

// Standard chain: x_i = x_{i-1} + f_i(norm(x_{i-1})).
func.func @standard(%x0: tensor<2x4xf32>, %g: tensor<4xf32>, %w1a: tensor<4x4xf32>, %w2a: tensor<4x4xf32>,
                    %w1b: tensor<4x4xf32>, %w2b: tensor<4x4xf32>) -> tensor<2x4xf32> {
  %x1 = call @step(%x0, %x0, %g, %w1a, %w2a) : (tensor<2x4xf32>, tensor<2x4xf32>, tensor<4xf32>, tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %x2 = call @step(%x1, %x1, %g, %w1b, %w2b) : (tensor<2x4xf32>, tensor<2x4xf32>, tensor<4xf32>, tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %x3 = call @step(%x2, %x2, %g, %w1a, %w2a) : (tensor<2x4xf32>, tensor<2x4xf32>, tensor<4xf32>, tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %x4 = call @step(%x3, %x3, %g, %w1b, %w2b) : (tensor<2x4xf32>, tensor<2x4xf32>, tensor<4xf32>, tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  return %x4 : tensor<2x4xf32>
}

// The eight values of a 2x4 result on one line.
func.func @print(%t: tensor<2x4xf32>) {
  %flat = tensor.collapse_shape %t [[0, 1]] : tensor<2x4xf32> into tensor<8xf32>
  %u = tensor.cast %flat : tensor<8xf32> to tensor<*xf32>
  call @printMemrefF32(%u) : (tensor<*xf32>) -> ()
  return
}

// max |a - b| over the elements.
func.func @max_abs_diff(%a: tensor<2x4xf32>, %b: tensor<2x4xf32>) -> f32 {
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
  return %mv : f32
}

func.func @main() {
  %x = arith.constant dense<[[1.0, -2.0, 0.5, 3.0], [0.25, 1.5, -1.0, 2.0]]> : tensor<2x4xf32>
  %g = arith.constant dense<[1.0, 0.5, 2.0, -1.0]> : tensor<4xf32>
  // Rank 0 holds hidden units 0 and 1, rank 1 hidden units 2 and 3.
  %w1a0 = arith.constant dense<[[0.5, -1.0, 0.25, 1.0], [1.0, 0.5, -0.5, 0.25]]> : tensor<2x4xf32>
  %w1a1 = arith.constant dense<[[-0.25, 1.0, 1.0, -0.5], [0.75, -0.5, 0.5, 1.0]]> : tensor<2x4xf32>
  %w2a0 = arith.constant dense<[[1.0, 0.5], [-0.5, 1.0], [0.25, -1.0], [1.0, 0.75]]> : tensor<4x2xf32>
  %w2a1 = arith.constant dense<[[0.5, 0.0], [0.0, -1.0], [1.0, 0.0], [0.0, 0.25]]> : tensor<4x2xf32>
  %w1b0 = arith.constant dense<[[1.0, 0.25, -0.5, 0.5], [-1.0, 0.5, 1.0, 0.25]]> : tensor<2x4xf32>
  %w1b1 = arith.constant dense<[[0.5, 0.5, 0.25, -1.0], [0.25, -0.75, 1.0, 0.5]]> : tensor<2x4xf32>
  %w2b0 = arith.constant dense<[[0.5, -0.25], [1.0, 0.5], [-0.5, 1.0], [0.25, 0.5]]> : tensor<4x2xf32>
  %w2b1 = arith.constant dense<[[0.0, 1.0], [-0.5, 0.0], [0.0, 0.5], [1.0, 0.0]]> : tensor<4x2xf32>

  %d1a0 = tensor.cast %w1a0 : tensor<2x4xf32> to tensor<?x4xf32>
  %d1a1 = tensor.cast %w1a1 : tensor<2x4xf32> to tensor<?x4xf32>
  %d2a0 = tensor.cast %w2a0 : tensor<4x2xf32> to tensor<4x?xf32>
  %d2a1 = tensor.cast %w2a1 : tensor<4x2xf32> to tensor<4x?xf32>
  %d1b0 = tensor.cast %w1b0 : tensor<2x4xf32> to tensor<?x4xf32>
  %d1b1 = tensor.cast %w1b1 : tensor<2x4xf32> to tensor<?x4xf32>
  %d2b0 = tensor.cast %w2b0 : tensor<4x2xf32> to tensor<4x?xf32>
  %d2b1 = tensor.cast %w2b1 : tensor<4x2xf32> to tensor<4x?xf32>
  %r0, %r1 = call @model_ranks2(%x, %g, %d1a0, %d2a0, %d1b0, %d2b0, %d1a1, %d2a1, %d1b1, %d2b1)
      : (tensor<2x4xf32>, tensor<4xf32>,
         tensor<?x4xf32>, tensor<4x?xf32>, tensor<?x4xf32>, tensor<4x?xf32>,
         tensor<?x4xf32>, tensor<4x?xf32>, tensor<?x4xf32>, tensor<4x?xf32>)
      -> (tensor<2x4xf32>, tensor<2x4xf32>)

  // The unsharded weights: W1's rows and W2's columns of both ranks.
  %w1a = tensor.concat dim(0) %w1a0, %w1a1 : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<4x4xf32>
  %w2a = tensor.concat dim(1) %w2a0, %w2a1 : (tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<4x4xf32>
  %w1b = tensor.concat dim(0) %w1b0, %w1b1 : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<4x4xf32>
  %w2b = tensor.concat dim(1) %w2b0, %w2b1 : (tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<4x4xf32>
  %d1a = tensor.cast %w1a : tensor<4x4xf32> to tensor<?x4xf32>
  %d2a = tensor.cast %w2a : tensor<4x4xf32> to tensor<4x?xf32>
  %d1b = tensor.cast %w1b : tensor<4x4xf32> to tensor<?x4xf32>
  %d2b = tensor.cast %w2b : tensor<4x4xf32> to tensor<4x?xf32>
  %one = call @model(%x, %g, %d1a, %d2a, %d1b, %d2b)
      : (tensor<2x4xf32>, tensor<4xf32>, tensor<?x4xf32>, tensor<4x?xf32>, tensor<?x4xf32>, tensor<4x?xf32>) -> tensor<2x4xf32>
  %lad = call @ladder(%x, %g, %w1a, %w2a, %w1b, %w2b)
      : (tensor<2x4xf32>, tensor<4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %std = call @standard(%x, %g, %w1a, %w2a, %w1b, %w2b)
      : (tensor<2x4xf32>, tensor<4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>

  // Both ranks end with the same stream, which is the ladder equations'
  // (the standard chain's without the rewrite), and so is one rank holding
  // the whole weights.
  // CHECK-LABEL: two ranks, rank 0
  // CHECK-NEXT: Unranked Memref
  // LADDER-NEXT: [2.79386, -3.78642, 2.82447, 6.57283, 1.62239, 2.70251, -3.39235, 6.79069]
  // STANDARD-NEXT: [4.23561, -3.82248, 3.73625, 6.98223, 1.95705, 3.5575, -3.64765, 6.50734]
  vector.print str "two ranks, rank 0\n"
  call @print(%r0) : (tensor<2x4xf32>) -> ()
  // CHECK-NEXT: two ranks, rank 1
  // CHECK-NEXT: Unranked Memref
  // LADDER-NEXT: [2.79386, -3.78642, 2.82447, 6.57283, 1.62239, 2.70251, -3.39235, 6.79069]
  // STANDARD-NEXT: [4.23561, -3.82248, 3.73625, 6.98223, 1.95705, 3.5575, -3.64765, 6.50734]
  vector.print str "two ranks, rank 1\n"
  call @print(%r1) : (tensor<2x4xf32>) -> ()
  // CHECK-NEXT: one rank, whole weights
  // CHECK-NEXT: Unranked Memref
  // LADDER-NEXT: [2.79386, -3.78642, 2.82447, 6.57283, 1.62239, 2.70251, -3.39235, 6.79069]
  // STANDARD-NEXT: [4.23561, -3.82248, 3.73625, 6.98223, 1.95705, 3.5575, -3.64765, 6.50734]
  vector.print str "one rank, whole weights\n"
  call @print(%one) : (tensor<2x4xf32>) -> ()
  // CHECK-NEXT: ladder equations
  // CHECK-NEXT: Unranked Memref
  // CHECK-NEXT: [2.79386, -3.78642, 2.82447, 6.57283, 1.62239, 2.70251, -3.39235, 6.79069]
  vector.print str "ladder equations\n"
  call @print(%lad) : (tensor<2x4xf32>) -> ()
  // CHECK-NEXT: standard chain
  // CHECK-NEXT: Unranked Memref
  // CHECK-NEXT: [4.23561, -3.82248, 3.73625, 6.98223, 1.95705, 3.5575, -3.64765, 6.50734]
  vector.print str "standard chain\n"
  call @print(%std) : (tensor<2x4xf32>) -> ()

  // Equal to the last bit, not only to the printed digits.
  %r0l = call @max_abs_diff(%r0, %lad) : (tensor<2x4xf32>, tensor<2x4xf32>) -> f32
  %r1l = call @max_abs_diff(%r1, %lad) : (tensor<2x4xf32>, tensor<2x4xf32>) -> f32
  %onel = call @max_abs_diff(%one, %lad) : (tensor<2x4xf32>, tensor<2x4xf32>) -> f32
  %r0s = call @max_abs_diff(%r0, %std) : (tensor<2x4xf32>, tensor<2x4xf32>) -> f32
  %r1s = call @max_abs_diff(%r1, %std) : (tensor<2x4xf32>, tensor<2x4xf32>) -> f32
  %ones = call @max_abs_diff(%one, %std) : (tensor<2x4xf32>, tensor<2x4xf32>) -> f32
  // CHECK-NEXT: max_abs_diff vs ladder: rank 0, rank 1, one rank
  // LADDER-NEXT: {{^0$}}
  // LADDER-NEXT: {{^0$}}
  // LADDER-NEXT: {{^0$}}
  // STANDARD-NEXT: 1.44175
  // STANDARD-NEXT: 1.44175
  // STANDARD-NEXT: 1.44175
  vector.print str "max_abs_diff vs ladder: rank 0, rank 1, one rank\n"
  vector.print %r0l : f32
  vector.print %r1l : f32
  vector.print %onel : f32
  // CHECK-NEXT: max_abs_diff vs standard: rank 0, rank 1, one rank
  // LADDER-NEXT: 1.44175
  // LADDER-NEXT: 1.44175
  // LADDER-NEXT: 1.44175
  // STANDARD-NEXT: {{^0$}}
  // STANDARD-NEXT: {{^0$}}
  // STANDARD-NEXT: {{^0$}}
  vector.print str "max_abs_diff vs standard: rank 0, rank 1, one rank\n"
  vector.print %r0s : f32
  vector.print %r1s : f32
  vector.print %ones : f32
  return
}

func.func private @printMemrefF32(%ptr : tensor<*xf32>)
