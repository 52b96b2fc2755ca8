// sgpu.twell_pack and sgpu.twell_ffn become generated kernels: a one-thread
// kernel clearing the fallback-row count (every run), the pack kernel (one
// block per row, ballot + popcount placing entries in column order, an
// atomic count of the overflowing rows) and the consumer kernel (one block
// per token, f32 output row in shared memory), over host-allocated buffers
// of the concrete !sgpu.twell form.
// RUN: sparse-opt %s -split-input-file -convert-sgpu-to-gpu | FileCheck %s

// M = 16, F = 600, tile 256 (3 tiles, the last partial), compression 4
// (W = 64 words). Pack: 3 warps. Consumer, ungated, d = 64: 64 threads.
// CHECK-LABEL: func.func @ungated
// CHECK: %[[H:.*]] = bufferization.to_buffer %{{.*}} read_only : tensor<16x600xbf16> to memref<16x600xbf16>
// CHECK: %[[WORDS:.*]] = memref.alloc() : memref<16x3x64xi32>
// CHECK: %[[FLAGS:.*]] = memref.alloc() : memref<16xi32>
// CHECK: %[[FB:.*]] = memref.alloc() : memref<16x600xbf16>
// CHECK: %[[ROWS:.*]] = memref.alloc() : memref<1xi32>
// CHECK: gpu.launch_func @sgpu_kernels::@sgpu_twell_clear_0 blocks in (%{{.*}}, %{{.*}}, %{{.*}}) threads in (%{{.*}}, %{{.*}}, %{{.*}}) args(%[[ROWS]] : memref<1xi32>)
// CHECK: gpu.launch_func @sgpu_kernels::@sgpu_twell_pack_0 blocks in (%[[M:.*]], %{{.*}}, %{{.*}}) threads in (%[[T:.*]], %{{.*}}, %{{.*}}) args(%[[H]] : memref<16x600xbf16>, %[[WORDS]] : memref<16x3x64xi32>, %[[FLAGS]] : memref<16xi32>, %[[FB]] : memref<16x600xbf16>, %[[ROWS]] : memref<1xi32>)
// CHECK: %[[WD:.*]] = bufferization.to_buffer %{{.*}} read_only : tensor<64x600xbf16> to memref<64x600xbf16>
// CHECK: %[[Y:.*]] = memref.alloc() : memref<16x64xbf16>
// CHECK: gpu.launch_func @sgpu_kernels::@sgpu_twell_ffn_0 blocks in (%{{.*}}, %{{.*}}, %{{.*}}) threads in (%{{.*}}, %{{.*}}, %{{.*}}) args(%[[WORDS]] : memref<16x3x64xi32>, %[[FLAGS]] : memref<16xi32>, %[[FB]] : memref<16x600xbf16>, %[[WD]] : memref<64x600xbf16>, %[[Y]] : memref<16x64xbf16>)
// CHECK: bufferization.to_tensor %[[Y]]
// CHECK-NOT: sgpu.twell
// CHECK: gpu.func @sgpu_twell_clear_0(%{{.*}}: memref<1xi32>) kernel attributes {known_block_size = array<i32: 1, 1, 1>}
// CHECK: memref.store %{{.*}}, %{{.*}}[%{{.*}}] : memref<1xi32>
// CHECK: gpu.func @sgpu_twell_pack_0(%{{.*}}: memref<16x600xbf16>, %{{.*}}: memref<16x3x64xi32>, %{{.*}}: memref<16xi32>, %{{.*}}: memref<16x600xbf16>, %{{.*}}: memref<1xi32>) workgroup(%{{.*}} : memref<1xi32, #gpu.address_space<workgroup>>) kernel attributes {known_block_size = array<i32: 96, 1, 1>}
// CHECK: gpu.barrier
// CHECK: scf.for
// CHECK: arith.cmpf une
// CHECK: nvvm.vote.sync ballot
// CHECK: llvm.intr.ctpop
// CHECK: memref.store %{{.*}} : memref<16x3x64xi32>
// CHECK: llvm.intr.ctpop
// CHECK: gpu.barrier
// CHECK: memref.atomic_rmw addi
// CHECK: arith.select
// CHECK: gpu.func @sgpu_twell_ffn_0(%{{.*}}: memref<16x3x64xi32>, %{{.*}}: memref<16xi32>, %{{.*}}: memref<16x600xbf16>, %{{.*}}: memref<64x600xbf16>, %{{.*}}: memref<16x64xbf16>) workgroup(%{{.*}} : memref<64xf32, #gpu.address_space<workgroup>>) kernel attributes {known_block_size = array<i32: 64, 1, 1>}
// CHECK-NOT: gpu.shuffle
// CHECK: arith.truncf %{{.*}} : f32 to bf16
func.func @ungated(%h: tensor<16x600xbf16>, %wd: tensor<64x600xbf16>) -> tensor<16x64xbf16> {
  %p = sgpu.twell_pack %h : tensor<16x600xbf16> -> !sgpu.twell<16x600xbf16, #sgpu.twell<tile = 256, compression = 4>>
  %y = sgpu.twell_ffn %p, %wd : !sgpu.twell<16x600xbf16, #sgpu.twell<tile = 256, compression = 4>>, tensor<64x600xbf16> -> tensor<16x64xbf16>
  return %y : tensor<16x64xbf16>
}

