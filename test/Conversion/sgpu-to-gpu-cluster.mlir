// cluster=2: the TMA spmm kernel's blocks run in clusters of two that
// compute the feature blocks 2p and 2p + 1 of one token block: each block
// loads half of the shared X tile (box [BN/2, 64]) and multicasts it into
// both blocks, each block's empty barrier takes the releases of both
// blocks' consumers (one local and one remote arrival per consumer warp),
// and a cluster barrier follows the barrier initialization and precedes
// the exit. Where the blocks cannot pair, a remark says why and the kernel
// runs without clusters.
// RUN: sparse-opt %s -split-input-file -convert-sgpu-to-gpu="kernel=wgmma cluster=2" -verify-diagnostics | FileCheck %s
// RUN: not sparse-opt %s -split-input-file -convert-sgpu-to-gpu="kernel=wgmma cluster=3" 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: sparse-opt %s -split-input-file -convert-sgpu-to-gpu="kernel=wgmma cluster=2 reserve-sms=131" 2>&1 | FileCheck %s --check-prefix=RESERVE
// RESERVE: remark: cluster=2 not used for this spmm: reserve-sms=131 leaves fewer than the 2 multiprocessors of a cluster
// RESERVE: gpu.launch_func @sgpu_kernels::@sgpu_spmm_0 blocks in (%c1{{[_0-9]*}},
// BAD: error: invalid convert-sgpu-to-gpu option: cluster=3 is not 0, 1, 2 or 4
// The default (cluster=0) pairs blocks from 4096 tokens, where that
// measured faster, silently; fewer tokens keep single blocks.
// RUN: sparse-opt %s -split-input-file -convert-sgpu-to-gpu="kernel=wgmma" 2>&1 | FileCheck %s --check-prefix=AUTO
// AUTO-NOT: remark
// AUTO-LABEL: func.func @spmm_pairs
// AUTO: gpu.func @sgpu_spmm_0({{.*}}nvvm.cluster_dim = array<i32: 2, 1, 1>
// AUTO-LABEL: func.func @one_feature_block
// AUTO-NOT: nvvm.cluster_dim
// AUTO-LABEL: func.func @split_k
// AUTO-NOT: nvvm.cluster_dim

