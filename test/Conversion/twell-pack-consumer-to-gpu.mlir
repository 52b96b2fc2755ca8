// The TwELL pack fused into its consumer (convert-sgpu-to-gpu
// twell-pack=consumer): no pack kernel and no packed form; the consumer
// reads H, counts each row's nonzeros (a warp scan and the warps' counts in
// shared memory place the entries), adds them to the nonzero stat and runs
// the gated dot products and the down accumulation as the packed
// consumer. Where the pack cannot be fused, a remark says why and the pack
// kernel stays.
// RUN: sparse-opt %s -split-input-file -convert-sgpu-to-gpu="twell-pack=consumer" -verify-diagnostics | FileCheck %s
// RUN: sparse-opt %s -split-input-file -convert-sgpu-to-gpu | FileCheck %s --check-prefix=KERNEL
// RUN: not sparse-opt %s -split-input-file -convert-sgpu-to-gpu="twell-pack=h" 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: unknown twell-pack 'h'; expected auto, kernel or consumer

// M = 16, F = 1024 (16-byte vectors of H: one chunk of 8 x 128 x 1 columns),
// d = 64, gated.
// CHECK-LABEL: func.func @gated
// CHECK: %[[H:.*]] = bufferization.to_buffer %{{.*}} read_only : tensor<16x1024xbf16> to memref<16x1024xbf16>
// CHECK: %[[ROWS:.*]] = memref.alloc() {sgpu.stat = "twell0.fallback_rows", sgpu.stat_total = 16 : i64} : memref<1xi32>
// CHECK: %[[ACTIVE:.*]] = memref.alloc() {sgpu.stat = "twell0.active_neurons", sgpu.stat_total = 16384 : i64} : memref<1xi64>
// CHECK: gpu.launch_func @sgpu_kernels::@sgpu_twell_clear_0 {{.*}} args(%[[ROWS]] : memref<1xi32>, %[[ACTIVE]] : memref<1xi64>)
// CHECK-NOT: sgpu_twell_pack_0
// CHECK: gpu.launch_func @sgpu_kernels::@sgpu_twell_ffn_0 blocks in (%c16{{.*}}, %{{.*}}, %{{.*}}) threads in (%c128{{.*}}, %{{.*}}, %{{.*}}) args(%[[H]] : memref<16x1024xbf16>, %{{.*}} : memref<1024x64xbf16>, %{{.*}} : memref<16x64xbf16>, %{{.*}} : memref<1024x64xbf16>, %{{.*}} : memref<16x64xbf16>, %[[ACTIVE]] : memref<1xi64>)
// The kernel: the stage (cols, vals, count) and the warps' counts (16 bytes apart).
// CHECK: gpu.func @sgpu_twell_ffn_0(%[[KH:.*]]: memref<16x1024xbf16>, {{.*}}, %[[KACT:.*]]: memref<1xi64>) workgroup(%{{.*}} : memref<{{[0-9]+}}xi32, #gpu.address_space<workgroup>>, %{{.*}} : memref<{{[0-9]+}}xf32, #gpu.address_space<workgroup>>, %{{.*}} : memref<1xi32, #gpu.address_space<workgroup>>, %[[WC:.*]] : memref<16xi32, #gpu.address_space<workgroup>>)
// Counting: 16-byte vectors of H tested as 32-bit words.
// CHECK: vector.load %[[KH]]
// CHECK: vector.bitcast %{{.*}} : vector<8xbf16> to vector<4xi32>
// CHECK: arith.constant 32767 : i32
// CHECK: memref.store %{{.*}}, %[[WC]]
// CHECK: gpu.barrier
// Placing: the vectors again, the entries in range stored in the stage.
// CHECK: scf.for
// CHECK: vector.load %[[KH]]
// CHECK: arith.cmpf une
// The row's count, once per row.
// CHECK: memref.atomic_rmw addi %{{.*}}, %[[KACT]]
// KERNEL-LABEL: func.func @gated
// KERNEL: gpu.launch_func @sgpu_kernels::@sgpu_twell_pack_0
func.func @gated(%h: tensor<16x1024xbf16>, %x: tensor<16x64xbf16>, %wu: tensor<1024x64xbf16>,
                 %wd: tensor<64x1024xbf16>) -> tensor<16x64xbf16> {
  %p = sgpu.twell_pack %h : tensor<16x1024xbf16> -> !sgpu.twell<16x1024xbf16, #sgpu.twell<tile = 256, compression = 4>>
  %y = sgpu.twell_ffn %p, %wd up(%x, %wu : tensor<16x64xbf16>, tensor<1024x64xbf16>) : !sgpu.twell<16x1024xbf16, #sgpu.twell<tile = 256, compression = 4>>, tensor<64x1024xbf16> -> tensor<16x64xbf16>
  return %y : tensor<16x64xbf16>
}

