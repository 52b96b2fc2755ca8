// RUN: sparse-opt %s -split-input-file -convert-sgpu-to-gpu -verify-diagnostics

// A weight computed in the function: no param to bind and prepare.
func.func @computed_weight(%x: tensor<8x32xf16>, %w: tensor<16x32xf16>) -> tensor<8x16xf16> {
  %w2 = arith.addf %w, %w : tensor<16x32xf16>
  %c = sgpu.compress %w2 : tensor<16x32xf16> -> !sgpu.compressed<16x32xf16, #sgpu.nm<2:4>>
  // expected-error @+1 {{the sparse weight must be a constant, sgpu.assemble of its parts, or an argument of the function that only this matmul reads (compressed on the GPU when the program's params are bound); a weight computed in the function is not supported}}
  %y = sgpu.spmm %x, %c : tensor<8x32xf16>, !sgpu.compressed<16x32xf16, #sgpu.nm<2:4>> -> tensor<8x16xf16>
  return %y : tensor<8x16xf16>
}

// -----

// A weight argument that is also returned: the program needs it at every
// run, so it cannot be a param prepared once.
func.func @shared_weight(%x: tensor<8x32xf16>, %w: tensor<16x32xf16>) -> (tensor<8x16xf16>, tensor<16x32xf16>) {
  %c = sgpu.compress %w : tensor<16x32xf16> -> !sgpu.compressed<16x32xf16, #sgpu.nm<2:4>>
  // expected-error @+1 {{the sparse weight must be a constant, sgpu.assemble of its parts, or an argument of the function that only this matmul reads (compressed on the GPU when the program's params are bound); a weight computed in the function is not supported}}
  %y = sgpu.spmm %x, %c : tensor<8x32xf16>, !sgpu.compressed<16x32xf16, #sgpu.nm<2:4>> -> tensor<8x16xf16>
  return %y, %w : tensor<8x16xf16>, tensor<16x32xf16>
}

// -----

func.func @twell(%h: tensor<8x512xbf16>) {
  // expected-error @+1 {{'sgpu.twell_pack' has no GPU lowering yet}}
  %p = sgpu.twell_pack %h : tensor<8x512xbf16> -> !sgpu.twell<8x512xbf16, #sgpu.twell<tile = 256, compression = 4>>
  return
}

// -----

func.func @all_reduce_in_region(%x: tensor<8x64xf32>, %c: i1) -> tensor<8x64xf32> {
  %y = scf.if %c -> tensor<8x64xf32> {
    // expected-error @+1 {{'sgpu.all_reduce' inside a region has no GPU lowering: the runtime program is a straight line of host steps, so collectives must be in the function body}}
    %r = sgpu.all_reduce %x : tensor<8x64xf32>
    scf.yield %r : tensor<8x64xf32>
  } else {
    scf.yield %x : tensor<8x64xf32>
  }
  return %y : tensor<8x64xf32>
}

// -----

func.func @attention(%q: tensor<1x2x8x16xf16>) -> tensor<1x2x8x16xf16> {
  // expected-error @+1 {{'sgpu.attention' has no GPU lowering yet}}
  %y = sgpu.attention %q, %q, %q {scale = 0.25 : f32} : tensor<1x2x8x16xf16>, tensor<1x2x8x16xf16>, tensor<1x2x8x16xf16> -> tensor<1x2x8x16xf16>
  return %y : tensor<1x2x8x16xf16>
}

// -----

func.func @constant_not_24(%x: tensor<8x32xf16>) -> tensor<8x16xf16> {
  // expected-error @+1 {{weight is not 2:4 sparse: row 0, group 0 (columns 0..3) has 4 nonzeros}}
  %w = arith.constant dense<1.0> : tensor<16x32xf16>
  // expected-note @+1 {{compressed for this use}}
  %c = sgpu.compress %w : tensor<16x32xf16> -> !sgpu.compressed<16x32xf16, #sgpu.nm<2:4>>
  %y = sgpu.spmm %x, %c : tensor<8x32xf16>, !sgpu.compressed<16x32xf16, #sgpu.nm<2:4>> -> tensor<8x16xf16>
  return %y : tensor<8x16xf16>
}
