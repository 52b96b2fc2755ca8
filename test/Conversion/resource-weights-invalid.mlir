// A constant weight whose dense_resource data is short or missing is an error
// at the constant naming the resource (not "a weight computed in the function").
// RUN: sparse-opt %s -split-input-file --sgpu-compile -o /dev/null -verify-diagnostics

func.func @lin(%x: tensor<8x64xf16>) -> tensor<8x32xf16> {
  // expected-error @+1 {{the weight's dense_resource 'w0' holds 4 bytes; its type 'tensor<32x64xf16, #sgpu.nm<2:4>>' needs 4096}}
  %w = arith.constant dense_resource<w0> : tensor<32x64xf16, #sgpu.nm<2:4>>
  %z = arith.constant 0.0 : f16
  %e = tensor.empty() : tensor<8x32xf16>
  %a = linalg.fill ins(%z : f16) outs(%e : tensor<8x32xf16>) -> tensor<8x32xf16>
  %y = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>] ins(%x, %w : tensor<8x64xf16>, tensor<32x64xf16, #sgpu.nm<2:4>>) outs(%a : tensor<8x32xf16>) -> tensor<8x32xf16>
  return %y : tensor<8x32xf16>
}
{-#
  dialect_resources: {
    builtin: {
      w0: "0x0200000000000000"
    }
  }
#-}

// -----

func.func @lin(%x: tensor<8x64xf16>) -> tensor<8x32xf16> {
  // expected-error @+1 {{the weight's dense_resource 'w0' has no data (the module's dialect_resources do not define it)}}
  %w = arith.constant dense_resource<w0> : tensor<32x64xf16, #sgpu.nm<2:4>>
  %z = arith.constant 0.0 : f16
  %e = tensor.empty() : tensor<8x32xf16>
  %a = linalg.fill ins(%z : f16) outs(%e : tensor<8x32xf16>) -> tensor<8x32xf16>
  %y = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>] ins(%x, %w : tensor<8x64xf16>, tensor<32x64xf16, #sgpu.nm<2:4>>) outs(%a : tensor<8x32xf16>) -> tensor<8x32xf16>
  return %y : tensor<8x32xf16>
}
