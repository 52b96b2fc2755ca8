// twell-consumer=tensor-cores: the pack becomes the block pack (per 64 rows
// the union of their active neurons, idx and count, and H at those neurons,
// coef), a gated consumer the gathered up GEMM (P = (X . Wu[idx]^T) * coef,
// written over coef) and every consumer the gathered down GEMM
// (Y = P . WdT[idx]), both the gathered mode of the TMA pipeline: A by TMA
// (box [64, 64]), B's rows copied by cp.async, m64n128k16 wgmmas, MN-major
// B (imm-trans-b 1) for the down GEMM. No pack kernel and no CUDA-core
// consumer. Where the tensor cores cannot run, a remark and the CUDA
// cores; auto follows the pack's sgpu.twell_consumer.
// RUN: sparse-opt %s -split-input-file -convert-sgpu-to-gpu="twell-consumer=tensor-cores twell-pack=kernel" -verify-diagnostics | FileCheck %s
// RUN: sparse-opt %s -split-input-file -convert-sgpu-to-gpu="twell-pack=kernel" 2>&1 | FileCheck %s --check-prefix=AUTO
// RUN: not sparse-opt %s -split-input-file -convert-sgpu-to-gpu="twell-consumer=gpu" 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: sparse-opt %s -split-input-file -convert-sgpu-to-gpu="twell-consumer=tensor-cores chip=sm_90 features=+ptx85" 2>&1 | FileCheck %s --check-prefix=SM90
// RUN: sparse-opt %s -split-input-file -convert-sgpu-to-gpu="twell-consumer=tensor-cores twell-producer=fused" 2>&1 | FileCheck %s --check-prefix=FUSED
// twell-gather=tma: the gathered rows as one-row TMA boxes through a second
// tensor map (box [1, 64]) instead of cp.async (measured 2.5-3x slower).
// RUN: sparse-opt %s -split-input-file -convert-sgpu-to-gpu="twell-consumer=tensor-cores twell-gather=tma" 2>&1 | FileCheck %s --check-prefix=TMA
// RUN: not sparse-opt %s -split-input-file -convert-sgpu-to-gpu="twell-gather=ldg" 2>&1 | FileCheck %s --check-prefix=BADGATHER
// BADGATHER: unknown twell-gather 'ldg'; expected cp-async or tma
// TMA-LABEL: func.func @gated
// TMA: sgpu.tensor_map %{{.*}} box [1, 64] swizzle 128 : memref<600x200xbf16> -> !llvm.ptr
// TMA: gpu.launch_func @sgpu_kernels::@sgpu_twell_up_0 {{.*}} args(%{{.*}} : !llvm.ptr, %{{.*}} : !llvm.ptr,
// TMA: gpu.func @sgpu_twell_up_0
// TMA-SAME: sgpu.tensor_map_args = array<i64: 0, 1>
// TMA-NOT: cp.async
// TMA: cp.async.bulk.tensor.2d
// TMA-NOT: cp.async.cg
// TMA: gpu.func @sgpu_twell_down_0

// BAD: unknown twell-consumer 'gpu'; expected auto, cuda-cores or tensor-cores
// SM90: remark: TwELL consumer: CUDA cores, not tensor cores: the target has no wgmma (sm_90a with PTX ISA 8.2 or later)
// FUSED: remark: TwELL consumer: CUDA cores, not tensor cores: the fused producer writes no H for the block pack to read

