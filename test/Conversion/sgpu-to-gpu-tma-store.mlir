// epilogue=auto|tma|registers: how the TMA spmm kernel writes its output
// tiles. With a TMA store (the default wherever it applies) each consumer
// warpgroup rounds its 64 x BN tile once (bias and activation in f32), writes
// it into a 128B-swizzled staging box in shared memory with stmatrix .trans
// (features x tokens -> Y's token-major rows), fences the generic writes for
// the async proxy and lets one thread issue a TMA bulk tensor store per box
// of up to min(BN, 128) tokens x 64 features, which clips the M and N tails;
// the thread waits for the previous store to have read the box before it is
// overwritten and before the block exits. The box is halved (down to 16
// tokens) where the staging would cost a pipeline stage: 128-token tiles
// keep 8 stages with 64-token boxes. Y reaches the kernel as one more
// tensor map, after those of the operands. Where it does not apply (a 32-bit result, N % 8 != 0, split-K,
// or forced stages that leave no room for the staging buffer) the tile is
// stored from registers; with epilogue=tma a remark says why.
// RUN: sparse-opt %s -split-input-file -convert-sgpu-to-gpu="kernel=wgmma" | FileCheck %s
// RUN: sparse-opt %s -split-input-file -convert-sgpu-to-gpu="kernel=wgmma epilogue=registers" | FileCheck %s --check-prefix=REGS
// RUN: sparse-opt %s -split-input-file -convert-sgpu-to-gpu="kernel=wgmma epilogue=tma" -verify-diagnostics -o /dev/null
// RUN: sparse-opt %s -split-input-file -convert-sgpu-to-gpu="kernel=wgmma epilogue=tma tile-n=128 stages=9" 2>&1 | FileCheck %s --check-prefix=ROOM
// RUN: not sparse-opt %s -split-input-file -convert-sgpu-to-gpu="kernel=wgmma epilogue=stores" 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: error: unknown epilogue 'stores'; expected auto, tma or registers
// ROOM: remark: epilogue=tma not used for this spmm: stages=9 leave no room for the 4096-byte staging buffer

