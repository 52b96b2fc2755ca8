// RUN: sparse-opt %s -split-input-file -convert-sgpu-to-gpu="kernel=wgmma cluster=1" | FileCheck %s

// The warpgroup kernel (kernel=wgmma, sm_90a; cluster=1: single blocks,
// sgpu-to-gpu-cluster.mlir has the pairs) with K % 8 == 0: the
// warp-specialized TMA kernel. M = 70 -> 128-token tile table start, halved
// to 64 (too few blocks), so two token blocks; N = 20 -> one 128-feature
// block (the TMA box reads zeros past the padded rows); K = 40 -> one
// 64-wide k-tile, so one stage; its second k32 step is past the weight and
// gets the empty metadata encoding (0x44444444).
// CHECK-LABEL: module attributes {gpu.container_module}
// CHECK: func.func @spmm
// CHECK: %[[X:.*]] = bufferization.to_buffer %arg0 read_only : tensor<70x40xf16> to memref<70x40xf16>
// CHECK: %[[V:.*]] = bufferization.to_buffer %arg1 read_only
// CHECK: %[[E:.*]] = bufferization.to_buffer %arg2 read_only
// CHECK: %[[E2:.*]] = memref.expand_shape %[[E]] {{\[\[}}0, 1]] output_shape [2, 32] : memref<64xi32> into memref<2x32xi32>
// CHECK: %[[TX:.*]] = sgpu.tensor_map %[[X]] box [64, 64] swizzle 128 : memref<70x40xf16> -> !llvm.ptr
// CHECK: %[[TV:.*]] = sgpu.tensor_map %[[V]] box [128, 32] swizzle 64 : memref<32x32xf16> -> !llvm.ptr
// CHECK: %[[TE:.*]] = sgpu.tensor_map %[[E2]] box [8, 32] swizzle 0 : memref<2x32xi32> -> !llvm.ptr
// 1 stage x (8192 A + 8192 B + 1024 E) + 16 B of barriers + 1024 B slack;
// a one-dimensional grid of 2 x 1 blocks.
// CHECK-DAG: %[[SMEM:.*]] = arith.constant 18448 : i32
// CHECK-DAG: %[[C384:.*]] = arith.constant 384 : index
// CHECK-DAG: %[[C2:.*]] = arith.constant 2 : index
// CHECK: gpu.launch_func @sgpu_kernels::@sgpu_spmm_0 blocks in (%[[C2]], %{{.*}}, %{{.*}}) threads in (%[[C384]], %{{.*}}, %{{.*}}) dynamic_shared_memory_size %[[SMEM]] args(%[[TX]] : !llvm.ptr, %[[TV]] : !llvm.ptr, %[[TE]] : !llvm.ptr, %{{.*}} : memref<70x20xf16>)
// CHECK: gpu.module @sgpu_kernels [#nvvm.target<O = 3, chip = "sm_90a", features = "+ptx85">]
// CHECK: gpu.func @sgpu_spmm_0(%{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: memref<70x20xf16>) kernel attributes {known_block_size = array<i32: 384, 1, 1>, nvvm.minctasm = 1 : i32, sgpu.tensor_map_args = array<i64: 0, 1, 2>}
// CHECK: %[[BID:.*]] = gpu.block_id x
// CHECK: gpu.dynamic_shared_memory
// Thread 0 initializes the stage's full (1 arrival) and empty (8 consumer
// warps) barriers.
// CHECK: "mbarrier.init.shared::cta.b64 [$0], $1;"
// CHECK: "mbarrier.init.shared::cta.b64 [$0], $1;"
// CHECK-NOT: mbarrier.init
// CHECK: "fence.mbarrier_init.release.cluster;"
// CHECK: gpu.barrier
// The producer warpgroup. It walks the block's output tiles (here the
// grid has one block per tile, fixed: 2 tiles, 2 blocks), each in the
// grouped order: 8 token blocks per group, feature blocks fastest.
// CHECK: "setmaxnreg.dec.sync.aligned.u32 40;"
// CHECK-COUNT-3: "prefetch.tensormap [$0];"
// CHECK: scf.for %[[TILE:.*]] = %[[BID]] to %c2{{.*}} step %c2
// CHECK: arith.remui %[[TILE]]
// CHECK: arith.minui
// CHECK: scf.for
// CHECK: mbarrier.try_wait.parity.shared::cta.b64
// CHECK: "mbarrier.arrive.expect_tx.shared::cta.b64 _, [$0], $1;"
// CHECK-COUNT-3: "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [$0], [$1, {$2, $3}], [$4];", "r,l,r,r,r,~{memory}"
// The consumer warpgroups: one group in flight; the k-loop runs tiles in
// pairs (none here: one tile), then the odd last tile; each tile's wait
// takes the in-flight group's metadata words (r, r) to keep them allocated.
// CHECK: "setmaxnreg.inc.sync.aligned.u32 232;"
// CHECK: scf.for %{{.*}} = %{{.*}} to %c0{{.*}} step
// CHECK: scf.yield
// CHECK: mbarrier.try_wait.parity.shared::cta.b64
// CHECK: memref.load
// CHECK: arith.select
// CHECK: "wgmma.fence.sync.aligned;"
// CHECK: "wgmma.mma_async.sp.sync.aligned.m64n64k32.f32.f16.f16 {$0, {{.*}}, $31}, $32, $33, $34, 0, 1, 1, 1, 0, 0;"
// CHECK: "wgmma.mma_async.sp.sync.aligned.m64n64k32.f32.f16.f16
// CHECK: "wgmma.commit_group.sync.aligned;"
// CHECK: "wgmma.wait_group.sync.aligned 1;", "=f,{{.*}},=f,r,r,0,1,{{.*}},31,~{memory}"
// CHECK: scf.if
// CHECK: "mbarrier.arrive.shared::cta.b64 _, [$0];"
// CHECK: "wgmma.wait_group.sync.aligned 0;", "=f,{{.*}},=f,r,r,0,1,{{.*}},31,~{memory}"
// The epilogue gathers adjacent features (shuffles), then stores them in
// pairs, masking the token and feature tails.
// CHECK: gpu.shuffle idx
// CHECK: arith.truncf %{{.*}} : f32 to f16
// CHECK: vector.from_elements %{{.*}}, %{{.*}} : vector<2xf16>
// CHECK: scf.if
// CHECK: vector.store %{{.*}} {alignment = 4 : i64} : memref<70x20xf16>, vector<2xf16>
func.func @spmm(%x: tensor<70x40xf16>, %v: tensor<32x32xf16>, %m: tensor<64xi32>) -> tensor<70x20xf16> {
  %w = sgpu.assemble %v, %m : tensor<32x32xf16>, tensor<64xi32> -> !sgpu.compressed<20x40xf16, #sgpu.nm<2:4>>
  %y = sgpu.spmm %x, %w : tensor<70x40xf16>, !sgpu.compressed<20x40xf16, #sgpu.nm<2:4>> -> tensor<70x20xf16>
  return %y : tensor<70x20xf16>
}

