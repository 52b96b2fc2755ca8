// The split-KV decode attention with its split kernel on tensor cores
// (AttentionDecodeMmaKernel.cpp), the default for f16/bf16 decode with a
// head size of 64 or 128 and at most 8 query heads per key/value head.
// RUN: sparse-opt %s -split-input-file -convert-sgpu-to-gpu | FileCheck %s
// RUN: sparse-opt %s -split-input-file -sgpu-select-kernels | FileCheck %s --check-prefix=CONFIG

// Llama-3-8B's attention shape at batch 2 over a cache of 256 positions:
// blocks of 4 warps, one per (sequence, key/value head, split): 2 x 8 x 1
// (at most capacity / 256 splits: each warp walks at least 4 tiles of 16
// keys at full capacity); the combine kernel and its scratch are the
// CUDA-core kernel's.
// CONFIG-LABEL: func.func @decode(
// CONFIG: sgpu.config = #sgpu.attention_config<kernel = decode_tensor_cores, splits = 1>
// CHECK-LABEL: func.func @decode(
// CHECK: %[[ACC:.*]] = memref.alloc() : memref<8192xf32>
// CHECK: %[[ML:.*]] = memref.alloc() : memref<128xf32>
// CHECK: gpu.launch_func @sgpu_kernels::@sgpu_attention_split_mma_0 blocks in (%c16, %{{.*}}, %{{.*}}) threads in (%c128{{.*}}, %{{.*}}, %{{.*}}) args({{.*}}, %[[ACC]] : memref<8192xf32>, %[[ML]] : memref<128xf32>)
// CHECK: gpu.launch_func @sgpu_kernels::@sgpu_attention_combine_0 {{.*}} args(%[[ACC]] : memref<8192xf32>, %[[ML]] : memref<128xf32>, %{{.*}} : memref<64x128xbf16>)
// Three blocks per multiprocessor; the workgroup buffers hold the 4 warps'
// states of 4 heads (m, l and 128 columns each).
// CHECK: gpu.func @sgpu_attention_split_mma_0({{.*}}) workgroup(%{{.*}} : memref<32xf32, #gpu.address_space<workgroup>>, %{{.*}} : memref<2048xf32, #gpu.address_space<workgroup>>) kernel attributes {known_block_size = array<i32: 128, 1, 1>, nvvm.minctasm = 3 : i32}
// The query: 4 loads of 8 columns (32j + 8c), rows past the group zeroed.
// CHECK-COUNT-4: vector.load {{.*}} : memref<2x32x1x128xbf16>, vector<8xbf16>
// Each warp walks tiles warp, warp + 4, ...
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %c4
// 8 loads of K (two n-tiles of 8 keys x 4 column chunks), 8 of V (four key
// rows x 2 chunks of 16 columns), every row clamped into the range.
// CHECK-COUNT-16: vector.load {{.*}} : memref<2x8x256x128xbf16>, vector<8xbf16>
// S: two n-tiles of 8 k-steps.
// CHECK-COUNT-16: nvvm.mma.sync
// The row maximum over the quad, then P V: 16 d-tiles.
// CHECK: gpu.shuffle xor %{{.*}}, %c1_i32
// CHECK: gpu.shuffle xor %{{.*}}, %c2_i32
// CHECK: llvm.nvvm.ex2.approx.f32
// CHECK-COUNT-16: nvvm.mma.sync
// CHECK: scf.yield
// CHECK: gpu.barrier
// CHECK: gpu.func @sgpu_attention_combine_0
func.func @decode(%q: tensor<2x32x1x128xbf16>, %kc: tensor<2x8x256x128xbf16>, %pos: tensor<2x1xi64>) -> tensor<2x32x1x128xbf16> {
  %o = sgpu.attention %q, %kc, %kc positions(%pos : tensor<2x1xi64>) {causal, scale = 0.125 : f32} : tensor<2x32x1x128xbf16>, tensor<2x8x256x128xbf16>, tensor<2x8x256x128xbf16> -> tensor<2x32x1x128xbf16>
  return %o : tensor<2x32x1x128xbf16>
}

// -----

// f16, head size 64, one query head per key/value head, splits given: one
// 16-byte load of V per key row and lane, 8 d-tiles.
// CHECK-LABEL: func.func @decode_mha_d64
// CHECK: gpu.launch_func @sgpu_kernels::@sgpu_attention_split_mma_0 blocks in (%c24,
// CHECK: gpu.func @sgpu_attention_split_mma_0
// CHECK: scf.for
// CHECK-COUNT-8: vector.load {{.*}} : memref<3x4x96x64xf16>, vector<8xf16>
// CHECK-COUNT-8: nvvm.mma.sync
// CHECK: llvm.nvvm.ex2.approx.f32
// CHECK-COUNT-8: nvvm.mma.sync
// CHECK: scf.yield
func.func @decode_mha_d64(%q: tensor<3x4x1x64xf16>, %kc: tensor<3x4x96x64xf16>, %pos: tensor<3x1xi32>) -> tensor<3x4x1x64xf16> {
  %o = sgpu.attention %q, %kc, %kc positions(%pos : tensor<3x1xi32>) {causal, scale = 0.125 : f32, sgpu.config = #sgpu.attention_config<splits = 2>} : tensor<3x4x1x64xf16>, tensor<3x4x96x64xf16>, tensor<3x4x96x64xf16> -> tensor<3x4x1x64xf16>
  return %o : tensor<3x4x1x64xf16>
}

// -----

// A parameter of the CUDA-core split kernel (unroll) selects it.
// CHECK-LABEL: func.func @decode_unroll
// CHECK: gpu.launch_func @sgpu_kernels::@sgpu_attention_split_0
func.func @decode_unroll(%q: tensor<2x32x1x128xbf16>, %kc: tensor<2x8x256x128xbf16>, %pos: tensor<2x1xi64>) -> tensor<2x32x1x128xbf16> {
  %o = sgpu.attention %q, %kc, %kc positions(%pos : tensor<2x1xi64>) {causal, scale = 0.125 : f32, sgpu.config = #sgpu.attention_config<unroll = 1>} : tensor<2x32x1x128xbf16>, tensor<2x8x256x128xbf16>, tensor<2x8x256x128xbf16> -> tensor<2x32x1x128xbf16>
  return %o : tensor<2x32x1x128xbf16>
}
