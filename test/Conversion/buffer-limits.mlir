// Shapes no GPU program can hold are diagnostics at their values before
// anything is generated or folded: a dimension of size 0 (a matmul of no
// tokens would divide by it), a byte size that overflows 64 bits or exceeds
// 256 GiB (a constant weight folded at compile time would be allocated),
// and function arguments and results of index elements (no size in
// memory). The CPU reference lowering checks the same.
// RUN: sparse-opt %s -split-input-file -convert-sgpu-to-gpu -verify-diagnostics
// RUN: sparse-opt %s -split-input-file -convert-sgpu-to-loops -verify-diagnostics
// The whole pipeline stops at the same diagnostics (no crash, no artifact).
// RUN: rm -rf %t && not sparse-opt %s -split-input-file --sgpu-compile="output-dir=%t" -o /dev/null 2>&1 | FileCheck %s
// CHECK: error: 'sgpu.spmm' result #0 of type 'tensor<0x32xf16>': dimension 0 is 0
// CHECK: error: argument #0 of @index_arg of type 'tensor<4x8xindex>': its elements have no fixed size in memory

// A structured-sparse matmul over zero tokens.
// expected-error @+2 {{argument #0 of @zero_tokens of type 'tensor<0x64xf16>': dimension 0 is 0: GPU programs need at least one element in every dimension}}
// expected-error @+1 {{result #0 of @zero_tokens of type 'tensor<0x32xf16>': dimension 0 is 0}}
func.func @zero_tokens(%x: tensor<0x64xf16>, %w: tensor<32x64xf16, #sgpu.nm<2:4>> {sgpu.param = "w"}) -> tensor<0x32xf16> {
  %c = sgpu.compress %w : tensor<32x64xf16, #sgpu.nm<2:4>> -> !sgpu.compressed<32x64xf16, #sgpu.nm<2:4>>
  // expected-error @+1 {{'sgpu.spmm' result #0 of type 'tensor<0x32xf16>': dimension 0 is 0: GPU programs need at least one element in every dimension}}
  %y = sgpu.spmm %x, %c : tensor<0x64xf16>, !sgpu.compressed<32x64xf16, #sgpu.nm<2:4>> -> tensor<0x32xf16>
  return %y : tensor<0x32xf16>
}

// -----

// A dense matmul over K = 0 (the runtime's GEMM takes no empty one).
// expected-error @+2 {{argument #0 of @zero_k of type 'tensor<8x0xf16>': dimension 1 is 0}}
// expected-error @+1 {{argument #1 of @zero_k of type 'tensor<0x32xf16>': dimension 0 is 0}}
func.func @zero_k(%x: tensor<8x0xf16>, %w: tensor<0x32xf16>) -> tensor<8x32xf16> {
  %e = tensor.empty() : tensor<8x32xf16>
  %y = linalg.matmul ins(%x, %w : tensor<8x0xf16>, tensor<0x32xf16>) outs(%e : tensor<8x32xf16>) -> tensor<8x32xf16>
  return %y : tensor<8x32xf16>
}

// -----

// A constant 2:4 weight of 2^31 x 2^31: 2^63 bytes overflow before the
// compile-time compression could allocate them.
func.func @huge_constant(%x: tensor<8x2147483648xf16>) -> tensor<8x2147483648xf16> {
  // expected-error @+1 {{'arith.constant' result #0 of type 'tensor<2147483648x2147483648xf16, #sgpu.nm<2:4>>': its size in bytes overflows a 64-bit integer}}
  %w = arith.constant dense<1.0> : tensor<2147483648x2147483648xf16, #sgpu.nm<2:4>>
  // expected-error @+1 {{'sgpu.compress' result #0 of type '!sgpu.compressed<2147483648x2147483648xf16, #sgpu.nm<2:4>>': its size in bytes overflows a 64-bit integer}}
  %c = sgpu.compress %w : tensor<2147483648x2147483648xf16, #sgpu.nm<2:4>> -> !sgpu.compressed<2147483648x2147483648xf16, #sgpu.nm<2:4>>
  %y = sgpu.spmm %x, %c : tensor<8x2147483648xf16>, !sgpu.compressed<2147483648x2147483648xf16, #sgpu.nm<2:4>> -> tensor<8x2147483648xf16>
  return %y : tensor<8x2147483648xf16>
}

// -----

// 512 GiB of f32: no overflow, but beyond any GPU.
// expected-error @+1 {{argument #0 of @too_large of type 'tensor<131072x1048576xf32>': it holds 549755813888 bytes, more than the 256 GiB any GPU buffer can hold}}
func.func @too_large(%x: tensor<131072x1048576xf32>) -> tensor<1xf32> {
  %c = arith.constant dense<0.0> : tensor<1xf32>
  return %c : tensor<1xf32>
}

// -----

// Index elements at the function boundary (the runtime passes bytes).
// expected-error @+2 {{argument #0 of @index_arg of type 'tensor<4x8xindex>': its elements have no fixed size in memory (use integer or float elements)}}
// expected-error @+1 {{result #0 of @index_arg of type 'tensor<4x8xindex>': its elements have no fixed size in memory}}
func.func @index_arg(%x: tensor<4x8xindex>) -> tensor<4x8xindex> {
  return %x : tensor<4x8xindex>
}
