// sgpu-select-kernels records the attention kernel and its parameters as
// #sgpu.attention_config: the split-KV decode kernels for one query per
// sequence over a cache (the tensor-core split kernel where it applies,
// else the CUDA-core one with its lanes per key and keys per step; splits
// sized to the device's multiprocessors), cuDNN's fused attention (the library) for
// f16/bf16 prefill where it applies, else tensor cores, CUDA cores
// otherwise; a configuration written by hand is kept, and the
// lowering builds what the op says.
// RUN: sparse-opt %s -split-input-file -sgpu-select-kernels | FileCheck %s
// RUN: sparse-opt %s -split-input-file -sgpu-select-kernels="device=h100-pcie" | FileCheck %s --check-prefix=PCIE
// RUN: sparse-opt %s -split-input-file -sgpu-select-kernels -convert-sgpu-to-gpu | FileCheck %s --check-prefix=BUILT
// attention-library=false keeps every attention on the generated kernels
// (in selection, and in the lowering of an op that arrives without a
// configuration).
// RUN: sparse-opt %s -split-input-file -sgpu-select-kernels="attention-library=false" | FileCheck %s --check-prefix=NOLIB
// RUN: sparse-opt %s -split-input-file -convert-sgpu-to-gpu="attention-library=false" | FileCheck %s --check-prefix=NOLIB-BUILT

// Decode over a cache of 4096 positions, 2 sequences x 2 KV heads: the
// tensor-core split kernel; one wave of three blocks per multiprocessor
// would be 99 splits of the 4 rows on the H200 (85 on the H100 PCIe), but
// a split keeps at least 4 tiles of 16 keys per warp at full capacity:
// capacity / 256 = 16.
// CHECK-LABEL: func.func @decode
// CHECK: sgpu.attention {{.*}} sgpu.config = #sgpu.attention_config<kernel = decode_tensor_cores, splits = 16>
// PCIE-LABEL: func.func @decode
// PCIE: sgpu.config = #sgpu.attention_config<kernel = decode_tensor_cores, splits = 16>
// BUILT-LABEL: func.func @decode
// BUILT: gpu.launch_func @sgpu_kernels::@sgpu_attention_split_mma_0 blocks in (%c64,
func.func @decode(%q: tensor<2x8x1x128xbf16>, %kc: tensor<2x2x4096x128xbf16>, %pos: tensor<2x1xi64>) -> tensor<2x8x1x128xbf16> {
  %o = sgpu.attention %q, %kc, %kc positions(%pos : tensor<2x1xi64>) {causal, scale = 0.125 : f32} : tensor<2x8x1x128xbf16>, tensor<2x2x4096x128xbf16>, tensor<2x2x4096x128xbf16> -> tensor<2x8x1x128xbf16>
  return %o : tensor<2x8x1x128xbf16>
}

// -----

// At 8 sequences x 8 KV heads one wave decides: 3 x 132 / 64 = 6 splits on
// the H200, 3 x 114 / 64 = 5 on the H100 PCIe.
// CHECK-LABEL: func.func @decode_b8
// CHECK: sgpu.config = #sgpu.attention_config<kernel = decode_tensor_cores, splits = 6>
// PCIE-LABEL: func.func @decode_b8
// PCIE: sgpu.config = #sgpu.attention_config<kernel = decode_tensor_cores, splits = 5>
func.func @decode_b8(%q: tensor<8x32x1x128xbf16>, %kc: tensor<8x8x4096x128xbf16>, %pos: tensor<8x1xi64>) -> tensor<8x32x1x128xbf16> {
  %o = sgpu.attention %q, %kc, %kc positions(%pos : tensor<8x1xi64>) {causal, scale = 0.125 : f32} : tensor<8x32x1x128xbf16>, tensor<8x8x4096x128xbf16>, tensor<8x8x4096x128xbf16> -> tensor<8x32x1x128xbf16>
  return %o : tensor<8x32x1x128xbf16>
}

// -----

// At 64 sequences x 8 KV heads the 512 rows fill a wave of 396 (342)
// blocks: about two waves, ceil(2 x 396 / 512) = 2 splits (2 on the H100
// PCIe too).
// CHECK-LABEL: func.func @decode_b64
// CHECK: sgpu.config = #sgpu.attention_config<kernel = decode_tensor_cores, splits = 2>
// PCIE-LABEL: func.func @decode_b64
// PCIE: sgpu.config = #sgpu.attention_config<kernel = decode_tensor_cores, splits = 2>
func.func @decode_b64(%q: tensor<64x32x1x128xbf16>, %kc: tensor<64x8x4096x128xbf16>, %pos: tensor<64x1xi64>) -> tensor<64x32x1x128xbf16> {
  %o = sgpu.attention %q, %kc, %kc positions(%pos : tensor<64x1xi64>) {causal, scale = 0.125 : f32} : tensor<64x32x1x128xbf16>, tensor<64x8x4096x128xbf16>, tensor<64x8x4096x128xbf16> -> tensor<64x32x1x128xbf16>
  return %o : tensor<64x32x1x128xbf16>
}

