// Gated ReLU FFN, bf16, M=200 d=200 F=600 (a partial token block, K tail and last tile): the input of sgpu-sparsify-ffn in the TwELL Target and GPU tests.
#mk = affine_map<(m, n, k) -> (m, k)>
#nk = affine_map<(m, n, k) -> (n, k)>
#mn = affine_map<(m, n, k) -> (m, n)>
#id = affine_map<(i, j) -> (i, j)>
func.func @ffn(%x: tensor<200x200xbf16>, %wg: tensor<600x200xbf16>, %wu: tensor<600x200xbf16>, %wd: tensor<200x600xbf16>) -> tensor<200x200xbf16> {
  %z = arith.constant 0.0 : bf16
  %e0 = tensor.empty() : tensor<200x600xbf16>
  %a0 = linalg.fill ins(%z : bf16) outs(%e0 : tensor<200x600xbf16>) -> tensor<200x600xbf16>
  %g = linalg.matmul indexing_maps = [#mk, #nk, #mn] ins(%x, %wg : tensor<200x200xbf16>, tensor<600x200xbf16>) outs(%a0 : tensor<200x600xbf16>) -> tensor<200x600xbf16>
  %e1 = tensor.empty() : tensor<200x600xbf16>
  %h = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%g : tensor<200x600xbf16>) outs(%e1 : tensor<200x600xbf16>) {
  ^bb0(%a: bf16, %o: bf16):
    %r = arith.maximumf %a, %z : bf16
    linalg.yield %r : bf16
  } -> tensor<200x600xbf16>
  %u = linalg.matmul indexing_maps = [#mk, #nk, #mn] ins(%x, %wu : tensor<200x200xbf16>, tensor<600x200xbf16>) outs(%a0 : tensor<200x600xbf16>) -> tensor<200x600xbf16>
  %e3 = tensor.empty() : tensor<200x600xbf16>
  %hu = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%h, %u : tensor<200x600xbf16>, tensor<200x600xbf16>) outs(%e3 : tensor<200x600xbf16>) {
  ^bb0(%a: bf16, %b: bf16, %o: bf16):
    %r = arith.mulf %a, %b : bf16
    linalg.yield %r : bf16
  } -> tensor<200x600xbf16>
  %e2 = tensor.empty() : tensor<200x200xbf16>
  %a2 = linalg.fill ins(%z : bf16) outs(%e2 : tensor<200x200xbf16>) -> tensor<200x200xbf16>
  %y = linalg.matmul indexing_maps = [#mk, #nk, #mn] ins(%hu, %wd : tensor<200x600xbf16>, tensor<200x600xbf16>) outs(%a2 : tensor<200x200xbf16>) -> tensor<200x200xbf16>
  return %y : tensor<200x200xbf16>
}
