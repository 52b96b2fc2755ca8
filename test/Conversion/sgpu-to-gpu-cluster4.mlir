// cluster=4: clusters of four blocks computing the feature blocks 4p ..
// 4p + 3 of one token block; each loads a quarter of the shared X tile
// (box [BN/4, 64]) and multicasts it into all four, each block's empty
// barrier takes the releases of the four blocks' consumers (one local and
// three remote arrivals per consumer warp). Measured 1.5-1.7x slower than
// pairs on the H200 (docs/performance.md), so the default never picks it.
// Where the blocks do not form groups of four, a remark.
// RUN: sparse-opt %s -split-input-file -convert-sgpu-to-gpu="kernel=wgmma cluster=4" -verify-diagnostics | FileCheck %s

// M = N = K = 4096: 32 feature blocks, 8 groups of four per token block,
// 33 clusters (132 blocks).
// CHECK-LABEL: func.func @spmm_fours
// CHECK: sgpu.tensor_map %{{.*}} box [64, 64] swizzle 128 : memref<4096x4096xbf16> -> !llvm.ptr
// CHECK: gpu.launch_func @sgpu_kernels::@sgpu_spmm_0 blocks in (%c132{{[_0-9]*}},
// CHECK: gpu.func @sgpu_spmm_0({{.*}}nvvm.cluster_dim = array<i32: 4, 1, 1>
// CHECK: %[[C32:.*]] = arith.constant 32 : i32
// CHECK: "mbarrier.init.shared::cta.b64 [$0], $1;", "r,r,~{memory}" %{{.*}}, %[[C32]]
// CHECK: multicast::cluster
// CHECK-COUNT-3: mbarrier.arrive.shared::cluster.b64
func.func @spmm_fours(%x: tensor<4096x4096xbf16>, %v: tensor<4096x2048xbf16>, %m: tensor<524288xi32>) -> tensor<4096x4096xbf16> {
  %w = sgpu.assemble %v, %m : tensor<4096x2048xbf16>, tensor<524288xi32> -> !sgpu.compressed<4096x4096xbf16, #sgpu.nm<2:4>>
  %y = sgpu.spmm %x, %w : tensor<4096x4096xbf16>, !sgpu.compressed<4096x4096xbf16, #sgpu.nm<2:4>> -> tensor<4096x4096xbf16>
  return %y : tensor<4096x4096xbf16>
}

// -----

// N = 384: three feature blocks, not a multiple of four.
// CHECK-LABEL: func.func @three_feature_blocks
// CHECK-NOT: nvvm.cluster_dim
func.func @three_feature_blocks(%x: tensor<4096x4096xbf16>, %v: tensor<384x2048xbf16>, %m: tensor<49152xi32>) -> tensor<4096x384xbf16> {
  %w = sgpu.assemble %v, %m : tensor<384x2048xbf16>, tensor<49152xi32> -> !sgpu.compressed<384x4096xbf16, #sgpu.nm<2:4>>
  // expected-remark @below {{cluster=4 not used for this spmm: the 3 blocks of 128 A rows do not form groups of 4}}
  %y = sgpu.spmm %x, %w : tensor<4096x4096xbf16>, !sgpu.compressed<384x4096xbf16, #sgpu.nm<2:4>> -> tensor<4096x384xbf16>
  return %y : tensor<4096x384xbf16>
}
