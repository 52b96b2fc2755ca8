// RUN: sparse-opt %s -split-input-file -sgpu-fuse-sibling-spmm=always=true | FileCheck %s
// RUN: sparse-opt %s -split-input-file -sgpu-fuse-sibling-spmm | FileCheck %s --check-prefix=RULE
// RUN: sparse-opt %s -split-input-file -sgpu-fuse-sibling-spmm=chip=sm_80 | FileCheck %s --check-prefix=SM80
// RUN: not sparse-opt %s -split-input-file -sgpu-fuse-sibling-spmm=chip=bogus 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not sparse-opt %s -split-input-file -sgpu-fuse-sibling-spmm="chip=sm_80 device=h200" 2>&1 | FileCheck %s --check-prefix=FOREIGN

// By default only groups whose fused GEMM splits K at decode sizes (on a
// 132-multiprocessor part: fewer than 66 blocks of 128 rows, two splits of
// 8 k-tiles, SplitKRule.h)
// fuse: none of the small cases below, the decode-sized one at the end.
// RULE-NOT: tensor.concat
// RULE-LABEL: func.func @decode_sized
// RULE: tensor.concat
// sm_80's kernel does not split K: nothing fuses there.
// SM80-NOT: tensor.concat
// BAD: error: invalid sgpu-fuse-sibling-spmm chip: chip 'bogus' is not of the form sm_<NN>[a]
// FOREIGN: error: invalid sgpu-fuse-sibling-spmm device:

