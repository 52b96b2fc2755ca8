// RUN: sparse-opt %s -split-input-file -sgpu-slide-sparse -verify-diagnostics
// An unknown chip is an error (the cost model weighs its kernels).
// RUN: not sparse-opt %s -split-input-file --sgpu-slide-sparse="chip=bogus" 2>&1 | FileCheck %s --check-prefix=CHIP
// CHIP: error: invalid sgpu-slide-sparse chip: chip 'bogus' is not of the form sm_<NN>[a]

// Row 3, group 5 has three nonzeros.
func.func @violation(%x: tensor<8x32xf16>) -> tensor<8x16xf16> {
  // expected-error @+1 {{weight is not 2:4 sparse: row 3, group 5 (columns 20..23) has 3 nonzeros}}
  %w = arith.constant dense<[[1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0], [1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0], [1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0], [1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 3.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0], [1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0], [1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0], [1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0], [1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0], [1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0], [1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0], [1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0], [1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0], [1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0], [1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0], [1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0], [1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0]]> : tensor<16x32xf16, #sgpu.nm<2:4>>
  %z = arith.constant 0.0 : f16
  %e = tensor.empty() : tensor<8x16xf16>
  %acc = linalg.fill ins(%z : f16) outs(%e : tensor<8x16xf16>) -> tensor<8x16xf16>
  // expected-note @+1 {{compressed for this use}}
  %y = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
      ins(%x, %w : tensor<8x32xf16>, tensor<16x32xf16, #sgpu.nm<2:4>>) outs(%acc : tensor<8x16xf16>) -> tensor<8x16xf16>
  return %y : tensor<8x16xf16>
}

// -----

// Row 2, group 1 of a 6:8 weight has seven nonzeros.
func.func @six_eight_violation(%x: tensor<8x16xf16>) -> tensor<8x16xf16> {
  // expected-error @+1 {{weight is not 6:8 sparse: row 2, group 1 (columns 8..15) has 7 nonzeros}}
  %w = arith.constant dense<[[1.0, 1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0, 1.0, 1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0], [1.0, 1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0, 1.0, 1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0], [1.0, 1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.0, 1.0, 1.0], [1.0, 1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0, 1.0, 1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0], [1.0, 1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0, 1.0, 1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0], [1.0, 1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0, 1.0, 1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0], [1.0, 1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0, 1.0, 1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0], [1.0, 1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0, 1.0, 1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0], [1.0, 1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0, 1.0, 1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0], [1.0, 1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0, 1.0, 1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0], [1.0, 1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0, 1.0, 1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0], [1.0, 1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0, 1.0, 1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0], [1.0, 1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0, 1.0, 1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0], [1.0, 1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0, 1.0, 1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0], [1.0, 1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0, 1.0, 1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0], [1.0, 1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0, 1.0, 1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0]]> : tensor<16x16xf16, #sgpu.nm<6:8>>
  %z = arith.constant 0.0 : f16
  %e = tensor.empty() : tensor<8x16xf16>
  %acc = linalg.fill ins(%z : f16) outs(%e : tensor<8x16xf16>) -> tensor<8x16xf16>
  // expected-note @+1 {{decomposed for this use}}
  %y = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
      ins(%x, %w : tensor<8x16xf16>, tensor<16x16xf16, #sgpu.nm<6:8>>) outs(%acc : tensor<8x16xf16>) -> tensor<8x16xf16>
  return %y : tensor<8x16xf16>
}

// -----

func.func @k_by_n(%x: tensor<8x32xf16>, %w: tensor<32x16xf16, #sgpu.nm<2:4>>) -> tensor<8x16xf16> {
  %z = arith.constant 0.0 : f16
  %e = tensor.empty() : tensor<8x16xf16>
  %acc = linalg.fill ins(%z : f16) outs(%e : tensor<8x16xf16>) -> tensor<8x16xf16>
  // expected-error @+1 {{the N:M-sparse weight is a K x N operand; expected the N x K weight}}
  %y = linalg.matmul ins(%x, %w : tensor<8x32xf16>, tensor<32x16xf16, #sgpu.nm<2:4>>) outs(%acc : tensor<8x16xf16>) -> tensor<8x16xf16>
  return %y : tensor<8x16xf16>
}

// -----

func.func @accumulating(%x: tensor<8x32xf16>, %w: tensor<16x32xf16, #sgpu.nm<2:4>>, %acc: tensor<8x16xf16>) -> tensor<8x16xf16> {
  // expected-remark @+2 {{not rewritten: the matmul accumulates into a value that is not a zero fill}}
  // expected-error @+1 {{operand carries a structured-sparsity encoding that no sparse rewrite consumed; bufferization would drop it silently}}
  %y = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
      ins(%x, %w : tensor<8x32xf16>, tensor<16x32xf16, #sgpu.nm<2:4>>) outs(%acc : tensor<8x16xf16>) -> tensor<8x16xf16>
  return %y : tensor<8x16xf16>
}

// -----

func.func @integer_types(%x: tensor<8x32xi8>, %w: tensor<16x32xi8, #sgpu.nm<2:4>>) -> tensor<8x16xi32> {
  %z = arith.constant 0 : i32
  %e = tensor.empty() : tensor<8x16xi32>
  %acc = linalg.fill ins(%z : i32) outs(%e : tensor<8x16xi32>) -> tensor<8x16xi32>
  // expected-error @+1 {{sparse matmul supports f16 or bf16 operands of one type with an f16/bf16/f32 result; got 'i8' x 'i8' -> 'i32'}}
  %y = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
      ins(%x, %w : tensor<8x32xi8>, tensor<16x32xi8, #sgpu.nm<2:4>>) outs(%acc : tensor<8x16xi32>) -> tensor<8x16xi32>
  return %y : tensor<8x16xi32>
}

// -----

func.func @dynamic(%x: tensor<?x32xf16>, %w: tensor<16x32xf16, #sgpu.nm<2:4>>, %acc0: tensor<?x16xf16>) -> tensor<?x16xf16> {
  %z = arith.constant 0.0 : f16
  %acc = linalg.fill ins(%z : f16) outs(%acc0 : tensor<?x16xf16>) -> tensor<?x16xf16>
  // expected-error @+1 {{sparse matmul needs static shapes}}
  %y = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
      ins(%x, %w : tensor<?x32xf16>, tensor<16x32xf16, #sgpu.nm<2:4>>) outs(%acc : tensor<?x16xf16>) -> tensor<?x16xf16>
  return %y : tensor<?x16xf16>
}

// -----

// An encoded value used by something other than a matmul weight slot.
func.func @leftover(%w: tensor<16x32xf16, #sgpu.nm<2:4>>) -> tensor<16x32xf16> {
  %e = tensor.empty() : tensor<16x32xf16>
  // expected-error @+1 {{operand carries a structured-sparsity encoding that no sparse rewrite consumed}}
  %c = linalg.copy ins(%w : tensor<16x32xf16, #sgpu.nm<2:4>>) outs(%e : tensor<16x32xf16>) -> tensor<16x32xf16>
  return %c : tensor<16x32xf16>
}

// -----

#CSR = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed) }>
func.func @other_sparse_encoding(%x: tensor<8x32xf16>, %w: tensor<16x32xf16, #CSR>) -> tensor<8x16xf16> {
  %z = arith.constant 0.0 : f16
  %e = tensor.empty() : tensor<8x16xf16>
  %acc = linalg.fill ins(%z : f16) outs(%e : tensor<8x16xf16>) -> tensor<8x16xf16>
  // expected-error @+1 {{weight encoding is a sparse_tensor encoding that is not the 2:4 synonym; use #sgpu.nm<n:m>}}
  %y = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
      ins(%x, %w : tensor<8x32xf16>, tensor<16x32xf16, #CSR>) outs(%acc : tensor<8x16xf16>) -> tensor<8x16xf16>
  return %y : tensor<8x16xf16>
}
