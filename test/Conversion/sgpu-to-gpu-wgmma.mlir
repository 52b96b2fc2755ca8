// RUN: sparse-opt %s -split-input-file -convert-sgpu-to-gpu="kernel=wgmma" | FileCheck %s

// The warpgroup kernel (kernel=wgmma, sm_90a): K % 8 == 0, so tiles go to
// shared memory with cp.async (5 stages of dynamic shared memory, 4 tiles
// ahead). M = 70 -> two 64-token blocks; N = 20 -> one 64-feature block
// (padded rows masked); K = 40 -> one 64-wide k-tile (the second k32 step of
// the weight padding is masked).
// CHECK-LABEL: module attributes {gpu.container_module}
// CHECK: func.func @spmm
// CHECK-DAG: %[[C2:.*]] = arith.constant 2 : index
// CHECK-DAG: %[[C128:.*]] = arith.constant 128 : index
// 5 x (4096 B A + 8192 B B + 1024 B metadata)
// CHECK-DAG: %[[SMEM:.*]] = arith.constant 66560 : i32
// CHECK: gpu.launch_func @sgpu_kernels::@sgpu_spmm_0 blocks in (%[[C2]], %{{.*}}, %{{.*}}) threads in (%[[C128]], %{{.*}}, %{{.*}}) dynamic_shared_memory_size %[[SMEM]] args(%{{.*}} : memref<70x40xf16>, %{{.*}} : memref<32x32xf16>, %{{.*}} : memref<64xi32>, %{{.*}} : memref<70x20xf16>)
// CHECK: gpu.module @sgpu_kernels [#nvvm.target<O = 3, chip = "sm_90a", features = "+ptx85">]
// CHECK: gpu.func @sgpu_spmm_0({{.*}}) kernel attributes {known_block_size = array<i32: 128, 1, 1>}
// CHECK: gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
// Prologue: four commit groups; the one tile is 2 A vectors, 4 B vectors and
// 2 metadata words per thread, the other groups are empty.
// CHECK-COUNT-2: llvm.inline_asm has_side_effects "cp.async.cg.shared.global [$0], [$1], 16, $2;", "l,l,r,~{memory}"
// CHECK-COUNT-4: "cp.async.cg.shared.global [$0], [$1], 16, $2;"
// CHECK-COUNT-2: llvm.inline_asm has_side_effects "cp.async.ca.shared.global [$0], [$1], 4, $2;", "l,l,r,~{memory}"
// CHECK-COUNT-4: "cp.async.commit_group;"
// CHECK-NOT: cp.async.c{{[ag]}}.shared
// CHECK: scf.for
// CHECK: "cp.async.wait_group 3;"
// CHECK-NEXT: "fence.proxy.async.shared::cta;"
// CHECK-NEXT: gpu.barrier
// CHECK: "cp.async.commit_group;"
// CHECK: memref.load %{{.*}} : memref<16640xi32, #gpu.address_space<workgroup>>
// CHECK: llvm.inline_asm has_side_effects "wgmma.fence.sync.aligned;"
// CHECK: llvm.inline_asm has_side_effects "wgmma.mma_async.sp.sync.aligned.m64n64k32.f32.f16.f16 {$0, $1, {{.*}}, $31}, $32, $33, $34, 0, 1, 1, 1, 0, 0;", "=f,{{.*}},=f,l,l,r,0,1,{{.*}},31,~{memory}"
// CHECK-SAME: (i64, i64, i32, f32
// CHECK-SAME: -> !llvm.struct<(f32,
// CHECK: "wgmma.mma_async.sp.sync.aligned.m64n64k32.f32.f16.f16
// CHECK-NOT: wgmma.mma_async
// CHECK: "wgmma.commit_group.sync.aligned;"
// No group stays in flight across stages; the accumulators pass through the
// wait.
// CHECK: "wgmma.wait_group.sync.aligned 0;", "=f,{{.*}},=f,0,1,{{.*}},31,~{memory}"
// CHECK: scf.yield
// CHECK: "cp.async.wait_group 0;"
// The epilogue masks the token and feature tails.
// CHECK: arith.truncf %{{.*}} : f32 to f16
// CHECK: scf.if
// CHECK: memref.store %{{.*}} : memref<70x20xf16>
func.func @spmm(%x: tensor<70x40xf16>, %v: tensor<32x32xf16>, %m: tensor<64xi32>) -> tensor<70x20xf16> {
  %w = sgpu.assemble %v, %m : tensor<32x32xf16>, tensor<64xi32> -> !sgpu.compressed<20x40xf16, #sgpu.nm<2:4>>
  %y = sgpu.spmm %x, %w : tensor<70x40xf16>, !sgpu.compressed<20x40xf16, #sgpu.nm<2:4>> -> tensor<70x20xf16>
  return %y : tensor<70x20xf16>
}

