// sgpu-fold-unit-transposes: a transpose that keeps the dimensions larger
// than 1 in order moves no element and becomes a reshape through one
// dimension (views after bufferization); one that reorders them stays.
// RUN: sparse-opt %s -split-input-file -sgpu-fold-unit-transposes | FileCheck %s

// The head split of attention at one token per sequence: [B, 1, H, D] ->
// [B, H, 1, D].
// CHECK-LABEL: func.func @heads_of_one_token
// CHECK-SAME: (%[[X:.*]]: tensor<8x1x32x128xbf16>)
// CHECK-NOT: linalg.transpose
// CHECK: %[[FLAT:.*]] = tensor.collapse_shape %[[X]] {{\[\[}}0, 1, 2, 3]] : tensor<8x1x32x128xbf16> into tensor<32768xbf16>
// CHECK: %[[Y:.*]] = tensor.expand_shape %[[FLAT]] {{\[\[}}0, 1, 2, 3]] output_shape [8, 32, 1, 128] : tensor<32768xbf16> into tensor<8x32x1x128xbf16>
// CHECK: return %[[Y]]
func.func @heads_of_one_token(%x: tensor<8x1x32x128xbf16>) -> tensor<8x32x1x128xbf16> {
  %e = tensor.empty() : tensor<8x32x1x128xbf16>
  %t = linalg.transpose ins(%x : tensor<8x1x32x128xbf16>) outs(%e : tensor<8x32x1x128xbf16>) permutation = [0, 2, 1, 3]
  return %t : tensor<8x32x1x128xbf16>
}

// -----

// Several unit dimensions moving at once, the others in order.
// CHECK-LABEL: func.func @several_units
// CHECK: tensor.collapse_shape %{{.*}} : tensor<1x4x1x6xf32> into tensor<24xf32>
// CHECK: tensor.expand_shape %{{.*}} output_shape [4, 1, 6, 1] : tensor<24xf32> into tensor<4x1x6x1xf32>
// CHECK-NOT: linalg.transpose
func.func @several_units(%x: tensor<1x4x1x6xf32>) -> tensor<4x1x6x1xf32> {
  %e = tensor.empty() : tensor<4x1x6x1xf32>
  %t = linalg.transpose ins(%x : tensor<1x4x1x6xf32>) outs(%e : tensor<4x1x6x1xf32>) permutation = [1, 0, 3, 2]
  return %t : tensor<4x1x6x1xf32>
}

// -----

// The head split of a prefill ([B, S, H, D] -> [B, H, S, D], S > 1)
// reorders elements: it stays a transpose (a kernel).
// CHECK-LABEL: func.func @heads_of_many_tokens
// CHECK-NOT: tensor.collapse_shape
// CHECK: linalg.transpose ins(%{{.*}} : tensor<1x16x32x128xbf16>) outs(%{{.*}} : tensor<1x32x16x128xbf16>) permutation = [0, 2, 1, 3]
func.func @heads_of_many_tokens(%x: tensor<1x16x32x128xbf16>) -> tensor<1x32x16x128xbf16> {
  %e = tensor.empty() : tensor<1x32x16x128xbf16>
  %t = linalg.transpose ins(%x : tensor<1x16x32x128xbf16>) outs(%e : tensor<1x32x16x128xbf16>) permutation = [0, 2, 1, 3]
  return %t : tensor<1x32x16x128xbf16>
}

// -----

// A transpose on buffers, or of a dynamic shape, is left alone.
// CHECK-LABEL: func.func @buffers_and_dynamic
// CHECK: linalg.transpose ins(%{{.*}} : memref<2x1x3xf32>)
// CHECK: linalg.transpose ins(%{{.*}} : tensor<?x1x3xf32>)
func.func @buffers_and_dynamic(%a: memref<2x1x3xf32>, %b: memref<2x3x1xf32>, %x: tensor<?x1x3xf32>, %y: tensor<?x3x1xf32>) -> tensor<?x3x1xf32> {
  linalg.transpose ins(%a : memref<2x1x3xf32>) outs(%b : memref<2x3x1xf32>) permutation = [0, 2, 1]
  %t = linalg.transpose ins(%x : tensor<?x1x3xf32>) outs(%y : tensor<?x3x1xf32>) permutation = [0, 2, 1]
  return %t : tensor<?x3x1xf32>
}

// -----

// Rank 1: the identity permutation, the input itself.
// CHECK-LABEL: func.func @rank_one
// CHECK-SAME: (%[[X:.*]]: tensor<5xf16>)
// CHECK-NEXT: return %[[X]]
func.func @rank_one(%x: tensor<5xf16>) -> tensor<5xf16> {
  %e = tensor.empty() : tensor<5xf16>
  %t = linalg.transpose ins(%x : tensor<5xf16>) outs(%e : tensor<5xf16>) permutation = [0]
  return %t : tensor<5xf16>
}
