// sgpu-dense-matmul: the dense linear layers an importer writes become
// sgpu.matmul (the library GEMM); everything else is left alone.
// RUN: sparse-opt %s -split-input-file --sgpu-dense-matmul -verify-diagnostics | FileCheck %s
// RUN: sparse-opt %s -split-input-file --sgpu-dense-matmul --sgpu-fuse-epilogue -verify-diagnostics | FileCheck %s --check-prefix=FUSE

// The N x K weight through transposing indexing_maps (torch.export / fx).
// CHECK-LABEL: func @nk_maps
// CHECK-SAME: (%[[X:.*]]: tensor<16x64xf16>, %[[W:.*]]: tensor<32x64xf16>)
// CHECK: %[[Y:.*]] = sgpu.matmul %[[X]], %[[W]] : tensor<16x64xf16>, tensor<32x64xf16> -> tensor<16x32xf16>
// CHECK-NEXT: return %[[Y]]
func.func @nk_maps(%x: tensor<16x64xf16>, %w: tensor<32x64xf16>) -> tensor<16x32xf16> {
  %z = arith.constant 0.0 : f16
  %e = tensor.empty() : tensor<16x32xf16>
  %acc = linalg.fill ins(%z : f16) outs(%e : tensor<16x32xf16>) -> tensor<16x32xf16>
  %y = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>,
                                      affine_map<(m, n, k) -> (n, k)>,
                                      affine_map<(m, n, k) -> (m, n)>]
      ins(%x, %w : tensor<16x64xf16>, tensor<32x64xf16>)
      outs(%acc : tensor<16x32xf16>) -> tensor<16x32xf16>
  return %y : tensor<16x32xf16>
}

// -----

// linalg.transpose of the N x K weight (ONNX Gemm transB, older exports),
// bf16 in and f32 out; then the bias add and ReLU of an imported Linear,
// which sgpu-fuse-epilogue folds into the call.
// CHECK-LABEL: func @transposed_bias_relu
// CHECK-SAME: (%[[X:.*]]: tensor<8x48xbf16>, %[[W:.*]]: tensor<24x48xbf16>
// CHECK: sgpu.matmul %[[X]], %[[W]] : tensor<8x48xbf16>, tensor<24x48xbf16> -> tensor<8x24xf32>
// CHECK-NOT: linalg.matmul
// CHECK-NOT: linalg.transpose
// FUSE-LABEL: func @transposed_bias_relu
// FUSE-SAME: %[[B:[a-z0-9]*]]: tensor<24xf32>
// FUSE: %[[Y:.*]] = sgpu.matmul %{{.*}}, %{{.*}} bias(%[[B]] : tensor<24xf32>) {activation = #sgpu.activation<relu>} : tensor<8x48xbf16>, tensor<24x48xbf16> -> tensor<8x24xf32>
// FUSE-NOT: linalg.generic
// FUSE: return %[[Y]]
func.func @transposed_bias_relu(%x: tensor<8x48xbf16>, %w: tensor<24x48xbf16>,
                                %b: tensor<24xf32>) -> tensor<8x24xf32> {
  %z = arith.constant 0.0 : f32
  %et = tensor.empty() : tensor<48x24xbf16>
  %wt = linalg.transpose ins(%w : tensor<24x48xbf16>) outs(%et : tensor<48x24xbf16>) permutation = [1, 0]
  %e = tensor.empty() : tensor<8x24xf32>
  %acc = linalg.fill ins(%z : f32) outs(%e : tensor<8x24xf32>) -> tensor<8x24xf32>
  %y = linalg.matmul ins(%x, %wt : tensor<8x48xbf16>, tensor<48x24xbf16>)
      outs(%acc : tensor<8x24xf32>) -> tensor<8x24xf32>
  %eb = tensor.empty() : tensor<8x24xf32>
  %yb = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (i, j)>],
                        iterator_types = ["parallel", "parallel"]}
      ins(%y, %b : tensor<8x24xf32>, tensor<24xf32>) outs(%eb : tensor<8x24xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %s = arith.addf %a, %c : f32
    linalg.yield %s : f32
  } -> tensor<8x24xf32>
  %er = tensor.empty() : tensor<8x24xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
                       iterator_types = ["parallel", "parallel"]}
      ins(%yb : tensor<8x24xf32>) outs(%er : tensor<8x24xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.maximumf %a, %z : f32
    linalg.yield %m : f32
  } -> tensor<8x24xf32>
  return %r : tensor<8x24xf32>
}

// -----

