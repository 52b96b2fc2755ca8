// sgpu-select-kernels records every kernel choice on its op as a typed
// sgpu.config, and convert-sgpu-to-gpu builds what the op says: the tile
// table's choice for the device, the fused 6:8 lift up to 16 tokens, the
// warp-level kernel where the chip has no wgmma, the TwELL pack form with
// its consumer, a configuration written by hand kept as written.
// RUN: sparse-opt %s -split-input-file -sgpu-select-kernels | FileCheck %s
// RUN: sparse-opt %s -split-input-file -sgpu-select-kernels="chip=sm_80" | FileCheck %s --check-prefix=SM80
// RUN: sparse-opt %s -split-input-file -sgpu-select-kernels="tile-n=32 stages=3 persistent=false split-k=1" | FileCheck %s --check-prefix=OPTS
// RUN: sparse-opt %s -split-input-file -sgpu-select-kernels="twell-consumer=tensor-cores twell-gather=tma" | FileCheck %s --check-prefix=TC
// RUN: sparse-opt %s -split-input-file -sgpu-select-kernels="twell-pack=kernel twell-passes=3" | FileCheck %s --check-prefix=PASSES
// RUN: sparse-opt %s -split-input-file -sgpu-select-kernels -convert-sgpu-to-gpu | FileCheck %s --check-prefix=BUILT
// The options of the selection are convert-sgpu-to-gpu's, checked alike.
// RUN: not sparse-opt %s -split-input-file -sgpu-select-kernels="cluster=3" 2>&1 | FileCheck %s --check-prefix=BADOPT
// BADOPT: error: invalid sgpu-select-kernels option: cluster=3 is not 0, 1, 2 or 4

// 512 tokens x 256 features: two blocks of 128 weight rows would leave the
// H200 mostly idle, so 64-token tiles and the k-tiles split over two
// blocks (f32 partial sums: no TMA store).
// CHECK-LABEL: func.func @plain
// CHECK: sgpu.spmm {{.*}} {sgpu.config = #sgpu.spmm_config<kernel = tma, tile_n = 64, stages = 8, splits = 2>}
// SM80-LABEL: func.func @plain
// SM80: sgpu.spmm {{.*}} {sgpu.config = #sgpu.spmm_config<kernel = mma>}
// OPTS-LABEL: func.func @plain
// OPTS: sgpu.spmm {{.*}} {sgpu.config = #sgpu.spmm_config<kernel = tma, tile_n = 32, stages = 3, store_box = 32, persistent = false>}
// BUILT-LABEL: func.func @plain
// BUILT-NOT: sgpu.config
// BUILT: sgpu.tensor_map %{{.*}} box [64, 64] swizzle 128 : memref<512x1024xf16>
// BUILT: gpu.launch_func @sgpu_kernels::@sgpu_spmm_0
// BUILT: gpu.launch_func @sgpu_kernels::@sgpu_spmm_0_reduce
func.func @plain(%x: tensor<512x1024xf16>, %v: tensor<256x512xf16>, %m: tensor<8192xi32>) -> tensor<512x256xf16> {
  %w = sgpu.assemble %v, %m : tensor<256x512xf16>, tensor<8192xi32> -> !sgpu.compressed<256x1024xf16, #sgpu.nm<2:4>>
  %y = sgpu.spmm %x, %w : tensor<512x1024xf16>, !sgpu.compressed<256x1024xf16, #sgpu.nm<2:4>> -> tensor<512x256xf16>
  return %y : tensor<512x256xf16>
}

// -----

