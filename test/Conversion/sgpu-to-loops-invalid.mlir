// RUN: sparse-opt %s -split-input-file -convert-sgpu-to-loops -verify-diagnostics

// A weight computed in the function: no param to bind and prepare.
func.func @computed_weight(%x: tensor<8x32xf16>, %w: tensor<16x32xf16>) -> tensor<8x16xf16> {
  %w2 = arith.addf %w, %w : tensor<16x32xf16>
  // expected-error @+1 {{'sgpu.compress' has no reference lowering yet}}
  %c = sgpu.compress %w2 : tensor<16x32xf16> -> !sgpu.compressed<16x32xf16, #sgpu.nm<2:4>>
  // expected-error @+1 {{the sparse weight must be a constant, sgpu.assemble of its parts, or an argument of the function that only this matmul reads; a weight computed in the function is not supported}}
  %y = sgpu.spmm %x, %c : tensor<8x32xf16>, !sgpu.compressed<16x32xf16, #sgpu.nm<2:4>> -> tensor<8x16xf16>
  return %y : tensor<8x16xf16>
}

// -----

// A weight argument that is also returned: the program needs it at every
// run, so it cannot be a param prepared once.
func.func @shared_weight(%x: tensor<8x32xf16>, %w: tensor<16x32xf16>) -> (tensor<8x16xf16>, tensor<16x32xf16>) {
  // expected-error @+1 {{'sgpu.compress' has no reference lowering yet}}
  %c = sgpu.compress %w : tensor<16x32xf16> -> !sgpu.compressed<16x32xf16, #sgpu.nm<2:4>>
  // expected-error @+1 {{the sparse weight must be a constant, sgpu.assemble of its parts, or an argument of the function that only this matmul reads; a weight computed in the function is not supported}}
  %y = sgpu.spmm %x, %c : tensor<8x32xf16>, !sgpu.compressed<16x32xf16, #sgpu.nm<2:4>> -> tensor<8x16xf16>
  return %y, %w : tensor<8x16xf16>, tensor<16x32xf16>
}

// -----

func.func @runtime_decompose(%w: tensor<16x64xf16, #sgpu.nm<6:8>>) -> !sgpu.compressed<16x96xf16, #sgpu.nm<2:4>> {
  // expected-error @+1 {{'sgpu.nm_decompose' has no reference lowering yet}}
  %c = sgpu.nm_decompose %w : tensor<16x64xf16, #sgpu.nm<6:8>> -> !sgpu.compressed<16x96xf16, #sgpu.nm<2:4>>
  return %c : !sgpu.compressed<16x96xf16, #sgpu.nm<2:4>>
}

// -----

// A TwELL value read by something other than sgpu.twell_ffn: its concrete
// parts are buffers private to this lowering.
func.func @twell_escapes(%h: tensor<8x512xbf16>, %wd: tensor<64x512xbf16>) -> (tensor<8x64xbf16>, !sgpu.twell<8x512xbf16, #sgpu.twell<tile = 256, compression = 4>>) {
  // expected-error @+1 {{the packed activations are used by 'func.return'; the reference lowering supports TwELL values read only by sgpu.twell_ffn}}
  %p = sgpu.twell_pack %h : tensor<8x512xbf16> -> !sgpu.twell<8x512xbf16, #sgpu.twell<tile = 256, compression = 4>>
  %y = sgpu.twell_ffn %p, %wd : !sgpu.twell<8x512xbf16, #sgpu.twell<tile = 256, compression = 4>>, tensor<64x512xbf16> -> tensor<8x64xbf16>
  return %y, %p : tensor<8x64xbf16>, !sgpu.twell<8x512xbf16, #sgpu.twell<tile = 256, compression = 4>>
}

// -----

// TwELL activations that no sgpu.twell_pack of this function produced.
func.func @twell_argument(%p: !sgpu.twell<8x512xbf16, #sgpu.twell<tile = 256, compression = 4>>, %wd: tensor<64x512xbf16>) -> tensor<8x64xbf16> {
  // expected-error @+1 {{the TwELL activations must come from sgpu.twell_pack in the same function; a !sgpu.twell value from elsewhere (a function argument, another op) has no concrete form in the reference lowering}}
  %y = sgpu.twell_ffn %p, %wd : !sgpu.twell<8x512xbf16, #sgpu.twell<tile = 256, compression = 4>>, tensor<64x512xbf16> -> tensor<8x64xbf16>
  return %y : tensor<8x64xbf16>
}
