// RUN: sparse-opt %s -split-input-file -sgpu-fuse-epilogue | FileCheck %s

#id = affine_map<(i, j) -> (i, j)>
// CHECK-LABEL: func @maximumf
// CHECK: %[[Y:.*]] = sgpu.spmm %arg0, %arg1 {activation = #sgpu.activation<relu>}
// CHECK-NOT: linalg.generic
// CHECK: return %[[Y]]
func.func @maximumf(%x: tensor<4x32xf16>, %w: !sgpu.compressed<16x32xf16, #sgpu.nm<2:4>>) -> tensor<4x16xf16> {
  %y = sgpu.spmm %x, %w : tensor<4x32xf16>, !sgpu.compressed<16x32xf16, #sgpu.nm<2:4>> -> tensor<4x16xf16>
  %e = tensor.empty() : tensor<4x16xf16>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%y : tensor<4x16xf16>) outs(%e : tensor<4x16xf16>) {
  ^bb0(%a: f16, %o: f16):
    %c0 = arith.constant 0.0 : f16
    %m = arith.maximumf %a, %c0 : f16
    linalg.yield %m : f16
  } -> tensor<4x16xf16>
  return %r : tensor<4x16xf16>
}

// -----

#id = affine_map<(i, j) -> (i, j)>
// The compare-and-select form (what torch.relu often decomposes into).
// CHECK-LABEL: func @select
// CHECK: sgpu.spmm %arg0, %arg1 {activation = #sgpu.activation<relu>}
// CHECK-NOT: linalg.generic
func.func @select(%x: tensor<4x32xbf16>, %w: !sgpu.compressed<16x32xbf16, #sgpu.nm<2:4>>) -> tensor<4x16xbf16> {
  %c0 = arith.constant 0.0 : bf16
  %y = sgpu.spmm %x, %w : tensor<4x32xbf16>, !sgpu.compressed<16x32xbf16, #sgpu.nm<2:4>> -> tensor<4x16xbf16>
  %e = tensor.empty() : tensor<4x16xbf16>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%y : tensor<4x16xbf16>) outs(%e : tensor<4x16xbf16>) {
  ^bb0(%a: bf16, %o: bf16):
    %p = arith.cmpf ugt, %a, %c0 : bf16
    %s = arith.select %p, %a, %c0 : bf16
    linalg.yield %s : bf16
  } -> tensor<4x16xbf16>
  return %r : tensor<4x16xbf16>
}

// -----

#id = affine_map<(i, j) -> (i, j)>
// Not a ReLU (max against 1): left alone.
// CHECK-LABEL: func @not_relu
// CHECK: sgpu.spmm %arg0, %arg1 :
// CHECK: linalg.generic
func.func @not_relu(%x: tensor<4x32xf16>, %w: !sgpu.compressed<16x32xf16, #sgpu.nm<2:4>>) -> tensor<4x16xf16> {
  %y = sgpu.spmm %x, %w : tensor<4x32xf16>, !sgpu.compressed<16x32xf16, #sgpu.nm<2:4>> -> tensor<4x16xf16>
  %e = tensor.empty() : tensor<4x16xf16>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%y : tensor<4x16xf16>) outs(%e : tensor<4x16xf16>) {
  ^bb0(%a: f16, %o: f16):
    %c1 = arith.constant 1.0 : f16
    %m = arith.maximumf %a, %c1 : f16
    linalg.yield %m : f16
  } -> tensor<4x16xf16>
  return %r : tensor<4x16xf16>
}

// -----

#id = affine_map<(i, j) -> (i, j)>
// The spmm result has a second use: fusing would change that use.
// CHECK-LABEL: func @two_uses
// CHECK: %[[Y:.*]] = sgpu.spmm %arg0, %arg1 :
// CHECK: linalg.generic
// CHECK: return %[[Y]]
func.func @two_uses(%x: tensor<4x32xf16>, %w: !sgpu.compressed<16x32xf16, #sgpu.nm<2:4>>) -> (tensor<4x16xf16>, tensor<4x16xf16>) {
  %y = sgpu.spmm %x, %w : tensor<4x32xf16>, !sgpu.compressed<16x32xf16, #sgpu.nm<2:4>> -> tensor<4x16xf16>
  %e = tensor.empty() : tensor<4x16xf16>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%y : tensor<4x16xf16>) outs(%e : tensor<4x16xf16>) {
  ^bb0(%a: f16, %o: f16):
    %c0 = arith.constant 0.0 : f16
    %m = arith.maximumf %a, %c0 : f16
    linalg.yield %m : f16
  } -> tensor<4x16xf16>
  return %y, %r : tensor<4x16xf16>, tensor<4x16xf16>
}

// -----