// M = 200 (four blocks of 64 rows, the last partial), d = 200 (a K tail),
// F = 600 (padded to 768).
// CHECK-LABEL: func.func @gated
// CHECK-SAME: (%[[X:.*]]: tensor<200x200xbf16>, %{{.*}}: tensor<600x200xbf16>, %[[WU:.*]]: tensor<600x200xbf16>
// CHECK: %[[WDT:.*]] = memref.alloc() : memref<600x200xbf16>
// CHECK: gpu.launch_func @sgpu_kernels::@sgpu_twell_down_t_0
// CHECK: sgpu.gemm_call %{{.*}}, %{{.*}} into %[[H:.*]] {activation = #sgpu.activation<relu>}
// CHECK: %[[ROWS:.*]] = memref.alloc() {sgpu.stat = "twell0.fallback_rows", sgpu.stat_total = 200 : i64} : memref<1xi32>
// CHECK: %[[ACTIVE:.*]] = memref.alloc() {sgpu.stat = "twell0.active_neurons", sgpu.stat_total = 120000 : i64} : memref<1xi64>
// CHECK: %[[IDX:.*]] = memref.alloc() : memref<4x768xi32>
// CHECK: %[[COEF:.*]] = memref.alloc() : memref<256x768xbf16>
// CHECK: %[[COUNT:.*]] = memref.alloc() : memref<4xi32>
//   The union stat: the blocks' U, out of 4 blocks x 600 neurons.
// CHECK: %[[UNION:.*]] = memref.alloc() {sgpu.stat = "twell0.block_neurons", sgpu.stat_total = 2400 : i64} : memref<1xi64>
// CHECK: gpu.launch_func @sgpu_kernels::@sgpu_twell_clear_0 {{.*}} args(%[[ROWS]] : memref<1xi32>, %[[ACTIVE]] : memref<1xi64>, %[[UNION]] : memref<1xi64>)
// CHECK: gpu.launch_func @sgpu_kernels::@sgpu_twell_blocks_0 blocks in (%c4{{[_0-9]*}}, {{.*}} threads in (%c256{{[_0-9]*}}, {{.*}} args(%{{.*}} : memref<200x600xbf16>, %[[IDX]] : memref<4x768xi32>, %[[COEF]] : memref<256x768xbf16>, %[[COUNT]] : memref<4xi32>, %[[ACTIVE]] : memref<1xi64>, %[[UNION]] : memref<1xi64>)
// CHECK: %[[XB:.*]] = bufferization.to_buffer %[[X]]
// CHECK: %[[WUB:.*]] = bufferization.to_buffer %[[WU]]
//   Up: 4 blocks x 3 column tiles of 256, 4 stages of 40 KiB (4 k-tiles);
//   the pack's only consumer writes P over coef.
// CHECK-NOT: memref.alloc() : memref<256x768xbf16>
// CHECK: %[[TX:.*]] = sgpu.tensor_map %[[XB]] box [64, 64] swizzle 128 : memref<200x200xbf16> -> !llvm.ptr
// CHECK: gpu.launch_func @sgpu_kernels::@sgpu_twell_up_0 blocks in (%c12{{[_0-9]*}}, {{.*}} threads in (%c384{{[_0-9]*}}, {{.*}} dynamic_shared_memory_size %c164928_i32 args(%[[TX]] : !llvm.ptr, %[[WUB]] : memref<600x200xbf16>, %[[IDX]] : memref<4x768xi32>, %[[COUNT]] : memref<4xi32>, %[[COEF]] : memref<256x768xbf16>, %[[COEF]] : memref<256x768xbf16>)
// CHECK: %[[Y:.*]] = memref.alloc() : memref<200x200xbf16>
// CHECK: %[[TP:.*]] = sgpu.tensor_map %[[COEF]] box [64, 64] swizzle 128 : memref<256x768xbf16> -> !llvm.ptr
//   Down: 4 blocks x 1 column tile, 5 stages.
// CHECK: gpu.launch_func @sgpu_kernels::@sgpu_twell_down_0 blocks in (%c4{{[_0-9]*}}, {{.*}} dynamic_shared_memory_size %c205904_i32 args(%[[TP]] : !llvm.ptr, %[[WDT]] : memref<600x200xbf16>, %[[IDX]] : memref<4x768xi32>, %[[COUNT]] : memref<4xi32>, %[[Y]] : memref<200x200xbf16>)
// CHECK-NOT: sgpu_twell_pack_0
// CHECK-NOT: sgpu_twell_ffn_0
//   The block pack: the union as bits, positions, the list in shared memory.
// CHECK: gpu.func @sgpu_twell_blocks_0({{.*}}) workgroup(%{{.*}} : memref<24xi32, #gpu.address_space<workgroup>>, %{{.*}} : memref<24xi32, #gpu.address_space<workgroup>>, %{{.*}} : memref<2xi32, #gpu.address_space<workgroup>>, %{{.*}} : memref<768xi16, #gpu.address_space<workgroup>>)
// CHECK: vector.load {{.*}} : memref<200x600xbf16>, vector<8xbf16>
// CHECK: arith.andi %{{.*}}, %c2147450879_i32{{[_0-9]*}} : i32
// CHECK: memref.atomic_rmw ori
// CHECK: llvm.intr.ctpop
// CHECK: gpu.shuffle  up
// CHECK: memref.atomic_rmw addi {{.*}} : (i64, memref<1xi64>) -> i64
//   The up GEMM: 16 copies of 16 bytes per producer thread and stage, a
//   noinc arrival on `full` (129 arrivals: TMA + 128 threads), the fence
//   before the wgmmas, K-major B.
// CHECK: gpu.func @sgpu_twell_up_0(%{{.*}}: !llvm.ptr, %{{.*}}: memref<600x200xbf16>, %{{.*}}: memref<4x768xi32>, %{{.*}}: memref<4xi32>, %{{.*}}: memref<256x768xbf16>, %{{.*}}: memref<256x768xbf16>)
// CHECK-SAME: sgpu.tensor_map_args = array<i64: 0>
// CHECK: mbarrier.init.shared::cta.b64 [$0], $1;", "r,r,~{memory}" %{{.*}}, %c129_i32
// CHECK-COUNT-16: cp.async.cg.shared.global [$0], [$1], 16, $2;
// CHECK: cp.async.mbarrier.arrive.noinc.shared::cta.b64 [$0];
// CHECK: fence.proxy.async.shared::cta;
// CHECK-COUNT-4: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {{.*}}, 1, 1, 1, 0, 0;
//   The down GEMM: MN-major B.
// CHECK: gpu.func @sgpu_twell_down_0
// CHECK-COUNT-16: cp.async.cg.shared.global [$0], [$1], 16, $2;
// CHECK-COUNT-4: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {{.*}}, 1, 1, 1, 0, 1;
// AUTO-LABEL: func.func @gated
// AUTO: sgpu_twell_pack_0
// AUTO: sgpu_twell_ffn_0
// AUTO-NOT: sgpu_twell_blocks
func.func @gated(%x: tensor<200x200xbf16>, %wg: tensor<600x200xbf16>, %wu: tensor<600x200xbf16>,
                 %wd: tensor<200x600xbf16>) -> tensor<200x200xbf16> {
  %h = sgpu.matmul %x, %wg {activation = #sgpu.activation<relu>}
      : tensor<200x200xbf16>, tensor<600x200xbf16> -> tensor<200x600xbf16>
  %p = sgpu.twell_pack %h : tensor<200x600xbf16> -> !sgpu.twell<200x600xbf16, #sgpu.twell<tile = 256, compression = 4>>
  %y = sgpu.twell_ffn %p, %wd up(%x, %wu : tensor<200x200xbf16>, tensor<600x200xbf16>) : !sgpu.twell<200x600xbf16, #sgpu.twell<tile = 256, compression = 4>>, tensor<200x600xbf16> -> tensor<200x200xbf16>
  return %y : tensor<200x200xbf16>
}

// -----

// Ungated, f16: no up GEMM, the down GEMM reads the block pack's coef as P.
// auto follows the pack's choice.
// CHECK-LABEL: func.func @ungated_chosen
//   The cost model's union break-even guards the union, not the density.
// CHECK: memref.alloc() {sgpu.stat = "twell0.active_neurons", sgpu.stat_total = 65536 : i64} : memref<1xi64>
// CHECK: memref.alloc() {sgpu.stat = "twell0.block_neurons", sgpu.stat_limit = 3.800000e-01 : f64, sgpu.stat_total = 1024 : i64} : memref<1xi64>
// CHECK: sgpu_twell_blocks_0
// CHECK-NOT: sgpu_twell_up_0
// CHECK: sgpu_twell_down_0
// CHECK: wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16
// AUTO-LABEL: func.func @ungated_chosen
// AUTO: sgpu_twell_blocks_0
// AUTO: sgpu_twell_down_0
func.func @ungated_chosen(%h: tensor<128x512xf16>, %wd: tensor<64x512xf16>) -> tensor<128x64xf16> {
  %p = sgpu.twell_pack %h {sgpu.twell_break_even = 0.0086 : f64, sgpu.twell_consumer = "tensor-cores", sgpu.twell_union_break_even = 0.38 : f64} : tensor<128x512xf16> -> !sgpu.twell<128x512xf16, #sgpu.twell<tile = 256, compression = 4>>
  %y = sgpu.twell_ffn %p, %wd : !sgpu.twell<128x512xf16, #sgpu.twell<tile = 256, compression = 4>>, tensor<64x512xf16> -> tensor<128x64xf16>
  return %y : tensor<128x64xf16>
}

// -----

// d = 60: the gathered rows are copied in 16-byte chunks.
// CHECK-LABEL: func.func @d_unaligned
// CHECK: sgpu_twell_pack_0
// CHECK: sgpu_twell_ffn_0
func.func @d_unaligned(%h: tensor<64x256xbf16>, %wd: tensor<60x256xbf16>) -> tensor<64x60xbf16> {
  %p = sgpu.twell_pack %h : tensor<64x256xbf16> -> !sgpu.twell<64x256xbf16, #sgpu.twell<tile = 256, compression = 4>>
  // expected-remark @below {{TwELL consumer: CUDA cores, not tensor cores: d = 60 is not a multiple of 8 (the gathered rows are copied in 16-byte chunks)}}
  %y = sgpu.twell_ffn %p, %wd : !sgpu.twell<64x256xbf16, #sgpu.twell<tile = 256, compression = 4>>, tensor<60x256xbf16> -> tensor<64x60xbf16>
  return %y : tensor<64x60xbf16>
}

// -----

// F = 260: the block pack reads 16-byte chunks of H's rows.
// CHECK-LABEL: func.func @f_unaligned
// CHECK: sgpu_twell_ffn_0
func.func @f_unaligned(%h: tensor<64x260xbf16>, %wd: tensor<64x260xbf16>) -> tensor<64x64xbf16> {
  %p = sgpu.twell_pack %h : tensor<64x260xbf16> -> !sgpu.twell<64x260xbf16, #sgpu.twell<tile = 256, compression = 4>>
  // expected-remark @below {{F = 260 is not a multiple of 8 (the block pack reads 16-byte chunks)}}
  %y = sgpu.twell_ffn %p, %wd : !sgpu.twell<64x260xbf16, #sgpu.twell<tile = 256, compression = 4>>, tensor<64x260xbf16> -> tensor<64x64xbf16>
  return %y : tensor<64x64xbf16>
}

// -----

// F = 20480: over the block pack's shared-memory neuron list.
// CHECK-LABEL: func.func @f_too_wide
// CHECK: sgpu_twell_ffn_0
func.func @f_too_wide(%h: tensor<64x20480xbf16>, %wd: tensor<64x20480xbf16>) -> tensor<64x64xbf16> {
  %p = sgpu.twell_pack %h : tensor<64x20480xbf16> -> !sgpu.twell<64x20480xbf16, #sgpu.twell<tile = 256, compression = 4>>
  // expected-remark @below {{F = 20480 is over 16384 (the block pack's neuron list in shared memory)}}
  %y = sgpu.twell_ffn %p, %wd : !sgpu.twell<64x20480xbf16, #sgpu.twell<tile = 256, compression = 4>>, tensor<64x20480xbf16> -> tensor<64x64xbf16>
  return %y : tensor<64x64xbf16>
}

// -----

// Two consumers of one pack, gated then ungated: one block pack; the gated
// consumer's up GEMM writes its own P (not over coef), so the ungated
// consumer's down GEMM still reads H's values (coef).
// CHECK-LABEL: func.func @two_consumers
// CHECK: %[[COEF:.*]] = memref.alloc() : memref<128x512xbf16>
// CHECK: sgpu_twell_blocks_0
// CHECK-NOT: sgpu_twell_blocks_1
// CHECK: %[[P:.*]] = memref.alloc() : memref<128x512xbf16>
// CHECK: gpu.launch_func @sgpu_kernels::@sgpu_twell_up_0 {{.*}}, %[[COEF]] : memref<128x512xbf16>, %[[P]] : memref<128x512xbf16>)
// CHECK: sgpu.tensor_map %[[P]] box [64, 64]
// CHECK: gpu.launch_func @sgpu_kernels::@sgpu_twell_down_0
// CHECK: sgpu.tensor_map %[[COEF]] box [64, 64]
// CHECK: gpu.launch_func @sgpu_kernels::@sgpu_twell_down_1
func.func @two_consumers(%x: tensor<128x64xbf16>, %h: tensor<128x512xbf16>, %wu: tensor<512x64xbf16>,
                         %wd: tensor<64x512xbf16>) -> (tensor<128x64xbf16>, tensor<128x64xbf16>) {
  %p = sgpu.twell_pack %h : tensor<128x512xbf16> -> !sgpu.twell<128x512xbf16, #sgpu.twell<tile = 256, compression = 4>>
  %g = sgpu.twell_ffn %p, %wd up(%x, %wu : tensor<128x64xbf16>, tensor<512x64xbf16>) : !sgpu.twell<128x512xbf16, #sgpu.twell<tile = 256, compression = 4>>, tensor<64x512xbf16> -> tensor<128x64xbf16>
  %u = sgpu.twell_ffn %p, %wd : !sgpu.twell<128x512xbf16, #sgpu.twell<tile = 256, compression = 4>>, tensor<64x512xbf16> -> tensor<128x64xbf16>
  return %g, %u : tensor<128x64xbf16>, tensor<128x64xbf16>
}
