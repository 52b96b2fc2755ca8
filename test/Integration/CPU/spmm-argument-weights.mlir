// Sparse weights passed as function arguments: the reference runs the
// prepare kernel's work (greedy windows, 2:4 compression, the status word)
// as loops, then the spmm decodes what it built. A weight that breaks its
// pattern prints the first offending row and group and ends the run with
// exit status 1 (the GPU runtime fails the bind with that message instead).
// RUN: sparse-opt %s --sgpu-reference | \
// RUN:   not mlir-runner -e main -entry-point-result=void \
// RUN:     -shared-libs=%mlir_runner_utils,%mlir_c_runner_utils | FileCheck %s

#id = affine_map<(i, j) -> (i, j)>
#mx = affine_map<(m, n, k) -> (m, k)>
#mw = affine_map<(m, n, k) -> (n, k)>
#my = affine_map<(m, n, k) -> (m, n)>

func.func @linear68(%x: tensor<2x16xf16>, %w: tensor<8x16xf16, #sgpu.nm<6:8>>) -> tensor<2x8xf16> {
  %z = arith.constant 0.0 : f16
  %e = tensor.empty() : tensor<2x8xf16>
  %acc = linalg.fill ins(%z : f16) outs(%e : tensor<2x8xf16>) -> tensor<2x8xf16>
  %y = linalg.matmul indexing_maps = [#mx, #mw, #my]
      ins(%x, %w : tensor<2x16xf16>, tensor<8x16xf16, #sgpu.nm<6:8>>)
      outs(%acc : tensor<2x8xf16>) -> tensor<2x8xf16>
  return %y : tensor<2x8xf16>
}

func.func @linear24(%x: tensor<2x8xbf16>, %w: tensor<4x8xbf16, #sgpu.nm<2:4>>) -> tensor<2x4xbf16> {
  %z = arith.constant 0.0 : bf16
  %e = tensor.empty() : tensor<2x4xbf16>
  %acc = linalg.fill ins(%z : bf16) outs(%e : tensor<2x4xbf16>) -> tensor<2x4xbf16>
  %y = linalg.matmul indexing_maps = [#mx, #mw, #my]
      ins(%x, %w : tensor<2x8xbf16>, tensor<4x8xbf16, #sgpu.nm<2:4>>)
      outs(%acc : tensor<2x4xbf16>) -> tensor<2x4xbf16>
  return %y : tensor<2x4xbf16>
}

func.func @print16(%y: tensor<2x8xf16>) {
  %e = tensor.empty() : tensor<2x8xf32>
  %f = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%y : tensor<2x8xf16>) outs(%e : tensor<2x8xf32>) {
  ^bb0(%a: f16, %o: f32):
    %v = arith.extf %a : f16 to f32
    linalg.yield %v : f32
  } -> tensor<2x8xf32>
  %u = tensor.cast %f : tensor<2x8xf32> to tensor<*xf32>
  call @printMemrefF32(%u) : (tensor<*xf32>) -> ()
  return
}

func.func @main() {
  // Row sums of the weights below (X is all ones). Groups of 8 with 6, 4, 1
  // and 0 nonzeros, nonzeros that fill windows in every order.
  %x = arith.constant dense<1.0> : tensor<2x16xf16>
  %w0 = arith.constant dense<[
    [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.0, 0.0,   1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.0, 0.0],
    [0.0, 0.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0,   0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 2.0],
    [1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 1.0, 0.0,   1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 1.0, 0.0],
    [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,   0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
    [1.0, 1.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0,   1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.0, 0.0],
    [-1.0, 2.0, 0.0, 3.0, 0.0, 0.0, 4.0, 5.0,  0.0, 1.0, 1.0, 0.0, 0.0, 1.0, 1.0, 0.0],
    [0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0, 1.0,   1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
    [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.0, 0.0,   1.0, 1.0, 1.0, 1.0, 1.0, 0.0, 0.0, 3.0]]> : tensor<8x16xf16>
  %w = tensor.cast %w0 : tensor<8x16xf16> to tensor<8x16xf16, #sgpu.nm<6:8>>
  %y = call @linear68(%x, %w) : (tensor<2x16xf16>, tensor<8x16xf16, #sgpu.nm<6:8>>) -> tensor<2x8xf16>
  // CHECK-NOT: breaks its declared
  // CHECK: [12, 8, 8, 0, 12, 17, 6, 14]
  call @print16(%y) : (tensor<2x8xf16>) -> ()

  %xb = arith.constant dense<1.0> : tensor<2x8xbf16>
  %wb0 = arith.constant dense<[
    [1.0, 2.0, 0.0, 0.0, 0.0, 0.0, 3.0, 4.0],
    [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
    [0.0, 1.0, 0.0, 1.0, 1.0, 0.0, 0.0, 1.0],
    [-1.0, 0.0, 0.0, 2.0, 0.0, 0.0, 0.0, -0.5]]> : tensor<4x8xbf16>
  %wb = tensor.cast %wb0 : tensor<4x8xbf16> to tensor<4x8xbf16, #sgpu.nm<2:4>>
  %yb = call @linear24(%xb, %wb) : (tensor<2x8xbf16>, tensor<4x8xbf16, #sgpu.nm<2:4>>) -> tensor<2x4xbf16>
  %ebf = tensor.empty() : tensor<2x4xf32>
  %fb = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%yb : tensor<2x4xbf16>) outs(%ebf : tensor<2x4xf32>) {
  ^bb0(%a: bf16, %o: f32):
    %v = arith.extf %a : bf16 to f32
    linalg.yield %v : f32
  } -> tensor<2x4xf32>
  %ub = tensor.cast %fb : tensor<2x4xf32> to tensor<*xf32>
  // CHECK: [10, 0, 4, 0.5]
  call @printMemrefF32(%ub) : (tensor<*xf32>) -> ()

  // Row 6, group 1 (columns 8..15) holds 7 nonzeros.
  %bad0 = arith.constant dense<[
    [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.0, 0.0,   1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.0, 0.0],
    [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,   0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
    [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,   0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
    [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,   0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
    [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,   0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
    [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,   0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
    [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,   1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.0],
    [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0,   0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]]> : tensor<8x16xf16>
  %bad = tensor.cast %bad0 : tensor<8x16xf16> to tensor<8x16xf16, #sgpu.nm<6:8>>
  // CHECK: a weight argument breaks its declared #sgpu.nm<6:8> sparsity: row 6
  // CHECK-NEXT: group 1
  // CHECK-NOT: after the bad weight
  %yx = call @linear68(%x, %bad) : (tensor<2x16xf16>, tensor<8x16xf16, #sgpu.nm<6:8>>) -> tensor<2x8xf16>
  vector.print str "after the bad weight\n"
  return
}

func.func private @printMemrefF32(%ptr : tensor<*xf32>)
