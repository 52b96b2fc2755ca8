// The rewrites themselves (policy=sparse: slide-sparse-policy.mlir tests the
// cost model that may keep a matmul dense).
// RUN: sparse-opt %s -split-input-file -sgpu-slide-sparse="policy=sparse" | FileCheck %s
// RUN: sparse-opt %s -split-input-file -sgpu-slide-sparse="policy=sparse lift=separate" | FileCheck %s --check-prefix=SEP
// RUN: sparse-opt %s -split-input-file -sgpu-slide-sparse="chip=sm_80" | FileCheck %s --check-prefix=SEP
// RUN: not sparse-opt %s -split-input-file -sgpu-slide-sparse="lift=inside" 2>&1 | FileCheck %s --check-prefix=BADLIFT
// RUN: sparse-opt %s -split-input-file -sgpu-slide-sparse="policy=sparse lift=split" | FileCheck %s --check-prefix=SPLIT
// RUN: sparse-opt %s -split-input-file -sgpu-slide-sparse="policy=sparse lift=fused" | FileCheck %s --check-prefix=FUSED
// BADLIFT: unknown sgpu-slide-sparse lift 'inside'; expected auto, fused, split or separate

// The torch form: Y = X . W^T as a matmul with transposing indexing_maps.
// Every chunk keeps positions 0 and 2: nibble 0b1000, so every metadata word
// is 0x88888888; values are (1, 2) per chunk.
// CHECK-LABEL: func @transposed_maps
// CHECK-DAG: %[[V:.*]] = arith.constant dense<"0x003C0040003C0040{{.*}}"> : tensor<16x16xf16>
// CHECK-DAG: %[[M:.*]] = arith.constant dense<-2004318072> : tensor<16xi32>
// CHECK: %[[C:.*]] = sgpu.assemble %[[V]], %[[M]] : tensor<16x16xf16>, tensor<16xi32> -> !sgpu.compressed<16x32xf16, #sgpu.nm<2:4>>
// CHECK: %[[Y:.*]] = sgpu.spmm %arg0, %[[C]] : tensor<8x32xf16>, !sgpu.compressed<16x32xf16, #sgpu.nm<2:4>> -> tensor<8x16xf16>
// CHECK-NOT: linalg.matmul
// CHECK: return %[[Y]]
func.func @transposed_maps(%x: tensor<8x32xf16>) -> tensor<8x16xf16> {
  %w = arith.constant dense<[[1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0], [1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0], [1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0], [1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0], [1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0], [1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0], [1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0], [1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0], [1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0], [1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0], [1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0], [1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0], [1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0], [1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0], [1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0], [1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0]]> : tensor<16x32xf16, #sgpu.nm<2:4>>
  %z = arith.constant 0.0 : f16
  %e = tensor.empty() : tensor<8x16xf16>
  %acc = linalg.fill ins(%z : f16) outs(%e : tensor<8x16xf16>) -> tensor<8x16xf16>
  %y = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
      ins(%x, %w : tensor<8x32xf16>, tensor<16x32xf16, #sgpu.nm<2:4>>) outs(%acc : tensor<8x16xf16>) -> tensor<8x16xf16>
  return %y : tensor<8x16xf16>
}

// -----

// The ONNX/FX form: a linalg.transpose of the N x K weight feeding a plain
// matmul; bf16 operands with an f32 result.
// CHECK-LABEL: func @explicit_transpose
// CHECK-NOT: linalg.transpose
// CHECK: sgpu.assemble {{.*}} -> !sgpu.compressed<16x32xbf16, #sgpu.nm<2:4>>
// CHECK: sgpu.spmm %arg0, %{{.*}} : tensor<8x32xbf16>, !sgpu.compressed<16x32xbf16, #sgpu.nm<2:4>> -> tensor<8x16xf32>
func.func @explicit_transpose(%x: tensor<8x32xbf16>) -> tensor<8x16xf32> {
  %w = arith.constant dense<[[1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0], [1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0], [1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0], [1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0], [1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0], [1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0], [1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0], [1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0], [1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0], [1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0], [1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0], [1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0], [1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0], [1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0], [1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0], [1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0]]> : tensor<16x32xbf16, #sgpu.nm<2:4>>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x16xf32>
  %acc = linalg.fill ins(%z : f32) outs(%e : tensor<8x16xf32>) -> tensor<8x16xf32>
  %te = tensor.empty() : tensor<32x16xbf16>
  %wt = linalg.transpose ins(%w : tensor<16x32xbf16, #sgpu.nm<2:4>>) outs(%te : tensor<32x16xbf16>) permutation = [1, 0]
  %y = linalg.matmul ins(%x, %wt : tensor<8x32xbf16>, tensor<32x16xbf16>) outs(%acc : tensor<8x16xf32>) -> tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}

// -----

// A weight that is a function argument is compressed by sgpu.compress.
// CHECK-LABEL: func @argument_weight
// CHECK: %[[C:.*]] = sgpu.compress %arg1 : tensor<20x40xf16, #sgpu.nm<2:4>> -> !sgpu.compressed<20x40xf16, #sgpu.nm<2:4>>
// CHECK: sgpu.spmm %arg0, %[[C]] : tensor<3x40xf16>, !sgpu.compressed<20x40xf16, #sgpu.nm<2:4>> -> tensor<3x20xf16>
func.func @argument_weight(%x: tensor<3x40xf16>, %w: tensor<20x40xf16, #sgpu.nm<2:4>>) -> tensor<3x20xf16> {
  %z = arith.constant 0.0 : f16
  %e = tensor.empty() : tensor<3x20xf16>
  %acc = linalg.fill ins(%z : f16) outs(%e : tensor<3x20xf16>) -> tensor<3x20xf16>
  %y = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
      ins(%x, %w : tensor<3x40xf16>, tensor<20x40xf16, #sgpu.nm<2:4>>) outs(%acc : tensor<3x20xf16>) -> tensor<3x20xf16>
  return %y : tensor<3x20xf16>
}

// -----

// The upstream sparse_tensor 2:4 encoding is a synonym of #sgpu.nm<2:4>.
#NV24 = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j floordiv 4 : dense, j mod 4 : structured[2, 4]) }>
// CHECK-LABEL: func @sparse_tensor_synonym
// CHECK: sgpu.compress %arg1 : tensor<16x32xf16, #{{.*}}> -> !sgpu.compressed<16x32xf16, #sgpu.nm<2:4>>
// CHECK: sgpu.spmm
func.func @sparse_tensor_synonym(%x: tensor<4x32xf16>, %w: tensor<16x32xf16, #NV24>) -> tensor<4x16xf16> {
  %z = arith.constant 0.0 : f16
  %e = tensor.empty() : tensor<4x16xf16>
  %acc = linalg.fill ins(%z : f16) outs(%e : tensor<4x16xf16>) -> tensor<4x16xf16>
  %y = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
      ins(%x, %w : tensor<4x32xf16>, tensor<16x32xf16, #NV24>) outs(%acc : tensor<4x16xf16>) -> tensor<4x16xf16>
  return %y : tensor<4x16xf16>
}

// -----

// Dense matmuls are left alone.
// CHECK-LABEL: func @dense_untouched
// CHECK: linalg.matmul
// CHECK-NOT: sgpu.
func.func @dense_untouched(%x: tensor<4x32xf16>, %w: tensor<32x16xf16>) -> tensor<4x16xf16> {
  %z = arith.constant 0.0 : f16
  %e = tensor.empty() : tensor<4x16xf16>
  %acc = linalg.fill ins(%z : f16) outs(%e : tensor<4x16xf16>) -> tensor<4x16xf16>
  %y = linalg.matmul ins(%x, %w : tensor<4x32xf16>, tensor<32x16xf16>) outs(%acc : tensor<4x16xf16>) -> tensor<4x16xf16>
  return %y : tensor<4x16xf16>
}

// -----

// 6:8 (N = 4): K = 16 is two groups of 8, each cut into 3 windows of 4 at
// stride 2: K' = 24 in the plain order (lift=separate, or a chip without
// the fused lift). The activation is lifted, the weight decomposed and
// compressed at compile time (values 16 x 16 over K' padded to 32).
// On sm_90a (the default) the windows take the tiled order of the kernel
// that lifts in its operand loads, at 8 tokens (at most 16): the groups are
// padded to a whole tile of 8, K' = 96 (values 16 x 48, 48 metadata words).
// lift=split takes the order of the split lift at any M (16 groups, K' =
// 192); lift=fused the order of 8.
// SEP-LABEL: func @six_eight
// SEP-DAG: %[[XL:.*]] = sgpu.lift %arg0 {pattern = #sgpu.nm<6:8>} : tensor<8x16xf16> -> tensor<8x24xf16>
// SEP-DAG: %[[C:.*]] = sgpu.assemble %{{.*}}, %{{.*}} : tensor<16x16xf16>, tensor<16xi32> -> !sgpu.compressed<16x24xf16, #sgpu.nm<2:4>>
// SEP: sgpu.spmm %[[XL]], %[[C]] : tensor<8x24xf16>, !sgpu.compressed<16x24xf16, #sgpu.nm<2:4>> -> tensor<8x16xf16>
// CHECK-LABEL: func @six_eight
// CHECK-DAG: %[[XL:.*]] = sgpu.lift %arg0 {pattern = #sgpu.nm<6:8>, tile_groups = 8 : i64} : tensor<8x16xf16> -> tensor<8x96xf16>
// CHECK-DAG: %[[C:.*]] = sgpu.assemble %{{.*}}, %{{.*}} : tensor<16x48xf16>, tensor<48xi32> -> !sgpu.compressed<16x96xf16, #sgpu.nm<2:4>>
// CHECK: sgpu.spmm %[[XL]], %[[C]] : tensor<8x96xf16>, !sgpu.compressed<16x96xf16, #sgpu.nm<2:4>> -> tensor<8x16xf16>
// SPLIT-LABEL: func @six_eight
// SPLIT-DAG: sgpu.lift %arg0 {pattern = #sgpu.nm<6:8>, tile_groups = 16 : i64} : tensor<8x16xf16> -> tensor<8x192xf16>
// SPLIT-DAG: sgpu.assemble %{{.*}}, %{{.*}} : tensor<16x96xf16>, tensor<96xi32> -> !sgpu.compressed<16x192xf16, #sgpu.nm<2:4>>
// FUSED-LABEL: func @six_eight
// FUSED: sgpu.lift %arg0 {pattern = #sgpu.nm<6:8>, tile_groups = 8 : i64} : tensor<8x16xf16> -> tensor<8x96xf16>
func.func @six_eight(%x: tensor<8x16xf16>) -> tensor<8x16xf16> {
  %w = arith.constant dense<[[1.0, 2.0, 0.0, 3.0, 4.0, 0.0, 5.0, 6.0, 1.0, 2.0, 0.0, 3.0, 4.0, 0.0, 5.0, 6.0], [1.0, 2.0, 0.0, 3.0, 4.0, 0.0, 5.0, 6.0, 1.0, 2.0, 0.0, 3.0, 4.0, 0.0, 5.0, 6.0], [1.0, 2.0, 0.0, 3.0, 4.0, 0.0, 5.0, 6.0, 1.0, 2.0, 0.0, 3.0, 4.0, 0.0, 5.0, 6.0], [1.0, 2.0, 0.0, 3.0, 4.0, 0.0, 5.0, 6.0, 1.0, 2.0, 0.0, 3.0, 4.0, 0.0, 5.0, 6.0], [1.0, 2.0, 0.0, 3.0, 4.0, 0.0, 5.0, 6.0, 1.0, 2.0, 0.0, 3.0, 4.0, 0.0, 5.0, 6.0], [1.0, 2.0, 0.0, 3.0, 4.0, 0.0, 5.0, 6.0, 1.0, 2.0, 0.0, 3.0, 4.0, 0.0, 5.0, 6.0], [1.0, 2.0, 0.0, 3.0, 4.0, 0.0, 5.0, 6.0, 1.0, 2.0, 0.0, 3.0, 4.0, 0.0, 5.0, 6.0], [1.0, 2.0, 0.0, 3.0, 4.0, 0.0, 5.0, 6.0, 1.0, 2.0, 0.0, 3.0, 4.0, 0.0, 5.0, 6.0], [1.0, 2.0, 0.0, 3.0, 4.0, 0.0, 5.0, 6.0, 1.0, 2.0, 0.0, 3.0, 4.0, 0.0, 5.0, 6.0], [1.0, 2.0, 0.0, 3.0, 4.0, 0.0, 5.0, 6.0, 1.0, 2.0, 0.0, 3.0, 4.0, 0.0, 5.0, 6.0], [1.0, 2.0, 0.0, 3.0, 4.0, 0.0, 5.0, 6.0, 1.0, 2.0, 0.0, 3.0, 4.0, 0.0, 5.0, 6.0], [1.0, 2.0, 0.0, 3.0, 4.0, 0.0, 5.0, 6.0, 1.0, 2.0, 0.0, 3.0, 4.0, 0.0, 5.0, 6.0], [1.0, 2.0, 0.0, 3.0, 4.0, 0.0, 5.0, 6.0, 1.0, 2.0, 0.0, 3.0, 4.0, 0.0, 5.0, 6.0], [1.0, 2.0, 0.0, 3.0, 4.0, 0.0, 5.0, 6.0, 1.0, 2.0, 0.0, 3.0, 4.0, 0.0, 5.0, 6.0], [1.0, 2.0, 0.0, 3.0, 4.0, 0.0, 5.0, 6.0, 1.0, 2.0, 0.0, 3.0, 4.0, 0.0, 5.0, 6.0], [1.0, 2.0, 0.0, 3.0, 4.0, 0.0, 5.0, 6.0, 1.0, 2.0, 0.0, 3.0, 4.0, 0.0, 5.0, 6.0]]> : tensor<16x16xf16, #sgpu.nm<6:8>>
  %z = arith.constant 0.0 : f16
  %e = tensor.empty() : tensor<8x16xf16>
  %acc = linalg.fill ins(%z : f16) outs(%e : tensor<8x16xf16>) -> tensor<8x16xf16>
  %y = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
      ins(%x, %w : tensor<8x16xf16>, tensor<16x16xf16, #sgpu.nm<6:8>>) outs(%acc : tensor<8x16xf16>) -> tensor<8x16xf16>
  return %y : tensor<8x16xf16>
}

// -----

// 6:8 above 16 tokens on sm_90a: the order of the split lift (tile_groups
// 16: K = 72 is 9 groups, padded to 16, K' = 192), also for a weight passed
// as an argument (decomposed in that order on the GPU); lift=fused keeps the
// order of 8 (9 groups padded to 16 as well: K' = 192), lift=separate the
// plain one (K' = 108).
// CHECK-LABEL: func @six_eight_prefill
// CHECK-DAG: sgpu.nm_decompose %arg1 {tile_groups = 16 : i64} : tensor<64x72xf16, #sgpu.nm<6:8>> -> !sgpu.compressed<64x192xf16, #sgpu.nm<2:4>>
// CHECK-DAG: sgpu.lift %arg0 {pattern = #sgpu.nm<6:8>, tile_groups = 16 : i64} : tensor<32x72xf16> -> tensor<32x192xf16>
// SPLIT-LABEL: func @six_eight_prefill
// SPLIT: sgpu.lift %arg0 {pattern = #sgpu.nm<6:8>, tile_groups = 16 : i64}
// FUSED-LABEL: func @six_eight_prefill
// FUSED: sgpu.lift %arg0 {pattern = #sgpu.nm<6:8>, tile_groups = 8 : i64} : tensor<32x72xf16> -> tensor<32x192xf16>
// SEP-LABEL: func @six_eight_prefill
// SEP: sgpu.lift %arg0 {pattern = #sgpu.nm<6:8>} : tensor<32x72xf16> -> tensor<32x108xf16>
func.func @six_eight_prefill(%x: tensor<32x72xf16>, %w: tensor<64x72xf16, #sgpu.nm<6:8>>) -> tensor<32x64xf16> {
  %z = arith.constant 0.0 : f16
  %e = tensor.empty() : tensor<32x64xf16>
  %acc = linalg.fill ins(%z : f16) outs(%e : tensor<32x64xf16>) -> tensor<32x64xf16>
  %y = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
      ins(%x, %w : tensor<32x72xf16>, tensor<64x72xf16, #sgpu.nm<6:8>>) outs(%acc : tensor<32x64xf16>) -> tensor<32x64xf16>
  return %y : tensor<32x64xf16>
}

// -----

// A (2N-2):2N weight passed as an argument: decomposed by sgpu.nm_decompose
// (4:6, N = 3: K = 30 -> 5 groups of 6 -> K' = 40).
// CHECK-LABEL: func @argument_four_six
// CHECK-DAG: %[[D:.*]] = sgpu.nm_decompose %arg1 : tensor<20x30xbf16, #sgpu.nm<4:6>> -> !sgpu.compressed<20x40xbf16, #sgpu.nm<2:4>>
// CHECK-DAG: %[[XL:.*]] = sgpu.lift %arg0 {pattern = #sgpu.nm<4:6>} : tensor<3x30xbf16> -> tensor<3x40xbf16>
// CHECK: sgpu.spmm %[[XL]], %[[D]]
func.func @argument_four_six(%x: tensor<3x30xbf16>, %w: tensor<20x30xbf16, #sgpu.nm<4:6>>) -> tensor<3x20xbf16> {
  %z = arith.constant 0.0 : bf16
  %e = tensor.empty() : tensor<3x20xbf16>
  %acc = linalg.fill ins(%z : bf16) outs(%e : tensor<3x20xbf16>) -> tensor<3x20xbf16>
  %y = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
      ins(%x, %w : tensor<3x30xbf16>, tensor<20x30xbf16, #sgpu.nm<4:6>>) outs(%acc : tensor<3x20xbf16>) -> tensor<3x20xbf16>
  return %y : tensor<3x20xbf16>
}

// -----

// Two sparse layers in a chain: the second reads the first's rewritten
// result (argument weights: compressed by the GPU lowering, at bind time).
// CHECK-LABEL: func @chain
// CHECK: %[[C1:.*]] = sgpu.compress %arg1
// CHECK: %[[H:.*]] = sgpu.spmm %arg0, %[[C1]]
// CHECK: %[[C2:.*]] = sgpu.nm_decompose %arg2
// CHECK: %[[L:.*]] = sgpu.lift %[[H]]
// CHECK: sgpu.spmm %[[L]], %[[C2]]
func.func @chain(%x: tensor<16x64xbf16>, %w1: tensor<64x64xbf16, #sgpu.nm<2:4>>,
                 %w2: tensor<32x64xbf16, #sgpu.nm<8:10>>) -> tensor<16x32xbf16> {
  %z = arith.constant 0.0 : bf16
  %e1 = tensor.empty() : tensor<16x64xbf16>
  %a1 = linalg.fill ins(%z : bf16) outs(%e1 : tensor<16x64xbf16>) -> tensor<16x64xbf16>
  %h = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>,
                                      affine_map<(m, n, k) -> (n, k)>,
                                      affine_map<(m, n, k) -> (m, n)>]
      ins(%x, %w1 : tensor<16x64xbf16>, tensor<64x64xbf16, #sgpu.nm<2:4>>)
      outs(%a1 : tensor<16x64xbf16>) -> tensor<16x64xbf16>
  %e2 = tensor.empty() : tensor<16x32xbf16>
  %a2 = linalg.fill ins(%z : bf16) outs(%e2 : tensor<16x32xbf16>) -> tensor<16x32xbf16>
  %y = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>,
                                      affine_map<(m, n, k) -> (n, k)>,
                                      affine_map<(m, n, k) -> (m, n)>]
      ins(%h, %w2 : tensor<16x64xbf16>, tensor<32x64xbf16, #sgpu.nm<8:10>>)
      outs(%a2 : tensor<16x32xbf16>) -> tensor<16x32xbf16>
  return %y : tensor<16x32xbf16>
}
