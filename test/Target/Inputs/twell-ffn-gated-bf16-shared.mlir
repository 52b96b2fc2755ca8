// Two gated ReLU FFNs on one gate (bf16, M=64 d=256 F=1024): the second up
// and down projections read the same ReLU output, so sgpu-sparsify-ffn gives
// both consumers one TwELL pack; the sum of the two outputs is returned. The
// input of the shared-pack GPU check (a gated consumer on tensor cores must
// not overwrite the values that the other consumer still reads).
#mk = affine_map<(m, n, k) -> (m, k)>
#nk = affine_map<(m, n, k) -> (n, k)>
#mn = affine_map<(m, n, k) -> (m, n)>
#id = affine_map<(i, j) -> (i, j)>
func.func @ffn2(%x: tensor<64x256xbf16>, %wg: tensor<1024x256xbf16>, %wu: tensor<1024x256xbf16>, %wd: tensor<256x1024xbf16>,
                %wu2: tensor<1024x256xbf16>, %wd2: tensor<256x1024xbf16>) -> tensor<64x256xbf16> {
  %z = arith.constant 0.0 : bf16
  %e0 = tensor.empty() : tensor<64x1024xbf16>
  %a0 = linalg.fill ins(%z : bf16) outs(%e0 : tensor<64x1024xbf16>) -> tensor<64x1024xbf16>
  %g = linalg.matmul indexing_maps = [#mk, #nk, #mn] ins(%x, %wg : tensor<64x256xbf16>, tensor<1024x256xbf16>) outs(%a0 : tensor<64x1024xbf16>) -> tensor<64x1024xbf16>
  %h = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%g : tensor<64x1024xbf16>) outs(%e0 : tensor<64x1024xbf16>) {
  ^bb0(%a: bf16, %o: bf16):
    %r = arith.maximumf %a, %z : bf16
    linalg.yield %r : bf16
  } -> tensor<64x1024xbf16>
  %e2 = tensor.empty() : tensor<64x256xbf16>
  %a2 = linalg.fill ins(%z : bf16) outs(%e2 : tensor<64x256xbf16>) -> tensor<64x256xbf16>
  %u = linalg.matmul indexing_maps = [#mk, #nk, #mn] ins(%x, %wu : tensor<64x256xbf16>, tensor<1024x256xbf16>) outs(%a0 : tensor<64x1024xbf16>) -> tensor<64x1024xbf16>
  %hu = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%h, %u : tensor<64x1024xbf16>, tensor<64x1024xbf16>) outs(%e0 : tensor<64x1024xbf16>) {
  ^bb0(%a: bf16, %b: bf16, %o: bf16):
    %r = arith.mulf %a, %b : bf16
    linalg.yield %r : bf16
  } -> tensor<64x1024xbf16>
  %y = linalg.matmul indexing_maps = [#mk, #nk, #mn] ins(%hu, %wd : tensor<64x1024xbf16>, tensor<256x1024xbf16>) outs(%a2 : tensor<64x256xbf16>) -> tensor<64x256xbf16>
  %u2 = linalg.matmul indexing_maps = [#mk, #nk, #mn] ins(%x, %wu2 : tensor<64x256xbf16>, tensor<1024x256xbf16>) outs(%a0 : tensor<64x1024xbf16>) -> tensor<64x1024xbf16>
  %hu2 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%h, %u2 : tensor<64x1024xbf16>, tensor<64x1024xbf16>) outs(%e0 : tensor<64x1024xbf16>) {
  ^bb0(%a: bf16, %b: bf16, %o: bf16):
    %r = arith.mulf %a, %b : bf16
    linalg.yield %r : bf16
  } -> tensor<64x1024xbf16>
  %y2 = linalg.matmul indexing_maps = [#mk, #nk, #mn] ins(%hu2, %wd2 : tensor<64x1024xbf16>, tensor<256x1024xbf16>) outs(%a2 : tensor<64x256xbf16>) -> tensor<64x256xbf16>
  %s = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%y, %y2 : tensor<64x256xbf16>, tensor<64x256xbf16>) outs(%e2 : tensor<64x256xbf16>) {
  ^bb0(%a: bf16, %b: bf16, %o: bf16):
    %r = arith.addf %a, %b : bf16
    linalg.yield %r : bf16
  } -> tensor<64x256xbf16>
  return %s : tensor<64x256xbf16>
}