// A K x N operand that is no transpose: left alone, and said so.
// CHECK-LABEL: func @kn_operand
// CHECK: linalg.matmul
// CHECK-NOT: sgpu.matmul
func.func @kn_operand(%x: tensor<16x64xf16>, %b: tensor<64x32xf16>) -> tensor<16x32xf16> {
  %z = arith.constant 0.0 : f16
  %e = tensor.empty() : tensor<16x32xf16>
  %acc = linalg.fill ins(%z : f16) outs(%e : tensor<16x32xf16>) -> tensor<16x32xf16>
  // expected-remark @+1 {{not rewritten into a library GEMM: the weight is a K x N operand; sgpu.matmul takes the N x K weight (torch Linear layout) through transposing indexing_maps or linalg.transpose}}
  %y = linalg.matmul ins(%x, %b : tensor<16x64xf16>, tensor<64x32xf16>)
      outs(%acc : tensor<16x32xf16>) -> tensor<16x32xf16>
  return %y : tensor<16x32xf16>
}

// -----

// Not for the library GEMM: f32 operands, an accumulating matmul, dynamic
// tokens.
// CHECK-LABEL: func @left_alone
// CHECK-COUNT-3: linalg.matmul
// CHECK-NOT: sgpu.matmul
func.func @left_alone(%x32: tensor<16x64xf32>, %w32: tensor<32x64xf32>,
                      %x: tensor<16x64xf16>, %w: tensor<32x64xf16>,
                      %c: tensor<16x32xf16>, %xd: tensor<?x64xf16>,
                      %n: index)
    -> (tensor<16x32xf32>, tensor<16x32xf16>, tensor<?x32xf16>) {
  %z32 = arith.constant 0.0 : f32
  %z = arith.constant 0.0 : f16
  %e32 = tensor.empty() : tensor<16x32xf32>
  %acc32 = linalg.fill ins(%z32 : f32) outs(%e32 : tensor<16x32xf32>) -> tensor<16x32xf32>
  %y0 = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>,
                                       affine_map<(m, n, k) -> (n, k)>,
                                       affine_map<(m, n, k) -> (m, n)>]
      ins(%x32, %w32 : tensor<16x64xf32>, tensor<32x64xf32>)
      outs(%acc32 : tensor<16x32xf32>) -> tensor<16x32xf32>
  %y1 = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>,
                                       affine_map<(m, n, k) -> (n, k)>,
                                       affine_map<(m, n, k) -> (m, n)>]
      ins(%x, %w : tensor<16x64xf16>, tensor<32x64xf16>)
      outs(%c : tensor<16x32xf16>) -> tensor<16x32xf16>
  %ed = tensor.empty(%n) : tensor<?x32xf16>
  %accd = linalg.fill ins(%z : f16) outs(%ed : tensor<?x32xf16>) -> tensor<?x32xf16>
  %y2 = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>,
                                       affine_map<(m, n, k) -> (n, k)>,
                                       affine_map<(m, n, k) -> (m, n)>]
      ins(%xd, %w : tensor<?x64xf16>, tensor<32x64xf16>)
      outs(%accd : tensor<?x32xf16>) -> tensor<?x32xf16>
  return %y0, %y1, %y2 : tensor<16x32xf32>, tensor<16x32xf16>, tensor<?x32xf16>
}

// -----

// Chained linears sharing one zero fill: the second reads the first's
// result, which its rewrite replaces; both become calls, and the fill goes
// once neither reads it.
// CHECK-LABEL: func @chained
// CHECK-SAME: (%[[X:.*]]: tensor<16x64xf16>, %[[W1:.*]]: tensor<64x64xf16>, %[[W2:.*]]: tensor<64x64xf16>)
// CHECK: %[[H:.*]] = sgpu.matmul %[[X]], %[[W1]]
// CHECK-NEXT: %[[Y:.*]] = sgpu.matmul %[[H]], %[[W2]]
// CHECK-NEXT: return %[[Y]]
func.func @chained(%x: tensor<16x64xf16>, %w1: tensor<64x64xf16>, %w2: tensor<64x64xf16>) -> tensor<16x64xf16> {
  %z = arith.constant 0.0 : f16
  %e = tensor.empty() : tensor<16x64xf16>
  %acc = linalg.fill ins(%z : f16) outs(%e : tensor<16x64xf16>) -> tensor<16x64xf16>
  %h = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>,
                                      affine_map<(m, n, k) -> (n, k)>,
                                      affine_map<(m, n, k) -> (m, n)>]
      ins(%x, %w1 : tensor<16x64xf16>, tensor<64x64xf16>)
      outs(%acc : tensor<16x64xf16>) -> tensor<16x64xf16>
  %y = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>,
                                      affine_map<(m, n, k) -> (n, k)>,
                                      affine_map<(m, n, k) -> (m, n)>]
      ins(%h, %w2 : tensor<16x64xf16>, tensor<64x64xf16>)
      outs(%acc : tensor<16x64xf16>) -> tensor<16x64xf16>
  return %y : tensor<16x64xf16>
}
