// convert-sgpu-to-gpu and the 6:8 lift in the tiled window order: with
// lift=fused the TMA kernel takes X itself (no lift kernel) and four tensor
// maps (X, the values of k32 steps 0-1, the values of step 2, the metadata
// of three steps); lift=auto fuses only up to 16 tokens and otherwise keeps
// the gather kernel feeding the kernel of three maps (sgpu-slide-sparse
// gives 6:8 above 16 tokens the order of the split lift instead).
// RUN: sparse-opt %s -convert-sgpu-to-gpu="lift=fused" | FileCheck %s --check-prefix=FUSED
// RUN: sparse-opt %s -convert-sgpu-to-gpu | FileCheck %s --check-prefix=AUTO
// RUN: sparse-opt %s -convert-sgpu-to-gpu="lift=separate" | FileCheck %s --check-prefix=AUTO
// RUN: not sparse-opt %s -convert-sgpu-to-gpu="lift=fused tile-n=256 stages=4" 2>&1 | FileCheck %s --check-prefix=BIGSTAGES
// RUN: not sparse-opt %s -convert-sgpu-to-gpu="lift=always" 2>&1 | FileCheck %s --check-prefix=BADLIFT
// RUN: sparse-opt %s -convert-sgpu-to-gpu="lift=split" 2>&1 | FileCheck %s --check-prefix=SPLIT

// FUSED-LABEL: func.func @tiled
// FUSED-NOT: sgpu_lift
// FUSED-DAG: sgpu.tensor_map %{{.*}} box [64, 64] swizzle 128 : memref<512x1024xf16>
// FUSED-DAG: sgpu.tensor_map %{{.*}} box [128, 32] swizzle 64 : memref<256x768xf16>
// FUSED-DAG: sgpu.tensor_map %{{.*}} box [128, 16] swizzle 32 : memref<256x768xf16>
// FUSED-DAG: sgpu.tensor_map %{{.*}} box [8, 48] swizzle 0 : memref<16x768xi32>
// FUSED: gpu.launch_func @sgpu_kernels::@sgpu_spmm_0
// FUSED: gpu.func @sgpu_spmm_0
// FUSED-SAME: sgpu.tensor_map_args = array<i64: 0, 1, 2, 3>
// FUSED-COUNT-3: wgmma.mma_async.sp.sync.aligned.m64n64k32

// AUTO-LABEL: func.func @tiled
// AUTO: gpu.launch_func @sgpu_kernels::@sgpu_lift_0
// AUTO: sgpu.tensor_map %{{.*}} box [64, 64] swizzle 128 : memref<512x1536xf16>
// AUTO: gpu.launch_func @sgpu_kernels::@sgpu_spmm_0
// AUTO: gpu.func @sgpu_spmm_0
// AUTO-SAME: sgpu.tensor_map_args = array<i64: 0, 1, 2>

// lift=split needs the order of 16 groups (sgpu-to-gpu-split-lift.mlir):
// here the gather kernel lifts X, with a remark.
// SPLIT: remark: lift=split not used for this spmm, a gather kernel lifts X: its window order is tile_groups = 8 and lift=split needs tile_groups = 16 (sgpu-slide-sparse lift=split)
// SPLIT: gpu.launch_func @sgpu_kernels::@sgpu_lift_0
// SPLIT: sgpu.tensor_map %{{.*}} box [64, 64] swizzle 128 : memref<512x1536xf16>

// 4 x (8192 + 4096 + 32768 + 16384 + 2048) + 96 + 1024
// BIGSTAGES: error: stages=4 with 256-token tiles and the fused 6:8 lift needs 255072 bytes of shared memory; a block has 232448
// BADLIFT: error: unknown lift 'always'; expected auto, fused, split or separate
func.func @tiled(%x: tensor<512x1024xf16>, %v: tensor<256x768xf16>, %m: tensor<12288xi32>) -> tensor<512x256xf16> {
  %xl = sgpu.lift %x {pattern = #sgpu.nm<6:8>, tile_groups = 8} : tensor<512x1024xf16> -> tensor<512x1536xf16>
  %w = sgpu.assemble %v, %m : tensor<256x768xf16>, tensor<12288xi32> -> !sgpu.compressed<256x1536xf16, #sgpu.nm<2:4>>
  %y = sgpu.spmm %xl, %w : tensor<512x1536xf16>, !sgpu.compressed<256x1536xf16, #sgpu.nm<2:4>> -> tensor<512x256xf16>
  return %y : tensor<512x256xf16>
}
