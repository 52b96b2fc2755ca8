// sgpu.twell_pack and sgpu.twell_ffn become generated kernels: a transpose
// of the down projection (at bind time when Wd is an argument read only by
// consumers), a one-thread kernel clearing the fallback-row count (every
// run), the pack kernel (one block per row, a shuffle scan placing entries
// in column order, an atomic count of the overflowing rows) and
// the consumer kernel (one block per token, active neurons staged in
// shared memory, f32 output vectors in registers), over host-allocated
// buffers of the concrete !sgpu.twell form.
// RUN: sparse-opt %s -split-input-file -convert-sgpu-to-gpu="twell-pack=kernel" | FileCheck %s

// M = 16, F = 600, tile 256 (3 tiles, the last partial), compression 4
// (W = 64 words). Pack: 3 warps. Consumer, ungated, d = 64: 64 threads.
// CHECK-LABEL: func.func @ungated
// Wd is read only by the consumer: transposed once, at bind time, right at
// the function's entry (ceil(64/32) x ceil(600/32) = 38 tiles).
// CHECK: %[[WD:.*]] = bufferization.to_buffer %{{.*}} read_only : tensor<64x600xbf16> to memref<64x600xbf16>
// CHECK: %[[WDT:.*]] = memref.alloc() : memref<600x64xbf16>
// CHECK: gpu.launch_func @sgpu_kernels::@sgpu_twell_down_t_0 blocks in (%c38, %{{.*}}, %{{.*}}) threads in (%c256, %{{.*}}, %{{.*}}) args(%[[WD]] : memref<64x600xbf16>, %[[WDT]] : memref<600x64xbf16>) {sgpu.stage = "prepare"}
// CHECK: %[[H:.*]] = bufferization.to_buffer %{{.*}} read_only : tensor<16x600xbf16> to memref<16x600xbf16>
// CHECK: %[[WORDS:.*]] = memref.alloc() : memref<16x3x64xi32>
// CHECK: %[[FLAGS:.*]] = memref.alloc() : memref<16xi32>
// CHECK: %[[FB:.*]] = memref.alloc() : memref<16x600xbf16>
// The two counters are program stats: the fallback rows (out of M) and the
// nonzeros of H (out of M * F).
// CHECK: %[[ROWS:.*]] = memref.alloc() {sgpu.stat = "twell0.fallback_rows", sgpu.stat_total = 16 : i64} : memref<1xi32>
// CHECK: %[[ACTIVE:.*]] = memref.alloc() {sgpu.stat = "twell0.active_neurons", sgpu.stat_total = 9600 : i64} : memref<1xi64>
// CHECK: gpu.launch_func @sgpu_kernels::@sgpu_twell_clear_0 blocks in (%{{.*}}, %{{.*}}, %{{.*}}) threads in (%{{.*}}, %{{.*}}, %{{.*}}) args(%[[ROWS]] : memref<1xi32>, %[[ACTIVE]] : memref<1xi64>)
// CHECK-NOT: sgpu.stage
// CHECK: gpu.launch_func @sgpu_kernels::@sgpu_twell_pack_0 blocks in (%[[M:.*]], %{{.*}}, %{{.*}}) threads in (%[[T:.*]], %{{.*}}, %{{.*}}) args(%[[H]] : memref<16x600xbf16>, %[[WORDS]] : memref<16x3x64xi32>, %[[FLAGS]] : memref<16xi32>, %[[FB]] : memref<16x600xbf16>, %[[ROWS]] : memref<1xi32>, %[[ACTIVE]] : memref<1xi64>)
// CHECK: %[[Y:.*]] = memref.alloc() : memref<16x64xbf16>
// CHECK: gpu.launch_func @sgpu_kernels::@sgpu_twell_ffn_0 blocks in (%c16{{.*}}, %{{.*}}, %{{.*}}) threads in (%c128, %{{.*}}, %{{.*}}) args(%[[WORDS]] : memref<16x3x64xi32>, %[[FLAGS]] : memref<16xi32>, %[[FB]] : memref<16x600xbf16>, %[[WDT]] : memref<600x64xbf16>, %[[Y]] : memref<16x64xbf16>)
// CHECK-NOT: sgpu.stage
// CHECK: bufferization.to_tensor %[[Y]]
// CHECK-NOT: sgpu.twell
// CHECK: gpu.func @sgpu_twell_clear_0(%{{.*}}: memref<1xi32>, %{{.*}}: memref<1xi64>) kernel attributes {known_block_size = array<i32: 1, 1, 1>}
// CHECK: memref.store %{{.*}}, %{{.*}}[%{{.*}}] : memref<1xi32>
// CHECK: memref.store %{{.*}}, %{{.*}}[%{{.*}}] : memref<1xi64>
// CHECK: gpu.func @sgpu_twell_pack_0(%{{.*}}: memref<16x600xbf16>, %{{.*}}: memref<16x3x64xi32>, %{{.*}}: memref<16xi32>, %{{.*}}: memref<16x600xbf16>, %{{.*}}: memref<1xi32>, %{{.*}}: memref<1xi64>) workgroup(%{{.*}} : memref<2xi32, #gpu.address_space<workgroup>>) kernel attributes {known_block_size = array<i32: 96, 1, 1>}
// Each lane tests 8 columns of one 16-byte load (one chunk per 256-column
// tile); a shuffle scan of the lanes' counts ranks the entries, and the warp
// total comes from lane 31.
// CHECK: gpu.barrier
// CHECK: scf.for
// CHECK: vector.load %{{.*}} {alignment = 16 : i64} : memref<16x600xbf16>, vector<8xbf16>
// CHECK-COUNT-8: arith.cmpf une
// CHECK-COUNT-5: gpu.shuffle up
// CHECK: gpu.shuffle idx %{{.*}}, %c31_i32
// CHECK-COUNT-8: memref.store %{{.*}} : memref<16x3x64xi32>
// The row's count: a shared atomic per tile, one global atomic per row.
// CHECK: memref.atomic_rmw addi %{{.*}} : (i32, memref<2xi32, #gpu.address_space<workgroup>>) -> i32
// CHECK: gpu.barrier
// CHECK: memref.atomic_rmw addi %{{.*}} : (i32, memref<1xi32>) -> i32
// CHECK: memref.atomic_rmw addi %{{.*}} : (i64, memref<1xi64>) -> i64
// The fallback row is copied only when the row overflowed.
// CHECK: scf.if
// CHECK: scf.for
// CHECK-NEXT: vector.load %{{.*}} : memref<16x600xbf16>, vector<8xbf16>
// CHECK-NEXT: vector.store %{{.*}} : memref<16x600xbf16>, vector<8xbf16>
// Transpose: a 32 x 33 tile (padded rows).
// CHECK: gpu.func @sgpu_twell_down_t_0(%{{.*}}: memref<64x600xbf16>, %{{.*}}: memref<600x64xbf16>) workgroup(%{{.*}} : memref<1056xbf16, #gpu.address_space<workgroup>>) kernel attributes {known_block_size = array<i32: 256, 1, 1>}
// CHECK-COUNT-4: memref.store %{{.*}} : memref<1056xbf16, #gpu.address_space<workgroup>>
// CHECK: gpu.barrier
// CHECK-COUNT-4: memref.store %{{.*}} : memref<600x64xbf16>
// Consumer, d = 64: 8 vectors of 8 features, 4 warps (the minimum). The
// stage: 512 columns and values, the entry count.
// CHECK: gpu.func @sgpu_twell_ffn_0(%{{.*}}: memref<16x3x64xi32>, %{{.*}}: memref<16xi32>, %{{.*}}: memref<16x600xbf16>, %{{.*}}: memref<600x64xbf16>, %{{.*}}: memref<16x64xbf16>) workgroup(%{{.*}} : memref<512xi32, #gpu.address_space<workgroup>>, %{{.*}} : memref<512xf32, #gpu.address_space<workgroup>>, %{{.*}} : memref<1xi32, #gpu.address_space<workgroup>>) kernel attributes {known_block_size = array<i32: 128, 1, 1>}
// Groups: 2 fallback groups of 512 columns for a flagged row, else 1 group
// of all 3 tiles (3 x 63 entries fit the 512-entry stage).
// CHECK-DAG: %[[FBG:.*]] = arith.constant 2 : index
// CHECK-DAG: %[[PKG:.*]] = arith.constant 1 : index
// CHECK: %[[G:.*]] = arith.select %{{.*}}, %[[FBG]], %[[PKG]] : index
// CHECK: scf.for %{{.*}} = %{{.*}} to %[[G]] step %{{.*}} iter_args(%{{.*}} = %{{.*}}) -> (vector<8xf32>)
// Lane l's count word, loaded before the overflow branch.
// CHECK: memref.load %{{.*}} : memref<16x3x64xi32>
// CHECK: scf.if
// The fallback stage: columns of the dense row.
// CHECK: memref.load %{{.*}} : memref<16x600xbf16>
// CHECK: } else {
// The packed stage: every warp scans the tile counts and takes each tile's
// count and first place from its lane; no barrier before the copy.
// CHECK-COUNT-5: gpu.shuffle up
// CHECK-NOT: gpu.barrier
// CHECK: gpu.shuffle idx
// CHECK: gpu.shuffle idx
// CHECK-NOT: gpu.barrier
// CHECK: memref.load %{{.*}} : memref<16x3x64xi32>
// CHECK: arith.bitcast %{{.*}} : i16 to bf16
// CHECK: gpu.barrier
// Ungated: no dot products, straight to the accumulation over WdT rows,
// 4 entries per iteration (the 4 loads before the 4 FMAs).
// CHECK-NOT: gpu.shuffle xor
// CHECK: scf.for %{{.*}} step %c4
// CHECK-COUNT-4: vector.load %{{.*}} {alignment = 16 : i64} : memref<600x64xbf16>, vector<8xbf16>
// CHECK-COUNT-4: vector.fma %{{.*}} : vector<8xf32>
// CHECK: gpu.barrier
// Only threads 0..7 own an output vector.
// CHECK: arith.cmpi ult, %{{.*}}, %c8
// CHECK: arith.truncf %{{.*}} : vector<8xf32> to vector<8xbf16>
// CHECK: vector.store %{{.*}} {alignment = 16 : i64} : memref<16x64xbf16>, vector<8xbf16>
func.func @ungated(%h: tensor<16x600xbf16>, %wd: tensor<64x600xbf16>) -> tensor<16x64xbf16> {
  %p = sgpu.twell_pack %h : tensor<16x600xbf16> -> !sgpu.twell<16x600xbf16, #sgpu.twell<tile = 256, compression = 4>>
  %y = sgpu.twell_ffn %p, %wd : !sgpu.twell<16x600xbf16, #sgpu.twell<tile = 256, compression = 4>>, tensor<64x600xbf16> -> tensor<16x64xbf16>
  return %y : tensor<16x64xbf16>
}