// q, k and v of one activation, 2:4 weights given as arguments: one
// compression of the concatenated rows, one spmm, a slice per result in
// program order.
// CHECK-LABEL: func.func @qkv
// CHECK: %[[W:.*]] = tensor.concat dim(0) %arg1, %arg2, %arg3 : (tensor<64x32xbf16, #sgpu.nm<2:4>>, tensor<16x32xbf16, #sgpu.nm<2:4>>, tensor<16x32xbf16, #sgpu.nm<2:4>>) -> tensor<96x32xbf16, #sgpu.nm<2:4>>
// CHECK: %[[C:.*]] = sgpu.compress %[[W]] : tensor<96x32xbf16, #sgpu.nm<2:4>> -> !sgpu.compressed<96x32xbf16, #sgpu.nm<2:4>>
// CHECK: %[[Y:.*]] = sgpu.spmm %arg0, %[[C]] : tensor<4x32xbf16>, !sgpu.compressed<96x32xbf16, #sgpu.nm<2:4>> -> tensor<4x96xbf16>
// CHECK: %[[Q:.*]] = tensor.extract_slice %[[Y]][0, 0] [4, 64] [1, 1]
// CHECK: %[[K:.*]] = tensor.extract_slice %[[Y]][0, 64] [4, 16] [1, 1]
// CHECK: %[[V:.*]] = tensor.extract_slice %[[Y]][0, 80] [4, 16] [1, 1]
// CHECK-NOT: sgpu.spmm
// CHECK: return %[[Q]], %[[K]], %[[V]]
func.func @qkv(%x: tensor<4x32xbf16>, %wq: tensor<64x32xbf16, #sgpu.nm<2:4>>,
               %wk: tensor<16x32xbf16, #sgpu.nm<2:4>>, %wv: tensor<16x32xbf16, #sgpu.nm<2:4>>)
    -> (tensor<4x64xbf16>, tensor<4x16xbf16>, tensor<4x16xbf16>) {
  %cq = sgpu.compress %wq : tensor<64x32xbf16, #sgpu.nm<2:4>> -> !sgpu.compressed<64x32xbf16, #sgpu.nm<2:4>>
  %q = sgpu.spmm %x, %cq : tensor<4x32xbf16>, !sgpu.compressed<64x32xbf16, #sgpu.nm<2:4>> -> tensor<4x64xbf16>
  %ck = sgpu.compress %wk : tensor<16x32xbf16, #sgpu.nm<2:4>> -> !sgpu.compressed<16x32xbf16, #sgpu.nm<2:4>>
  %k = sgpu.spmm %x, %ck : tensor<4x32xbf16>, !sgpu.compressed<16x32xbf16, #sgpu.nm<2:4>> -> tensor<4x16xbf16>
  %cv = sgpu.compress %wv : tensor<16x32xbf16, #sgpu.nm<2:4>> -> !sgpu.compressed<16x32xbf16, #sgpu.nm<2:4>>
  %v = sgpu.spmm %x, %cv : tensor<4x32xbf16>, !sgpu.compressed<16x32xbf16, #sgpu.nm<2:4>> -> tensor<4x16xbf16>
  return %q, %k, %v : tensor<4x64xbf16>, tensor<4x16xbf16>, tensor<4x16xbf16>
}

// -----

// 6:8: the lifts of one activation (same pattern and window order) count
// as one; the fused spmm reads the first, the others go.
// CHECK-LABEL: func.func @gate_up_68
// CHECK: %[[L:.*]] = sgpu.lift %arg0
// CHECK-NOT: sgpu.lift
// CHECK: %[[W:.*]] = tensor.concat dim(0) %arg1, %arg2
// CHECK: %[[C:.*]] = sgpu.nm_decompose %[[W]] {tile_groups = 8 : i64} : tensor<64x64xf16, #sgpu.nm<6:8>> -> !sgpu.compressed<64x96xf16, #sgpu.nm<2:4>>
// CHECK: sgpu.spmm %[[L]], %[[C]] : tensor<2x96xf16>, !sgpu.compressed<64x96xf16, #sgpu.nm<2:4>> -> tensor<2x64xf16>
// CHECK-COUNT-2: tensor.extract_slice
// CHECK-NOT: sgpu.spmm
func.func @gate_up_68(%x: tensor<2x64xf16>, %wg: tensor<32x64xf16, #sgpu.nm<6:8>>,
                      %wu: tensor<32x64xf16, #sgpu.nm<6:8>>) -> (tensor<2x32xf16>, tensor<2x32xf16>) {
  %l1 = sgpu.lift %x {pattern = #sgpu.nm<6:8>, tile_groups = 8 : i64} : tensor<2x64xf16> -> tensor<2x96xf16>
  %cg = sgpu.nm_decompose %wg {tile_groups = 8 : i64} : tensor<32x64xf16, #sgpu.nm<6:8>> -> !sgpu.compressed<32x96xf16, #sgpu.nm<2:4>>
  %g = sgpu.spmm %l1, %cg : tensor<2x96xf16>, !sgpu.compressed<32x96xf16, #sgpu.nm<2:4>> -> tensor<2x32xf16>
  %l2 = sgpu.lift %x {pattern = #sgpu.nm<6:8>, tile_groups = 8 : i64} : tensor<2x64xf16> -> tensor<2x96xf16>
  %cu = sgpu.nm_decompose %wu {tile_groups = 8 : i64} : tensor<32x64xf16, #sgpu.nm<6:8>> -> !sgpu.compressed<32x96xf16, #sgpu.nm<2:4>>
  %u = sgpu.spmm %l2, %cu : tensor<2x96xf16>, !sgpu.compressed<32x96xf16, #sgpu.nm<2:4>> -> tensor<2x32xf16>
  return %g, %u : tensor<2x32xf16>, tensor<2x32xf16>
}

// -----

// Left as they are: GEMMs of different activations; a weight that is not a
// row of whole 16-row tiles (8 rows); a weight argument read twice; a bias
// (the slices would need it split); a kernel already chosen; a different
// result type. Only the two plain siblings (%a, %b) fuse.
// CHECK-LABEL: func.func @unfusable
// CHECK: tensor.concat dim(0) %arg2, %arg3 :
// CHECK-COUNT-7: = sgpu.spmm
// CHECK-NOT: = sgpu.spmm
func.func @unfusable(%x: tensor<4x32xf16>, %x2: tensor<4x32xf16>,
                     %w0: tensor<16x32xf16, #sgpu.nm<2:4>>, %w1: tensor<16x32xf16, #sgpu.nm<2:4>>,
                     %w2: tensor<16x32xf16, #sgpu.nm<2:4>>, %w3: tensor<8x32xf16, #sgpu.nm<2:4>>,
                     %w4: tensor<16x32xf16, #sgpu.nm<2:4>>, %w5: tensor<16x32xf16, #sgpu.nm<2:4>>,
                     %w6: tensor<16x32xf16, #sgpu.nm<2:4>>, %w7: tensor<16x32xf16, #sgpu.nm<2:4>>,
                     %bias: tensor<16xf16>)
    -> (tensor<4x16xf16>, tensor<4x16xf16>, tensor<4x16xf16>, tensor<4x8xf16>,
        tensor<4x16xf16>, tensor<4x16xf16>, tensor<4x16xf16>, tensor<4x16xf32>) {
  %c0 = sgpu.compress %w0 : tensor<16x32xf16, #sgpu.nm<2:4>> -> !sgpu.compressed<16x32xf16, #sgpu.nm<2:4>>
  %a = sgpu.spmm %x, %c0 : tensor<4x32xf16>, !sgpu.compressed<16x32xf16, #sgpu.nm<2:4>> -> tensor<4x16xf16>
  %c1 = sgpu.compress %w1 : tensor<16x32xf16, #sgpu.nm<2:4>> -> !sgpu.compressed<16x32xf16, #sgpu.nm<2:4>>
  %b = sgpu.spmm %x, %c1 : tensor<4x32xf16>, !sgpu.compressed<16x32xf16, #sgpu.nm<2:4>> -> tensor<4x16xf16>
  %c2 = sgpu.compress %w2 : tensor<16x32xf16, #sgpu.nm<2:4>> -> !sgpu.compressed<16x32xf16, #sgpu.nm<2:4>>
  %other = sgpu.spmm %x2, %c2 : tensor<4x32xf16>, !sgpu.compressed<16x32xf16, #sgpu.nm<2:4>> -> tensor<4x16xf16>
  %c3 = sgpu.compress %w3 : tensor<8x32xf16, #sgpu.nm<2:4>> -> !sgpu.compressed<8x32xf16, #sgpu.nm<2:4>>
  %narrow = sgpu.spmm %x, %c3 : tensor<4x32xf16>, !sgpu.compressed<8x32xf16, #sgpu.nm<2:4>> -> tensor<4x8xf16>
  %c4 = sgpu.compress %w4 : tensor<16x32xf16, #sgpu.nm<2:4>> -> !sgpu.compressed<16x32xf16, #sgpu.nm<2:4>>
  %biased = sgpu.spmm %x, %c4 bias(%bias : tensor<16xf16>) : tensor<4x32xf16>, !sgpu.compressed<16x32xf16, #sgpu.nm<2:4>> -> tensor<4x16xf16>
  %c5 = sgpu.compress %w5 : tensor<16x32xf16, #sgpu.nm<2:4>> -> !sgpu.compressed<16x32xf16, #sgpu.nm<2:4>>
  %chosen = sgpu.spmm %x, %c5 {sgpu.config = #sgpu.spmm_config<kernel = mma>} : tensor<4x32xf16>, !sgpu.compressed<16x32xf16, #sgpu.nm<2:4>> -> tensor<4x16xf16>
  %c6 = sgpu.compress %w6 : tensor<16x32xf16, #sgpu.nm<2:4>> -> !sgpu.compressed<16x32xf16, #sgpu.nm<2:4>>
  %twice = sgpu.spmm %x, %c6 : tensor<4x32xf16>, !sgpu.compressed<16x32xf16, #sgpu.nm<2:4>> -> tensor<4x16xf16>
  %reread = arith.addf %w6, %w6 : tensor<16x32xf16, #sgpu.nm<2:4>>
  %c7 = sgpu.compress %w7 : tensor<16x32xf16, #sgpu.nm<2:4>> -> !sgpu.compressed<16x32xf16, #sgpu.nm<2:4>>
  %wide = sgpu.spmm %x, %c7 : tensor<4x32xf16>, !sgpu.compressed<16x32xf16, #sgpu.nm<2:4>> -> tensor<4x16xf32>
  return %a, %b, %other, %narrow, %biased, %chosen, %twice, %wide
      : tensor<4x16xf16>, tensor<4x16xf16>, tensor<4x16xf16>, tensor<4x8xf16>,
        tensor<4x16xf16>, tensor<4x16xf16>, tensor<4x16xf16>, tensor<4x16xf32>
}

// -----

// Constant weights (compressed at compile time) are left as they are.
// CHECK-LABEL: func.func @constants
// CHECK-NOT: tensor.concat
// CHECK-COUNT-2: sgpu.spmm
func.func @constants(%x: tensor<4x32xf16>, %v: tensor<16x16xf16>, %m: tensor<16xi32>)
    -> (tensor<4x16xf16>, tensor<4x16xf16>) {
  %w = sgpu.assemble %v, %m : tensor<16x16xf16>, tensor<16xi32> -> !sgpu.compressed<16x32xf16, #sgpu.nm<2:4>>
  %a = sgpu.spmm %x, %w : tensor<4x32xf16>, !sgpu.compressed<16x32xf16, #sgpu.nm<2:4>> -> tensor<4x16xf16>
  %b = sgpu.spmm %x, %w : tensor<4x32xf16>, !sgpu.compressed<16x32xf16, #sgpu.nm<2:4>> -> tensor<4x16xf16>
  return %a, %b : tensor<4x16xf16>, tensor<4x16xf16>
}

// -----

// The importers reshape the activation once per projection: reshapes of one
// value to one type are the same activation.
// CHECK-LABEL: func.func @reshaped
// CHECK: %[[X:.*]] = tensor.collapse_shape %arg0
// CHECK: tensor.concat dim(0) %arg1, %arg2
// CHECK: sgpu.spmm %[[X]],
// CHECK-COUNT-2: tensor.extract_slice
func.func @reshaped(%x: tensor<1x4x32xf16>, %w0: tensor<16x32xf16, #sgpu.nm<2:4>>,
                    %w1: tensor<16x32xf16, #sgpu.nm<2:4>>) -> (tensor<4x16xf16>, tensor<4x16xf16>) {
  %x0 = tensor.collapse_shape %x [[0, 1], [2]] : tensor<1x4x32xf16> into tensor<4x32xf16>
  %c0 = sgpu.compress %w0 : tensor<16x32xf16, #sgpu.nm<2:4>> -> !sgpu.compressed<16x32xf16, #sgpu.nm<2:4>>
  %a = sgpu.spmm %x0, %c0 : tensor<4x32xf16>, !sgpu.compressed<16x32xf16, #sgpu.nm<2:4>> -> tensor<4x16xf16>
  %x1 = tensor.collapse_shape %x [[0, 1], [2]] : tensor<1x4x32xf16> into tensor<4x32xf16>
  %c1 = sgpu.compress %w1 : tensor<16x32xf16, #sgpu.nm<2:4>> -> !sgpu.compressed<16x32xf16, #sgpu.nm<2:4>>
  %b = sgpu.spmm %x1, %c1 : tensor<4x32xf16>, !sgpu.compressed<16x32xf16, #sgpu.nm<2:4>> -> tensor<4x16xf16>
  return %a, %b : tensor<4x16xf16>, tensor<4x16xf16>
}

// -----

// q, k and v of an 8B-shaped model: 6144 rows (48 blocks), K = 4096.
// CHECK-LABEL: func.func @decode_sized
// CHECK: tensor.concat dim(0) %arg1, %arg2, %arg3
func.func @decode_sized(%x: tensor<1x4096xbf16>, %wq: tensor<4096x4096xbf16, #sgpu.nm<2:4>>,
                        %wk: tensor<1024x4096xbf16, #sgpu.nm<2:4>>, %wv: tensor<1024x4096xbf16, #sgpu.nm<2:4>>)
    -> (tensor<1x4096xbf16>, tensor<1x1024xbf16>, tensor<1x1024xbf16>) {
  %cq = sgpu.compress %wq : tensor<4096x4096xbf16, #sgpu.nm<2:4>> -> !sgpu.compressed<4096x4096xbf16, #sgpu.nm<2:4>>
  %q = sgpu.spmm %x, %cq : tensor<1x4096xbf16>, !sgpu.compressed<4096x4096xbf16, #sgpu.nm<2:4>> -> tensor<1x4096xbf16>
  %ck = sgpu.compress %wk : tensor<1024x4096xbf16, #sgpu.nm<2:4>> -> !sgpu.compressed<1024x4096xbf16, #sgpu.nm<2:4>>
  %k = sgpu.spmm %x, %ck : tensor<1x4096xbf16>, !sgpu.compressed<1024x4096xbf16, #sgpu.nm<2:4>> -> tensor<1x1024xbf16>
  %cv = sgpu.compress %wv : tensor<1024x4096xbf16, #sgpu.nm<2:4>> -> !sgpu.compressed<1024x4096xbf16, #sgpu.nm<2:4>>
  %v = sgpu.spmm %x, %cv : tensor<1x4096xbf16>, !sgpu.compressed<1024x4096xbf16, #sgpu.nm<2:4>> -> tensor<1x1024xbf16>
  return %q, %k, %v : tensor<1x4096xbf16>, tensor<1x1024xbf16>, tensor<1x1024xbf16>
}