// A 6:8 lift in the order of tile_groups = 8 at 16 tokens: fused into the
// kernel's operand loads; on sm_80 the gather kernel lifts it on its own.
// CHECK-LABEL: func.func @tiled
// CHECK: sgpu.spmm {{.*}} {sgpu.config = #sgpu.spmm_config<kernel = tma, lift = fused, tile_n = 16, stages = 8, splits = 2>}
// SM80-LABEL: func.func @tiled
// SM80: sgpu.spmm {{.*}} {sgpu.config = #sgpu.spmm_config<kernel = mma>}
// BUILT-LABEL: func.func @tiled
// BUILT-NOT: sgpu_lift
// BUILT: gpu.launch_func @sgpu_kernels::@sgpu_spmm_0
func.func @tiled(%x: tensor<16x1024xf16>, %v: tensor<256x768xf16>, %m: tensor<12288xi32>) -> tensor<16x256xf16> {
  %xl = sgpu.lift %x {pattern = #sgpu.nm<6:8>, tile_groups = 8} : tensor<16x1024xf16> -> tensor<16x1536xf16>
  %w = sgpu.assemble %v, %m : tensor<256x768xf16>, tensor<12288xi32> -> !sgpu.compressed<256x1536xf16, #sgpu.nm<2:4>>
  %y = sgpu.spmm %xl, %w : tensor<16x1536xf16>, !sgpu.compressed<256x1536xf16, #sgpu.nm<2:4>> -> tensor<16x256xf16>
  return %y : tensor<16x256xf16>
}

// -----

// Written by hand: kept, and built as written (128-token tiles, no
// split-K, the TMA store through 64-token boxes, one block per tile).
// CHECK-LABEL: func.func @by_hand
// CHECK: sgpu.spmm {{.*}} {sgpu.config = #sgpu.spmm_config<kernel = tma, tile_n = 128, stages = 4, store_box = 64, persistent = false>}
// OPTS-LABEL: func.func @by_hand
// OPTS: sgpu.spmm {{.*}} {sgpu.config = #sgpu.spmm_config<kernel = tma, tile_n = 128, stages = 4, store_box = 64, persistent = false>}
// BUILT-LABEL: func.func @by_hand
// BUILT: sgpu.tensor_map %{{.*}} box [128, 64] swizzle 128 : memref<512x1024xf16>
// BUILT: sgpu.tensor_map %{{.*}} box [64, 64] swizzle 128 : memref<512x256xf16>
// BUILT: gpu.launch_func @sgpu_kernels::@sgpu_spmm_0 blocks in (%c8{{.*}}, %c1{{.*}}, %c1{{.*}}) threads in (%c384
// BUILT-NOT: _reduce
func.func @by_hand(%x: tensor<512x1024xf16>, %v: tensor<256x512xf16>, %m: tensor<8192xi32>) -> tensor<512x256xf16> {
  %w = sgpu.assemble %v, %m : tensor<256x512xf16>, tensor<8192xi32> -> !sgpu.compressed<256x1024xf16, #sgpu.nm<2:4>>
  %y = sgpu.spmm %x, %w {sgpu.config = #sgpu.spmm_config<kernel = tma, tile_n = 128, stages = 4, store_box = 64, persistent = false>} : tensor<512x1024xf16>, !sgpu.compressed<256x1024xf16, #sgpu.nm<2:4>> -> tensor<512x256xf16>
  return %y : tensor<512x256xf16>
}

// -----

// TwELL: the pack and its consumer chosen together.
// CHECK-LABEL: func.func @gated
// CHECK: sgpu.twell_pack {{.*}} {sgpu.config = #sgpu.twell_pack_config<form = in_consumer>}
// CHECK: sgpu.twell_ffn {{.*}} {sgpu.config = #sgpu.twell_ffn_config<consumer = cuda_cores>}
// TC-LABEL: func.func @gated
// TC: sgpu.twell_pack {{.*}} {sgpu.config = #sgpu.twell_pack_config<form = blocks>}
// TC: sgpu.twell_ffn {{.*}} {sgpu.config = #sgpu.twell_ffn_config<consumer = tensor_cores, tma_gather = true>}
// PASSES-LABEL: func.func @gated
// PASSES: sgpu.twell_pack {{.*}} {sgpu.config = #sgpu.twell_pack_config<form = kernel>}
// PASSES: sgpu.twell_ffn {{.*}} {sgpu.config = #sgpu.twell_ffn_config<consumer = cuda_cores, passes = 3>}
// BUILT-LABEL: func.func @gated
// BUILT-NOT: sgpu_twell_pack_0
// BUILT: gpu.launch_func @sgpu_kernels::@sgpu_twell_ffn_0
func.func @gated(%h: tensor<16x1024xbf16>, %x: tensor<16x64xbf16>, %wu: tensor<1024x64xbf16>,
                 %wd: tensor<64x1024xbf16>) -> tensor<16x64xbf16> {
  %p = sgpu.twell_pack %h : tensor<16x1024xbf16> -> !sgpu.twell<16x1024xbf16, #sgpu.twell<tile = 256, compression = 4>>
  %y = sgpu.twell_ffn %p, %wd up(%x, %wu : tensor<16x64xbf16>, tensor<1024x64xbf16>) : !sgpu.twell<16x1024xbf16, #sgpu.twell<tile = 256, compression = 4>>, tensor<64x1024xbf16> -> tensor<16x64xbf16>
  return %y : tensor<16x64xbf16>
}