// M = N = K = 4096: 16 token blocks of 256 x 32 feature blocks, 256 pairs
// on 66 clusters (132 blocks).
// CHECK-LABEL: func.func @spmm_pairs
// CHECK: %[[TX:.*]] = sgpu.tensor_map %{{.*}} box [128, 64] swizzle 128 : memref<4096x4096xbf16> -> !llvm.ptr
// CHECK: gpu.launch_func @sgpu_kernels::@sgpu_spmm_0 blocks in (%c132{{[_0-9]*}}, %{{.*}}, %{{.*}}) threads in (%c384{{[_0-9]*}},
// CHECK: gpu.func @sgpu_spmm_0({{.*}}) kernel attributes {known_block_size = array<i32: 384, 1, 1>, nvvm.cluster_dim = array<i32: 2, 1, 1>, nvvm.minctasm = 1 : i32, sgpu.tensor_map_args = array<i64: 0, 1, 2, 3>}
// CHECK: %[[BID:.*]] = gpu.block_id x
// Empty barriers: 16 arrivals (8 consumer warps in each of the two blocks).
// CHECK: %[[C16:.*]] = arith.constant 16 : i32
// CHECK: "mbarrier.init.shared::cta.b64 [$0], $1;", "r,r,~{memory}" %{{.*}}, %[[C16]]
// CHECK: "fence.mbarrier_init.release.cluster;"
// CHECK: %[[RANK:.*]] = nvvm.read.ptx.sreg.cluster.ctarank : i32
// CHECK: nvvm.cluster.arrive {aligned}
// CHECK-NEXT: nvvm.cluster.wait {aligned}
// The tile loop runs over the cluster's pairs: from blockIdx / 2, step
// gridDim / 2 (66 on the H200, the launch's grid sized at load time).
// CHECK: "setmaxnreg.dec.sync.aligned.u32 40;"
// CHECK: %[[FIRST:.*]] = arith.divui %[[BID]], %c2
// CHECK: %[[GRID:.*]] = gpu.grid_dim x
// CHECK: %[[STEP:.*]] = arith.divui %[[GRID]], %c2
// CHECK: scf.for %{{.*}} = %[[FIRST]] to %c256{{[_0-9]*}} step %[[STEP]]
// The producer waits for a free stage (both blocks' releases) with the
// plain CTA-scope wait.
// CHECK: mbarrier.try_wait.parity.shared::cta.b64
// CHECK: cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [$0], [$1, {$2, $3}], [$4];
// CHECK: cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [$0], [$1, {$2, $3}], [$4], $5;", "r,l,r,r,r,h,~{memory}"
// Consumers release a stage in both blocks.
// CHECK: "setmaxnreg.inc.sync.aligned.u32 232;"
// CHECK: "mbarrier.arrive.shared::cta.b64 _, [$0];"
// CHECK-NEXT: mapa.shared::cluster.u32 remote, $0, $1;\0Ambarrier.arrive.shared::cluster.b64 _, [remote];
// The exit waits for the peer.
// CHECK: nvvm.cluster.arrive {aligned}
// CHECK-NEXT: nvvm.cluster.wait {aligned}
// CHECK-NEXT: gpu.return
func.func @spmm_pairs(%x: tensor<4096x4096xbf16>, %v: tensor<4096x2048xbf16>, %m: tensor<524288xi32>) -> tensor<4096x4096xbf16> {
  %w = sgpu.assemble %v, %m : tensor<4096x2048xbf16>, tensor<524288xi32> -> !sgpu.compressed<4096x4096xbf16, #sgpu.nm<2:4>>
  %y = sgpu.spmm %x, %w : tensor<4096x4096xbf16>, !sgpu.compressed<4096x4096xbf16, #sgpu.nm<2:4>> -> tensor<4096x4096xbf16>
  return %y : tensor<4096x4096xbf16>
}

// -----

// One 128-feature block: nothing to pair.
// CHECK-LABEL: func.func @one_feature_block
// CHECK: gpu.func @sgpu_spmm_0({{.*}}) kernel attributes {known_block_size = array<i32: 384, 1, 1>, nvvm.minctasm = 1 : i32, sgpu.tensor_map_args = array<i64: 0, 1, 2>}
// CHECK-NOT: multicast
func.func @one_feature_block(%x: tensor<70x40xf16>, %v: tensor<32x32xf16>, %m: tensor<64xi32>) -> tensor<70x20xf16> {
  %w = sgpu.assemble %v, %m : tensor<32x32xf16>, tensor<64xi32> -> !sgpu.compressed<20x40xf16, #sgpu.nm<2:4>>
  // expected-remark @below {{cluster=2 not used for this spmm: the 1 blocks of 128 A rows do not pair up}}
  %y = sgpu.spmm %x, %w : tensor<70x40xf16>, !sgpu.compressed<20x40xf16, #sgpu.nm<2:4>> -> tensor<70x20xf16>
  return %y : tensor<70x20xf16>
}

// -----

// Few blocks: the tile table splits K, which clusters do not combine with.
// CHECK-LABEL: func.func @split_k
// CHECK: gpu.func @sgpu_spmm_0_reduce
func.func @split_k(%x: tensor<40x2056xf16>, %v: tensor<256x1040xf16>, %m: tensor<16640xi32>) -> tensor<40x256xf16> {
  %w = sgpu.assemble %v, %m : tensor<256x1040xf16>, tensor<16640xi32> -> !sgpu.compressed<256x2056xf16, #sgpu.nm<2:4>>
  // expected-remark @below {{cluster=2 not used for this spmm: the grid is split along K}}
  %y = sgpu.spmm %x, %w : tensor<40x2056xf16>, !sgpu.compressed<256x2056xf16, #sgpu.nm<2:4>> -> tensor<40x256xf16>
  return %y : tensor<40x256xf16>
}