// -----

// Gated, f16, d = 512 (64 vectors of 8, 128 threads). One pack feeds two
// consumers of the same Wd: one transpose (at bind time), one clear and one
// pack kernel, two consumer kernels. M = 8, F = 1024, tile 256: 4 tiles
// (4 warps), W = 256/8 = 32 words.
// CHECK-LABEL: func.func @gated
// CHECK: gpu.launch_func @sgpu_kernels::@sgpu_twell_down_t_0 {{.*}} {sgpu.stage = "prepare"}
// CHECK: memref.alloc() : memref<8x4x32xi32>
// CHECK: memref.alloc() {sgpu.stat = "twell0.fallback_rows", sgpu.stat_total = 8 : i64} : memref<1xi32>
// CHECK: gpu.launch_func @sgpu_kernels::@sgpu_twell_clear_0
// CHECK: gpu.launch_func @sgpu_kernels::@sgpu_twell_pack_0
// CHECK: gpu.launch_func @sgpu_kernels::@sgpu_twell_ffn_0
// CHECK: gpu.launch_func @sgpu_kernels::@sgpu_twell_ffn_1
// CHECK-NOT: gpu.launch_func
// CHECK: gpu.func @sgpu_twell_pack_0({{.*}}) workgroup({{.*}}) kernel attributes {known_block_size = array<i32: 128, 1, 1>}
// CHECK: gpu.func @sgpu_twell_ffn_0(%{{.*}}: memref<8x4x32xi32>, %{{.*}}: memref<8xi32>, %{{.*}}: memref<8x1024xf16>, %{{.*}}: memref<1024x512xf16>, %{{.*}}: memref<8x512xf16>, %{{.*}}: memref<1024x512xf16>, %{{.*}}: memref<8x512xf16>) workgroup({{.*}}) kernel attributes {known_block_size = array<i32: 128, 1, 1>}
// Gated: a warp per entry; two rounds of 16-byte loads of Wu[j] and X[m]
// per lane (64 vectors over 32 lanes), a vector reduction, then the warp's
// xor shuffles, and a warp barrier before lane 0 overwrites the coefficient
// every lane read.
// CHECK: gpu.barrier
// CHECK: vector.load %{{.*}} : memref<1024x512xf16>, vector<8xf16>
// CHECK: vector.load %{{.*}} : memref<8x512xf16>, vector<8xf16>
// CHECK: vector.load %{{.*}} : memref<1024x512xf16>, vector<8xf16>
// CHECK: vector.load %{{.*}} : memref<8x512xf16>, vector<8xf16>
// CHECK: vector.reduction <add>
// CHECK-COUNT-5: gpu.shuffle xor
// CHECK: nvvm.bar.warp.sync %c-1_i32
// CHECK: memref.store
// CHECK: gpu.barrier
// CHECK: vector.fma
// CHECK: gpu.func @sgpu_twell_ffn_1
// CHECK-NOT: gpu.shuffle xor
// CHECK: vector.fma
func.func @gated(%h: tensor<8x1024xf16>, %x: tensor<8x512xf16>, %wu: tensor<1024x512xf16>, %wd: tensor<512x1024xf16>) -> (tensor<8x512xf16>, tensor<8x512xf16>) {
  %p = sgpu.twell_pack %h : tensor<8x1024xf16> -> !sgpu.twell<8x1024xf16, #sgpu.twell<tile = 256, compression = 8>>
  %y = sgpu.twell_ffn %p, %wd up(%x, %wu : tensor<8x512xf16>, tensor<1024x512xf16>) : !sgpu.twell<8x1024xf16, #sgpu.twell<tile = 256, compression = 8>>, tensor<512x1024xf16> -> tensor<8x512xf16>
  %z = sgpu.twell_ffn %p, %wd : !sgpu.twell<8x1024xf16, #sgpu.twell<tile = 256, compression = 8>>, tensor<512x1024xf16> -> tensor<8x512xf16>
  return %y, %z : tensor<8x512xf16>, tensor<8x512xf16>
}
