// RUN: sparse-opt %s --sgpu-slide-sparse=policy=sparse --sgpu-dense-matmul --sgpu-fuse-epilogue --sgpu-fuse-sibling-spmm | FileCheck %s --check-prefix=PIPE

// In the pipeline's order (after sgpu-fuse-epilogue): q, k and v with a
// bias each (Qwen) keep the bias in their epilogues and are not fused; the
// same GEMMs without one are.
// PIPE-LABEL: func.func @biased
// PIPE-NOT: tensor.concat
// PIPE-COUNT-2: sgpu.spmm {{.*}} bias(
// PIPE-LABEL: func.func @unbiased
// PIPE: tensor.concat dim(0) %arg1, %arg2
// PIPE: sgpu.spmm
// PIPE-NOT: sgpu.spmm
#mx = affine_map<(m, n, k) -> (m, k)>
#mw = affine_map<(m, n, k) -> (n, k)>
#my = affine_map<(m, n, k) -> (m, n)>
#id = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (j)>
func.func @biased(%x: tensor<1x4096xbf16>, %wq: tensor<1024x4096xbf16, #sgpu.nm<2:4>>,
                  %wk: tensor<1024x4096xbf16, #sgpu.nm<2:4>>, %bq: tensor<1024xbf16>, %bk: tensor<1024xbf16>)
    -> (tensor<1x1024xbf16>, tensor<1x1024xbf16>) {
  %z = arith.constant 0.0 : bf16
  %e = tensor.empty() : tensor<1x1024xbf16>
  %f = linalg.fill ins(%z : bf16) outs(%e : tensor<1x1024xbf16>) -> tensor<1x1024xbf16>
  %q = linalg.matmul indexing_maps = [#mx, #mw, #my]
      ins(%x, %wq : tensor<1x4096xbf16>, tensor<1024x4096xbf16, #sgpu.nm<2:4>>) outs(%f : tensor<1x1024xbf16>) -> tensor<1x1024xbf16>
  %qb = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%q, %bq : tensor<1x1024xbf16>, tensor<1024xbf16>) outs(%e : tensor<1x1024xbf16>) {
  ^bb0(%p: bf16, %b: bf16, %o: bf16):
    %s = arith.addf %p, %b : bf16
    linalg.yield %s : bf16
  } -> tensor<1x1024xbf16>
  %k = linalg.matmul indexing_maps = [#mx, #mw, #my]
      ins(%x, %wk : tensor<1x4096xbf16>, tensor<1024x4096xbf16, #sgpu.nm<2:4>>) outs(%f : tensor<1x1024xbf16>) -> tensor<1x1024xbf16>
  %kb = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%k, %bk : tensor<1x1024xbf16>, tensor<1024xbf16>) outs(%e : tensor<1x1024xbf16>) {
  ^bb0(%p: bf16, %b: bf16, %o: bf16):
    %s = arith.addf %p, %b : bf16
    linalg.yield %s : bf16
  } -> tensor<1x1024xbf16>
  return %qb, %kb : tensor<1x1024xbf16>, tensor<1x1024xbf16>
}
func.func @unbiased(%x: tensor<1x4096xbf16>, %wq: tensor<1024x4096xbf16, #sgpu.nm<2:4>>,
                    %wk: tensor<1024x4096xbf16, #sgpu.nm<2:4>>) -> (tensor<1x1024xbf16>, tensor<1x1024xbf16>) {
  %z = arith.constant 0.0 : bf16
  %e = tensor.empty() : tensor<1x1024xbf16>
  %f = linalg.fill ins(%z : bf16) outs(%e : tensor<1x1024xbf16>) -> tensor<1x1024xbf16>
  %q = linalg.matmul indexing_maps = [#mx, #mw, #my]
      ins(%x, %wq : tensor<1x4096xbf16>, tensor<1024x4096xbf16, #sgpu.nm<2:4>>) outs(%f : tensor<1x1024xbf16>) -> tensor<1x1024xbf16>
  %k = linalg.matmul indexing_maps = [#mx, #mw, #my]
      ins(%x, %wk : tensor<1x4096xbf16>, tensor<1024x4096xbf16, #sgpu.nm<2:4>>) outs(%f : tensor<1x1024xbf16>) -> tensor<1x1024xbf16>
  return %q, %k : tensor<1x1024xbf16>, tensor<1x1024xbf16>
}