// -----

// bf16, M = 4096, N = K = 4096: 256-token blocks (m64n256k32, 128
// accumulators per thread), 16 x 32 = 512 blocks, 4 stages of 41 KiB; full
// tiles (no masks), ReLU, f32 output.
// CHECK-LABEL: module attributes {gpu.container_module}
// CHECK: sgpu.tensor_map %{{.*}} box [256, 64] swizzle 128 : memref<4096x4096xbf16> -> !llvm.ptr
// CHECK: sgpu.tensor_map %{{.*}} box [128, 32] swizzle 64 : memref<4096x2048xbf16> -> !llvm.ptr
// CHECK: sgpu.tensor_map %{{.*}} box [8, 32] swizzle 0 : memref<256x2048xi32> -> !llvm.ptr
// 4 x (8192 + 32768 + 1024) + 64 + 1024 bytes
// CHECK-DAG: %[[SMEM:.*]] = arith.constant 169024 : i32
// 512 output tiles: a persistent grid of 132 blocks walks them (with
// persistent=false, one block per tile).
// RUN: sparse-opt %s -split-input-file -convert-sgpu-to-gpu="kernel=wgmma cluster=1 persistent=false" | FileCheck %s --check-prefix=PERTILE
// PERTILE-LABEL: func.func @spmm_bf16
// PERTILE: gpu.launch_func @sgpu_kernels::@sgpu_spmm_0 blocks in (%c512, {{[^{}]*$}}
// reserve-sms=12 leaves 12 multiprocessors to communication kernels: 120
// blocks walk the same tiles.
// RUN: sparse-opt %s -split-input-file -convert-sgpu-to-gpu="kernel=wgmma cluster=1 reserve-sms=12" | FileCheck %s --check-prefix=RESERVE
// RESERVE-LABEL: func.func @spmm_bf16
// (The runtime sizes the grid again on the device the program loads on:
// sgpu.persistent_grid, 512 tiles, clusters of 1, 12 reserved.)
// RESERVE: gpu.launch_func @sgpu_kernels::@sgpu_spmm_0 blocks in (%c120,
// RESERVE-SAME: {sgpu.persistent_grid = array<i64: 512, 1, 12>}
// An H100 PCIe has 114 multiprocessors (sm_90a, like the H200's 132):
// device=h100-pcie sizes the persistent grid by them.
// RUN: sparse-opt %s -split-input-file -convert-sgpu-to-gpu="kernel=wgmma cluster=1 device=h100-pcie" | FileCheck %s --check-prefix=PCIE
// PCIE-LABEL: func.func @spmm_bf16
// PCIE: gpu.launch_func @sgpu_kernels::@sgpu_spmm_0 blocks in (%c114,
// PCIE-SAME: {sgpu.persistent_grid = array<i64: 512, 1, 0>}
// RUN: not sparse-opt %s -split-input-file -convert-sgpu-to-gpu="kernel=wgmma device=h300" 2>&1 | FileCheck %s --check-prefix=BADDEVICE
// BADDEVICE: error: invalid convert-sgpu-to-gpu option: unknown device 'h300' (known: h200, h100-sxm, h100-pcie, a100)
// RUN: not sparse-opt %s -split-input-file -convert-sgpu-to-gpu="kernel=wgmma device=a100" 2>&1 | FileCheck %s --check-prefix=FOREIGN
// FOREIGN: error: invalid convert-sgpu-to-gpu option: device 'a100' is an sm_80 part, not sm_90
// RUN: not sparse-opt %s -split-input-file -convert-sgpu-to-gpu="kernel=wgmma device=h100-pcie reserve-sms=114" 2>&1 | FileCheck %s --check-prefix=PCIERESERVE
// PCIERESERVE: reserve-sms=114 is not 0 to 113
// CHECK: gpu.launch_func @sgpu_kernels::@sgpu_spmm_0 blocks in (%c132, %c1{{.*}}, %c1{{.*}}) threads in (%c384, {{.*}} dynamic_shared_memory_size %[[SMEM]]
// CHECK: gpu.func @sgpu_spmm_0
// CHECK-COUNT-8: mbarrier.init
// CHECK: %[[GRID:.*]] = gpu.grid_dim x
// CHECK: scf.for %{{.*}} = %{{.*}} to %c512{{.*}} step
// 64 k-tiles: 32 pairs, each two tiles of two wgmmas, no odd tile.
// CHECK: scf.for %{{.*}} = %{{.*}} to %c32{{.*}} step
// CHECK-COUNT-2: "wgmma.mma_async.sp.sync.aligned.m64n256k32.f32.bf16.bf16 {$0, {{.*}}, $127}, $128, $129, $130, 0, 1, 1, 1, 0, 0;"
// CHECK: "wgmma.wait_group.sync.aligned 1;"
// CHECK-COUNT-2: "wgmma.mma_async.sp.sync.aligned.m64n256k32.f32.bf16.bf16
// CHECK: "wgmma.wait_group.sync.aligned 1;"
// CHECK: scf.yield
// CHECK-NOT: wgmma.mma_async
// CHECK-NOT: arith.select {{.*}} i32
// CHECK: "wgmma.wait_group.sync.aligned 0;"
// CHECK: arith.maximumf
// CHECK-NOT: arith.truncf
// CHECK-NOT: scf.if
// CHECK: vector.store %{{.*}} {alignment = 8 : i64} : memref<4096x4096xf32>, vector<2xf32>
func.func @spmm_bf16(%x: tensor<4096x4096xbf16>, %v: tensor<4096x2048xbf16>, %m: tensor<524288xi32>) -> tensor<4096x4096xf32> {
  %w = sgpu.assemble %v, %m : tensor<4096x2048xbf16>, tensor<524288xi32> -> !sgpu.compressed<4096x4096xbf16, #sgpu.nm<2:4>>
  %y = sgpu.spmm %x, %w {activation = #sgpu.activation<relu>} : tensor<4096x4096xbf16>, !sgpu.compressed<4096x4096xbf16, #sgpu.nm<2:4>> -> tensor<4096x4096xf32>
  return %y : tensor<4096x4096xf32>
}

// -----

// The tile sweep options: tile-n and stages replace the table's choice.
// RUN: sparse-opt %s -split-input-file -convert-sgpu-to-gpu="kernel=wgmma tile-n=128 stages=3" | FileCheck %s --check-prefix=SWEEP
// RUN: not sparse-opt %s -split-input-file -convert-sgpu-to-gpu="kernel=wgmma tile-n=96" 2>&1 | FileCheck %s --check-prefix=BADTILE
// RUN: not sparse-opt %s -split-input-file -convert-sgpu-to-gpu="kernel=wgmma stages=1" 2>&1 | FileCheck %s --check-prefix=BADSTAGES
// RUN: not sparse-opt %s -split-input-file -convert-sgpu-to-gpu="kernel=wgmma stages=6" 2>&1 | FileCheck %s --check-prefix=BIGSTAGES
// SWEEP-LABEL: func.func @spmm_sweep
// SWEEP: sgpu.tensor_map %{{.*}} box [128, 64] swizzle 128 : memref<512x256xf16>
// 3 x (8192 + 16384 + 1024) + the TMA-store staging 2 x 16384 + 48 + 1024
// SWEEP: arith.constant 110640 : i32
// SWEEP: gpu.launch_func @sgpu_kernels::@sgpu_spmm_0 blocks in (%c4,
// SWEEP: wgmma.mma_async.sp.sync.aligned.m64n128k32
// BADTILE: error: invalid convert-sgpu-to-gpu option: tile-n=96 is not 0 or a power of two from 16 to 256
// BADSTAGES: error: invalid convert-sgpu-to-gpu option: stages=1 is not 0 or at least 2
// BIGSTAGES: error: invalid convert-sgpu-to-gpu option: stages=6 with 256-token tiles needs 253024 bytes of shared memory; a block has 232448
func.func @spmm_sweep(%x: tensor<512x256xf16>, %v: tensor<64x128xf16>, %m: tensor<512xi32>) -> tensor<512x64xf16> {
  %w = sgpu.assemble %v, %m : tensor<64x128xf16>, tensor<512xi32> -> !sgpu.compressed<64x256xf16, #sgpu.nm<2:4>>
  %y = sgpu.spmm %x, %w : tensor<512x256xf16>, !sgpu.compressed<64x256xf16, #sgpu.nm<2:4>> -> tensor<512x64xf16>
  return %y : tensor<512x64xf16>
}

// -----

// Split-K: 3 blocks of 128 weight rows and one token block would leave most
// multiprocessors idle, so the 33 k-tiles (K = 2056: 65 k32 steps, an odd
// count) are cut into 4 ranges of 9 (the last runs 3 tiles past K and
// reads zeros, its metadata replaced by the empty encoding). The kernel
// writes f32 partial sums to a [4, M, N] workspace; the reduce kernel adds
// them, the bias and the ReLU, and rounds once.
// RUN: sparse-opt %s -split-input-file -convert-sgpu-to-gpu="kernel=wgmma split-k=2" | FileCheck %s --check-prefix=SPLIT2
// RUN: not sparse-opt %s -split-input-file -convert-sgpu-to-gpu="kernel=wgmma split-k=33" 2>&1 | FileCheck %s --check-prefix=BADSPLIT
// RUN: not sparse-opt %s -split-input-file -convert-sgpu-to-gpu="kernel=wgmma reserve-sms=132" 2>&1 | FileCheck %s --check-prefix=BADRESERVE
// CHECK-LABEL: func.func @spmm_split_k
// CHECK: %[[Y:.*]] = memref.alloc() : memref<40x300xf16>
// CHECK: %[[WS:.*]] = memref.alloc() : memref<4x40x300xf32>
// 3 feature blocks x 4 splits, then 40 x 300 outputs over 256-thread blocks.
// CHECK: gpu.launch_func @sgpu_kernels::@sgpu_spmm_0 blocks in (%c12, %{{.*}}, %{{.*}}) threads in (%{{.*}}, %{{.*}}, %{{.*}}) dynamic_shared_memory_size %{{.*}} args(%{{.*}} : !llvm.ptr, %{{.*}} : !llvm.ptr, %{{.*}} : !llvm.ptr, %[[WS]] : memref<4x40x300xf32>)
// CHECK: gpu.launch_func @sgpu_kernels::@sgpu_spmm_0_reduce blocks in (%c47, %{{.*}}, %{{.*}}) threads in (%{{.*}}, %{{.*}}, %{{.*}}) args(%[[WS]] : memref<4x40x300xf32>, %{{.*}} : memref<300xf16>, %[[Y]] : memref<40x300xf16>)
// CHECK: gpu.func @sgpu_spmm_0(%{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %[[W:.*]]: memref<4x40x300xf32>) kernel
// CHECK: arith.divui %{{.*}}, %c3 : index
// CHECK: arith.muli %{{.*}}, %c9 : index
// CHECK: "wgmma.mma_async.sp.sync.aligned.m64n64k32.f32.f16.f16
// CHECK: vector.store %{{.*}}, %[[W]][%{{.*}}, %{{.*}}, %{{.*}}] {alignment = 8 : i64} : memref<4x40x300xf32>, vector<2xf32>
// CHECK-NOT: arith.maximumf
// CHECK: gpu.func @sgpu_spmm_0_reduce(%[[RW:.*]]: memref<4x40x300xf32>, %[[RB:.*]]: memref<300xf16>, %[[RY:.*]]: memref<40x300xf16>) kernel
// CHECK-COUNT-4: memref.load %[[RW]]
// CHECK: memref.load %[[RB]]
// CHECK: arith.maximumf
// CHECK: arith.truncf
// CHECK: memref.store %{{.*}}, %[[RY]]
// SPLIT2: memref.alloc() : memref<2x40x300xf32>
// SPLIT2: gpu.func @sgpu_spmm_0_reduce
// BADSPLIT: error: invalid convert-sgpu-to-gpu option: split-k=33 is not 0 to 32
// BADRESERVE: error: invalid convert-sgpu-to-gpu option: reserve-sms=132 is not 0 to 131
func.func @spmm_split_k(%x: tensor<40x2056xf16>, %v: tensor<304x1040xf16>, %m: tensor<19760xi32>, %b: tensor<300xf16>) -> tensor<40x300xf16> {
  %w = sgpu.assemble %v, %m : tensor<304x1040xf16>, tensor<19760xi32> -> !sgpu.compressed<300x2056xf16, #sgpu.nm<2:4>>
  %y = sgpu.spmm %x, %w bias(%b : tensor<300xf16>) {activation = #sgpu.activation<relu>} : tensor<40x2056xf16>, !sgpu.compressed<300x2056xf16, #sgpu.nm<2:4>> -> tensor<40x300xf16>
  return %y : tensor<40x300xf16>
}

// -----

// A lift that feeds the TMA kernel is gathered into rows of the weight's
// padded K (here K' = 56 -> 64 columns, 128-byte rows; the columns past K'
// read zeros), and the tensor map covers that buffer. The lift kernel
// writes 8 columns per thread (70 x 64 / 8 = 560 threads), each 32-bit
// source word selected against zero (K = 40 is not a multiple of 6, and
// the padded columns' sources are past K).
// CHECK-LABEL: func.func @lifted_tma
// CHECK: %[[XB:.*]] = bufferization.to_buffer %arg0 read_only : tensor<70x40xf16> to memref<70x40xf16>
// CHECK: %[[L:.*]] = memref.alloc() : memref<70x64xf16>
// CHECK: gpu.launch_func @sgpu_kernels::@sgpu_lift_0 {{.*}} args(%[[XB]] : memref<70x40xf16>, %[[L]] : memref<70x64xf16>)
// CHECK: sgpu.tensor_map %[[L]] box [64, 64] swizzle 128 : memref<70x64xf16> -> !llvm.ptr
// CHECK: gpu.launch_func @sgpu_kernels::@sgpu_spmm_0
// CHECK-NOT: sgpu.lift
// CHECK: gpu.func @sgpu_spmm_0
// CHECK: gpu.func @sgpu_lift_0(%{{.*}}: memref<70x40xf16>, %{{.*}}: memref<70x64xf16>)
// CHECK: arith.cmpi ult, %{{.*}}, %c560 : index
// CHECK-COUNT-4: arith.select %{{.*}}, %{{.*}}, %{{.*}} : vector<2xf16>
// CHECK: vector.store %{{.*}} {alignment = 16 : i64} : memref<70x64xf16>, vector<8xf16>
func.func @lifted_tma(%x: tensor<70x40xf16>, %v: tensor<32x32xf16>, %e: tensor<64xi32>) -> tensor<70x20xf16> {
  %xl = sgpu.lift %x {pattern = #sgpu.nm<4:6>} : tensor<70x40xf16> -> tensor<70x56xf16>
  %w = sgpu.assemble %v, %e : tensor<32x32xf16>, tensor<64xi32> -> !sgpu.compressed<20x56xf16, #sgpu.nm<2:4>>
  %y = sgpu.spmm %xl, %w : tensor<70x56xf16>, !sgpu.compressed<20x56xf16, #sgpu.nm<2:4>> -> tensor<70x20xf16>
  return %y : tensor<70x20xf16>
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
// diagnostics; so is an unknown kernel name. The default (kernel=auto) is
// the warpgroup kernel on sm_90a and the mma.sp kernel elsewhere.
// RUN: not sparse-opt %s -split-input-file -convert-sgpu-to-gpu="kernel=wgmma chip=sm_80 features=+ptx86" 2>&1 | FileCheck %s --check-prefix=SM80
// RUN: not sparse-opt %s -split-input-file -convert-sgpu-to-gpu="kernel=wgmma chip=sm_90" 2>&1 | FileCheck %s --check-prefix=SM90
// RUN: not sparse-opt %s -split-input-file -convert-sgpu-to-gpu="kernel=wgmma features=+ptx81" 2>&1 | FileCheck %s --check-prefix=PTX81
// RUN: not sparse-opt %s -split-input-file -convert-sgpu-to-gpu="kernel=tma" 2>&1 | FileCheck %s --check-prefix=BADKERNEL
// RUN: not sparse-opt %s -split-input-file --sgpu-compile="kernel=wgmma chip=sm_80 features=+ptx86" 2>&1 | FileCheck %s --check-prefix=SM80
// RUN: sparse-opt %s -split-input-file -convert-sgpu-to-gpu | FileCheck %s --check-prefix=DEFAULT
// RUN: sparse-opt %s -split-input-file -convert-sgpu-to-gpu="chip=sm_80 features=+ptx86" | FileCheck %s --check-prefix=DEFAULT80
// RUN: not sparse-opt %s -split-input-file -convert-sgpu-to-gpu="features=+ptx81" 2>&1 | FileCheck %s --check-prefix=DEFAULT81
// SM80: error: sgpu.spmm with kernel=wgmma uses wgmma.mma_async.sp, which needs chip sm_90a; chip 'sm_80' has none (use kernel=mma)
// SM90: error: sgpu.spmm with kernel=wgmma uses wgmma.mma_async.sp, which needs chip sm_90a; chip 'sm_90' has none (use kernel=mma)
// PTX81: error: sgpu.spmm with kernel=wgmma uses wgmma.mma_async.sp, which needs PTX ISA 8.2; features '+ptx81' give PTX ISA 8.1 (use features=+ptx82 or later)
// BADKERNEL: error: unknown kernel 'tma'; expected auto, mma or wgmma
// DEFAULT-LABEL: func.func @spmm_target
// DEFAULT: sgpu.tensor_map
// DEFAULT: wgmma.mma_async.sp.sync.aligned.m64n16k32
// DEFAULT-NOT: mma.sp::ordered_metadata
// DEFAULT80-LABEL: func.func @spmm_target
// DEFAULT80-NOT: wgmma
// DEFAULT80: mma.sp::ordered_metadata.sync.aligned.m16n8k32
// DEFAULT80-NOT: wgmma
// sm_90a with PTX ISA 8.1: no sparse wgmma, and the mma.sp kernel needs 8.5.
// DEFAULT81: error: sgpu.spmm uses mma.sp::ordered_metadata, which needs PTX ISA 8.5
func.func @spmm_target(%x: tensor<8x32xf16>, %v: tensor<16x16xf16>, %m: tensor<16xi32>) -> tensor<8x16xf16> {
  %w = sgpu.assemble %v, %m : tensor<16x16xf16>, tensor<16xi32> -> !sgpu.compressed<16x32xf16, #sgpu.nm<2:4>>
  %y = sgpu.spmm %x, %w : tensor<8x32xf16>, !sgpu.compressed<16x32xf16, #sgpu.nm<2:4>> -> tensor<8x16xf16>
  return %y : tensor<8x16xf16>
}