// M and N tails (300 tokens, 200 features), bias and ReLU: 64-token tiles,
// so boxes of 64 tokens; 4 stmatrix.x4 per warp fill a box, one bulk store.
// CHECK-LABEL: func.func @tails
// CHECK: %[[Y:.*]] = memref.alloc() : memref<300x200xf16>
// CHECK: %[[TY:.*]] = sgpu.tensor_map %[[Y]] box [64, 64] swizzle 128 : memref<300x200xf16> -> !llvm.ptr
// CHECK: gpu.launch_func @sgpu_kernels::@sgpu_spmm_0 {{.*}} args(%{{.*}} : !llvm.ptr, %{{.*}} : !llvm.ptr, %{{.*}} : !llvm.ptr, %[[TY]] : !llvm.ptr, %{{.*}} : memref<200xf16>)
// CHECK: gpu.func @sgpu_spmm_0(%{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: memref<200xf16>) kernel attributes {{{.*}}sgpu.tensor_map_args = array<i64: 0, 1, 2, 3>}
// CHECK: "prefetch.tensormap [$0];"
// CHECK: "setmaxnreg.inc.sync.aligned.u32 232;"
// CHECK: memref.load %{{.*}} : memref<200xf16>
// CHECK: arith.maximumf
// CHECK: "cp.async.bulk.wait_group.read 0;"
// CHECK: nvvm.barrier id = %{{.*}} number_of_threads = %c128_i32
// CHECK-COUNT-4: "stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [$0], {$1, $2, $3, $4};"
// CHECK-NEXT: "fence.proxy.async.shared::cta;"
// CHECK: nvvm.barrier id = %{{.*}} number_of_threads = %c128_i32
// CHECK: "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [$0, {$1, $2}], [$3];"
// CHECK-NEXT: "cp.async.bulk.commit_group;"
// CHECK-NOT: "cp.async.bulk.tensor.2d.global
// The last store has read the staging box before the block exits.
// CHECK: "cp.async.bulk.wait_group.read 0;"
// CHECK-NOT: vector.store
// CHECK: gpu.return
// REGS-LABEL: func.func @tails
// REGS: gpu.func @sgpu_spmm_0(%{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: memref<200xf16>, %{{.*}}: memref<300x200xf16>) kernel attributes {{{.*}}sgpu.tensor_map_args = array<i64: 0, 1, 2>}
// REGS-NOT: stmatrix
// REGS: vector.store
func.func @tails(%x: tensor<300x64xf16>, %v: tensor<208x32xf16>, %m: tensor<416xi32>, %b: tensor<200xf16>) -> tensor<300x200xf16> {
  %w = sgpu.assemble %v, %m : tensor<208x32xf16>, tensor<416xi32> -> !sgpu.compressed<200x64xf16, #sgpu.nm<2:4>>
  %y = sgpu.spmm %x, %w bias(%b : tensor<200xf16>) {activation = #sgpu.activation<relu>} : tensor<300x64xf16>, !sgpu.compressed<200x64xf16, #sgpu.nm<2:4>> -> tensor<300x200xf16>
  return %y : tensor<300x200xf16>
}

// -----

// 256-token tiles: two boxes of 128 tokens per warpgroup, 8 stmatrix.x4
// each; the staging (2 x 16 KiB) sits between the 4 stages and the
// barriers: 4 x 41 KiB + 32 KiB + 64 + 1024 bytes.
// CHECK-LABEL: func.func @two_boxes
// CHECK: sgpu.tensor_map %{{.*}} box [128, 64] swizzle 128 : memref<4096x4096xbf16> -> !llvm.ptr
// CHECK: arith.constant 201792 : i32
// CHECK: gpu.func @sgpu_spmm_0
// Lane l gives row l % 8 of matrix l / 8: token row 8 (l / 16) + l % 8,
// chunk 2 warp + (l / 8) % 2, swizzled by XOR with the row's l % 8; each
// further stmatrix is 16 token rows (2048 bytes) on.
// CHECK: arith.xori %{{.*}}, %{{.*}} : index
// CHECK: nvvm.barrier id = %{{.*}} number_of_threads = %c128_i32
// CHECK: stmatrix.sync.aligned.m8n8.x4.trans
// CHECK: %[[A1:.*]] = arith.addi %[[ROWADDR:.*]], %c2048_i32 : i32
// CHECK: stmatrix.sync.aligned.m8n8.x4.trans{{.*}} %[[A1]],
// CHECK: %[[A7:.*]] = arith.addi %[[ROWADDR]], %c14336_i32 : i32
// CHECK: stmatrix.sync.aligned.m8n8.x4.trans{{.*}} %[[A7]],
// CHECK-NOT: stmatrix
// CHECK: "fence.proxy.async.shared::cta;"
// CHECK: "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [$0, {$1, $2}], [$3];"
// CHECK-COUNT-8: stmatrix.sync.aligned.m8n8.x4.trans
// CHECK: "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [$0, {$1, $2}], [$3];"
// CHECK-NOT: stmatrix
// REGS-LABEL: func.func @two_boxes
// REGS: arith.constant 169024 : i32
func.func @two_boxes(%x: tensor<4096x4096xbf16>, %v: tensor<4096x2048xbf16>, %m: tensor<524288xi32>) -> tensor<4096x4096xbf16> {
  %w = sgpu.assemble %v, %m : tensor<4096x2048xbf16>, tensor<524288xi32> -> !sgpu.compressed<4096x4096xbf16, #sgpu.nm<2:4>>
  %y = sgpu.spmm %x, %w : tensor<4096x4096xbf16>, !sgpu.compressed<4096x4096xbf16, #sgpu.nm<2:4>> -> tensor<4096x4096xbf16>
  return %y : tensor<4096x4096xbf16>
}

// -----

// An f32 result: stored from registers.
// CHECK-LABEL: func.func @f32_result
// CHECK-NOT: stmatrix
// CHECK: gpu.return
func.func @f32_result(%x: tensor<64x64xf16>, %v: tensor<128x32xf16>, %m: tensor<256xi32>) -> tensor<64x128xf32> {
  %w = sgpu.assemble %v, %m : tensor<128x32xf16>, tensor<256xi32> -> !sgpu.compressed<128x64xf16, #sgpu.nm<2:4>>
  // expected-remark @below {{epilogue=tma not used for this spmm: the result type is f32, not 16-bit}}
  %y = sgpu.spmm %x, %w : tensor<64x64xf16>, !sgpu.compressed<128x64xf16, #sgpu.nm<2:4>> -> tensor<64x128xf32>
  return %y : tensor<64x128xf32>
}

// -----

// 20 features: a 40-byte row pitch, which a tensor map cannot describe.
// CHECK-LABEL: func.func @odd_pitch
// CHECK-NOT: stmatrix
// CHECK: gpu.return
func.func @odd_pitch(%x: tensor<70x40xf16>, %v: tensor<32x32xf16>, %m: tensor<64xi32>) -> tensor<70x20xf16> {
  %w = sgpu.assemble %v, %m : tensor<32x32xf16>, tensor<64xi32> -> !sgpu.compressed<20x40xf16, #sgpu.nm<2:4>>
  // expected-remark @below {{epilogue=tma not used for this spmm: N = 20 is not a multiple of 8 (a tensor map needs 16-byte row pitches)}}
  %y = sgpu.spmm %x, %w : tensor<70x40xf16>, !sgpu.compressed<20x40xf16, #sgpu.nm<2:4>> -> tensor<70x20xf16>
  return %y : tensor<70x20xf16>
}

// -----

// Few blocks: split-K, whose f32 partial sums go to the workspace.
// CHECK-LABEL: func.func @split_k
// CHECK-NOT: stmatrix
// CHECK: gpu.func @sgpu_spmm_0_reduce
func.func @split_k(%x: tensor<40x2056xf16>, %v: tensor<256x1040xf16>, %m: tensor<16640xi32>) -> tensor<40x256xf16> {
  %w = sgpu.assemble %v, %m : tensor<256x1040xf16>, tensor<16640xi32> -> !sgpu.compressed<256x2056xf16, #sgpu.nm<2:4>>
  // expected-remark @below {{epilogue=tma not used for this spmm: the grid is split along K (f32 partial sums)}}
  %y = sgpu.spmm %x, %w : tensor<40x2056xf16>, !sgpu.compressed<256x2056xf16, #sgpu.nm<2:4>> -> tensor<40x256xf16>
  return %y : tensor<40x256xf16>
}

// -----

// 128-token tiles (512 tokens on 32 blocks of 128 weight rows): 8 stages
// of 25 KiB leave room for 64-token boxes only, so two boxes per
// warpgroup and tile: 8 x 25600 + 2 x 8192 + 128 + 1024 bytes.
// CHECK-LABEL: func.func @halved_boxes
// CHECK: sgpu.tensor_map %{{.*}} box [64, 64] swizzle 128 : memref<512x4096xf16> -> !llvm.ptr
// CHECK: arith.constant 222336 : i32
// CHECK: gpu.func @sgpu_spmm_0
// CHECK-COUNT-2: "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [$0, {$1, $2}], [$3];"
// CHECK-NOT: "cp.async.bulk.tensor.2d.global
// REGS-LABEL: func.func @halved_boxes
// REGS: arith.constant 205952 : i32
func.func @halved_boxes(%x: tensor<512x14336xf16>, %v: tensor<4096x7168xf16>, %m: tensor<1835008xi32>) -> tensor<512x4096xf16> {
  %w = sgpu.assemble %v, %m : tensor<4096x7168xf16>, tensor<1835008xi32> -> !sgpu.compressed<4096x14336xf16, #sgpu.nm<2:4>>
  %y = sgpu.spmm %x, %w : tensor<512x14336xf16>, !sgpu.compressed<4096x14336xf16, #sgpu.nm<2:4>> -> tensor<512x4096xf16>
  return %y : tensor<512x4096xf16>
}