// -----

// The CUDA-core split kernel, asked for (kept as written; the lowering
// resolves the rest): one wave of two blocks per multiprocessor (66 splits
// of 4 rows on the H200), at most capacity / 32 = 128.
// CHECK-LABEL: func.func @decode_cuda_cores
// CHECK: sgpu.attention {{.*}} sgpu.config = #sgpu.attention_config<kernel = decode>
// BUILT-LABEL: func.func @decode_cuda_cores
// BUILT: gpu.launch_func @sgpu_kernels::@sgpu_attention_split_0 blocks in (%c264,
func.func @decode_cuda_cores(%q: tensor<2x8x1x128xbf16>, %kc: tensor<2x2x4096x128xbf16>, %pos: tensor<2x1xi64>) -> tensor<2x8x1x128xbf16> {
  %o = sgpu.attention %q, %kc, %kc positions(%pos : tensor<2x1xi64>) {causal, scale = 0.125 : f32, sgpu.config = #sgpu.attention_config<kernel = decode>} : tensor<2x8x1x128xbf16>, tensor<2x2x4096x128xbf16>, tensor<2x2x4096x128xbf16> -> tensor<2x8x1x128xbf16>
  return %o : tensor<2x8x1x128xbf16>
}

// -----

// bf16 prefill: cuDNN's fused attention, an sgpu.attention_call that the
// runtime program runs as an `attention` line (no generated kernel).
// CHECK-LABEL: func.func @prefill
// CHECK: sgpu.config = #sgpu.attention_config<kernel = library>
// BUILT-LABEL: func.func @prefill
// BUILT: sgpu.attention_call %{{.*}}, %{{.*}}, %{{.*}} into %{{.*}} {causal, scale = 1.250000e-01 : f32}
// BUILT-NOT: gpu.launch_func
// NOLIB-LABEL: func.func @prefill
// NOLIB: sgpu.config = #sgpu.attention_config<kernel = tensor_cores>
// NOLIB-BUILT-LABEL: func.func @prefill
// NOLIB-BUILT: gpu.launch_func @sgpu_kernels::@sgpu_attention_mma_0
// NOLIB-BUILT-NOT: sgpu.attention_call
func.func @prefill(%q: tensor<1x2x64x64xbf16>) -> tensor<1x2x64x64xbf16> {
  %o = sgpu.attention %q, %q, %q {causal, scale = 0.125 : f32} : tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16> -> tensor<1x2x64x64xbf16>
  return %o : tensor<1x2x64x64xbf16>
}

// -----

// A parameter of the tensor-core kernel (its warps), written by hand, is
// kept, and the lowering builds that kernel.
// CHECK-LABEL: func.func @prefill_warps
// CHECK: sgpu.config = #sgpu.attention_config<warps = 8>
// BUILT-LABEL: func.func @prefill_warps
// BUILT: gpu.launch_func @sgpu_kernels::@sgpu_attention_mma_0
func.func @prefill_warps(%q: tensor<1x2x64x64xbf16>) -> tensor<1x2x64x64xbf16> {
  %o = sgpu.attention %q, %q, %q {causal, scale = 0.125 : f32, sgpu.config = #sgpu.attention_config<warps = 8>} : tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16> -> tensor<1x2x64x64xbf16>
  return %o : tensor<1x2x64x64xbf16>
}

// -----

// Causal with fewer queries than keys: cuDNN aligns its causal mask to the
// first key, sgpu.attention to the last, so the tensor-core kernel runs it.
// CHECK-LABEL: func.func @prefill_offset
// CHECK: sgpu.config = #sgpu.attention_config<kernel = tensor_cores>
func.func @prefill_offset(%q: tensor<1x2x16x64xbf16>, %k: tensor<1x2x80x64xbf16>) -> tensor<1x2x16x64xbf16> {
  %o = sgpu.attention %q, %k, %k {causal, scale = 0.125 : f32} : tensor<1x2x16x64xbf16>, tensor<1x2x80x64xbf16>, tensor<1x2x80x64xbf16> -> tensor<1x2x16x64xbf16>
  return %o : tensor<1x2x16x64xbf16>
}

// -----

// Head size 40: the library call needs 8 | D, the tensor-core kernel
// 16 | D, so the library runs what the tensor-core kernel could not.
// CHECK-LABEL: func.func @prefill_d40
// CHECK: sgpu.config = #sgpu.attention_config<kernel = library>
// NOLIB-LABEL: func.func @prefill_d40
// NOLIB: sgpu.config = #sgpu.attention_config<kernel = cuda_cores, rows_per_block = 4>
func.func @prefill_d40(%q: tensor<1x2x32x40xf16>) -> tensor<1x2x32x40xf16> {
  %o = sgpu.attention %q, %q, %q {scale = 0.125 : f32} : tensor<1x2x32x40xf16>, tensor<1x2x32x40xf16>, tensor<1x2x32x40xf16> -> tensor<1x2x32x40xf16>
  return %o : tensor<1x2x32x40xf16>
}

// -----

// f32: CUDA cores, 4 query rows per block.
// CHECK-LABEL: func.func @f32
// CHECK: sgpu.config = #sgpu.attention_config<kernel = cuda_cores, rows_per_block = 4>
// BUILT-LABEL: func.func @f32
// BUILT: gpu.launch_func @sgpu_kernels::@sgpu_attention_0 blocks in (%c4, {{.*}} threads in (%c128,
func.func @f32(%q: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  %o = sgpu.attention %q, %q, %q {scale = 0.25 : f32} : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32> -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}

// -----

// Written by hand: kept as written, the lowering fills in nothing.
// CHECK-LABEL: func.func @by_hand
// CHECK: sgpu.config = #sgpu.attention_config<lanes_per_key = 32>
// BUILT-LABEL: func.func @by_hand
// BUILT: gpu.launch_func @sgpu_kernels::@sgpu_attention_split_0
func.func @by_hand(%q: tensor<2x8x1x128xbf16>, %kc: tensor<2x2x4096x128xbf16>, %pos: tensor<2x1xi64>) -> tensor<2x8x1x128xbf16> {
  %o = sgpu.attention %q, %kc, %kc positions(%pos : tensor<2x1xi64>) {causal, scale = 0.125 : f32, sgpu.config = #sgpu.attention_config<lanes_per_key = 32>} : tensor<2x8x1x128xbf16>, tensor<2x2x4096x128xbf16>, tensor<2x2x4096x128xbf16> -> tensor<2x8x1x128xbf16>
  return %o : tensor<2x8x1x128xbf16>
}

// -----

// Embedding, RoPE and the cache update: the selection records their one
// choice, 256 threads per block (the attribute's default, so printed as
// `<>`), and keeps a hand-written one.
// CHECK-LABEL: func.func @launches
// CHECK: sgpu.embedding {{.*}} {sgpu.config = #sgpu.launch_config<>}
// CHECK: sgpu.rope {{.*}} {sgpu.config = #sgpu.launch_config<threads = 128>}
// CHECK: sgpu.cache_update {{.*}} {sgpu.config = #sgpu.launch_config<>}
// BUILT-LABEL: func.func @launches
// BUILT: gpu.launch_func @sgpu_kernels::@sgpu_embedding_0 {{.*}} threads in (%c256,
// BUILT: gpu.launch_func @sgpu_kernels::@sgpu_rope_0 {{.*}} threads in (%c128,
// BUILT: gpu.launch_func @sgpu_kernels::@sgpu_cache_update_0 {{.*}} threads in (%c256{{.*}},
func.func @launches(%t: tensor<128x64xbf16>, %ids: tensor<2x8xi64>, %x: tensor<1x8x16x16xf16>, %c: tensor<1x1x16x16xf16>,
                    %kc: tensor<4x2x256x128xbf16> {sgpu.param = "k_cache", sgpu.state}, %k: tensor<2x2x1x128xbf16>, %pos: tensor<2x1xi64>)
    -> (tensor<2x8x64xbf16>, tensor<1x8x16x16xf16>, tensor<4x2x256x128xbf16>) {
  %e = sgpu.embedding %t, %ids : tensor<128x64xbf16>, tensor<2x8xi64> -> tensor<2x8x64xbf16>
  %y = sgpu.rope %x, %c, %c {sgpu.config = #sgpu.launch_config<threads = 128>} : tensor<1x8x16x16xf16>, tensor<1x1x16x16xf16>, tensor<1x1x16x16xf16> -> tensor<1x8x16x16xf16>
  %k2 = sgpu.cache_update %kc, %k, %pos : tensor<4x2x256x128xbf16>, tensor<2x2x1x128xbf16>, tensor<2x1xi64> -> tensor<4x2x256x128xbf16>
  return %e, %y, %k2 : tensor<2x8x64xbf16>, tensor<1x8x16x16xf16>, tensor<4x2x256x128xbf16>
}
