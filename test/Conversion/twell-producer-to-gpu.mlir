// twell-producer=fused: an sgpu.twell_pack of a ReLU sgpu.matmul becomes one
// generated GEMM whose epilogue packs (TMA maps of X and W, 128 tokens x 256
// features per block), between a clear kernel (counters and the M flags)
// and the fix-up of the overflowed rows' fallback; no library GEMM and no H
// buffer. Where it does not apply the pack keeps the library path with a
// remark saying why; the default (auto) keeps the library path.
// RUN: sparse-opt %s -split-input-file -convert-sgpu-to-gpu="twell-producer=fused twell-pack=kernel" -verify-diagnostics | FileCheck %s
// RUN: sparse-opt %s -split-input-file -convert-sgpu-to-gpu="twell-pack=kernel" | FileCheck %s --check-prefix=AUTO
// RUN: not sparse-opt %s -split-input-file -convert-sgpu-to-gpu="twell-producer=inline" 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: sparse-opt %s -split-input-file -convert-sgpu-to-gpu="twell-producer=fused chip=sm_90 features=+ptx85" 2>&1 | FileCheck %s --check-prefix=SM90

// BAD: unknown twell-producer 'inline'; expected auto, fused or library
// SM90: remark: TwELL producer: the library GEMM and the pack kernel, not the fused producer: the target has no wgmma (sm_90a with PTX ISA 8.2 or later)

