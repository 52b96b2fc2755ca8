// convert-sgpu-to-gpu and the split 6:8 lift (a lift in the window order
// of tile_groups 16): a lift kernel writes only the shared windows, W1
// [M, K'/3], and the TMA kernel over K' takes four tensor maps: X itself,
// the values, W1 (the same box as X) and the metadata. lift=auto and
// lift=split lower it so; lift=separate keeps the gather kernel of the
// whole lifted X; lift=fused cannot use this order (a remark says why).
// RUN: sparse-opt %s -split-input-file -convert-sgpu-to-gpu | FileCheck %s
// RUN: sparse-opt %s -split-input-file -convert-sgpu-to-gpu="lift=split" | FileCheck %s
// RUN: sparse-opt %s -split-input-file -convert-sgpu-to-gpu="lift=separate" | FileCheck %s --check-prefix=SEP
// RUN: sparse-opt %s -split-input-file -convert-sgpu-to-gpu="lift=fused" 2>&1 | FileCheck %s --check-prefix=FUSED
// RUN: sparse-opt %s -split-input-file -convert-sgpu-to-gpu="lift=split" 2>&1 | FileCheck %s --check-prefix=REMARK

// CHECK-LABEL: func.func @split
// CHECK: %[[W1:.*]] = memref.alloc() : memref<512x512xf16>
// CHECK: gpu.launch_func @sgpu_kernels::@sgpu_lift_0 {{.*}} args(%{{.*}} : memref<512x1024xf16>, %[[W1]] : memref<512x512xf16>)
// CHECK-DAG: sgpu.tensor_map %{{.*}} box [64, 64] swizzle 128 : memref<512x1024xf16>
// CHECK-DAG: sgpu.tensor_map %{{.*}} box [128, 32] swizzle 64 : memref<256x768xf16>
// CHECK-DAG: sgpu.tensor_map %[[W1]] box [64, 64] swizzle 128 : memref<512x512xf16>
// CHECK-DAG: sgpu.tensor_map %{{.*}} box [8, 32] swizzle 0 : memref<16x768xi32>
// CHECK: gpu.launch_func @sgpu_kernels::@sgpu_spmm_0
// CHECK: gpu.func @sgpu_spmm_0
// CHECK-SAME: sgpu.tensor_map_args = array<i64: 0, 1, 2, 3>
// CHECK-COUNT-2: wgmma.mma_async.sp.sync.aligned.m64n64k32
// CHECK: gpu.func @sgpu_lift_0(%{{.*}}: memref<512x1024xf16>, %{{.*}}: memref<512x512xf16>)

// SEP-LABEL: func.func @split
// SEP: gpu.launch_func @sgpu_kernels::@sgpu_lift_0 {{.*}} args(%{{.*}} : memref<512x1024xf16>, %{{.*}} : memref<512x1536xf16>)
// SEP: sgpu.tensor_map %{{.*}} box [64, 64] swizzle 128 : memref<512x1536xf16>
// SEP: gpu.func @sgpu_spmm_0
// SEP-SAME: sgpu.tensor_map_args = array<i64: 0, 1, 2>

// FUSED: remark: lift=fused not used for this spmm, a gather kernel lifts X: its window order is tile_groups = 16 and lift=fused needs tile_groups = 8 (sgpu-slide-sparse lift=fused)
// FUSED-LABEL: func.func @split
// FUSED: memref<512x1536xf16>
func.func @split(%x: tensor<512x1024xf16>, %v: tensor<256x768xf16>, %m: tensor<12288xi32>) -> tensor<512x256xf16> {
  %xl = sgpu.lift %x {pattern = #sgpu.nm<6:8>, tile_groups = 16} : tensor<512x1024xf16> -> tensor<512x1536xf16>
  %w = sgpu.assemble %v, %m : tensor<256x768xf16>, tensor<12288xi32> -> !sgpu.compressed<256x1536xf16, #sgpu.nm<2:4>>
  %y = sgpu.spmm %xl, %w : tensor<512x1536xf16>, !sgpu.compressed<256x1536xf16, #sgpu.nm<2:4>> -> tensor<512x256xf16>
  return %y : tensor<512x256xf16>
}

// -----

// From 4096 tokens the blocks pair into clusters (cluster=0): each loads
// half of the B box, from X or from W1, multicast into both; Y goes out by
// TMA stores (a fifth map).
// CHECK-LABEL: func.func @clustered
// CHECK-DAG: sgpu.tensor_map %{{.*}} box [32, 64] swizzle 128 : memref<4096x1024xf16>
// CHECK-DAG: sgpu.tensor_map %{{.*}} box [32, 64] swizzle 128 : memref<4096x512xf16>
// CHECK: gpu.func @sgpu_spmm_0
// CHECK-SAME: nvvm.cluster_dim = array<i32: 2, 1, 1>
// CHECK-SAME: sgpu.tensor_map_args = array<i64: 0, 1, 2, 3, 4>
// CHECK: multicast::cluster
func.func @clustered(%x: tensor<4096x1024xf16>, %v: tensor<256x768xf16>, %m: tensor<12288xi32>) -> tensor<4096x256xf16> {
  %xl = sgpu.lift %x {pattern = #sgpu.nm<6:8>, tile_groups = 16} : tensor<4096x1024xf16> -> tensor<4096x1536xf16>
  %w = sgpu.assemble %v, %m : tensor<256x768xf16>, tensor<12288xi32> -> !sgpu.compressed<256x1536xf16, #sgpu.nm<2:4>>
  %y = sgpu.spmm %xl, %w : tensor<4096x1536xf16>, !sgpu.compressed<256x1536xf16, #sgpu.nm<2:4>> -> tensor<4096x256xf16>
  return %y : tensor<4096x256xf16>
}

// -----

// K = 36 is not a multiple of 8: no tensor map of X, so the gather kernel
// lifts it (into rows of the padded K'), with a remark when split was asked
// for.
// REMARK: remark: lift=split not used for this spmm, a gather kernel lifts X: K = 36 is not a multiple of 8 (TMA needs 16-byte row pitches)
// CHECK-LABEL: func.func @odd_k
// CHECK: gpu.launch_func @sgpu_kernels::@sgpu_lift_0 {{.*}} args(%{{.*}} : memref<64x36xf16>, %{{.*}} : memref<64x192xf16>)
func.func @odd_k(%x: tensor<64x36xf16>, %v: tensor<128x96xf16>, %m: tensor<768xi32>) -> tensor<64x128xf16> {
  %xl = sgpu.lift %x {pattern = #sgpu.nm<6:8>, tile_groups = 16} : tensor<64x36xf16> -> tensor<64x192xf16>
  %w = sgpu.assemble %v, %m : tensor<128x96xf16>, tensor<768xi32> -> !sgpu.compressed<128x192xf16, #sgpu.nm<2:4>>
  %y = sgpu.spmm %xl, %w : tensor<64x192xf16>, !sgpu.compressed<128x192xf16, #sgpu.nm<2:4>> -> tensor<64x128xf16>
  return %y : tensor<64x128xf16>
}
