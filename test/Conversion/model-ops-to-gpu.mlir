// The model-block ops become kernels of their own conversion patterns
// (ModelOpsToGPU.h): embedding gather, RoPE, and attention on tensor cores
// (f16/bf16, causal or unmasked) or CUDA cores (f32, masks,
// #sgpu.attention_config), and the block size of #sgpu.launch_config.
// RUN: sparse-opt %s -split-input-file -convert-sgpu-to-gpu | FileCheck %s

// CHECK-LABEL: func.func @embedding
// CHECK: gpu.launch_func @sgpu_kernels::@sgpu_embedding_0 blocks in (%{{.*}}, %{{.*}}, %{{.*}}) threads in
// CHECK-SAME: args(%{{.*}} : memref<128x64xbf16>, %{{.*}} : memref<16xi64>, %{{.*}} : memref<16x64xbf16>)
// CHECK: gpu.func @sgpu_embedding_0(%{{.*}}: memref<128x64xbf16>, %{{.*}}: memref<16xi64>, %{{.*}}: memref<16x64xbf16>) kernel
// Ids outside [0, V) read row 0 and give 0.
// CHECK: arith.cmpi sge
// CHECK: arith.cmpi slt
// CHECK: memref.load
// CHECK: arith.select
func.func @embedding(%t: tensor<128x64xbf16>, %ids: tensor<2x8xi64>) -> tensor<2x8x64xbf16> {
  %e = sgpu.embedding %t, %ids : tensor<128x64xbf16>, tensor<2x8xi64> -> tensor<2x8x64xbf16>
  return %e : tensor<2x8x64xbf16>
}

// -----