// -----

// Two consumers of one pack: the pack kernel stays.
// CHECK-LABEL: func.func @shared
// CHECK: gpu.launch_func @sgpu_kernels::@sgpu_twell_pack_0
func.func @shared(%h: tensor<16x1024xbf16>, %wa: tensor<64x1024xbf16>,
                  %wb: tensor<64x1024xbf16>) -> (tensor<16x64xbf16>, tensor<16x64xbf16>) {
  // expected-remark @+1 {{TwELL pack: a pack kernel, not fused into the consumer: it has more than one consumer}}
  %p = sgpu.twell_pack %h : tensor<16x1024xbf16> -> !sgpu.twell<16x1024xbf16, #sgpu.twell<tile = 256, compression = 4>>
  %a = sgpu.twell_ffn %p, %wa : !sgpu.twell<16x1024xbf16, #sgpu.twell<tile = 256, compression = 4>>, tensor<64x1024xbf16> -> tensor<16x64xbf16>
  %b = sgpu.twell_ffn %p, %wb : !sgpu.twell<16x1024xbf16, #sgpu.twell<tile = 256, compression = 4>>, tensor<64x1024xbf16> -> tensor<16x64xbf16>
  return %a, %b : tensor<16x64xbf16>, tensor<16x64xbf16>
}

// -----

// A consumer in passes keeps the pack kernel.
// CHECK-LABEL: func.func @large
// CHECK: gpu.launch_func @sgpu_kernels::@sgpu_twell_pack_0
func.func @large(%h: tensor<16x14336xbf16>, %x: tensor<16x2048xbf16>, %wu: tensor<14336x2048xbf16>,
                 %wd: tensor<2048x14336xbf16>) -> tensor<16x2048xbf16> {
  // expected-remark @+1 {{TwELL pack: a pack kernel, not fused into the consumer: its consumer runs in passes}}
  %p = sgpu.twell_pack %h : tensor<16x14336xbf16> -> !sgpu.twell<16x14336xbf16, #sgpu.twell<tile = 256, compression = 4>>
  %y = sgpu.twell_ffn %p, %wd up(%x, %wu : tensor<16x2048xbf16>, tensor<14336x2048xbf16>) : !sgpu.twell<16x14336xbf16, #sgpu.twell<tile = 256, compression = 4>>, tensor<2048x14336xbf16> -> tensor<16x2048xbf16>
  return %y : tensor<16x2048xbf16>
}

// -----

// F = 1020 is not a multiple of 8 (the consumer's 16-byte vectors of H):
// the pack kernel stays.
// CHECK-LABEL: func.func @narrow
// CHECK: gpu.launch_func @sgpu_kernels::@sgpu_twell_pack_0
// KERNEL-LABEL: func.func @narrow
func.func @narrow(%h: tensor<16x1020xbf16>, %wd: tensor<64x1020xbf16>) -> tensor<16x64xbf16> {
  // expected-remark @+1 {{TwELL pack: a pack kernel, not fused into the consumer: F is not a multiple of 8 (the consumer reads H in 16-byte vectors)}}
  %p = sgpu.twell_pack %h : tensor<16x1020xbf16> -> !sgpu.twell<16x1020xbf16, #sgpu.twell<tile = 256, compression = 4>>
  %y = sgpu.twell_ffn %p, %wd : !sgpu.twell<16x1020xbf16, #sgpu.twell<tile = 256, compression = 4>>, tensor<64x1020xbf16> -> tensor<16x64xbf16>
  return %y : tensor<16x64xbf16>
}

// -----

// F = 8200 is over the 8 * 128 * 8 columns that the consumer's 128
// threads scan: the pack kernel stays.
// CHECK-LABEL: func.func @wide_row
// CHECK: gpu.launch_func @sgpu_kernels::@sgpu_twell_pack_0
// KERNEL-LABEL: func.func @wide_row
func.func @wide_row(%h: tensor<16x8200xbf16>, %wd: tensor<64x8200xbf16>) -> tensor<16x64xbf16> {
  // expected-remark @+1 {{TwELL pack: a pack kernel, not fused into the consumer: F = 8200 is over the 8192 columns the consumer's threads scan}}
  %p = sgpu.twell_pack %h : tensor<16x8200xbf16> -> !sgpu.twell<16x8200xbf16, #sgpu.twell<tile = 256, compression = 4>>
  %y = sgpu.twell_ffn %p, %wd : !sgpu.twell<16x8200xbf16, #sgpu.twell<tile = 256, compression = 4>>, tensor<64x8200xbf16> -> tensor<16x64xbf16>
  return %y : tensor<16x64xbf16>
}
