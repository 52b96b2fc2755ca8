// convert-sgpu-to-gpu builds only a configuration that fits its op, the
// target and the device: any other (written by hand) is an error at the op
// that says why.
// RUN: sparse-opt %s -split-input-file -convert-sgpu-to-gpu -verify-diagnostics
// RUN: not sparse-opt %s -split-input-file -convert-sgpu-to-gpu="chip=sm_80 features=+ptx86" 2>&1 | FileCheck %s --check-prefix=SM80
// SM80: error: sgpu.spmm with kernel=wgmma uses wgmma.mma_async.sp, which needs chip sm_90a; chip 'sm_80' has none (use kernel=mma)

func.func @fused_without_lift(%x: tensor<16x1024xf16>, %v: tensor<256x512xf16>, %m: tensor<8192xi32>) -> tensor<16x256xf16> {
  %w = sgpu.assemble %v, %m : tensor<256x512xf16>, tensor<8192xi32> -> !sgpu.compressed<256x1024xf16, #sgpu.nm<2:4>>
  // expected-error @+1 {{sgpu.config #sgpu.spmm_config<kernel = tma, lift = fused, tile_n = 16, stages = 4> cannot be built for this op: lift = fused needs an sgpu.lift read only by this op}}
  %y = sgpu.spmm %x, %w {sgpu.config = #sgpu.spmm_config<kernel = tma, lift = fused, tile_n = 16, stages = 4>} : tensor<16x1024xf16>, !sgpu.compressed<256x1024xf16, #sgpu.nm<2:4>> -> tensor<16x256xf16>
  return %y : tensor<16x256xf16>
}

// -----

func.func @split_of_tile_groups_8(%x: tensor<16x1024xf16>, %v: tensor<256x768xf16>, %m: tensor<12288xi32>) -> tensor<16x256xf16> {
  %xl = sgpu.lift %x {pattern = #sgpu.nm<6:8>, tile_groups = 8} : tensor<16x1024xf16> -> tensor<16x1536xf16>
  %w = sgpu.assemble %v, %m : tensor<256x768xf16>, tensor<12288xi32> -> !sgpu.compressed<256x1536xf16, #sgpu.nm<2:4>>
  // expected-error @+1 {{lift = split needs a 6:8 lift with tile_groups = 16 and K a multiple of 8}}
  %y = sgpu.spmm %xl, %w {sgpu.config = #sgpu.spmm_config<kernel = tma, lift = split, tile_n = 16, stages = 4>} : tensor<16x1536xf16>, !sgpu.compressed<256x1536xf16, #sgpu.nm<2:4>> -> tensor<16x256xf16>
  return %y : tensor<16x256xf16>
}

// -----

func.func @tma_of_odd_k(%x: tensor<16x100xf16>, %v: tensor<64x64xf16>, %m: tensor<256xi32>) -> tensor<16x64xf16> {
  %w = sgpu.assemble %v, %m : tensor<64x64xf16>, tensor<256xi32> -> !sgpu.compressed<64x100xf16, #sgpu.nm<2:4>>
  // expected-error @+1 {{kernel = tma needs K a multiple of 8 (TMA needs 16-byte row pitches), K = 100}}
  %y = sgpu.spmm %x, %w {sgpu.config = #sgpu.spmm_config<kernel = tma, tile_n = 16, stages = 2>} : tensor<16x100xf16>, !sgpu.compressed<64x100xf16, #sgpu.nm<2:4>> -> tensor<16x64xf16>
  return %y : tensor<16x64xf16>
}

// -----

func.func @cluster_of_four(%x: tensor<512x1024xf16>, %v: tensor<256x512xf16>, %m: tensor<8192xi32>) -> tensor<512x256xf16> {
  %w = sgpu.assemble %v, %m : tensor<256x512xf16>, tensor<8192xi32> -> !sgpu.compressed<256x1024xf16, #sgpu.nm<2:4>>
  // expected-error @+1 {{cluster = 4: the 2 blocks of 128 A rows do not form groups of 4}}
  %y = sgpu.spmm %x, %w {sgpu.config = #sgpu.spmm_config<kernel = tma, tile_n = 64, stages = 4, cluster = 4>} : tensor<512x1024xf16>, !sgpu.compressed<256x1024xf16, #sgpu.nm<2:4>> -> tensor<512x256xf16>
  return %y : tensor<512x256xf16>
}

// -----

func.func @too_many_stages(%x: tensor<512x4096xf16>, %v: tensor<256x2048xf16>, %m: tensor<32768xi32>) -> tensor<512x256xf16> {
  %w = sgpu.assemble %v, %m : tensor<256x2048xf16>, tensor<32768xi32> -> !sgpu.compressed<256x4096xf16, #sgpu.nm<2:4>>
  // expected-error @+1 {{12 stages of 256-token tiles need}}
  %y = sgpu.spmm %x, %w {sgpu.config = #sgpu.spmm_config<kernel = tma, tile_n = 256, stages = 12>} : tensor<512x4096xf16>, !sgpu.compressed<256x4096xf16, #sgpu.nm<2:4>> -> tensor<512x256xf16>
  return %y : tensor<512x256xf16>
}

// -----

func.func @one_stage(%x: tensor<512x4096xf16>, %v: tensor<256x2048xf16>, %m: tensor<32768xi32>) -> tensor<512x256xf16> {
  %w = sgpu.assemble %v, %m : tensor<256x2048xf16>, tensor<32768xi32> -> !sgpu.compressed<256x4096xf16, #sgpu.nm<2:4>>
  // expected-error @+1 {{stages = 1 with 64 k-tiles per block: the consumers release a stage one k-tile late, so one stage would wait on itself}}
  %y = sgpu.spmm %x, %w {sgpu.config = #sgpu.spmm_config<kernel = tma, tile_n = 64, stages = 1>} : tensor<512x4096xf16>, !sgpu.compressed<256x4096xf16, #sgpu.nm<2:4>> -> tensor<512x256xf16>
  return %y : tensor<512x256xf16>
}

// -----

func.func @store_of_f32(%x: tensor<512x1024xf16>, %v: tensor<256x512xf16>, %m: tensor<8192xi32>) -> tensor<512x256xf32> {
  %w = sgpu.assemble %v, %m : tensor<256x512xf16>, tensor<8192xi32> -> !sgpu.compressed<256x1024xf16, #sgpu.nm<2:4>>
  // expected-error @+1 {{store_box = 64: the result type is f32, not 16-bit}}
  %y = sgpu.spmm %x, %w {sgpu.config = #sgpu.spmm_config<kernel = tma, tile_n = 64, stages = 4, store_box = 64>} : tensor<512x1024xf16>, !sgpu.compressed<256x1024xf16, #sgpu.nm<2:4>> -> tensor<512x256xf32>
  return %y : tensor<512x256xf32>
}

// -----

// A pack configured by hand and its consumer without one: the selection
// leaves both alone (they are chosen together), and the lowering asks for
// both.
func.func @partly_by_hand(%h: tensor<16x1024xbf16>, %wd: tensor<64x1024xbf16>) -> tensor<16x64xbf16> {
  // expected-error @+1 {{a consumer of this pack has no #sgpu.twell_ffn_config (its sgpu.config); configure a pack and its consumers together}}
  %p = sgpu.twell_pack %h {sgpu.config = #sgpu.twell_pack_config<form = kernel>} : tensor<16x1024xbf16> -> !sgpu.twell<16x1024xbf16, #sgpu.twell<tile = 256, compression = 4>>
  %y = sgpu.twell_ffn %p, %wd : !sgpu.twell<16x1024xbf16, #sgpu.twell<tile = 256, compression = 4>>, tensor<64x1024xbf16> -> tensor<16x64xbf16>
  return %y : tensor<16x64xbf16>
}

// -----

func.func @blocks_for_cuda_cores(%h: tensor<16x1024xbf16>, %wd: tensor<64x1024xbf16>) -> tensor<16x64xbf16> {
  // expected-error @+1 {{form = blocks and a consumer with consumer = cuda_cores: the block form is the tensor-core consumer's, and only its}}
  %p = sgpu.twell_pack %h {sgpu.config = #sgpu.twell_pack_config<form = blocks>} : tensor<16x1024xbf16> -> !sgpu.twell<16x1024xbf16, #sgpu.twell<tile = 256, compression = 4>>
  %y = sgpu.twell_ffn %p, %wd {sgpu.config = #sgpu.twell_ffn_config<consumer = cuda_cores>} : !sgpu.twell<16x1024xbf16, #sgpu.twell<tile = 256, compression = 4>>, tensor<64x1024xbf16> -> tensor<16x64xbf16>
  return %y : tensor<16x64xbf16>
}

// -----

func.func @in_two_consumers(%h: tensor<16x1024xbf16>, %wa: tensor<64x1024xbf16>, %wb: tensor<64x1024xbf16>) -> (tensor<16x64xbf16>, tensor<16x64xbf16>) {
  // expected-error @+1 {{form = in_consumer needs exactly one consumer}}
  %p = sgpu.twell_pack %h {sgpu.config = #sgpu.twell_pack_config<form = in_consumer>} : tensor<16x1024xbf16> -> !sgpu.twell<16x1024xbf16, #sgpu.twell<tile = 256, compression = 4>>
  %a = sgpu.twell_ffn %p, %wa {sgpu.config = #sgpu.twell_ffn_config<consumer = cuda_cores>} : !sgpu.twell<16x1024xbf16, #sgpu.twell<tile = 256, compression = 4>>, tensor<64x1024xbf16> -> tensor<16x64xbf16>
  %b = sgpu.twell_ffn %p, %wb {sgpu.config = #sgpu.twell_ffn_config<consumer = cuda_cores>} : !sgpu.twell<16x1024xbf16, #sgpu.twell<tile = 256, compression = 4>>, tensor<64x1024xbf16> -> tensor<16x64xbf16>
  return %a, %b : tensor<16x64xbf16>, tensor<16x64xbf16>
}

// -----

func.func @fused_producer_of_an_argument(%h: tensor<16x1024xbf16>, %wd: tensor<64x1024xbf16>) -> tensor<16x64xbf16> {
  // expected-error @+1 {{form = fused_producer: the packed value is not produced by sgpu.matmul}}
  %p = sgpu.twell_pack %h {sgpu.config = #sgpu.twell_pack_config<form = fused_producer>} : tensor<16x1024xbf16> -> !sgpu.twell<16x1024xbf16, #sgpu.twell<tile = 256, compression = 4>>
  %y = sgpu.twell_ffn %p, %wd {sgpu.config = #sgpu.twell_ffn_config<consumer = cuda_cores>} : !sgpu.twell<16x1024xbf16, #sgpu.twell<tile = 256, compression = 4>>, tensor<64x1024xbf16> -> tensor<16x64xbf16>
  return %y : tensor<16x64xbf16>
}