#id = affine_map<(i, j) -> (i, j)>
// A ReLU that also reads its init operand is not element-wise on the spmm.
// CHECK-LABEL: func @reads_init
// CHECK: sgpu.spmm %arg0, %arg1 :
// CHECK: linalg.generic
func.func @reads_init(%x: tensor<4x32xf16>, %w: !sgpu.compressed<16x32xf16, #sgpu.nm<2:4>>, %i: tensor<4x16xf16>) -> tensor<4x16xf16> {
  %y = sgpu.spmm %x, %w : tensor<4x32xf16>, !sgpu.compressed<16x32xf16, #sgpu.nm<2:4>> -> tensor<4x16xf16>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%y : tensor<4x16xf16>) outs(%i : tensor<4x16xf16>) {
  ^bb0(%a: f16, %o: f16):
    %m = arith.maximumf %a, %o : f16
    linalg.yield %m : f16
  } -> tensor<4x16xf16>
  return %r : tensor<4x16xf16>
}

// -----

// Bias then ReLU, as an imported Linear + ReLU produces them.
#id = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (j)>
// CHECK-LABEL: func @bias_relu
// CHECK: %[[Y:.*]] = sgpu.spmm %arg0, %arg1 bias(%arg2 : tensor<16xf16>) {activation = #sgpu.activation<relu>}
// CHECK-NOT: linalg.generic
// CHECK: return %[[Y]]
func.func @bias_relu(%x: tensor<4x32xf16>, %w: !sgpu.compressed<16x32xf16, #sgpu.nm<2:4>>, %b: tensor<16xf16>) -> tensor<4x16xf16> {
  %y = sgpu.spmm %x, %w : tensor<4x32xf16>, !sgpu.compressed<16x32xf16, #sgpu.nm<2:4>> -> tensor<4x16xf16>
  %e = tensor.empty() : tensor<4x16xf16>
  %a = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%y, %b : tensor<4x16xf16>, tensor<16xf16>) outs(%e : tensor<4x16xf16>) {
  ^bb0(%p: f16, %q: f16, %o: f16):
    %s = arith.addf %p, %q : f16
    linalg.yield %s : f16
  } -> tensor<4x16xf16>
  %e2 = tensor.empty() : tensor<4x16xf16>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<4x16xf16>) outs(%e2 : tensor<4x16xf16>) {
  ^bb0(%p: f16, %o: f16):
    %c0 = arith.constant 0.0 : f16
    %m = arith.maximumf %p, %c0 : f16
    linalg.yield %m : f16
  } -> tensor<4x16xf16>
  return %r : tensor<4x16xf16>
}

// -----

// A column-broadcast add (one value per token) is not a bias: left alone.
#id = affine_map<(i, j) -> (i, j)>
#col = affine_map<(i, j) -> (i)>
// CHECK-LABEL: func @not_a_bias
// CHECK: sgpu.spmm %arg0, %arg1 :
// CHECK: linalg.generic
func.func @not_a_bias(%x: tensor<4x32xf16>, %w: !sgpu.compressed<16x32xf16, #sgpu.nm<2:4>>, %b: tensor<4xf16>) -> tensor<4x16xf16> {
  %y = sgpu.spmm %x, %w : tensor<4x32xf16>, !sgpu.compressed<16x32xf16, #sgpu.nm<2:4>> -> tensor<4x16xf16>
  %e = tensor.empty() : tensor<4x16xf16>
  %a = linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]}
      ins(%y, %b : tensor<4x16xf16>, tensor<4xf16>) outs(%e : tensor<4x16xf16>) {
  ^bb0(%p: f16, %q: f16, %o: f16):
    %s = arith.addf %p, %q : f16
    linalg.yield %s : f16
  } -> tensor<4x16xf16>
  return %a : tensor<4x16xf16>
}

// -----

// A ReLU on the re-expanded [B, S, N] result of a linear on a 3-D input.
#id3 = affine_map<(i, j, k) -> (i, j, k)>
// CHECK-LABEL: func @relu_through_expand
// CHECK: %[[Y:.*]] = sgpu.spmm %{{.*}} {activation = #sgpu.activation<relu>}
// CHECK: %[[E:.*]] = tensor.expand_shape %[[Y]]
// CHECK-NOT: linalg.generic
// CHECK: return %[[E]]
func.func @relu_through_expand(%x: tensor<8x32xf16>, %w: !sgpu.compressed<16x32xf16, #sgpu.nm<2:4>>) -> tensor<2x4x16xf16> {
  %y = sgpu.spmm %x, %w : tensor<8x32xf16>, !sgpu.compressed<16x32xf16, #sgpu.nm<2:4>> -> tensor<8x16xf16>
  %y3 = tensor.expand_shape %y [[0, 1], [2]] output_shape [2, 4, 16] : tensor<8x16xf16> into tensor<2x4x16xf16>
  %e = tensor.empty() : tensor<2x4x16xf16>
  %r = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%y3 : tensor<2x4x16xf16>) outs(%e : tensor<2x4x16xf16>) {
  ^bb0(%p: f16, %o: f16):
    %c0 = arith.constant 0.0 : f16
    %m = arith.maximumf %p, %c0 : f16
    linalg.yield %m : f16
  } -> tensor<2x4x16xf16>
  return %r : tensor<2x4x16xf16>
}