// -----

// Gated, f16, d = 512 (256 threads, 8 warps): the dot product X[m] . Wu[j]
// is reduced by the block (shuffles, warp sums in shared memory). One pack
// feeds two consumers: one clear and one pack kernel, two consumer kernels.
// M = 8, F = 1024, tile 256: 4 tiles (4 warps), W = 256/8 = 32 words.
// CHECK-LABEL: func.func @gated
// CHECK: memref.alloc() : memref<8x4x32xi32>
// CHECK: memref.alloc() : memref<1xi32>
// CHECK: gpu.launch_func @sgpu_kernels::@sgpu_twell_clear_0
// CHECK: gpu.launch_func @sgpu_kernels::@sgpu_twell_pack_0
// CHECK: gpu.launch_func @sgpu_kernels::@sgpu_twell_ffn_0
// CHECK: gpu.launch_func @sgpu_kernels::@sgpu_twell_ffn_1
// CHECK-NOT: gpu.launch_func
// CHECK: gpu.func @sgpu_twell_pack_0({{.*}}) workgroup({{.*}}) kernel attributes {known_block_size = array<i32: 128, 1, 1>}
// CHECK: gpu.func @sgpu_twell_ffn_0(%{{.*}}: memref<8x4x32xi32>, %{{.*}}: memref<8xi32>, %{{.*}}: memref<8x1024xf16>, %{{.*}}: memref<512x1024xf16>, %{{.*}}: memref<8x512xf16>, %{{.*}}: memref<1024x512xf16>, %{{.*}}: memref<8x512xf16>) workgroup(%{{.*}} : memref<512xf32, #gpu.address_space<workgroup>>, %{{.*}} : memref<8xf32, #gpu.address_space<workgroup>>) kernel attributes {known_block_size = array<i32: 256, 1, 1>}
// CHECK-COUNT-5: gpu.shuffle xor
// CHECK: gpu.barrier
// CHECK-COUNT-5: gpu.shuffle xor
// CHECK: gpu.barrier
// CHECK: gpu.func @sgpu_twell_ffn_1
func.func @gated(%h: tensor<8x1024xf16>, %x: tensor<8x512xf16>, %wu: tensor<1024x512xf16>, %wd: tensor<512x1024xf16>) -> (tensor<8x512xf16>, tensor<8x512xf16>) {
  %p = sgpu.twell_pack %h : tensor<8x1024xf16> -> !sgpu.twell<8x1024xf16, #sgpu.twell<tile = 256, compression = 8>>
  %y = sgpu.twell_ffn %p, %wd up(%x, %wu : tensor<8x512xf16>, tensor<1024x512xf16>) : !sgpu.twell<8x1024xf16, #sgpu.twell<tile = 256, compression = 8>>, tensor<512x1024xf16> -> tensor<8x512xf16>
  %z = sgpu.twell_ffn %p, %wd : !sgpu.twell<8x1024xf16, #sgpu.twell<tile = 256, compression = 8>>, tensor<512x1024xf16> -> tensor<8x512xf16>
  return %y, %z : tensor<8x512xf16>, tensor<8x512xf16>
}
