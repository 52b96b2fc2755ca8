// A pre-norm MLP block of a transformer, y = x + W2 . relu(W1 . rmsnorm(x) * g)
// (W1: 512 x 256, W2: 256 x 512, 16 tokens of 256 features, f16), written the
// way the importers write it: sgpu.rms_norm, each Linear as a linalg.matmul
// with transposing indexing_maps into a zero fill, the ReLU and the residual
// add as element-wise linalg.generic ops. The weights are inputs of the
// program. Compile with
//   sparse-opt rmsnorm_mlp_block.mlir --sgpu-compile="output-dir=out"
// The norm and the residual add become generated kernels, the two matmuls
// library GEMMs (the ReLU fused into the first one's epilogue).
#map_x = affine_map<(m, n, k) -> (m, k)>
#map_w = affine_map<(m, n, k) -> (n, k)>
#map_y = affine_map<(m, n, k) -> (m, n)>
#id = affine_map<(i, j) -> (i, j)>
func.func @block(%x: tensor<16x256xf16>, %g: tensor<256xf16>, %w1: tensor<512x256xf16>,
                 %w2: tensor<256x512xf16>) -> tensor<16x256xf16> {
  %zero = arith.constant 0.0 : f16
  %n = sgpu.rms_norm %x, %g {epsilon = 1.0e-05 : f32}
      : tensor<16x256xf16>, tensor<256xf16> -> tensor<16x256xf16>
  %e1 = tensor.empty() : tensor<16x512xf16>
  %acc1 = linalg.fill ins(%zero : f16) outs(%e1 : tensor<16x512xf16>) -> tensor<16x512xf16>
  %h = linalg.matmul indexing_maps = [#map_x, #map_w, #map_y]
      ins(%n, %w1 : tensor<16x256xf16>, tensor<512x256xf16>)
      outs(%acc1 : tensor<16x512xf16>) -> tensor<16x512xf16>
  %relu = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%h : tensor<16x512xf16>) outs(%e1 : tensor<16x512xf16>) {
  ^bb0(%a: f16, %out: f16):
    %r = arith.maximumf %a, %zero : f16
    linalg.yield %r : f16
  } -> tensor<16x512xf16>
  %e2 = tensor.empty() : tensor<16x256xf16>
  %acc2 = linalg.fill ins(%zero : f16) outs(%e2 : tensor<16x256xf16>) -> tensor<16x256xf16>
  %y = linalg.matmul indexing_maps = [#map_x, #map_w, #map_y]
      ins(%relu, %w2 : tensor<16x512xf16>, tensor<256x512xf16>)
      outs(%acc2 : tensor<16x256xf16>) -> tensor<16x256xf16>
  %sum = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %y : tensor<16x256xf16>, tensor<16x256xf16>) outs(%e2 : tensor<16x256xf16>) {
  ^bb0(%a: f16, %b: f16, %out: f16):
    %s = arith.addf %a, %b : f16
    linalg.yield %s : f16
  } -> tensor<16x256xf16>
  return %sum : tensor<16x256xf16>
}
