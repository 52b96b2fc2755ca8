// Gated ReLU FFN, f16, M=64 d=256 F=1024: the input of sgpu-sparsify-ffn in the TwELL Target and GPU tests.
#mk = affine_map<(m, n, k) -> (m, k)>
#nk = affine_map<(m, n, k) -> (n, k)>
#mn = affine_map<(m, n, k) -> (m, n)>
#id = affine_map<(i, j) -> (i, j)>
func.func @ffn(%x: tensor<64x256xf16>, %wg: tensor<1024x256xf16>, %wu: tensor<1024x256xf16>, %wd: tensor<256x1024xf16>) -> tensor<64x256xf16> {
  %z = arith.constant 0.0 : f16
  %e0 = tensor.empty() : tensor<64x1024xf16>
  %a0 = linalg.fill ins(%z : f16) outs(%e0 : tensor<64x1024xf16>) -> tensor<64x1024xf16>
  %g = linalg.matmul indexing_maps = [#mk, #nk, #mn] ins(%x, %wg : tensor<64x256xf16>, tensor<1024x256xf16>) outs(%a0 : tensor<64x1024xf16>) -> tensor<64x1024xf16>
  %e1 = tensor.empty() : tensor<64x1024xf16>
  %h = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%g : tensor<64x1024xf16>) outs(%e1 : tensor<64x1024xf16>) {
  ^bb0(%a: f16, %o: f16):
    %r = arith.maximumf %a, %z : f16
    linalg.yield %r : f16
  } -> tensor<64x1024xf16>
  %u = linalg.matmul indexing_maps = [#mk, #nk, #mn] ins(%x, %wu : tensor<64x256xf16>, tensor<1024x256xf16>) outs(%a0 : tensor<64x1024xf16>) -> tensor<64x1024xf16>
  %e3 = tensor.empty() : tensor<64x1024xf16>
  %hu = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%h, %u : tensor<64x1024xf16>, tensor<64x1024xf16>) outs(%e3 : tensor<64x1024xf16>) {
  ^bb0(%a: f16, %b: f16, %o: f16):
    %r = arith.mulf %a, %b : f16
    linalg.yield %r : f16
  } -> tensor<64x1024xf16>
  %e2 = tensor.empty() : tensor<64x256xf16>
  %a2 = linalg.fill ins(%z : f16) outs(%e2 : tensor<64x256xf16>) -> tensor<64x256xf16>
  %y = linalg.matmul indexing_maps = [#mk, #nk, #mn] ins(%hu, %wd : tensor<64x1024xf16>, tensor<256x1024xf16>) outs(%a2 : tensor<64x256xf16>) -> tensor<64x256xf16>
  return %y : tensor<64x256xf16>
}
