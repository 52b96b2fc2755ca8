// Every sgpu op, attribute and type parses, prints and round-trips.
// RUN: sparse-opt %s -split-input-file | FileCheck %s
// RUN: sparse-opt %s -split-input-file | sparse-opt -split-input-file | FileCheck %s

// CHECK-LABEL: func @encodings
// CHECK-SAME: tensor<64x128xf16, #sgpu.nm<2:4>>
// CHECK-SAME: tensor<64x128xbf16, #sgpu.nm<6:8>>
// CHECK-SAME: tensor<64x128xf16, #sgpu.nm<14:16>>
func.func @encodings(%a: tensor<64x128xf16, #sgpu.nm<2:4>>,
                     %b: tensor<64x128xbf16, #sgpu.nm<6:8>>,
                     %c: tensor<64x128xf16, #sgpu.nm<14:16>>) {
  return
}

// -----

// CHECK-LABEL: func @compress_spmm
// CHECK: %[[C:.*]] = sgpu.compress %{{.*}} : tensor<20x40xf16, #sgpu.nm<2:4>> -> !sgpu.compressed<20x40xf16, #sgpu.nm<2:4>>
// CHECK: %[[Y:.*]] = sgpu.spmm %{{.*}}, %[[C]] : tensor<7x40xf16>, !sgpu.compressed<20x40xf16, #sgpu.nm<2:4>> -> tensor<7x20xf16>
// CHECK: sgpu.spmm %{{.*}}, %[[C]] {activation = #sgpu.activation<relu>} : tensor<7x40xf16>, !sgpu.compressed<20x40xf16, #sgpu.nm<2:4>> -> tensor<7x20xf32>
// CHECK: sgpu.spmm %{{.*}}, %[[C]] bias(%{{.*}} : tensor<20xf32>) {activation = #sgpu.activation<relu>} : tensor<7x40xf16>, !sgpu.compressed<20x40xf16, #sgpu.nm<2:4>> -> tensor<7x20xf16>
func.func @compress_spmm(%x: tensor<7x40xf16>, %w: tensor<20x40xf16, #sgpu.nm<2:4>>, %b: tensor<20xf32>) -> (tensor<7x20xf16>, tensor<7x20xf32>) {
  %c = sgpu.compress %w : tensor<20x40xf16, #sgpu.nm<2:4>> -> !sgpu.compressed<20x40xf16, #sgpu.nm<2:4>>
  %y = sgpu.spmm %x, %c : tensor<7x40xf16>, !sgpu.compressed<20x40xf16, #sgpu.nm<2:4>> -> tensor<7x20xf16>
  %z = sgpu.spmm %x, %c {activation = #sgpu.activation<relu>} : tensor<7x40xf16>, !sgpu.compressed<20x40xf16, #sgpu.nm<2:4>> -> tensor<7x20xf32>
  %zb = sgpu.spmm %x, %c bias(%b : tensor<20xf32>) {activation = #sgpu.activation<relu>} : tensor<7x40xf16>, !sgpu.compressed<20x40xf16, #sgpu.nm<2:4>> -> tensor<7x20xf16>
  return %y, %z : tensor<7x20xf16>, tensor<7x20xf32>
}

// -----

// Padded parts: 20 rows -> 32, K 40 -> 64: values 32x32, metadata 32*64/32.
// CHECK-LABEL: func @assemble
// CHECK: sgpu.assemble %{{.*}}, %{{.*}} : tensor<32x32xbf16>, tensor<64xi32> -> !sgpu.compressed<20x40xbf16, #sgpu.nm<2:4>>
func.func @assemble(%v: tensor<32x32xbf16>, %m: tensor<64xi32>) -> !sgpu.compressed<20x40xbf16, #sgpu.nm<2:4>> {
  %c = sgpu.assemble %v, %m : tensor<32x32xbf16>, tensor<64xi32> -> !sgpu.compressed<20x40xbf16, #sgpu.nm<2:4>>
  return %c : !sgpu.compressed<20x40xbf16, #sgpu.nm<2:4>>
}

// -----

// 6:8 (N = 4): K 100 -> 104 (13 groups of 8) -> 13 * 12 = 156 lifted columns.
// CHECK-LABEL: func @decompose_lift
// CHECK: sgpu.nm_decompose %{{.*}} : tensor<32x100xf16, #sgpu.nm<6:8>> -> !sgpu.compressed<32x156xf16, #sgpu.nm<2:4>>
// CHECK: sgpu.lift %{{.*}} {pattern = #sgpu.nm<6:8>} : tensor<9x100xf16> -> tensor<9x156xf16>
func.func @decompose_lift(%w: tensor<32x100xf16, #sgpu.nm<6:8>>, %x: tensor<9x100xf16>) -> tensor<9x32xf16> {
  %c = sgpu.nm_decompose %w : tensor<32x100xf16, #sgpu.nm<6:8>> -> !sgpu.compressed<32x156xf16, #sgpu.nm<2:4>>
  %xl = sgpu.lift %x {pattern = #sgpu.nm<6:8>} : tensor<9x100xf16> -> tensor<9x156xf16>
  %y = sgpu.spmm %xl, %c : tensor<9x156xf16>, !sgpu.compressed<32x156xf16, #sgpu.nm<2:4>> -> tensor<9x32xf16>
  return %y : tensor<9x32xf16>
}

// -----

// The tiled window order: 13 groups rounded up to 16 (two tiles of 8),
// 16 * 12 = 192 lifted columns.
// CHECK-LABEL: func @decompose_lift_tiled
// CHECK: sgpu.nm_decompose %{{.*}} {tile_groups = 8 : i64} : tensor<32x100xf16, #sgpu.nm<6:8>> -> !sgpu.compressed<32x192xf16, #sgpu.nm<2:4>>
// CHECK: sgpu.lift %{{.*}} {pattern = #sgpu.nm<6:8>, tile_groups = 8 : i64} : tensor<9x100xf16> -> tensor<9x192xf16>
func.func @decompose_lift_tiled(%w: tensor<32x100xf16, #sgpu.nm<6:8>>, %x: tensor<9x100xf16>) -> tensor<9x32xf16> {
  %c = sgpu.nm_decompose %w {tile_groups = 8} : tensor<32x100xf16, #sgpu.nm<6:8>> -> !sgpu.compressed<32x192xf16, #sgpu.nm<2:4>>
  %xl = sgpu.lift %x {pattern = #sgpu.nm<6:8>, tile_groups = 8} : tensor<9x100xf16> -> tensor<9x192xf16>
  %y = sgpu.spmm %xl, %c : tensor<9x192xf16>, !sgpu.compressed<32x192xf16, #sgpu.nm<2:4>> -> tensor<9x32xf16>
  return %y : tensor<9x32xf16>
}

// -----

// CHECK-LABEL: func @twell
// CHECK: %[[P:.*]] = sgpu.twell_pack %{{.*}} {{.*}}: tensor<128x512xbf16> -> !sgpu.twell<128x512xbf16, #sgpu.twell<tile = 256, compression = 4>>
// CHECK: sgpu.twell_ffn %[[P]], %{{.*}} up(%{{.*}}, %{{.*}} : tensor<128x64xbf16>, tensor<512x64xbf16>) : !sgpu.twell<128x512xbf16, #sgpu.twell<tile = 256, compression = 4>>, tensor<64x512xbf16> -> tensor<128x64xbf16>
// CHECK: sgpu.twell_ffn %[[P]], %{{.*}} : !sgpu.twell<128x512xbf16, #sgpu.twell<tile = 256, compression = 4>>, tensor<64x512xbf16> -> tensor<128x64xbf16>
func.func @twell(%h: tensor<128x512xbf16>, %x: tensor<128x64xbf16>, %wu: tensor<512x64xbf16>, %wd: tensor<64x512xbf16>) -> (tensor<128x64xbf16>, tensor<128x64xbf16>) {
  %p = sgpu.twell_pack %h : tensor<128x512xbf16> -> !sgpu.twell<128x512xbf16, #sgpu.twell<tile = 256, compression = 4>>
  %y = sgpu.twell_ffn %p, %wd up(%x, %wu : tensor<128x64xbf16>, tensor<512x64xbf16>) : !sgpu.twell<128x512xbf16, #sgpu.twell<tile = 256, compression = 4>>, tensor<64x512xbf16> -> tensor<128x64xbf16>
  %z = sgpu.twell_ffn %p, %wd : !sgpu.twell<128x512xbf16, #sgpu.twell<tile = 256, compression = 4>>, tensor<64x512xbf16> -> tensor<128x64xbf16>
  return %y, %z : tensor<128x64xbf16>, tensor<128x64xbf16>
}

// -----

// CHECK-LABEL: func @collectives
// CHECK: sgpu.all_reduce %{{.*}} : tensor<16x64xbf16>
// CHECK: sgpu.all_reduce %{{.*}} {kind = #sgpu.reduce<max>} : tensor<16x64xf32>
// CHECK: %[[T:.*]] = sgpu.all_reduce_start %{{.*}} : tensor<16x64xbf16>
// CHECK: sgpu.all_reduce_wait %[[T]], %{{.*}} : tensor<16x64xbf16>
func.func @collectives(%x: tensor<16x64xbf16>, %f: tensor<16x64xf32>) -> (tensor<16x64xbf16>, tensor<16x64xf32>, tensor<16x64xbf16>) {
  %a = sgpu.all_reduce %x : tensor<16x64xbf16>
  %b = sgpu.all_reduce %f {kind = #sgpu.reduce<max>} : tensor<16x64xf32>
  %t = sgpu.all_reduce_start %x : tensor<16x64xbf16>
  %c = sgpu.all_reduce_wait %t, %x : tensor<16x64xbf16>
  return %a, %b, %c : tensor<16x64xbf16>, tensor<16x64xf32>, tensor<16x64xbf16>
}

// -----

// The buffer forms convert-sgpu-to-gpu writes for the runtime program.
// CHECK-LABEL: func @collective_calls
// CHECK: %[[T:.*]] = sgpu.all_reduce_call %{{.*}} into %{{.*}} {kind = #sgpu.reduce<avg>} : memref<16x64xbf16>, memref<16x64xbf16>
// CHECK: sgpu.all_reduce_sync %[[T]], %{{.*}} : memref<16x64xbf16>
func.func @collective_calls(%x: memref<16x64xbf16>, %r: memref<16x64xbf16>) {
  %t = sgpu.all_reduce_call %x into %r {kind = #sgpu.reduce<avg>} : memref<16x64xbf16>, memref<16x64xbf16>
  sgpu.all_reduce_sync %t, %x : memref<16x64xbf16>
  return
}

// -----

// The upstream sparse_tensor 2:4 encoding is accepted as a synonym.
#NV24 = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j floordiv 4 : dense, j mod 4 : structured[2, 4]) }>
// CHECK-LABEL: func @synonym
// CHECK: sgpu.compress
func.func @synonym(%w: tensor<16x32xf16, #NV24>) -> !sgpu.compressed<16x32xf16, #sgpu.nm<2:4>> {
  %c = sgpu.compress %w : tensor<16x32xf16, #NV24> -> !sgpu.compressed<16x32xf16, #sgpu.nm<2:4>>
  return %c : !sgpu.compressed<16x32xf16, #sgpu.nm<2:4>>
}

// -----

// CHECK-LABEL: func @blocks
// CHECK: sgpu.rms_norm %{{.*}}, %{{.*}} {epsilon = 9.99999997E-7 : f32} : tensor<2x8x64xf16>, tensor<64xf16> -> tensor<2x8x64xf16>
// CHECK: sgpu.layer_norm %{{.*}}, %{{.*}}, %{{.*}} {epsilon = 9.99999974E-6 : f32} : tensor<2x8x64xf32>, tensor<64xf32>, tensor<64xf32> -> tensor<2x8x64xf32>
// CHECK: sgpu.attention %{{.*}}, %{{.*}}, %{{.*}} {causal, scale = 1.250000e-01 : f32} : tensor<1x8x16x64xf16>, tensor<1x2x16x64xf16>, tensor<1x2x16x32xf16> -> tensor<1x8x16x32xf16>
// CHECK: sgpu.attention %{{.*}}, %{{.*}}, %{{.*}} mask(%{{.*}} : tensor<1x1x16x16xi1>) {scale = 1.250000e-01 : f32}
func.func @blocks(%x: tensor<2x8x64xf16>, %w: tensor<64xf16>, %xf: tensor<2x8x64xf32>, %wf: tensor<64xf32>, %bf: tensor<64xf32>,
                  %q: tensor<1x8x16x64xf16>, %k: tensor<1x2x16x64xf16>, %v: tensor<1x2x16x32xf16>, %m: tensor<1x1x16x16xi1>) {
  %a = sgpu.rms_norm %x, %w {epsilon = 1.0e-06 : f32} : tensor<2x8x64xf16>, tensor<64xf16> -> tensor<2x8x64xf16>
  %b = sgpu.layer_norm %xf, %wf, %bf {epsilon = 1.0e-05 : f32} : tensor<2x8x64xf32>, tensor<64xf32>, tensor<64xf32> -> tensor<2x8x64xf32>
  %c = sgpu.attention %q, %k, %v {causal, scale = 0.125 : f32} : tensor<1x8x16x64xf16>, tensor<1x2x16x64xf16>, tensor<1x2x16x32xf16> -> tensor<1x8x16x32xf16>
  %d = sgpu.attention %q, %k, %v mask(%m : tensor<1x1x16x16xi1>) {scale = 0.125 : f32} : tensor<1x8x16x64xf16>, tensor<1x2x16x64xf16>, tensor<1x2x16x32xf16> -> tensor<1x8x16x32xf16>
  return
}

// -----

// Tensor maps: each element type, ranks 1 and 5, every swizzle, a box larger
// than the buffer (the rest reads as zero) and the limits (a 256-element box
// dimension, an innermost box as wide as the swizzle span, a 16-byte pitch).
// CHECK-LABEL: func @tensor_maps
// CHECK: sgpu.tensor_map %{{.*}} box [128, 32] swizzle 64 : memref<4096x2048xf16> -> !llvm.ptr
// CHECK: sgpu.tensor_map %{{.*}} box [64, 64] swizzle 128 : memref<64x64xbf16> -> !llvm.ptr
// CHECK: sgpu.tensor_map %{{.*}} box [256] swizzle 0 : memref<1000xf32> -> !llvm.ptr
// CHECK: sgpu.tensor_map %{{.*}} box [1, 1, 1, 1, 8] swizzle 32 : memref<2x3x4x5x8xi32> -> !llvm.ptr
// CHECK: sgpu.tensor_map %{{.*}} box [256, 8] swizzle 0 : memref<10x8xf16> -> !llvm.ptr
func.func @tensor_maps(%a: memref<4096x2048xf16>, %b: memref<64x64xbf16>, %c: memref<1000xf32>,
                       %d: memref<2x3x4x5x8xi32>, %e: memref<10x8xf16>)
    -> (!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr) {
  %ta = sgpu.tensor_map %a box [128, 32] swizzle 64 : memref<4096x2048xf16> -> !llvm.ptr
  %tb = sgpu.tensor_map %b box [64, 64] swizzle 128 : memref<64x64xbf16> -> !llvm.ptr
  %tc = sgpu.tensor_map %c box [256] swizzle 0 : memref<1000xf32> -> !llvm.ptr
  %td = sgpu.tensor_map %d box [1, 1, 1, 1, 8] swizzle 32 : memref<2x3x4x5x8xi32> -> !llvm.ptr
  %te = sgpu.tensor_map %e box [256, 8] swizzle 0 : memref<10x8xf16> -> !llvm.ptr
  return %ta, %tb, %tc, %td, %te : !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr
}

// -----

// CHECK-LABEL: func @dense_matmul
// CHECK: sgpu.matmul %{{.*}}, %{{.*}} : tensor<7x40xf16>, tensor<20x40xf16> -> tensor<7x20xf16>
// CHECK: sgpu.matmul %{{.*}}, %{{.*}} bias(%{{.*}} : tensor<20xf32>) {activation = #sgpu.activation<relu>} : tensor<7x40xbf16>, tensor<20x40xbf16> -> tensor<7x20xf32>
func.func @dense_matmul(%x: tensor<7x40xf16>, %w: tensor<20x40xf16>,
                        %xb: tensor<7x40xbf16>, %wb: tensor<20x40xbf16>,
                        %b: tensor<20xf32>) -> (tensor<7x20xf16>, tensor<7x20xf32>) {
  %y = sgpu.matmul %x, %w : tensor<7x40xf16>, tensor<20x40xf16> -> tensor<7x20xf16>
  %z = sgpu.matmul %xb, %wb bias(%b : tensor<20xf32>) {activation = #sgpu.activation<relu>}
         : tensor<7x40xbf16>, tensor<20x40xbf16> -> tensor<7x20xf32>
  return %y, %z : tensor<7x20xf16>, tensor<7x20xf32>
}

// -----

// CHECK-LABEL: func @attention_seq_major
// CHECK: sgpu.attention %{{.*}}, %{{.*}}, %{{.*}} {causal, scale = 1.250000e-01 : f32, seq_major} : tensor<1x64x8x64xbf16>, tensor<1x64x2x64xbf16>, tensor<1x64x2x64xbf16> -> tensor<1x64x8x64xbf16>
// CHECK: sgpu.attention_call %{{.*}}, %{{.*}}, %{{.*}} into %{{.*}} {causal, scale = 1.250000e-01 : f32, seq_major} : memref<1x64x8x64xbf16>, memref<1x64x2x64xbf16>, memref<1x64x2x64xbf16>, memref<1x64x8x64xbf16>
func.func @attention_seq_major(%q: tensor<1x64x8x64xbf16>, %k: tensor<1x64x2x64xbf16>,
    %mq: memref<1x64x8x64xbf16>, %mk: memref<1x64x2x64xbf16>, %mo: memref<1x64x8x64xbf16>) -> tensor<1x64x8x64xbf16> {
  %o = sgpu.attention %q, %k, %k {causal, scale = 0.125 : f32, seq_major} : tensor<1x64x8x64xbf16>, tensor<1x64x2x64xbf16>, tensor<1x64x2x64xbf16> -> tensor<1x64x8x64xbf16>
  sgpu.attention_call %mq, %mk, %mk into %mo {causal, scale = 0.125 : f32, seq_major} : memref<1x64x8x64xbf16>, memref<1x64x2x64xbf16>, memref<1x64x2x64xbf16>, memref<1x64x8x64xbf16>
  return %o : tensor<1x64x8x64xbf16>
}

// CHECK-LABEL: func @attention_call
// CHECK: sgpu.attention_call %{{.*}}, %{{.*}}, %{{.*}} into %{{.*}} {causal, scale = 1.250000e-01 : f32} : memref<1x8x64x64xbf16>, memref<1x2x64x64xbf16>, memref<1x2x64x64xbf16>, memref<1x8x64x64xbf16>
// CHECK: sgpu.attention_call %{{.*}}, %{{.*}}, %{{.*}} into %{{.*}} {scale = 5.000000e-01 : f32} : memref<2x4x7x16xf16>, memref<2x4x9x16xf16>, memref<2x4x9x16xf16>, memref<2x4x7x16xf16>
func.func @attention_call(%q: memref<1x8x64x64xbf16>, %k: memref<1x2x64x64xbf16>, %o: memref<1x8x64x64xbf16>,
                          %q2: memref<2x4x7x16xf16>, %k2: memref<2x4x9x16xf16>, %o2: memref<2x4x7x16xf16>) {
  sgpu.attention_call %q, %k, %k into %o {causal, scale = 0.125 : f32} : memref<1x8x64x64xbf16>, memref<1x2x64x64xbf16>, memref<1x2x64x64xbf16>, memref<1x8x64x64xbf16>
  sgpu.attention_call %q2, %k2, %k2 into %o2 {scale = 0.5 : f32} : memref<2x4x7x16xf16>, memref<2x4x9x16xf16>, memref<2x4x9x16xf16>, memref<2x4x7x16xf16>
  return
}

// CHECK-LABEL: func @gemm_call
// CHECK: sgpu.gemm_call %{{.*}}, %{{.*}} into %{{.*}} : memref<7x40xf16>, memref<20x40xf16>, memref<7x20xf16>
// CHECK: sgpu.gemm_call %{{.*}}, %{{.*}} bias(%{{.*}} : memref<20xf16>) into %{{.*}} {activation = #sgpu.activation<relu>} : memref<7x40xf16>, memref<20x40xf16>, memref<7x20xf16>
func.func @gemm_call(%x: memref<7x40xf16>, %w: memref<20x40xf16>, %b: memref<20xf16>,
                     %y: memref<7x20xf16>) {
  sgpu.gemm_call %x, %w into %y : memref<7x40xf16>, memref<20x40xf16>, memref<7x20xf16>
  sgpu.gemm_call %x, %w bias(%b : memref<20xf16>) into %y {activation = #sgpu.activation<relu>}
      : memref<7x40xf16>, memref<20x40xf16>, memref<7x20xf16>
  return
}

// -----

// A KV cache: a state param updated in place, and attention over it with one
// position per query (a decode step of two sequences in a cache of four).
// CHECK-LABEL: func @kv_cache
// CHECK: sgpu.cache_update %{{.*}}, %{{.*}}, %{{.*}} : tensor<4x2x64x16xf16>, tensor<2x2x1x16xf16>, tensor<2x1xi32> -> tensor<4x2x64x16xf16>
// CHECK: sgpu.attention %{{.*}}, %{{.*}}, %{{.*}} positions(%{{.*}} : tensor<2x1xi32>) {causal, scale = 2.500000e-01 : f32} : tensor<2x8x1x16xf16>, tensor<4x2x64x16xf16>, tensor<4x2x64x16xf16> -> tensor<2x8x1x16xf16>
func.func @kv_cache(%q: tensor<2x8x1x16xf16>, %k: tensor<2x2x1x16xf16>, %pos: tensor<2x1xi32>,
                    %kc: tensor<4x2x64x16xf16> {sgpu.param = "k_cache", sgpu.state},
                    %vc: tensor<4x2x64x16xf16> {sgpu.param = "v_cache", sgpu.state}) -> tensor<2x8x1x16xf16> {
  %k2 = sgpu.cache_update %kc, %k, %pos : tensor<4x2x64x16xf16>, tensor<2x2x1x16xf16>, tensor<2x1xi32> -> tensor<4x2x64x16xf16>
  %o = sgpu.attention %q, %k2, %vc positions(%pos : tensor<2x1xi32>) {causal, scale = 0.25 : f32} : tensor<2x8x1x16xf16>, tensor<4x2x64x16xf16>, tensor<4x2x64x16xf16> -> tensor<2x8x1x16xf16>
  return %o : tensor<2x8x1x16xf16>
}

// -----

// The model-block ops' typed configurations; parameters at their defaults
// are not printed.
// CHECK-LABEL: func @model_block_configs
// CHECK: sgpu.cache_update {{.*}} {sgpu.config = #sgpu.launch_config<threads = 128>}
// CHECK: sgpu.attention {{.*}} {causal, scale = 2.500000e-01 : f32, sgpu.config = #sgpu.attention_config<splits = 8, unroll = 2, lanes_per_key = 16>}
// CHECK: sgpu.attention {{.*}} {causal, scale = 2.500000e-01 : f32, sgpu.config = #sgpu.attention_config<kernel = cuda_cores, rows_per_block = 8>}
// CHECK: sgpu.attention {{.*}} {scale = 2.500000e-01 : f32, sgpu.config = #sgpu.attention_config<kernel = tensor_cores, warps = 8, min_blocks_per_sm = 2>}
// CHECK: sgpu.attention {{.*}} {scale = 2.500000e-01 : f32, sgpu.config = #sgpu.attention_config<>}
func.func @model_block_configs(%q: tensor<2x8x1x16xf16>, %k: tensor<2x2x1x16xf16>, %pos: tensor<2x1xi32>,
                               %kc: tensor<4x2x64x16xf16> {sgpu.param = "k_cache", sgpu.state},
                               %vc: tensor<4x2x64x16xf16>, %p: tensor<1x2x8x16xf16>) -> tensor<2x8x1x16xf16> {
  %k2 = sgpu.cache_update %kc, %k, %pos {sgpu.config = #sgpu.launch_config<threads = 128>} : tensor<4x2x64x16xf16>, tensor<2x2x1x16xf16>, tensor<2x1xi32> -> tensor<4x2x64x16xf16>
  %o = sgpu.attention %q, %k2, %vc positions(%pos : tensor<2x1xi32>) {causal, scale = 0.25 : f32, sgpu.config = #sgpu.attention_config<splits = 8, unroll = 2, lanes_per_key = 16>} : tensor<2x8x1x16xf16>, tensor<4x2x64x16xf16>, tensor<4x2x64x16xf16> -> tensor<2x8x1x16xf16>
  %o2 = sgpu.attention %q, %k2, %vc positions(%pos : tensor<2x1xi32>) {causal, scale = 0.25 : f32, sgpu.config = #sgpu.attention_config<kernel = cuda_cores, rows_per_block = 8>} : tensor<2x8x1x16xf16>, tensor<4x2x64x16xf16>, tensor<4x2x64x16xf16> -> tensor<2x8x1x16xf16>
  %o3 = sgpu.attention %p, %p, %p {scale = 0.25 : f32, sgpu.config = #sgpu.attention_config<kernel = tensor_cores, warps = 8, min_blocks_per_sm = 2>} : tensor<1x2x8x16xf16>, tensor<1x2x8x16xf16>, tensor<1x2x8x16xf16> -> tensor<1x2x8x16xf16>
  %o4 = sgpu.attention %p, %p, %p {scale = 0.25 : f32, sgpu.config = #sgpu.attention_config<kernel = auto>} : tensor<1x2x8x16xf16>, tensor<1x2x8x16xf16>, tensor<1x2x8x16xf16> -> tensor<1x2x8x16xf16>
  return %o : tensor<2x8x1x16xf16>
}