// -----

// bf16, M > 128: 128-token blocks (m64n128k32, 64 accumulators per thread),
// full tiles (no masks), ReLU, f32 output.
// CHECK-LABEL: module attributes {gpu.container_module}
// 5 x (4096 + 16384 + 1024) bytes
// CHECK-DAG: %[[SMEM:.*]] = arith.constant 107520 : i32
// CHECK: gpu.launch_func @sgpu_kernels::@sgpu_spmm_0 blocks in (%c2{{.*}}, %c2{{.*}}, %c1{{.*}}) threads in (%c128, {{.*}} dynamic_shared_memory_size %[[SMEM]]
// CHECK: gpu.func @sgpu_spmm_0
// Two k-tiles: the prologue's third and fourth commit groups are empty.
// CHECK-COUNT-8: "cp.async.cg.shared.global [$0], [$1], 16, $2;"
// CHECK-COUNT-2: "cp.async.ca.shared.global
// CHECK: "cp.async.commit_group;"
// CHECK-COUNT-8: "cp.async.cg.shared.global
// CHECK-COUNT-2: "cp.async.ca.shared.global
// CHECK: "cp.async.commit_group;"
// CHECK-NOT: "cp.async.c{{[ag]}}.shared
// CHECK: "cp.async.commit_group;"
// CHECK-NOT: "cp.async.c{{[ag]}}.shared
// CHECK: "cp.async.commit_group;"
// CHECK: scf.for
// CHECK: "wgmma.mma_async.sp.sync.aligned.m64n128k32.f32.bf16.bf16 {$0, {{.*}}, $63}, $64, $65, $66, 0, 1, 1, 1, 0, 0;"
// CHECK: arith.maximumf
// CHECK-NOT: arith.truncf
// CHECK-NOT: scf.if
// CHECK: memref.store %{{.*}} : memref<256x128xf32>
func.func @spmm_bf16(%x: tensor<256x128xbf16>, %v: tensor<128x64xbf16>, %m: tensor<512xi32>) -> tensor<256x128xf32> {
  %w = sgpu.assemble %v, %m : tensor<128x64xbf16>, tensor<512xi32> -> !sgpu.compressed<128x128xbf16, #sgpu.nm<2:4>>
  %y = sgpu.spmm %x, %w {activation = #sgpu.activation<relu>} : tensor<256x128xbf16>, !sgpu.compressed<128x128xbf16, #sgpu.nm<2:4>> -> tensor<256x128xf32>
  return %y : tensor<256x128xf32>
}

// -----

// Odd K: activation rows are not 16-byte aligned, so tiles go global ->
// registers -> shared memory (two static stages, ping-pong) and the K tail
// is loaded as masked scalars.
// CHECK-LABEL: module attributes {gpu.container_module}
// CHECK: gpu.launch_func @sgpu_kernels::@sgpu_spmm_0 blocks in ({{[^)]*}}) threads in ({{[^)]*}}) args(
// CHECK: gpu.func @sgpu_spmm_0({{.*}}) workgroup(%{{.*}} : memref<4096xf16, #gpu.address_space<workgroup>> {llvm.align = 128 : i64}, %{{.*}} : memref<8192xf16, #gpu.address_space<workgroup>> {llvm.align = 128 : i64}, %{{.*}} : memref<512xi32, #gpu.address_space<workgroup>> {llvm.align = 128 : i64})
// CHECK: memref.load %{{.*}} : memref<8x37xf16>
// CHECK: vector.from_elements
// CHECK: vector.store %{{.*}} {alignment = 16 : i64} : memref<4096xf16, #gpu.address_space<workgroup>>, vector<8xf16>
// CHECK: "fence.proxy.async.shared::cta;"
// CHECK: gpu.barrier
// CHECK: scf.for
// CHECK: "wgmma.fence.sync.aligned;"
// CHECK: "wgmma.mma_async.sp.sync.aligned.m64n64k32.f32.f16.f16
// CHECK: "wgmma.commit_group.sync.aligned;"
// CHECK: "wgmma.wait_group.sync.aligned 0;"
// CHECK: vector.store
// CHECK: "fence.proxy.async.shared::cta;"
// CHECK: gpu.barrier
// CHECK: scf.yield
// CHECK-NOT: cp.async
// CHECK: // -----
func.func @spmm_odd_k(%x: tensor<8x37xf16>, %v: tensor<16x32xf16>, %m: tensor<32xi32>) -> tensor<8x16xf16> {
  %w = sgpu.assemble %v, %m : tensor<16x32xf16>, tensor<32xi32> -> !sgpu.compressed<16x37xf16, #sgpu.nm<2:4>>
  %y = sgpu.spmm %x, %w : tensor<8x37xf16>, !sgpu.compressed<16x37xf16, #sgpu.nm<2:4>> -> tensor<8x16xf16>
  return %y : tensor<8x16xf16>
}

// -----

// Chips and PTX ISA versions that cannot express wgmma.mma_async.sp are
// diagnostics; so is an unknown kernel name. The default (kernel=mma) is
// unchanged.
// RUN: not sparse-opt %s -split-input-file -convert-sgpu-to-gpu="kernel=wgmma chip=sm_80 features=+ptx86" 2>&1 | FileCheck %s --check-prefix=SM80
// RUN: not sparse-opt %s -split-input-file -convert-sgpu-to-gpu="kernel=wgmma chip=sm_90" 2>&1 | FileCheck %s --check-prefix=SM90
// RUN: not sparse-opt %s -split-input-file -convert-sgpu-to-gpu="kernel=wgmma features=+ptx81" 2>&1 | FileCheck %s --check-prefix=PTX81
// RUN: not sparse-opt %s -split-input-file -convert-sgpu-to-gpu="kernel=tma" 2>&1 | FileCheck %s --check-prefix=BADKERNEL
// RUN: not sparse-opt %s -split-input-file --sgpu-compile="kernel=wgmma chip=sm_80 features=+ptx86" 2>&1 | FileCheck %s --check-prefix=SM80
// RUN: sparse-opt %s -split-input-file -convert-sgpu-to-gpu | FileCheck %s --check-prefix=DEFAULT
// SM80: error: sgpu.spmm with kernel=wgmma uses wgmma.mma_async.sp, which needs chip sm_90a; chip 'sm_80' has none (use kernel=mma)
// SM90: error: sgpu.spmm with kernel=wgmma uses wgmma.mma_async.sp, which needs chip sm_90a; chip 'sm_90' has none (use kernel=mma)
// PTX81: error: sgpu.spmm with kernel=wgmma uses wgmma.mma_async.sp, which needs PTX ISA 8.2; features '+ptx81' give PTX ISA 8.1 (use features=+ptx82 or later)
// BADKERNEL: error: unknown kernel 'tma'; expected mma or wgmma
// DEFAULT-LABEL: func.func @spmm_target
// DEFAULT-NOT: wgmma
// DEFAULT: mma.sp::ordered_metadata.sync.aligned.m16n8k32
// DEFAULT-NOT: wgmma
func.func @spmm_target(%x: tensor<8x32xf16>, %v: tensor<16x16xf16>, %m: tensor<16xi32>) -> tensor<8x16xf16> {
  %w = sgpu.assemble %v, %m : tensor<16x16xf16>, tensor<16xi32> -> !sgpu.compressed<16x32xf16, #sgpu.nm<2:4>>
  %y = sgpu.spmm %x, %w : tensor<8x32xf16>, !sgpu.compressed<16x32xf16, #sgpu.nm<2:4>> -> tensor<8x16xf16>
  return %y : tensor<8x16xf16>
}