// M = 200 (a partial token block), K = 200, F = 600 (three tiles of 256, the
// last partial), with a bias.
// CHECK-LABEL: func.func @ungated_bias
// CHECK-SAME: (%[[X:.*]]: tensor<200x200xbf16>, %[[W:.*]]: tensor<600x200xbf16>, %[[B:.*]]: tensor<600xbf16>
// CHECK-NOT: sgpu.gemm_call
// CHECK: %[[XB:.*]] = bufferization.to_buffer %[[X]]
// CHECK: %[[WB:.*]] = bufferization.to_buffer %[[W]]
// CHECK: %[[BB:.*]] = bufferization.to_buffer %[[B]]
// CHECK: %[[WORDS:.*]] = memref.alloc() : memref<200x3x64xi32>
// CHECK: %[[FLAGS:.*]] = memref.alloc() : memref<200xi32>
// CHECK: %[[FB:.*]] = memref.alloc() : memref<200x600xbf16>
// CHECK: %[[ROWS:.*]] = memref.alloc() {sgpu.stat = "twell0.fallback_rows", sgpu.stat_total = 200 : i64} : memref<1xi32>
// CHECK: %[[ACTIVE:.*]] = memref.alloc() {sgpu.stat = "twell0.active_neurons", sgpu.stat_total = 120000 : i64} : memref<1xi64>
// CHECK: gpu.launch_func @sgpu_kernels::@sgpu_twell_clear_0 blocks in (%c1{{[_0-9]*}}, %{{.*}}, %{{.*}}) threads in (%c256{{[_0-9]*}}, %{{.*}}, %{{.*}}) args(%[[ROWS]] : memref<1xi32>, %[[ACTIVE]] : memref<1xi64>, %[[FLAGS]] : memref<200xi32>)
// CHECK: %[[TX:.*]] = sgpu.tensor_map %[[XB]] box [128, 64] swizzle 128 : memref<200x200xbf16> -> !llvm.ptr
// CHECK: %[[TW:.*]] = sgpu.tensor_map %[[WB]] box [256, 64] swizzle 128 : memref<600x200xbf16> -> !llvm.ptr
// 2 token blocks x 3 feature blocks; 4 stages of 48 KiB.
// CHECK: gpu.launch_func @sgpu_kernels::@sgpu_twell_producer_0 blocks in (%c6{{[_0-9]*}}, %{{.*}}, %{{.*}}) threads in (%c384{{[_0-9]*}}, %{{.*}}, %{{.*}}) dynamic_shared_memory_size %{{.*}} args(%[[TX]] : !llvm.ptr, %[[TW]] : !llvm.ptr, %[[BB]] : memref<600xbf16>, %[[WORDS]] : memref<200x3x64xi32>, %[[FLAGS]] : memref<200xi32>, %[[FB]] : memref<200x600xbf16>, %[[ROWS]] : memref<1xi32>, %[[ACTIVE]] : memref<1xi64>)
// One warp per row: 25 blocks of 8.
// CHECK: gpu.launch_func @sgpu_kernels::@sgpu_twell_fixup_0 blocks in (%c25{{[_0-9]*}}, %{{.*}}, %{{.*}}) threads in (%c256{{[_0-9]*}}, %{{.*}}, %{{.*}}) args(%[[WORDS]] : memref<200x3x64xi32>, %[[FLAGS]] : memref<200xi32>, %[[FB]] : memref<200x600xbf16>)
// CHECK: gpu.launch_func @sgpu_kernels::@sgpu_twell_ffn_0
// CHECK-NOT: sgpu.matmul
// CHECK-NOT: sgpu.twell_pack
// CHECK: gpu.func @sgpu_twell_clear_0(
// CHECK: gpu.func @sgpu_twell_producer_0(%{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: memref<600xbf16>, %{{.*}}: memref<200x3x64xi32>, %{{.*}}: memref<200xi32>, %{{.*}}: memref<200x600xbf16>, %{{.*}}: memref<1xi32>, %{{.*}}: memref<1xi64>) kernel attributes {known_block_size = array<i32: 384, 1, 1>, nvvm.minctasm = 1 : i32, sgpu.tensor_map_args = array<i64: 0, 1>}
// The dense wgmma, four per 64-column stage (unrolled by two k-tiles).
// CHECK-COUNT-8: wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16
// The epilogue: the quad's masks by index shuffles, population counts, an
// atomic or on the row's flag for a tile over capacity, one atomic per
// warp for the nonzero count.
// CHECK: gpu.shuffle idx
// CHECK: llvm.intr.ctpop
// CHECK: memref.atomic_rmw ori
// CHECK: memref.atomic_rmw addi %{{.*}} : (i32, memref<1xi32>) -> i32
// CHECK: memref.atomic_rmw addi %{{.*}} : (i64, memref<1xi64>) -> i64
// CHECK: gpu.func @sgpu_twell_fixup_0(%{{.*}}: memref<200x3x64xi32>, %{{.*}}: memref<200xi32>, %{{.*}}: memref<200x600xbf16>)
// CHECK: nvvm.bar.warp.sync
// AUTO-LABEL: func.func @ungated_bias
// AUTO: sgpu.gemm_call
// AUTO: gpu.launch_func @sgpu_kernels::@sgpu_twell_pack_0
// AUTO-NOT: sgpu_twell_producer
func.func @ungated_bias(%x: tensor<200x200xbf16>, %w: tensor<600x200xbf16>, %b: tensor<600xbf16>,
                        %wd: tensor<200x600xbf16>) -> tensor<200x200xbf16> {
  %h = sgpu.matmul %x, %w bias(%b : tensor<600xbf16>) {activation = #sgpu.activation<relu>}
      : tensor<200x200xbf16>, tensor<600x200xbf16> -> tensor<200x600xbf16>
  %p = sgpu.twell_pack %h : tensor<200x600xbf16> -> !sgpu.twell<200x600xbf16, #sgpu.twell<tile = 256, compression = 4>>
  %y = sgpu.twell_ffn %p, %wd : !sgpu.twell<200x600xbf16, #sgpu.twell<tile = 256, compression = 4>>, tensor<200x600xbf16> -> tensor<200x200xbf16>
  return %y : tensor<200x200xbf16>
}

// -----

// Tile 128: two tiles per 256-feature block; f16.
// CHECK-LABEL: func.func @tile128
// CHECK: memref.alloc() : memref<128x4x32xi32>
// CHECK: gpu.launch_func @sgpu_kernels::@sgpu_twell_producer_0 blocks in (%c2{{[_0-9]*}},
// CHECK-COUNT-8: wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16
func.func @tile128(%x: tensor<128x64xf16>, %w: tensor<512x64xf16>,
                   %wd: tensor<64x512xf16>) -> tensor<128x64xf16> {
  %h = sgpu.matmul %x, %w {activation = #sgpu.activation<relu>}
      : tensor<128x64xf16>, tensor<512x64xf16> -> tensor<128x512xf16>
  %p = sgpu.twell_pack %h : tensor<128x512xf16> -> !sgpu.twell<128x512xf16, #sgpu.twell<tile = 128, compression = 4>>
  %y = sgpu.twell_ffn %p, %wd : !sgpu.twell<128x512xf16, #sgpu.twell<tile = 128, compression = 4>>, tensor<64x512xf16> -> tensor<128x64xf16>
  return %y : tensor<128x64xf16>
}

// -----

// No ReLU on the matmul (the packed value is not a ReLU output): the
// library GEMM and the pack kernel.
// CHECK-LABEL: func.func @no_relu
// CHECK: sgpu.gemm_call
// CHECK: sgpu_twell_pack_0
func.func @no_relu(%x: tensor<64x64xbf16>, %w: tensor<256x64xbf16>,
                   %wd: tensor<64x256xbf16>) -> tensor<64x64xbf16> {
  %h = sgpu.matmul %x, %w : tensor<64x64xbf16>, tensor<256x64xbf16> -> tensor<64x256xbf16>
  // expected-remark @below {{TwELL producer: the library GEMM and the pack kernel, not the fused producer: the matmul has no ReLU epilogue}}
  %p = sgpu.twell_pack %h : tensor<64x256xbf16> -> !sgpu.twell<64x256xbf16, #sgpu.twell<tile = 256, compression = 4>>
  %y = sgpu.twell_ffn %p, %wd : !sgpu.twell<64x256xbf16, #sgpu.twell<tile = 256, compression = 4>>, tensor<64x256xbf16> -> tensor<64x64xbf16>
  return %y : tensor<64x64xbf16>
}

// -----

// The ReLU output is also returned: H must exist, so the library path.
// CHECK-LABEL: func.func @h_used
// CHECK: sgpu.gemm_call
func.func @h_used(%x: tensor<64x64xbf16>, %w: tensor<256x64xbf16>,
                  %wd: tensor<64x256xbf16>) -> (tensor<64x64xbf16>, tensor<64x256xbf16>) {
  %h = sgpu.matmul %x, %w {activation = #sgpu.activation<relu>}
      : tensor<64x64xbf16>, tensor<256x64xbf16> -> tensor<64x256xbf16>
  // expected-remark @below {{the ReLU output has users other than the pack}}
  %p = sgpu.twell_pack %h : tensor<64x256xbf16> -> !sgpu.twell<64x256xbf16, #sgpu.twell<tile = 256, compression = 4>>
  %y = sgpu.twell_ffn %p, %wd : !sgpu.twell<64x256xbf16, #sgpu.twell<tile = 256, compression = 4>>, tensor<64x256xbf16> -> tensor<64x64xbf16>
  return %y, %h : tensor<64x64xbf16>, tensor<64x256xbf16>
}

// -----

// K = 12: TMA needs 16-byte rows.
// CHECK-LABEL: func.func @k_unaligned
// CHECK: sgpu.gemm_call
func.func @k_unaligned(%x: tensor<64x12xbf16>, %w: tensor<256x12xbf16>,
                       %wd: tensor<64x256xbf16>) -> tensor<64x64xbf16> {
  %h = sgpu.matmul %x, %w {activation = #sgpu.activation<relu>}
      : tensor<64x12xbf16>, tensor<256x12xbf16> -> tensor<64x256xbf16>
  // expected-remark @below {{K = 12 is not a multiple of 8 (TMA rows must be 16-byte aligned)}}
  %p = sgpu.twell_pack %h : tensor<64x256xbf16> -> !sgpu.twell<64x256xbf16, #sgpu.twell<tile = 256, compression = 4>>
  %y = sgpu.twell_ffn %p, %wd : !sgpu.twell<64x256xbf16, #sgpu.twell<tile = 256, compression = 4>>, tensor<64x256xbf16> -> tensor<64x64xbf16>
  return %y : tensor<64x64xbf16>
}

// -----

// A 512-column tile is wider than one wgmma N.
// CHECK-LABEL: func.func @tile512
// CHECK: sgpu.gemm_call
func.func @tile512(%x: tensor<64x64xbf16>, %w: tensor<512x64xbf16>,
                   %wd: tensor<64x512xbf16>) -> tensor<64x64xbf16> {
  %h = sgpu.matmul %x, %w {activation = #sgpu.activation<relu>}
      : tensor<64x64xbf16>, tensor<512x64xbf16> -> tensor<64x512xbf16>
  // expected-remark @below {{tile 512 is not 64, 128 or 256 columns (one wgmma N)}}
  %p = sgpu.twell_pack %h : tensor<64x512xbf16> -> !sgpu.twell<64x512xbf16, #sgpu.twell<tile = 512, compression = 4>>
  %y = sgpu.twell_ffn %p, %wd : !sgpu.twell<64x512xbf16, #sgpu.twell<tile = 512, compression = 4>>, tensor<64x512xbf16> -> tensor<64x64xbf16>
  return %y : tensor<64x64xbf16>
}

// -----

// The packed value is a function argument, not a GEMM's output.
// CHECK-LABEL: func.func @from_argument
// CHECK: sgpu_twell_pack_0
func.func @from_argument(%h: tensor<64x256xbf16>, %wd: tensor<64x256xbf16>) -> tensor<64x64xbf16> {
  // expected-remark @below {{the packed value is not produced by sgpu.matmul}}
  %p = sgpu.twell_pack %h : tensor<64x256xbf16> -> !sgpu.twell<64x256xbf16, #sgpu.twell<tile = 256, compression = 4>>
  %y = sgpu.twell_ffn %p, %wd : !sgpu.twell<64x256xbf16, #sgpu.twell<tile = 256, compression = 4>>, tensor<64x256xbf16> -> tensor<64x64xbf16>
  return %y : tensor<64x64xbf16>
}
