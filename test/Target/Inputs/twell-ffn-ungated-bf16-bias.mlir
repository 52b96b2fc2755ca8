// Ungated ReLU FFN with a bias on the first linear (a torch Linear with bias), bf16, M=17000 d=64 F=320: the input of sgpu-sparsify-ffn in the TwELL GPU tests (with tile 64: 133 token blocks, so a persistent producer walks several tiles per block; F a partial feature block).
#mk = affine_map<(m, n, k) -> (m, k)>
#nk = affine_map<(m, n, k) -> (n, k)>
#mn = affine_map<(m, n, k) -> (m, n)>
#id = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (j)>
func.func @ffn(%x: tensor<17000x64xbf16>, %wu: tensor<320x64xbf16>, %bu: tensor<320xbf16>, %wd: tensor<64x320xbf16>) -> tensor<17000x64xbf16> {
  %z = arith.constant 0.0 : bf16
  %e0 = tensor.empty() : tensor<17000x320xbf16>
  %a0 = linalg.fill ins(%z : bf16) outs(%e0 : tensor<17000x320xbf16>) -> tensor<17000x320xbf16>
  %g = linalg.matmul indexing_maps = [#mk, #nk, #mn] ins(%x, %wu : tensor<17000x64xbf16>, tensor<320x64xbf16>) outs(%a0 : tensor<17000x320xbf16>) -> tensor<17000x320xbf16>
  %gb = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%g, %bu : tensor<17000x320xbf16>, tensor<320xbf16>) outs(%e0 : tensor<17000x320xbf16>) {
  ^bb0(%a: bf16, %b: bf16, %o: bf16):
    %r = arith.addf %a, %b : bf16
    linalg.yield %r : bf16
  } -> tensor<17000x320xbf16>
  %e1 = tensor.empty() : tensor<17000x320xbf16>
  %h = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%gb : tensor<17000x320xbf16>) outs(%e1 : tensor<17000x320xbf16>) {
  ^bb0(%a: bf16, %o: bf16):
    %r = arith.maximumf %a, %z : bf16
    linalg.yield %r : bf16
  } -> tensor<17000x320xbf16>
  %e2 = tensor.empty() : tensor<17000x64xbf16>
  %a2 = linalg.fill ins(%z : bf16) outs(%e2 : tensor<17000x64xbf16>) -> tensor<17000x64xbf16>
  %y = linalg.matmul indexing_maps = [#mk, #nk, #mn] ins(%h, %wd : tensor<17000x320xbf16>, tensor<64x320xbf16>) outs(%a2 : tensor<17000x64xbf16>) -> tensor<17000x64xbf16>
  return %y : tensor<17000x64xbf16>
}