// #sgpu.launch_config sets the block size: 16 x 64 elements in blocks of
// 128 threads.
// CHECK-LABEL: func.func @embedding_threads
// CHECK: gpu.launch_func @sgpu_kernels::@sgpu_embedding_0 blocks in (%c8, %{{.*}}, %{{.*}}) threads in (%c128,
func.func @embedding_threads(%t: tensor<128x64xbf16>, %ids: tensor<2x8xi64>) -> tensor<2x8x64xbf16> {
  %e = sgpu.embedding %t, %ids {sgpu.config = #sgpu.launch_config<threads = 128>} : tensor<128x64xbf16>, tensor<2x8xi64> -> tensor<2x8x64xbf16>
  return %e : tensor<2x8x64xbf16>
}

// -----

// RoPE in 16-byte chunks (the half row, 8 f16, is one chunk): 2048 / 8 =
// 256 threads, one block; per thread four 16-byte loads (x, its partner D/2
// away, cos, sin) and one store.
// CHECK-LABEL: func.func @rope
// CHECK: gpu.launch_func @sgpu_kernels::@sgpu_rope_0 blocks in (%c1, %{{.*}}, %{{.*}}) threads in (%c256,
// CHECK-SAME: args(%{{.*}} : memref<2048xf16>, %{{.*}} : memref<256xf16>, %{{.*}} : memref<256xf16>, %{{.*}} : memref<2048xf16>)
// CHECK: gpu.func @sgpu_rope_0
// CHECK-COUNT-4: vector.load {{.*}} {alignment = 16 : i64} : memref<{{[0-9]+}}xf16>, vector<8xf16>
// CHECK: arith.negf
// CHECK: arith.mulf
// CHECK: arith.addf
// CHECK: vector.store {{.*}} {alignment = 16 : i64} : memref<2048xf16>, vector<8xf16>
func.func @rope(%x: tensor<1x8x16x16xf16>, %c: tensor<1x1x16x16xf16>, %s: tensor<1x1x16x16xf16>) -> tensor<1x8x16x16xf16> {
  %y = sgpu.rope %x, %c, %s : tensor<1x8x16x16xf16>, tensor<1x1x16x16xf16>, tensor<1x1x16x16xf16> -> tensor<1x8x16x16xf16>
  return %y : tensor<1x8x16x16xf16>
}

// -----

// A half row that is no whole chunk (D = 12): one thread per element.
// CHECK-LABEL: func.func @rope_per_element
// CHECK: gpu.launch_func @sgpu_kernels::@sgpu_rope_0 blocks in (%c1,
// CHECK: gpu.func @sgpu_rope_0
// CHECK-NOT: vector.load
// CHECK: memref.load
func.func @rope_per_element(%x: tensor<2x4x12xf16>, %c: tensor<1x4x12xf16>, %s: tensor<1x4x12xf16>) -> tensor<2x4x12xf16> {
  %y = sgpu.rope %x, %c, %s : tensor<2x4x12xf16>, tensor<1x4x12xf16>, tensor<1x4x12xf16> -> tensor<2x4x12xf16>
  return %y : tensor<2x4x12xf16>
}

// -----

// Causal GQA attention in bf16 on the tensor-core kernel (chosen by hand:
// auto takes cuDNN's, as the next case shows), one block per 64
// query rows and head (2 x 8 = 16 blocks of 128 threads), K and V tiles
// double buffered in dynamic shared memory (2 stages x 2 tiles x 64 rows x
// 72 elements x 2 bytes, plus 128 bytes of alignment slack): cp.async
// copies, ldmatrix (transposed for V) feeding mma.sync.
// CHECK-LABEL: func.func @attention_mma
// CHECK: gpu.launch_func @sgpu_kernels::@sgpu_attention_mma_0 blocks in (%c16, %{{.*}}, %{{.*}}) threads in (%c128, %{{.*}}, %{{.*}}) dynamic_shared_memory_size %c36992_i32
// CHECK: gpu.func @sgpu_attention_mma_0(
// CHECK: gpu.dynamic_shared_memory
// CHECK: nvvm.cp.async.shared.global %{{.*}}, %{{.*}}, 16, cache =  cg, %{{.*}} : !llvm.ptr<3>, !llvm.ptr<1>, i32
// CHECK: nvvm.cp.async.commit.group
// CHECK: nvvm.cp.async.wait.group 1
// CHECK: gpu.barrier
// CHECK: nvvm.ldmatrix %{{.*}} {eltType = #nvvm.ld_st_matrix_elt_type<b16>, layout = #nvvm.mma_layout<row>, num = 4 : i32, shape = #nvvm.ld_st_matrix_shape<m = 8, n = 8>}
// CHECK: nvvm.mma.sync A[{{.*}}] B[{{.*}}] C[{{.*}}] {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, multiplicandAPtxType = #nvvm.mma_type<bf16>, multiplicandBPtxType = #nvvm.mma_type<bf16>, shape = #nvvm.shape<m = 16, n = 8, k = 16>}
// CHECK: llvm.nvvm.ex2.approx.f32
// CHECK: nvvm.ldmatrix %{{.*}} {eltType = #nvvm.ld_st_matrix_elt_type<b16>, layout = #nvvm.mma_layout<col>, num = 4 : i32
// CHECK: nvvm.mma.sync
// CHECK: nvvm.cp.async.wait.group 0
func.func @attention_mma(%q: tensor<1x8x128x64xbf16>, %k: tensor<1x2x128x64xbf16>, %v: tensor<1x2x128x64xbf16>) -> tensor<1x8x128x64xbf16> {
  %o = sgpu.attention %q, %k, %v {causal, scale = 0.125 : f32, sgpu.config = #sgpu.attention_config<kernel = tensor_cores>} : tensor<1x8x128x64xbf16>, tensor<1x2x128x64xbf16>, tensor<1x2x128x64xbf16> -> tensor<1x8x128x64xbf16>
  return %o : tensor<1x8x128x64xbf16>
}

// -----

// Where cuDNN's fused attention applies, auto takes it: a host call, no
// kernel.
// CHECK-LABEL: func.func @attention_library
// CHECK: sgpu.attention_call %{{.*}}, %{{.*}}, %{{.*}} into %{{.*}} {causal, scale = 1.250000e-01 : f32} : memref<1x8x128x64xbf16>, memref<1x2x128x64xbf16>, memref<1x2x128x64xbf16>, memref<1x8x128x64xbf16>
// CHECK-NOT: gpu.launch_func
func.func @attention_library(%q: tensor<1x8x128x64xbf16>, %k: tensor<1x2x128x64xbf16>, %v: tensor<1x2x128x64xbf16>) -> tensor<1x8x128x64xbf16> {
  %o = sgpu.attention %q, %k, %v {causal, scale = 0.125 : f32} : tensor<1x8x128x64xbf16>, tensor<1x2x128x64xbf16>, tensor<1x2x128x64xbf16> -> tensor<1x8x128x64xbf16>
  return %o : tensor<1x8x128x64xbf16>
}

// -----

// f32 (and masks) take the CUDA-core kernel: one warp per query row.
// CHECK-LABEL: func.func @attention_f32_mask
// CHECK: gpu.launch_func @sgpu_kernels::@sgpu_attention_0
// CHECK-SAME: memref<1x1x16x16xi1>
// CHECK: gpu.func @sgpu_attention_0
// CHECK: gpu.shuffle xor
// CHECK: math.exp
// CHECK-NOT: nvvm.mma.sync
func.func @attention_f32_mask(%q: tensor<1x2x16x32xf32>, %m: tensor<1x1x16x16xi1>) -> tensor<1x2x16x32xf32> {
  %o = sgpu.attention %q, %q, %q mask(%m : tensor<1x1x16x16xi1>) {scale = 0.25 : f32} : tensor<1x2x16x32xf32>, tensor<1x2x16x32xf32>, tensor<1x2x16x32xf32> -> tensor<1x2x16x32xf32>
  return %o : tensor<1x2x16x32xf32>
}

// -----

// sgpu.config chooses the CUDA-core kernel for an op tensor cores could run,
// or the tensor-core kernel's warps per block (8 x 16 = 128 query rows).
// `min_blocks_per_sm` bounds the registers for that many blocks per
// multiprocessor (nvvm.minctasm).
// CHECK-LABEL: func.func @attention_warps
// CHECK: gpu.launch_func @sgpu_kernels::@sgpu_attention_mma_0 blocks in (%c2, %{{.*}}, %{{.*}}) threads in (%c256,
// CHECK: gpu.func @sgpu_attention_mma_0({{.*}}) kernel attributes {{{.*}}nvvm.minctasm = 2 : i32
func.func @attention_warps(%q: tensor<1x2x100x32xf16>) -> tensor<1x2x100x32xf16> {
  %o = sgpu.attention %q, %q, %q {causal, scale = 0.25 : f32, sgpu.config = #sgpu.attention_config<warps = 8, min_blocks_per_sm = 2>} : tensor<1x2x100x32xf16>, tensor<1x2x100x32xf16>, tensor<1x2x100x32xf16> -> tensor<1x2x100x32xf16>
  return %o : tensor<1x2x100x32xf16>
}

// -----

// CHECK-LABEL: func.func @attention_config
// CHECK: gpu.launch_func @sgpu_kernels::@sgpu_attention_0 blocks in
// CHECK-NOT: nvvm.mma.sync
func.func @attention_config(%q: tensor<1x2x16x32xf16>) -> tensor<1x2x16x32xf16> {
  %o = sgpu.attention %q, %q, %q {causal, scale = 0.25 : f32, sgpu.config = #sgpu.attention_config<kernel = cuda_cores, rows_per_block = 8>} : tensor<1x2x16x32xf16>, tensor<1x2x16x32xf16>, tensor<1x2x16x32xf16> -> tensor<1x2x16x32xf16>
  return %o : tensor<1x2x16x32xf16>
}

// -----

// A decode step over a KV cache: the cache update writes the state
// argument's own buffer (no result allocation), one query per sequence
// takes the split-KV kernels (here the CUDA-core split kernel, by
// configuration; attention-decode-mma.mlir has the tensor-core one): 2 sequences x 2 key/value heads x 8 splits of
// the keys (blocks of 8 warps; by default half a warp per key row: 8
// columns per lane in one 16-byte load, sums in 4 shuffles, two keys per
// group and loop step), then one thread per output element merges the
// splits from f32 scratch buffers.
// CHECK-LABEL: func.func @decode
// CHECK-SAME: %[[KC:[a-z0-9]+]]: tensor<4x2x256x128xbf16> {sgpu.param = "k_cache", sgpu.state}
// CHECK: %[[KB:.*]] = bufferization.to_buffer %[[KC]]
// CHECK: gpu.launch_func @sgpu_kernels::@sgpu_cache_update_0 blocks in (%{{.*}}, %{{.*}}, %{{.*}}) threads in (%{{.*}}, %{{.*}}, %{{.*}}) args(%[[KB]] : memref<4x2x256x128xbf16>, %{{.*}} : memref<2x2x1x128xbf16>, %{{.*}} : memref<2x1xi64>)
// CHECK: %[[ACC:.*]] = memref.alloc() : memref<16384xf32>
// CHECK: %[[ML:.*]] = memref.alloc() : memref<256xf32>
// CHECK: gpu.launch_func @sgpu_kernels::@sgpu_attention_split_0 blocks in (%c32, %{{.*}}, %{{.*}}) threads in (%c256{{.*}}, %{{.*}}, %{{.*}}) args({{.*}}, %[[ACC]] : memref<16384xf32>, %[[ML]] : memref<256xf32>)
// CHECK: gpu.launch_func @sgpu_kernels::@sgpu_attention_combine_0 {{.*}} args(%[[ACC]] : memref<16384xf32>, %[[ML]] : memref<256xf32>, %{{.*}} : memref<16x128xbf16>)
// CHECK: gpu.func @sgpu_cache_update_0
// Positions outside [0, T) write nothing.
// CHECK: arith.cmpi sge
// CHECK-NEXT: arith.constant
// CHECK-NEXT: arith.cmpi slt
// CHECK-NEXT: arith.andi
// CHECK-NEXT: scf.if
// CHECK-NEXT: memref.load
// CHECK-NEXT: memref.store
// Two blocks per multiprocessor (nvvm.minctasm caps the registers); the
// first step's K and V rows are loaded before the loop, and each step loads
// the next step's rows before its arithmetic (min(j, T - 1): a row of the
// cache even past the range).
// CHECK: gpu.func @sgpu_attention_split_0({{.*}}) workgroup(%{{.*}} : memref<128xf32, #gpu.address_space<workgroup>>, %{{.*}} : memref<8192xf32, #gpu.address_space<workgroup>>) kernel attributes {known_block_size = array<i32: 256, 1, 1>, nvvm.minctasm = 2 : i32}
// CHECK: arith.minsi %{{.*}}, %c255
// CHECK: vector.load {{.*}} : memref<4x2x256x128xbf16>, vector<8xbf16>
// CHECK: %[[STEP:.*]] = arith.constant 32 : index
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %[[STEP]] iter_args({{.*}}) -> ({{.*}}vector<8xbf16>, vector<8xbf16>, vector<8xbf16>, vector<8xbf16>)
// CHECK: arith.minsi %{{.*}}, %c255
// CHECK: vector.load {{.*}} {alignment = 16 : i64} : memref<4x2x256x128xbf16>, vector<8xbf16>
// CHECK: gpu.shuffle xor %{{.*}}, %c8_i32
// CHECK-NOT: gpu.shuffle xor %{{.*}}, %c16_i32
// CHECK: gpu.shuffle xor %{{.*}}, %c1_i32
// CHECK: gpu.barrier
// CHECK: gpu.func @sgpu_attention_combine_0
func.func @decode(%q: tensor<2x8x1x128xbf16>, %k: tensor<2x2x1x128xbf16>, %pos: tensor<2x1xi64>,
                  %kc: tensor<4x2x256x128xbf16> {sgpu.param = "k_cache", sgpu.state}) -> tensor<2x8x1x128xbf16> {
  %k2 = sgpu.cache_update %kc, %k, %pos : tensor<4x2x256x128xbf16>, tensor<2x2x1x128xbf16>, tensor<2x1xi64> -> tensor<4x2x256x128xbf16>
  %o = sgpu.attention %q, %k2, %k2 positions(%pos : tensor<2x1xi64>) {causal, scale = 0.125 : f32, sgpu.config = #sgpu.attention_config<kernel = decode>} : tensor<2x8x1x128xbf16>, tensor<4x2x256x128xbf16>, tensor<4x2x256x128xbf16> -> tensor<2x8x1x128xbf16>
  return %o : tensor<2x8x1x128xbf16>
}

// -----

// A cache update with rope tables: one kernel writes the rotated keys,
// reading the partner element and the tables through flat views.
// CHECK-LABEL: func.func @decode_rope_write
// CHECK: gpu.launch_func @sgpu_kernels::@sgpu_cache_update_rope_0 {{.*}} args(%{{.*}} : memref<4x2x256x128xbf16>, %{{.*}} : memref<2x2x1x128xbf16>, %{{.*}} : memref<2x1xi64>, %{{.*}} : memref<512xbf16>, %{{.*}} : memref<128xbf16>, %{{.*}} : memref<128xbf16>)
// CHECK: gpu.func @sgpu_cache_update_rope_0
// CHECK: scf.if
// CHECK: arith.select
// CHECK: arith.negf
// CHECK: arith.mulf
// CHECK: arith.addf
// CHECK: arith.truncf
// CHECK: memref.store {{.*}} : memref<4x2x256x128xbf16>
func.func @decode_rope_write(%k: tensor<2x2x1x128xbf16>, %pos: tensor<2x1xi64>, %cos: tensor<1x1x1x128xbf16>,
                             %sin: tensor<1x1x1x128xbf16>,
                             %kc: tensor<4x2x256x128xbf16> {sgpu.param = "k_cache", sgpu.state}) -> tensor<4x2x256x128xbf16> {
  %k2 = sgpu.cache_update %kc, %k, %pos rope(%cos, %sin : tensor<1x1x1x128xbf16>, tensor<1x1x1x128xbf16>) : tensor<4x2x256x128xbf16>, tensor<2x2x1x128xbf16>, tensor<2x1xi64> -> tensor<4x2x256x128xbf16>
  return %k2 : tensor<4x2x256x128xbf16>
}

// -----

// sgpu.config lanes_per_key = 32, unroll = 1: a whole warp per key row (4
// columns per lane in one 8-byte load, sums in 5 shuffles), one key per
// warp and loop step. The loop runs over the warp's first key, the same
// trip count in every lane (the shuffles need the whole warp).
// CHECK-LABEL: func.func @decode_warp_per_key
// CHECK: gpu.func @sgpu_attention_split_0({{.*}}) workgroup(%{{.*}} : memref<64xf32, #gpu.address_space<workgroup>>, %{{.*}} : memref<4096xf32, #gpu.address_space<workgroup>>)
// CHECK: %[[STEP:.*]] = arith.constant 8 : index
// CHECK: scf.for %[[J0:.*]] = %{{.*}} to %{{.*}} step %[[STEP]]
// CHECK: vector.load {{.*}} {alignment = 8 : i64} : memref<4x2x256x128xbf16>, vector<4xbf16>
// CHECK: gpu.shuffle xor %{{.*}}, %c16_i32
// CHECK: gpu.shuffle xor %{{.*}}, %c1_i32
// CHECK: gpu.barrier
func.func @decode_warp_per_key(%q: tensor<2x8x1x128xbf16>, %pos: tensor<2x1xi64>,
                               %kc: tensor<4x2x256x128xbf16>) -> tensor<2x8x1x128xbf16> {
  %o = sgpu.attention %q, %kc, %kc positions(%pos : tensor<2x1xi64>) {causal, scale = 0.125 : f32, sgpu.config = #sgpu.attention_config<lanes_per_key = 32, unroll = 1>} : tensor<2x8x1x128xbf16>, tensor<4x2x256x128xbf16>, tensor<4x2x256x128xbf16> -> tensor<2x8x1x128xbf16>
  return %o : tensor<2x8x1x128xbf16>
}

// -----

// Eight query heads per key/value head on the CUDA-core split kernel: the
// default half-warp groups would
// merge 16 partial states of 8 heads (65 KiB of shared memory), so the
// default takes the next form that fits, a whole warp per key row.
// CHECK-LABEL: func.func @decode_group8
// CHECK: gpu.func @sgpu_attention_split_0
// CHECK: vector.load {{.*}} : memref<1x1x64x128xbf16>, vector<4xbf16>
// CHECK: gpu.shuffle xor %{{.*}}, %c16_i32
func.func @decode_group8(%q: tensor<1x8x1x128xbf16>, %pos: tensor<1x1xi64>,
                         %kc: tensor<1x1x64x128xbf16>) -> tensor<1x8x1x128xbf16> {
  %o = sgpu.attention %q, %kc, %kc positions(%pos : tensor<1x1xi64>) {causal, scale = 0.125 : f32, sgpu.config = #sgpu.attention_config<kernel = decode>} : tensor<1x8x1x128xbf16>, tensor<1x1x64x128xbf16>, tensor<1x1x64x128xbf16> -> tensor<1x8x1x128xbf16>
  return %o : tensor<1x8x1x128xbf16>
}

// -----

// Several queries per sequence over a cache (a prefill continuing from
// positions) take the CUDA-core kernel, one row per block, reading the
// positions: a row stops at key positions[b, i].
// CHECK-LABEL: func.func @cached_rows
// CHECK: gpu.launch_func @sgpu_kernels::@sgpu_attention_0 blocks in (%c32, %{{.*}}, %{{.*}}) threads in (%c32{{.*}}, %{{.*}}, %{{.*}}) args({{.*}}, %{{.*}} : memref<1x4xi32>, %{{.*}} : memref<1x8x4x64xf16>)
// CHECK: gpu.func @sgpu_attention_0
// CHECK: arith.index_cast
// CHECK: arith.maxsi
// CHECK: arith.minsi
func.func @cached_rows(%q: tensor<1x8x4x64xf16>, %kc: tensor<2x2x128x64xf16>, %pos: tensor<1x4xi32>) -> tensor<1x8x4x64xf16> {
  %o = sgpu.attention %q, %kc, %kc positions(%pos : tensor<1x4xi32>) {causal, scale = 0.125 : f32} : tensor<1x8x4x64xf16>, tensor<2x2x128x64xf16>, tensor<2x2x128x64xf16> -> tensor<1x8x4x64xf16>
  return %o : tensor<1x8x4x64xf16>
}
