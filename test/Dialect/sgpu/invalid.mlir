// Every sgpu verifier error, one case each.
// RUN: sparse-opt %s -split-input-file -verify-diagnostics

// expected-error @+1 {{unsupported structured sparsity 3:4; expected 2:4 or (2N-2):2N for N = 2..8}}
func.func @nm_not_family(%w: tensor<16x32xf16, #sgpu.nm<3:4>>) { return }

// -----

// expected-error @+1 {{unsupported structured sparsity 16:18}}
func.func @nm_too_wide(%w: tensor<16x32xf16, #sgpu.nm<16:18>>) { return }

// -----

// expected-error @+1 {{unsupported structured sparsity 1:4}}
func.func @nm_1_4(%w: tensor<16x32xf16, #sgpu.nm<1:4>>) { return }

// -----

// A negative count is shown as written (not wrapped to 4294967295).
// expected-error @+1 {{unsupported structured sparsity -1:4; expected 2:4 or (2N-2):2N for N = 2..8}}
func.func @nm_negative(%w: tensor<16x32xf16, #sgpu.nm<-1:4>>) { return }

// -----

// expected-error @+1 {{unsupported structured sparsity 2:99999999999}}
func.func @nm_huge(%w: tensor<16x32xf16, #sgpu.nm<2:99999999999>>) { return }

// -----

// expected-error @+1 {{TwELL tile width must be a power of two in [16, 65536]}}
func.func @twell_tile(%p: !sgpu.twell<8x512xbf16, #sgpu.twell<tile = 100, compression = 4>>) { return }

// -----

// expected-error @+1 {{TwELL compression factor must be 2, 4 or 8, got 3}}
func.func @twell_compression(%p: !sgpu.twell<8x512xbf16, #sgpu.twell<tile = 256, compression = 3>>) { return }

// -----

// expected-error @+1 {{compressed weight must be rank 2, got rank 3}}
func.func @compressed_rank(%c: !sgpu.compressed<2x16x32xf16, #sgpu.nm<2:4>>) { return }

// -----

// expected-error @+1 {{compressed weight element type must be f16 or bf16, got 'f32'}}
func.func @compressed_elem(%c: !sgpu.compressed<16x32xf32, #sgpu.nm<2:4>>) { return }

// -----

// expected-error @+1 {{compressed weight dimensions must be positive}}
func.func @compressed_zero(%c: !sgpu.compressed<0x32xf16, #sgpu.nm<2:4>>) { return }

// -----

// expected-error @+1 {{compressed weights are 2:4; decompose other patterns with sgpu.nm_decompose}}
func.func @compressed_pattern(%c: !sgpu.compressed<16x32xf16, #sgpu.nm<6:8>>) { return }

// -----

// expected-error @+1 {{TwELL activations element type must be f16 or bf16, got 'f32'}}
func.func @twell_elem(%p: !sgpu.twell<8x512xf32, #sgpu.twell<tile = 256, compression = 4>>) { return }

// -----

// expected-error @+1 {{TwELL activations must be rank 2, got rank 1}}
func.func @twell_rank(%p: !sgpu.twell<512xbf16, #sgpu.twell<tile = 256, compression = 4>>) { return }

// -----

func.func @compress_rank(%w: tensor<2x16x32xf16>) {
  // expected-error @+1 {{'sgpu.compress' op expects weight to be rank 2, got 'tensor<2x16x32xf16>'}}
  %c = sgpu.compress %w : tensor<2x16x32xf16> -> !sgpu.compressed<16x32xf16, #sgpu.nm<2:4>>
  return
}

// -----

func.func @compress_dynamic(%w: tensor<?x32xf16>) {
  // expected-error @+1 {{'sgpu.compress' op expects weight to have a static shape}}
  %c = sgpu.compress %w : tensor<?x32xf16> -> !sgpu.compressed<16x32xf16, #sgpu.nm<2:4>>
  return
}

// -----

func.func @compress_pattern(%w: tensor<16x32xf16, #sgpu.nm<6:8>>) {
  // expected-error @+1 {{'sgpu.compress' op weight declares #sgpu.nm<6:8>; only 2:4 weights can be compressed directly}}
  %c = sgpu.compress %w : tensor<16x32xf16, #sgpu.nm<6:8>> -> !sgpu.compressed<16x32xf16, #sgpu.nm<2:4>>
  return
}

// -----

#CSR = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed) }>
func.func @compress_other_encoding(%w: tensor<16x32xf16, #CSR>) {
  // expected-error @+1 {{'sgpu.compress' op weight encoding is not a recognized structured sparsity}}
  %c = sgpu.compress %w : tensor<16x32xf16, #CSR> -> !sgpu.compressed<16x32xf16, #sgpu.nm<2:4>>
  return
}

// -----

func.func @compress_shape(%w: tensor<16x64xf16>) {
  // expected-error @+1 {{'sgpu.compress' op result '!sgpu.compressed<16x32xf16, #sgpu.nm<2:4>>' does not match the weight's shape and element type}}
  %c = sgpu.compress %w : tensor<16x64xf16> -> !sgpu.compressed<16x32xf16, #sgpu.nm<2:4>>
  return
}

// -----

func.func @assemble_values(%v: tensor<16x32xf16>, %m: tensor<64xi32>) {
  // expected-error @+1 {{'sgpu.assemble' op values must be 'tensor<32x32xf16>'}}
  %c = sgpu.assemble %v, %m : tensor<16x32xf16>, tensor<64xi32> -> !sgpu.compressed<20x40xf16, #sgpu.nm<2:4>>
  return
}

// -----

func.func @assemble_meta(%v: tensor<32x32xf16>, %m: tensor<32xi32>) {
  // expected-error @+1 {{'sgpu.assemble' op metadata must be 'tensor<64xi32>'}}
  %c = sgpu.assemble %v, %m : tensor<32x32xf16>, tensor<32xi32> -> !sgpu.compressed<20x40xf16, #sgpu.nm<2:4>>
  return
}

// -----

func.func @assemble_dynamic(%v: tensor<?x32xf16>, %m: tensor<64xi32>) {
  // expected-error @+1 {{'sgpu.assemble' op expects statically shaped parts}}
  %c = sgpu.assemble %v, %m : tensor<?x32xf16>, tensor<64xi32> -> !sgpu.compressed<20x40xf16, #sgpu.nm<2:4>>
  return
}

// -----

func.func @decompose_no_encoding(%w: tensor<32x64xf16>) {
  // expected-error @+1 {{'sgpu.nm_decompose' op weight must carry an #sgpu.nm encoding}}
  %c = sgpu.nm_decompose %w : tensor<32x64xf16> -> !sgpu.compressed<32x96xf16, #sgpu.nm<2:4>>
  return
}

// -----

func.func @decompose_shape(%w: tensor<32x64xf16, #sgpu.nm<6:8>>) {
  // expected-error @+1 {{'sgpu.nm_decompose' op result must be 32x96 for a 32x64 #sgpu.nm<6:8> weight}}
  %c = sgpu.nm_decompose %w : tensor<32x64xf16, #sgpu.nm<6:8>> -> !sgpu.compressed<32x64xf16, #sgpu.nm<2:4>>
  return
}

// -----

func.func @decompose_elem(%w: tensor<32x64xf16, #sgpu.nm<6:8>>) {
  // expected-error @+1 {{'sgpu.nm_decompose' op result element type 'bf16' differs from the weight's 'f16'}}
  %c = sgpu.nm_decompose %w : tensor<32x64xf16, #sgpu.nm<6:8>> -> !sgpu.compressed<32x96xbf16, #sgpu.nm<2:4>>
  return
}

// -----

func.func @decompose_rank(%w: tensor<64xf16, #sgpu.nm<6:8>>) {
  // expected-error @+1 {{'sgpu.nm_decompose' op expects weight to be rank 2}}
  %c = sgpu.nm_decompose %w : tensor<64xf16, #sgpu.nm<6:8>> -> !sgpu.compressed<32x96xf16, #sgpu.nm<2:4>>
  return
}

// -----

func.func @lift_shape(%x: tensor<4x64xf16>) {
  // expected-error @+1 {{'sgpu.lift' op result must be 4x112 for pattern #sgpu.nm<8:10>}}
  %y = sgpu.lift %x {pattern = #sgpu.nm<8:10>} : tensor<4x64xf16> -> tensor<4x64xf16>
  return
}

// -----

func.func @lift_tiled_shape(%x: tensor<4x100xf16>) {
  // expected-error @+1 {{'sgpu.lift' op result must be 4x192 for pattern #sgpu.nm<6:8> in tiled order, got 'tensor<4x156xf16>'}}
  %y = sgpu.lift %x {pattern = #sgpu.nm<6:8>, tile_groups = 8} : tensor<4x100xf16> -> tensor<4x156xf16>
  return
}

// -----

func.func @lift_tile_groups(%x: tensor<4x64xf16>) {
  // expected-error @+1 {{'sgpu.lift' op tile_groups must be 1 to 1048576, got 0}}
  %y = sgpu.lift %x {pattern = #sgpu.nm<6:8>, tile_groups = 0} : tensor<4x64xf16> -> tensor<4x96xf16>
  return
}

// -----

func.func @decompose_tile_groups(%w: tensor<32x64xf16, #sgpu.nm<6:8>>) {
  // expected-error @+1 {{'sgpu.nm_decompose' op tile_groups must be 1 to 1048576, got -8}}
  %c = sgpu.nm_decompose %w {tile_groups = -8} : tensor<32x64xf16, #sgpu.nm<6:8>> -> !sgpu.compressed<32x96xf16, #sgpu.nm<2:4>>
  return
}

// -----

func.func @decompose_tiled_shape(%w: tensor<32x72xf16, #sgpu.nm<6:8>>) {
  // expected-error @+1 {{'sgpu.nm_decompose' op result must be 32x192 for a 32x72 #sgpu.nm<6:8> weight in tiled order}}
  %c = sgpu.nm_decompose %w {tile_groups = 8} : tensor<32x72xf16, #sgpu.nm<6:8>> -> !sgpu.compressed<32x108xf16, #sgpu.nm<2:4>>
  return
}

// -----

func.func @lift_elem(%x: tensor<4x64xf16>) {
  // expected-error @+1 {{'sgpu.lift' op result element type must equal the input's}}
  %y = sgpu.lift %x {pattern = #sgpu.nm<6:8>} : tensor<4x64xf16> -> tensor<4x96xbf16>
  return
}

// -----

func.func @lift_dynamic(%x: tensor<?x64xf16>) {
  // expected-error @+1 {{'sgpu.lift' op expects input to have a static shape}}
  %y = sgpu.lift %x {pattern = #sgpu.nm<6:8>} : tensor<?x64xf16> -> tensor<4x96xf16>
  return
}

// -----

func.func @spmm_k(%x: tensor<4x48xf16>, %c: !sgpu.compressed<16x32xf16, #sgpu.nm<2:4>>) {
  // expected-error @+1 {{'sgpu.spmm' op reduction sizes differ: input has K = 48, weight has K = 32}}
  %y = sgpu.spmm %x, %c : tensor<4x48xf16>, !sgpu.compressed<16x32xf16, #sgpu.nm<2:4>> -> tensor<4x16xf16>
  return
}

// -----

func.func @spmm_elem(%x: tensor<4x32xbf16>, %c: !sgpu.compressed<16x32xf16, #sgpu.nm<2:4>>) {
  // expected-error @+1 {{'sgpu.spmm' op input element type 'bf16' differs from the weight's 'f16'}}
  %y = sgpu.spmm %x, %c : tensor<4x32xbf16>, !sgpu.compressed<16x32xf16, #sgpu.nm<2:4>> -> tensor<4x16xbf16>
  return
}

// -----

func.func @spmm_result_shape(%x: tensor<4x32xf16>, %c: !sgpu.compressed<16x32xf16, #sgpu.nm<2:4>>) {
  // expected-error @+1 {{'sgpu.spmm' op result must be 4x16, got 'tensor<4x8xf16>'}}
  %y = sgpu.spmm %x, %c : tensor<4x32xf16>, !sgpu.compressed<16x32xf16, #sgpu.nm<2:4>> -> tensor<4x8xf16>
  return
}

// -----

func.func @spmm_result_elem(%x: tensor<4x32xf16>, %c: !sgpu.compressed<16x32xf16, #sgpu.nm<2:4>>) {
  // expected-error @+1 {{'sgpu.spmm' op result element type must be the input's ('f16') or f32, got 'bf16'}}
  %y = sgpu.spmm %x, %c : tensor<4x32xf16>, !sgpu.compressed<16x32xf16, #sgpu.nm<2:4>> -> tensor<4x16xbf16>
  return
}

// -----

func.func @spmm_dynamic(%x: tensor<?x32xf16>, %c: !sgpu.compressed<16x32xf16, #sgpu.nm<2:4>>) {
  // expected-error @+1 {{'sgpu.spmm' op expects input to have a static shape}}
  %y = sgpu.spmm %x, %c : tensor<?x32xf16>, !sgpu.compressed<16x32xf16, #sgpu.nm<2:4>> -> tensor<4x16xf16>
  return
}

// -----

func.func @spmm_rank(%x: tensor<32xf16>, %c: !sgpu.compressed<16x32xf16, #sgpu.nm<2:4>>) {
  // expected-error @+1 {{'sgpu.spmm' op expects input to be rank 2}}
  %y = sgpu.spmm %x, %c : tensor<32xf16>, !sgpu.compressed<16x32xf16, #sgpu.nm<2:4>> -> tensor<4x16xf16>
  return
}

// -----

func.func @pack_shape(%h: tensor<8x256xbf16>) {
  // expected-error @+1 {{'sgpu.twell_pack' op result '!sgpu.twell<8x512xbf16, #sgpu.twell<tile = 256, compression = 4>>' does not match the input's shape and element type}}
  %p = sgpu.twell_pack %h : tensor<8x256xbf16> -> !sgpu.twell<8x512xbf16, #sgpu.twell<tile = 256, compression = 4>>
  return
}

// -----

func.func @pack_dynamic(%h: tensor<?x512xbf16>) {
  // expected-error @+1 {{'sgpu.twell_pack' op expects input to have a static shape}}
  %p = sgpu.twell_pack %h : tensor<?x512xbf16> -> !sgpu.twell<8x512xbf16, #sgpu.twell<tile = 256, compression = 4>>
  return
}

// -----

func.func @ffn_down(%p: !sgpu.twell<8x512xbf16, #sgpu.twell<tile = 256, compression = 4>>, %wd: tensor<64x256xbf16>) {
  // expected-error @+1 {{'sgpu.twell_ffn' op down weight must be d x 512 (one column per neuron)}}
  %y = sgpu.twell_ffn %p, %wd : !sgpu.twell<8x512xbf16, #sgpu.twell<tile = 256, compression = 4>>, tensor<64x256xbf16> -> tensor<8x64xbf16>
  return
}

// -----

func.func @ffn_half_gated(%p: !sgpu.twell<8x512xbf16, #sgpu.twell<tile = 256, compression = 4>>, %wd: tensor<64x512xbf16>, %x: tensor<8x64xbf16>) {
  // expected-error @+1 {{'sgpu.twell_ffn' op a gated FFN needs both the input and the up weight}}
  %y = "sgpu.twell_ffn"(%p, %wd, %x) {operandSegmentSizes = array<i32: 1, 1, 1, 0>} : (!sgpu.twell<8x512xbf16, #sgpu.twell<tile = 256, compression = 4>>, tensor<64x512xbf16>, tensor<8x64xbf16>) -> tensor<8x64xbf16>
  return
}

// -----

func.func @ffn_input(%p: !sgpu.twell<8x512xbf16, #sgpu.twell<tile = 256, compression = 4>>, %wd: tensor<64x512xbf16>, %x: tensor<4x64xbf16>, %wu: tensor<512x64xbf16>) {
  // expected-error @+1 {{'sgpu.twell_ffn' op input must be 8x64}}
  %y = sgpu.twell_ffn %p, %wd up(%x, %wu : tensor<4x64xbf16>, tensor<512x64xbf16>) : !sgpu.twell<8x512xbf16, #sgpu.twell<tile = 256, compression = 4>>, tensor<64x512xbf16> -> tensor<8x64xbf16>
  return
}

// -----

func.func @ffn_up(%p: !sgpu.twell<8x512xbf16, #sgpu.twell<tile = 256, compression = 4>>, %wd: tensor<64x512xbf16>, %x: tensor<8x64xbf16>, %wu: tensor<64x512xbf16>) {
  // expected-error @+1 {{'sgpu.twell_ffn' op up weight must be 512x64}}
  %y = sgpu.twell_ffn %p, %wd up(%x, %wu : tensor<8x64xbf16>, tensor<64x512xbf16>) : !sgpu.twell<8x512xbf16, #sgpu.twell<tile = 256, compression = 4>>, tensor<64x512xbf16> -> tensor<8x64xbf16>
  return
}

// -----

func.func @ffn_result(%p: !sgpu.twell<8x512xbf16, #sgpu.twell<tile = 256, compression = 4>>, %wd: tensor<64x512xbf16>) {
  // expected-error @+1 {{'sgpu.twell_ffn' op result must be 8x64}}
  %y = sgpu.twell_ffn %p, %wd : !sgpu.twell<8x512xbf16, #sgpu.twell<tile = 256, compression = 4>>, tensor<64x512xbf16> -> tensor<8x32xbf16>
  return
}

// -----

func.func @ffn_elem(%p: !sgpu.twell<8x512xbf16, #sgpu.twell<tile = 256, compression = 4>>, %wd: tensor<64x512xf16>) {
  // expected-error @+1 {{'sgpu.twell_ffn' op all operands must share the activations' element type 'bf16'}}
  %y = sgpu.twell_ffn %p, %wd : !sgpu.twell<8x512xbf16, #sgpu.twell<tile = 256, compression = 4>>, tensor<64x512xf16> -> tensor<8x64xbf16>
  return
}

// -----

func.func @ffn_result_elem(%p: !sgpu.twell<8x512xbf16, #sgpu.twell<tile = 256, compression = 4>>, %wd: tensor<64x512xbf16>) {
  // expected-error @+1 {{'sgpu.twell_ffn' op result element type must be 'bf16'}}
  %y = sgpu.twell_ffn %p, %wd : !sgpu.twell<8x512xbf16, #sgpu.twell<tile = 256, compression = 4>>, tensor<64x512xbf16> -> tensor<8x64xf16>
  return
}

// -----

func.func @ffn_down_dynamic(%p: !sgpu.twell<8x512xbf16, #sgpu.twell<tile = 256, compression = 4>>, %wd: tensor<?x512xbf16>) {
  // expected-error @+1 {{'sgpu.twell_ffn' op expects down weight to have a static shape}}
  %y = sgpu.twell_ffn %p, %wd : !sgpu.twell<8x512xbf16, #sgpu.twell<tile = 256, compression = 4>>, tensor<?x512xbf16> -> tensor<8x64xbf16>
  return
}

// -----

func.func @all_reduce_dynamic(%x: tensor<?x64xf32>) {
  // expected-error @+1 {{'sgpu.all_reduce' op expects a statically shaped tensor}}
  %y = sgpu.all_reduce %x : tensor<?x64xf32>
  return
}

// -----

func.func @all_reduce_int(%x: tensor<8x64xi32>) {
  // expected-error @+1 {{'sgpu.all_reduce' op reduces f16, bf16 or f32 tensors, got 'i32'}}
  %y = sgpu.all_reduce %x : tensor<8x64xi32>
  return
}

// -----

func.func @start_int(%x: tensor<8x64xi8>) {
  // expected-error @+1 {{'sgpu.all_reduce_start' op reduces f16, bf16 or f32 tensors, got 'i8'}}
  %t = sgpu.all_reduce_start %x : tensor<8x64xi8>
  %y = sgpu.all_reduce_wait %t, %x : tensor<8x64xi8>
  return
}

// -----

func.func @start_unwaited(%x: tensor<8x64xf32>) {
  // expected-error @+1 {{'sgpu.all_reduce_start' op token must be waited on by exactly one sgpu.all_reduce_wait}}
  %t = sgpu.all_reduce_start %x : tensor<8x64xf32>
  return
}

// -----

func.func @start_twice(%x: tensor<8x64xf32>) {
  // expected-error @+1 {{'sgpu.all_reduce_start' op token must be waited on by exactly one sgpu.all_reduce_wait}}
  %t = sgpu.all_reduce_start %x : tensor<8x64xf32>
  %a = sgpu.all_reduce_wait %t, %x : tensor<8x64xf32>
  %b = sgpu.all_reduce_wait %t, %x : tensor<8x64xf32>
  return
}

// -----

func.func @wait_arg(%t: !sgpu.token, %x: tensor<8x64xf32>) {
  // expected-error @+1 {{'sgpu.all_reduce_wait' op token must come from an sgpu.all_reduce_start in the same region}}
  %y = sgpu.all_reduce_wait %t, %x : tensor<8x64xf32>
  return
}

// -----

func.func @wait_input(%x: tensor<8x64xf32>, %z: tensor<8x64xf32>) {
  %t = sgpu.all_reduce_start %x : tensor<8x64xf32>
  // expected-error @+1 {{'sgpu.all_reduce_wait' op input must be the value the matching sgpu.all_reduce_start reduces (it keeps that buffer alive until the wait)}}
  %y = sgpu.all_reduce_wait %t, %z : tensor<8x64xf32>
  return
}

// -----

func.func @rms_weight(%x: tensor<2x64xf16>, %w: tensor<32xf16>) {
  // expected-error @+1 {{'sgpu.rms_norm' op expects weight of shape [64] (the input's last dimension), got 'tensor<32xf16>'}}
  %y = sgpu.rms_norm %x, %w {epsilon = 1.0e-06 : f32} : tensor<2x64xf16>, tensor<32xf16> -> tensor<2x64xf16>
  return
}

// -----

func.func @rms_weight_type(%x: tensor<2x64xf16>, %w: tensor<64xf32>) {
  // expected-error @+1 {{'sgpu.rms_norm' op expects weight element type 'f16', got 'f32'}}
  %y = sgpu.rms_norm %x, %w {epsilon = 1.0e-06 : f32} : tensor<2x64xf16>, tensor<64xf32> -> tensor<2x64xf16>
  return
}

// -----

func.func @rms_result(%x: tensor<2x64xf16>, %w: tensor<64xf16>) {
  // expected-error @+1 {{'sgpu.rms_norm' op result type 'tensor<2x64xf32>' must equal the input type 'tensor<2x64xf16>'}}
  %y = sgpu.rms_norm %x, %w {epsilon = 1.0e-06 : f32} : tensor<2x64xf16>, tensor<64xf16> -> tensor<2x64xf32>
  return
}

// -----

func.func @rms_dynamic(%x: tensor<?x64xf16>, %w: tensor<64xf16>) {
  // expected-error @+1 {{'sgpu.rms_norm' op expects a statically shaped input of rank >= 1}}
  %y = sgpu.rms_norm %x, %w {epsilon = 1.0e-06 : f32} : tensor<?x64xf16>, tensor<64xf16> -> tensor<?x64xf16>
  return
}

// -----

func.func @rms_epsilon(%x: tensor<2x64xf16>, %w: tensor<64xf16>) {
  // expected-error @+1 {{'sgpu.rms_norm' op expects a finite, non-negative epsilon, got -1}}
  %y = sgpu.rms_norm %x, %w {epsilon = -1.0 : f32} : tensor<2x64xf16>, tensor<64xf16> -> tensor<2x64xf16>
  return
}

// -----

func.func @rms_epsilon_inf(%x: tensor<2x64xf16>, %w: tensor<64xf16>) {
  // expected-error @+1 {{'sgpu.rms_norm' op expects a finite, non-negative epsilon, got INF}}
  %y = sgpu.rms_norm %x, %w {epsilon = 0x7F800000 : f32} : tensor<2x64xf16>, tensor<64xf16> -> tensor<2x64xf16>
  return
}

// -----

func.func @ln_epsilon_nan(%x: tensor<2x64xf32>, %w: tensor<64xf32>) {
  // expected-error @+1 {{'sgpu.layer_norm' op expects a finite, non-negative epsilon, got nan}}
  %y = sgpu.layer_norm %x, %w, %w {epsilon = 0x7FC00000 : f32} : tensor<2x64xf32>, tensor<64xf32>, tensor<64xf32> -> tensor<2x64xf32>
  return
}

// -----

func.func @ln_bias(%x: tensor<2x64xf32>, %w: tensor<64xf32>, %b: tensor<2x64xf32>) {
  // expected-error @+1 {{'sgpu.layer_norm' op expects bias of shape [64] (the input's last dimension), got 'tensor<2x64xf32>'}}
  %y = sgpu.layer_norm %x, %w, %b {epsilon = 1.0e-05 : f32} : tensor<2x64xf32>, tensor<64xf32>, tensor<2x64xf32> -> tensor<2x64xf32>
  return
}

// -----

func.func @attn_rank(%q: tensor<8x16x64xf16>, %k: tensor<1x8x16x64xf16>, %v: tensor<1x8x16x64xf16>) {
  // expected-error @+1 {{'sgpu.attention' op expects query to be a static B x H x S x D tensor, got 'tensor<8x16x64xf16>'}}
  %o = sgpu.attention %q, %k, %v {scale = 0.125 : f32} : tensor<8x16x64xf16>, tensor<1x8x16x64xf16>, tensor<1x8x16x64xf16> -> tensor<1x8x16x64xf16>
  return
}

// -----

func.func @attn_batch(%q: tensor<2x8x16x64xf16>, %k: tensor<1x8x16x64xf16>, %v: tensor<1x8x16x64xf16>) {
  // expected-error @+1 {{'sgpu.attention' op query, key and value must share the batch size}}
  %o = sgpu.attention %q, %k, %v {scale = 0.125 : f32} : tensor<2x8x16x64xf16>, tensor<1x8x16x64xf16>, tensor<1x8x16x64xf16> -> tensor<2x8x16x64xf16>
  return
}

// -----

func.func @attn_kv(%q: tensor<1x8x16x64xf16>, %k: tensor<1x8x16x64xf16>, %v: tensor<1x8x12x64xf16>) {
  // expected-error @+1 {{'sgpu.attention' op key and value must share heads and length}}
  %o = sgpu.attention %q, %k, %v {scale = 0.125 : f32} : tensor<1x8x16x64xf16>, tensor<1x8x16x64xf16>, tensor<1x8x12x64xf16> -> tensor<1x8x16x64xf16>
  return
}

// -----

func.func @attn_heads(%q: tensor<1x8x16x64xf16>, %k: tensor<1x3x16x64xf16>, %v: tensor<1x3x16x64xf16>) {
  // expected-error @+1 {{'sgpu.attention' op query heads (8) must be a multiple of key/value heads (3)}}
  %o = sgpu.attention %q, %k, %v {scale = 0.125 : f32} : tensor<1x8x16x64xf16>, tensor<1x3x16x64xf16>, tensor<1x3x16x64xf16> -> tensor<1x8x16x64xf16>
  return
}

// -----

func.func @attn_head_size(%q: tensor<1x8x16x64xf16>, %k: tensor<1x8x16x32xf16>, %v: tensor<1x8x16x64xf16>) {
  // expected-error @+1 {{'sgpu.attention' op query and key head sizes differ: 64 vs 32}}
  %o = sgpu.attention %q, %k, %v {scale = 0.125 : f32} : tensor<1x8x16x64xf16>, tensor<1x8x16x32xf16>, tensor<1x8x16x64xf16> -> tensor<1x8x16x64xf16>
  return
}

// -----

func.func @attn_result(%q: tensor<1x8x16x64xf16>, %k: tensor<1x8x16x64xf16>, %v: tensor<1x8x16x32xf16>) {
  // expected-error @+1 {{'sgpu.attention' op result must be 1x8x16x32, got 'tensor<1x8x16x64xf16>'}}
  %o = sgpu.attention %q, %k, %v {scale = 0.125 : f32} : tensor<1x8x16x64xf16>, tensor<1x8x16x64xf16>, tensor<1x8x16x32xf16> -> tensor<1x8x16x64xf16>
  return
}

// -----

func.func @attn_types(%q: tensor<1x8x16x64xf16>, %k: tensor<1x8x16x64xbf16>, %v: tensor<1x8x16x64xf16>) {
  // expected-error @+1 {{'sgpu.attention' op query, key, value and result must share one element type}}
  %o = sgpu.attention %q, %k, %v {scale = 0.125 : f32} : tensor<1x8x16x64xf16>, tensor<1x8x16x64xbf16>, tensor<1x8x16x64xf16> -> tensor<1x8x16x64xf16>
  return
}

// -----

func.func @attn_mask_shape(%q: tensor<1x8x16x64xf16>, %m: tensor<1x1x16x8xi1>) {
  // expected-error @+1 {{'sgpu.attention' op mask 'tensor<1x1x16x8xi1>' does not broadcast to 1x8x16x16}}
  %o = sgpu.attention %q, %q, %q mask(%m : tensor<1x1x16x8xi1>) {scale = 0.125 : f32} : tensor<1x8x16x64xf16>, tensor<1x8x16x64xf16>, tensor<1x8x16x64xf16> -> tensor<1x8x16x64xf16>
  return
}

// -----

func.func @attn_mask_type(%q: tensor<1x8x16x64xf16>, %m: tensor<16x16xbf16>) {
  // expected-error @+1 {{'sgpu.attention' op a float mask must have the query's element type or f32}}
  %o = sgpu.attention %q, %q, %q mask(%m : tensor<16x16xbf16>) {scale = 0.125 : f32} : tensor<1x8x16x64xf16>, tensor<1x8x16x64xf16>, tensor<1x8x16x64xf16> -> tensor<1x8x16x64xf16>
  return
}

// -----

func.func @attn_mask_dynamic(%q: tensor<1x8x16x64xf16>, %m: tensor<?x16xi1>) {
  // expected-error @+1 {{'sgpu.attention' op mask must be static and of rank <= 4}}
  %o = sgpu.attention %q, %q, %q mask(%m : tensor<?x16xi1>) {scale = 0.125 : f32} : tensor<1x8x16x64xf16>, tensor<1x8x16x64xf16>, tensor<1x8x16x64xf16> -> tensor<1x8x16x64xf16>
  return
}

// -----

func.func @spmm_bias(%x: tensor<4x32xf16>, %c: !sgpu.compressed<16x32xf16, #sgpu.nm<2:4>>, %b: tensor<8xf16>) {
  // expected-error @+1 {{'sgpu.spmm' op bias must be a 16-element vector (one per output feature), got 'tensor<8xf16>'}}
  %y = sgpu.spmm %x, %c bias(%b : tensor<8xf16>) : tensor<4x32xf16>, !sgpu.compressed<16x32xf16, #sgpu.nm<2:4>> -> tensor<4x16xf16>
  return
}

// -----

func.func @tensor_map_layout(%m: memref<64x64xf16, strided<[128, 1]>>) {
  // expected-error @+1 {{'sgpu.tensor_map' op expects a row-major source (identity layout), got 'memref<64x64xf16, strided<[128, 1]>>'}}
  %t = sgpu.tensor_map %m box [64, 8] swizzle 0 : memref<64x64xf16, strided<[128, 1]>> -> !llvm.ptr
  return
}

// -----

func.func @tensor_map_memory_space(%m: memref<64x64xf16, 3>) {
  // expected-error @+1 {{'sgpu.tensor_map' op expects a source in the default memory space (device global memory), got 'memref<64x64xf16, 3>'}}
  %t = sgpu.tensor_map %m box [64, 8] swizzle 0 : memref<64x64xf16, 3> -> !llvm.ptr
  return
}

// -----

func.func @tensor_map_element(%m: memref<64x64xi8>) {
  // expected-error @+1 {{'sgpu.tensor_map' op expects a source element type f16, bf16, f32 or i32, got 'i8'}}
  %t = sgpu.tensor_map %m box [64, 16] swizzle 0 : memref<64x64xi8> -> !llvm.ptr
  return
}

// -----

func.func @tensor_map_rank(%m: memref<2x2x2x2x2x8xf16>) {
  // expected-error @+1 {{'sgpu.tensor_map' op expects a source of rank 1 to 5, got rank 6}}
  %t = sgpu.tensor_map %m box [1, 1, 1, 1, 1, 8] swizzle 0 : memref<2x2x2x2x2x8xf16> -> !llvm.ptr
  return
}

// -----

func.func @tensor_map_rank0(%m: memref<f32>) {
  // expected-error @+1 {{'sgpu.tensor_map' op expects a source of rank 1 to 5, got rank 0}}
  %t = sgpu.tensor_map %m box [] swizzle 0 : memref<f32> -> !llvm.ptr
  return
}

// -----

func.func @tensor_map_empty_dim(%m: memref<0x64xf16>) {
  // expected-error @+1 {{'sgpu.tensor_map' op source dimension #0 is 0; a tensor map needs dimensions from 1 to 2^32}}
  %t = sgpu.tensor_map %m box [8, 8] swizzle 0 : memref<0x64xf16> -> !llvm.ptr
  return
}

// -----

func.func @tensor_map_huge_dim(%m: memref<4294967297x8xf16>) {
  // expected-error @+1 {{'sgpu.tensor_map' op source dimension #0 is 4294967297; a tensor map needs dimensions from 1 to 2^32}}
  %t = sgpu.tensor_map %m box [8, 8] swizzle 0 : memref<4294967297x8xf16> -> !llvm.ptr
  return
}

// -----

func.func @tensor_map_swizzle(%m: memref<64x64xf16>) {
  // expected-error @+1 {{'sgpu.tensor_map' op swizzle must be 0 (none), 32, 64 or 128 bytes, got 16}}
  %t = sgpu.tensor_map %m box [64, 8] swizzle 16 : memref<64x64xf16> -> !llvm.ptr
  return
}

// -----

func.func @tensor_map_box_rank(%m: memref<64x64xf16>) {
  // expected-error @+1 {{'sgpu.tensor_map' op box has rank 3 but the source has rank 2}}
  %t = sgpu.tensor_map %m box [1, 64, 8] swizzle 0 : memref<64x64xf16> -> !llvm.ptr
  return
}

// -----

func.func @tensor_map_box_zero(%m: memref<64x64xf16>) {
  // expected-error @+1 {{'sgpu.tensor_map' op box dimension #0 is 0; expected 1 to 256}}
  %t = sgpu.tensor_map %m box [0, 8] swizzle 0 : memref<64x64xf16> -> !llvm.ptr
  return
}

// -----

func.func @tensor_map_box_large(%m: memref<1024x64xf16>) {
  // expected-error @+1 {{'sgpu.tensor_map' op box dimension #0 is 257; expected 1 to 256}}
  %t = sgpu.tensor_map %m box [257, 8] swizzle 0 : memref<1024x64xf16> -> !llvm.ptr
  return
}

// -----

func.func @tensor_map_inner_bytes(%m: memref<64x64xf16>) {
  // expected-error @+1 {{'sgpu.tensor_map' op innermost box extent is 8 bytes (4 x 'f16'); it must be a multiple of 16 bytes}}
  %t = sgpu.tensor_map %m box [64, 4] swizzle 0 : memref<64x64xf16> -> !llvm.ptr
  return
}

// -----

func.func @tensor_map_swizzle_span(%m: memref<64x64xf16>) {
  // expected-error @+1 {{'sgpu.tensor_map' op innermost box extent of 128 bytes exceeds the 64-byte swizzle span}}
  %t = sgpu.tensor_map %m box [64, 64] swizzle 64 : memref<64x64xf16> -> !llvm.ptr
  return
}

// -----

func.func @tensor_map_pitch(%m: memref<4x64x12xf16>) {
  // expected-error @+1 {{'sgpu.tensor_map' op row pitch of dimension #1 is 24 bytes; a tensor map needs a multiple of 16 bytes}}
  %t = sgpu.tensor_map %m box [1, 8, 8] swizzle 0 : memref<4x64x12xf16> -> !llvm.ptr
  return
}

// -----

func.func @tensor_map_pitch_limit(%m: memref<2x4294967296x256xf32>) {
  // expected-error @+1 {{'sgpu.tensor_map' op row pitch of dimension #0 is 4398046511104 bytes; a tensor map needs less than 2^40}}
  %t = sgpu.tensor_map %m box [1, 1, 64] swizzle 0 : memref<2x4294967296x256xf32> -> !llvm.ptr
  return
}

// -----

func.func @tensor_map_result(%m: memref<64x64xf16>) {
  // expected-error @+1 {{'sgpu.tensor_map' op result #0 must be LLVM pointer in the generic address space, but got '!llvm.ptr<1>'}}
  %t = sgpu.tensor_map %m box [64, 8] swizzle 0 : memref<64x64xf16> -> !llvm.ptr<1>
  return
}

// -----

func.func @matmul_k(%x: tensor<4x48xf16>, %w: tensor<16x32xf16>) {
  // expected-error @+1 {{'sgpu.matmul' op reduction sizes differ: input has K = 48, weight has K = 32}}
  %y = sgpu.matmul %x, %w : tensor<4x48xf16>, tensor<16x32xf16> -> tensor<4x16xf16>
  return
}

// -----

func.func @matmul_elem(%x: tensor<4x32xbf16>, %w: tensor<16x32xf16>) {
  // expected-error @+1 {{'sgpu.matmul' op input element type 'bf16' differs from the weight's 'f16'}}
  %y = sgpu.matmul %x, %w : tensor<4x32xbf16>, tensor<16x32xf16> -> tensor<4x16xbf16>
  return
}

// -----

func.func @matmul_result(%x: tensor<4x32xf16>, %w: tensor<16x32xf16>) {
  // expected-error @+1 {{'sgpu.matmul' op result must be 4x16, got 'tensor<4x8xf16>'}}
  %y = sgpu.matmul %x, %w : tensor<4x32xf16>, tensor<16x32xf16> -> tensor<4x8xf16>
  return
}

// -----

func.func @matmul_result_elem(%x: tensor<4x32xf16>, %w: tensor<16x32xf16>) {
  // expected-error @+1 {{'sgpu.matmul' op result element type must be the input's ('f16') or f32, got 'bf16'}}
  %y = sgpu.matmul %x, %w : tensor<4x32xf16>, tensor<16x32xf16> -> tensor<4x16xbf16>
  return
}

// -----

func.func @matmul_bias(%x: tensor<4x32xf16>, %w: tensor<16x32xf16>, %b: tensor<8xf16>) {
  // expected-error @+1 {{'sgpu.matmul' op bias must be a 16-element vector (one per output feature), got 'tensor<8xf16>'}}
  %y = sgpu.matmul %x, %w bias(%b : tensor<8xf16>) : tensor<4x32xf16>, tensor<16x32xf16> -> tensor<4x16xf16>
  return
}

// -----

func.func @matmul_bias_type(%x: tensor<4x32xbf16>, %w: tensor<16x32xbf16>, %b: tensor<16xf32>) {
  // expected-error @+1 {{'sgpu.matmul' op bias element type must be the result's ('bf16'), got 'f32' (the library GEMM adds a bias of the result type)}}
  %y = sgpu.matmul %x, %w bias(%b : tensor<16xf32>) : tensor<4x32xbf16>, tensor<16x32xbf16> -> tensor<4x16xbf16>
  return
}

// -----

func.func @matmul_encoded(%x: tensor<4x32xf16>, %w: tensor<16x32xf16, #sgpu.nm<2:4>>) {
  // expected-error @+1 {{'sgpu.matmul' op weight must be a plain tensor, got 'tensor<16x32xf16, #sgpu.nm<2:4>>' (a structured-sparsity weight goes through sgpu-slide-sparse)}}
  %y = sgpu.matmul %x, %w : tensor<4x32xf16>, tensor<16x32xf16, #sgpu.nm<2:4>> -> tensor<4x16xf16>
  return
}

// -----

func.func @matmul_dynamic(%x: tensor<?x32xf16>, %w: tensor<16x32xf16>) {
  // expected-error @+1 {{'sgpu.matmul' op expects input to have a static shape, got 'tensor<?x32xf16>'}}
  %y = sgpu.matmul %x, %w : tensor<?x32xf16>, tensor<16x32xf16> -> tensor<?x16xf16>
  return
}

// -----

func.func @gemm_call_layout(%x: memref<4x32xf16, strided<[64, 1]>>, %w: memref<16x32xf16>, %y: memref<4x16xf16>) {
  // expected-error @+1 {{'sgpu.gemm_call' op expects input to be row-major (identity layout), got 'memref<4x32xf16, strided<[64, 1]>>'}}
  sgpu.gemm_call %x, %w into %y : memref<4x32xf16, strided<[64, 1]>>, memref<16x32xf16>, memref<4x16xf16>
  return
}

// -----

func.func @gemm_call_rank(%x: memref<4x32xf16>, %w: memref<16x32x1xf16>, %y: memref<4x16xf16>) {
  // expected-error @+1 {{'sgpu.gemm_call' op expects weight to be rank 2, got 'memref<16x32x1xf16>'}}
  sgpu.gemm_call %x, %w into %y : memref<4x32xf16>, memref<16x32x1xf16>, memref<4x16xf16>
  return
}

// -----

func.func @gemm_call_f32(%x: memref<4x32xf32>, %w: memref<16x32xf32>, %y: memref<4x16xf32>) {
  // expected-error @+1 {{'sgpu.gemm_call' op supports f16 or bf16 inputs, got 'f32'}}
  sgpu.gemm_call %x, %w into %y : memref<4x32xf32>, memref<16x32xf32>, memref<4x16xf32>
  return
}

// -----

func.func @gemm_call_bias_type(%x: memref<4x32xf16>, %w: memref<16x32xf16>, %b: memref<16xf32>, %y: memref<4x16xf16>) {
  // expected-error @+1 {{'sgpu.gemm_call' op bias element type must be the result's ('f16'), got 'f32' (the library GEMM adds a bias of the result type)}}
  sgpu.gemm_call %x, %w bias(%b : memref<16xf32>) into %y : memref<4x32xf16>, memref<16x32xf16>, memref<4x16xf16>
  return
}

// -----

func.func @gemm_call_result(%x: memref<4x32xf16>, %w: memref<16x32xf16>, %y: memref<4x15xf16>) {
  // expected-error @+1 {{'sgpu.gemm_call' op result must be 4x16, got 'memref<4x15xf16>'}}
  sgpu.gemm_call %x, %w into %y : memref<4x32xf16>, memref<16x32xf16>, memref<4x15xf16>
  return
}

// -----

func.func @all_reduce_call_types(%x: memref<16x64xbf16>, %r: memref<16x64xf16>) {
  // expected-error @+1 {{'sgpu.all_reduce_call' op recv 'memref<16x64xf16>' must have the shape and element type of send 'memref<16x64xbf16>'}}
  %t = sgpu.all_reduce_call %x into %r : memref<16x64xbf16>, memref<16x64xf16>
  sgpu.all_reduce_sync %t, %x : memref<16x64xbf16>
  return
}

// -----

func.func @all_reduce_call_int(%x: memref<16xi32>) {
  // expected-error @+1 {{'sgpu.all_reduce_call' op reduces f16, bf16 or f32 buffers, got 'i32'}}
  %t = sgpu.all_reduce_call %x into %x : memref<16xi32>, memref<16xi32>
  sgpu.all_reduce_sync %t, %x : memref<16xi32>
  return
}

// -----

func.func @all_reduce_call_strided(%x: memref<4x4xf32, strided<[8, 1]>>) {
  // expected-error @+1 {{'sgpu.all_reduce_call' op reduces contiguous (identity layout) buffers}}
  %t = sgpu.all_reduce_call %x into %x : memref<4x4xf32, strided<[8, 1]>>, memref<4x4xf32, strided<[8, 1]>>
  sgpu.all_reduce_sync %t, %x : memref<4x4xf32, strided<[8, 1]>>
  return
}

// -----

func.func @all_reduce_call_unsynced(%x: memref<16xf32>) {
  // expected-error @+1 {{'sgpu.all_reduce_call' op token must be synchronized by exactly one sgpu.all_reduce_sync}}
  %t = sgpu.all_reduce_call %x into %x : memref<16xf32>, memref<16xf32>
  return
}

// -----

func.func @all_reduce_sync_token(%t: !sgpu.token, %x: memref<16xf32>) {
  // expected-error @+1 {{'sgpu.all_reduce_sync' op token must come from an sgpu.all_reduce_call}}
  sgpu.all_reduce_sync %t, %x : memref<16xf32>
  return
}

// -----

func.func @all_reduce_sync_send(%x: memref<16xf32>, %y: memref<8xf32>) {
  %t = sgpu.all_reduce_call %x into %x : memref<16xf32>, memref<16xf32>
  // expected-error @+1 {{'sgpu.all_reduce_sync' op send 'memref<8xf32>' must have the type of the call's send 'memref<16xf32>'}}
  sgpu.all_reduce_sync %t, %y : memref<8xf32>
  return
}

// -----

func.func @embedding_table_rank(%t: tensor<8xf32>, %ids: tensor<4xi64>) {
  // expected-error @+1 {{'sgpu.embedding' op expects a static V x D table, got 'tensor<8xf32>'}}
  %e = sgpu.embedding %t, %ids : tensor<8xf32>, tensor<4xi64> -> tensor<4x8xf32>
  return
}

// -----

func.func @embedding_result(%t: tensor<8x16xf16>, %ids: tensor<2x4xi32>) {
  // expected-error @+1 {{'sgpu.embedding' op result must be the ids' shape followed by D = 16 with the table's element type, got 'tensor<8x16xf16>'}}
  %e = sgpu.embedding %t, %ids : tensor<8x16xf16>, tensor<2x4xi32> -> tensor<8x16xf16>
  return
}

// -----

func.func @embedding_ids_dynamic(%t: tensor<8x16xf16>, %ids: tensor<?xi64>) {
  // expected-error @+1 {{'sgpu.embedding' op expects statically shaped ids, got 'tensor<?xi64>'}}
  %e = sgpu.embedding %t, %ids : tensor<8x16xf16>, tensor<?xi64> -> tensor<4x16xf16>
  return
}

// -----

func.func @rope_odd(%x: tensor<2x5xf32>, %c: tensor<2x5xf32>) {
  // expected-error @+1 {{'sgpu.rope' op the rotated dimension must be even, got 5}}
  %y = sgpu.rope %x, %c, %c : tensor<2x5xf32>, tensor<2x5xf32>, tensor<2x5xf32> -> tensor<2x5xf32>
  return
}

// -----

func.func @rope_result(%x: tensor<2x4xf32>, %c: tensor<2x4xf32>) {
  // expected-error @+1 {{'sgpu.rope' op result must have the input's type 'tensor<2x4xf32>', got 'tensor<2x4xf16>'}}
  %y = sgpu.rope %x, %c, %c : tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32> -> tensor<2x4xf16>
  return
}

// -----

func.func @rope_table_type(%x: tensor<2x4xf16>, %c: tensor<2x4xf32>) {
  // expected-error @+1 {{'sgpu.rope' op cos must have the input's element type 'f16', got 'tensor<2x4xf32>'}}
  %y = sgpu.rope %x, %c, %c : tensor<2x4xf16>, tensor<2x4xf32>, tensor<2x4xf32> -> tensor<2x4xf16>
  return
}

// -----

func.func @rope_table_broadcast(%x: tensor<2x3x4xf32>, %c: tensor<1x3x4xf32>, %s: tensor<2x2x4xf32>) {
  // expected-error @+1 {{'sgpu.rope' op sin 'tensor<2x2x4xf32>' does not broadcast to 'tensor<2x3x4xf32>'}}
  %y = sgpu.rope %x, %c, %s : tensor<2x3x4xf32>, tensor<1x3x4xf32>, tensor<2x2x4xf32> -> tensor<2x3x4xf32>
  return
}

// -----

func.func @rope_table_rank(%x: tensor<2x4xf32>, %c: tensor<4xf32>) {
  // expected-error @+1 {{'sgpu.rope' op cos must be static with the input's rank 2, got 'tensor<4xf32>'}}
  %y = sgpu.rope %x, %c, %c : tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<2x4xf32>
  return
}

// -----

func.func @rope_table_partial(%x: tensor<2x4xf32>, %c: tensor<2x1xf32>) {
  // expected-error @+1 {{'sgpu.rope' op cos must cover the whole rotated dimension (4), got 'tensor<2x1xf32>'}}
  %y = sgpu.rope %x, %c, %c : tensor<2x4xf32>, tensor<2x1xf32>, tensor<2x1xf32> -> tensor<2x4xf32>
  return
}

// -----

// expected-error @+1 {{'sgpu.param' on argument #0 must be a non-empty string (the weight's qualified name), got ""}}
func.func @param_empty(%w: tensor<4xf32> {sgpu.param = ""}) { return }

// -----

// expected-error @+1 {{'sgpu.param' is a function argument attribute (a weight bound by name), not an attribute of 'func.func'}}
func.func @param_on_op() attributes {sgpu.param = "w"} { return }

// -----

func.func @config_not_dict(%q: tensor<1x1x4x16xf16>) {
  // expected-error @+1 {{'sgpu.config' must be a typed configuration (#sgpu.spmm_config, #sgpu.twell_pack_config, #sgpu.twell_ffn_config, #sgpu.attention_config or #sgpu.launch_config), got "fast"}}
  %o = sgpu.attention %q, %q, %q {scale = 0.25 : f32, sgpu.config = "fast"} : tensor<1x1x4x16xf16>, tensor<1x1x4x16xf16>, tensor<1x1x4x16xf16> -> tensor<1x1x4x16xf16>
  return
}

// -----

// expected-error @+1 {{'sgpu.state' on argument #0 needs 'sgpu.param' too: state is a named param the caller binds}}
func.func @state_without_param(%c: tensor<4xf32> {sgpu.state}) { return }

// -----

// expected-error @+1 {{'sgpu.state' on argument #0 is a unit attribute, got 1 : i64}}
func.func @state_not_unit(%c: tensor<4xf32> {sgpu.param = "c", sgpu.state = 1}) { return }

// -----

// expected-error @+1 {{'sgpu.state' is a function argument attribute (state updated in place), not an attribute of 'func.func'}}
func.func @state_on_op() attributes {sgpu.state} { return }

// -----

func.func @cache_not_state(%c: tensor<2x2x8x4xf32> {sgpu.param = "c"}, %n: tensor<1x2x1x4xf32>, %p: tensor<1x1xi32>) {
  // expected-error @+1 {{'sgpu.cache_update' op the cache must be a function argument marked 'sgpu.state' (the buffer it updates in place)}}
  %r = sgpu.cache_update %c, %n, %p : tensor<2x2x8x4xf32>, tensor<1x2x1x4xf32>, tensor<1x1xi32> -> tensor<2x2x8x4xf32>
  return
}

// -----

func.func @cache_other_use(%c: tensor<2x2x8x4xf32> {sgpu.param = "c", sgpu.state}, %n: tensor<1x2x1x4xf32>, %p: tensor<1x1xi32>) -> tensor<2x2x8x4xf32> {
  // expected-error @+1 {{'sgpu.cache_update' op the cache argument #0 has other uses: read the updated cache (this op's result) instead}}
  %r = sgpu.cache_update %c, %n, %p : tensor<2x2x8x4xf32>, tensor<1x2x1x4xf32>, tensor<1x1xi32> -> tensor<2x2x8x4xf32>
  return %c : tensor<2x2x8x4xf32>
}

// -----

func.func @cache_batch(%c: tensor<2x2x8x4xf32> {sgpu.param = "c", sgpu.state}, %n: tensor<3x2x1x4xf32>, %p: tensor<3x1xi32>) {
  // expected-error @+1 {{'sgpu.cache_update' op update batch 3 exceeds the cache's maximum batch 2}}
  %r = sgpu.cache_update %c, %n, %p : tensor<2x2x8x4xf32>, tensor<3x2x1x4xf32>, tensor<3x1xi32> -> tensor<2x2x8x4xf32>
  return
}

// -----

func.func @cache_heads(%c: tensor<2x2x8x4xf32> {sgpu.param = "c", sgpu.state}, %n: tensor<1x4x1x4xf32>, %p: tensor<1x1xi32>) {
  // expected-error @+1 {{'sgpu.cache_update' op update 'tensor<1x4x1x4xf32>' must match the cache's heads and head size ('tensor<2x2x8x4xf32>')}}
  %r = sgpu.cache_update %c, %n, %p : tensor<2x2x8x4xf32>, tensor<1x4x1x4xf32>, tensor<1x1xi32> -> tensor<2x2x8x4xf32>
  return
}

// -----

func.func @cache_capacity(%c: tensor<2x2x8x4xf32> {sgpu.param = "c", sgpu.state}, %n: tensor<1x2x9x4xf32>, %p: tensor<1x9xi32>) {
  // expected-error @+1 {{'sgpu.cache_update' op update length 9 exceeds the cache capacity 8}}
  %r = sgpu.cache_update %c, %n, %p : tensor<2x2x8x4xf32>, tensor<1x2x9x4xf32>, tensor<1x9xi32> -> tensor<2x2x8x4xf32>
  return
}

// -----

func.func @cache_positions(%c: tensor<2x2x8x4xf32> {sgpu.param = "c", sgpu.state}, %n: tensor<1x2x2x4xf32>, %p: tensor<1x1xi32>) {
  // expected-error @+1 {{'sgpu.cache_update' op positions must be 1x2 (batch x new tokens) or 2 (the same for every sequence), got 'tensor<1x1xi32>'}}
  %r = sgpu.cache_update %c, %n, %p : tensor<2x2x8x4xf32>, tensor<1x2x2x4xf32>, tensor<1x1xi32> -> tensor<2x2x8x4xf32>
  return
}

// -----

func.func @cache_dtype(%c: tensor<2x2x8x4xf32> {sgpu.param = "c", sgpu.state}, %n: tensor<1x2x1x4xf16>, %p: tensor<1x1xi32>) {
  // expected-error @+1 {{'sgpu.cache_update' op update and cache must share one element type, got 'f16' and 'f32'}}
  %r = sgpu.cache_update %c, %n, %p : tensor<2x2x8x4xf32>, tensor<1x2x1x4xf16>, tensor<1x1xi32> -> tensor<2x2x8x4xf32>
  return
}

// -----

func.func @cache_result(%c: tensor<2x2x8x4xf32> {sgpu.param = "c", sgpu.state}, %n: tensor<1x2x1x4xf32>, %p: tensor<1x1xi32>) {
  // expected-error @+1 {{'sgpu.cache_update' op result type 'tensor<2x2x4x4xf32>' must be the cache type 'tensor<2x2x8x4xf32>'}}
  %r = sgpu.cache_update %c, %n, %p : tensor<2x2x8x4xf32>, tensor<1x2x1x4xf32>, tensor<1x1xi32> -> tensor<2x2x4x4xf32>
  return
}

// -----

func.func @attn_positions_causal(%q: tensor<1x4x1x8xf32>, %k: tensor<2x2x16x8xf32>, %p: tensor<1x1xi32>) {
  // expected-error @+1 {{'sgpu.attention' op positions need 'causal' (a query at position p sees the cached keys 0..p)}}
  %o = sgpu.attention %q, %k, %k positions(%p : tensor<1x1xi32>) {scale = 0.125 : f32} : tensor<1x4x1x8xf32>, tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32> -> tensor<1x4x1x8xf32>
  return
}

// -----

func.func @attn_positions_mask(%q: tensor<1x4x1x8xf32>, %k: tensor<2x2x16x8xf32>, %p: tensor<1x1xi32>, %m: tensor<1x16xi1>) {
  // expected-error @+1 {{'sgpu.attention' op takes positions or a mask, not both}}
  %o = sgpu.attention %q, %k, %k mask(%m : tensor<1x16xi1>) positions(%p : tensor<1x1xi32>) {causal, scale = 0.125 : f32} : tensor<1x4x1x8xf32>, tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32> -> tensor<1x4x1x8xf32>
  return
}

// -----

func.func @attn_positions_shape(%q: tensor<1x4x2x8xf32>, %k: tensor<2x2x16x8xf32>, %p: tensor<1x1xi32>) {
  // expected-error @+1 {{'sgpu.attention' op positions must be 1x2 (batch x query length) or 2 (the same for every sequence), got 'tensor<1x1xi32>'}}
  %o = sgpu.attention %q, %k, %k positions(%p : tensor<1x1xi32>) {causal, scale = 0.125 : f32} : tensor<1x4x2x8xf32>, tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32> -> tensor<1x4x2x8xf32>
  return
}

// -----

func.func @attn_positions_cache_batch(%q: tensor<3x4x1x8xf32>, %k: tensor<2x2x16x8xf32>, %p: tensor<3x1xi32>) {
  // expected-error @+1 {{'sgpu.attention' op the key/value cache batch (2, 2) must be equal and at least the query batch (3)}}
  %o = sgpu.attention %q, %k, %k positions(%p : tensor<3x1xi32>) {causal, scale = 0.125 : f32} : tensor<3x4x1x8xf32>, tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32> -> tensor<3x4x1x8xf32>
  return
}

// -----

// The typed lowering configurations: their own checks, and each on its op.
func.func @spmm_mma_lift(%x: tensor<16x64xf16>, %w: !sgpu.compressed<64x64xf16, #sgpu.nm<2:4>>) -> tensor<16x64xf16> {
  // expected-error @+1 {{lift = fused needs kernel = tma (kernel = mma reads a lift's result)}}
  %y = sgpu.spmm %x, %w {sgpu.config = #sgpu.spmm_config<kernel = mma, lift = fused>} : tensor<16x64xf16>, !sgpu.compressed<64x64xf16, #sgpu.nm<2:4>> -> tensor<16x64xf16>
  return %y : tensor<16x64xf16>
}

// -----

func.func @spmm_mma_tiles(%x: tensor<16x64xf16>, %w: !sgpu.compressed<64x64xf16, #sgpu.nm<2:4>>) -> tensor<16x64xf16> {
  // expected-error @+1 {{tile_n, stages, splits, cluster, store_box and persistent configure kernel = tma; kernel = wgmma takes none}}
  %y = sgpu.spmm %x, %w {sgpu.config = #sgpu.spmm_config<kernel = wgmma, tile_n = 64>} : tensor<16x64xf16>, !sgpu.compressed<64x64xf16, #sgpu.nm<2:4>> -> tensor<16x64xf16>
  return %y : tensor<16x64xf16>
}

// -----

func.func @spmm_tile_n(%x: tensor<16x64xf16>, %w: !sgpu.compressed<64x64xf16, #sgpu.nm<2:4>>) -> tensor<16x64xf16> {
  // expected-error @+1 {{tile_n = 100 is not a power of two from 16 to 256}}
  %y = sgpu.spmm %x, %w {sgpu.config = #sgpu.spmm_config<kernel = tma, tile_n = 100, stages = 2>} : tensor<16x64xf16>, !sgpu.compressed<64x64xf16, #sgpu.nm<2:4>> -> tensor<16x64xf16>
  return %y : tensor<16x64xf16>
}

// -----

func.func @spmm_no_tile(%x: tensor<16x64xf16>, %w: !sgpu.compressed<64x64xf16, #sgpu.nm<2:4>>) -> tensor<16x64xf16> {
  // expected-error @+1 {{tile_n = 0 is not a power of two from 16 to 256}}
  %y = sgpu.spmm %x, %w {sgpu.config = #sgpu.spmm_config<kernel = tma>} : tensor<16x64xf16>, !sgpu.compressed<64x64xf16, #sgpu.nm<2:4>> -> tensor<16x64xf16>
  return %y : tensor<16x64xf16>
}

// -----

func.func @spmm_stages(%x: tensor<16x64xf16>, %w: !sgpu.compressed<64x64xf16, #sgpu.nm<2:4>>) -> tensor<16x64xf16> {
  // expected-error @+1 {{stages = 0 is not at least 1}}
  %y = sgpu.spmm %x, %w {sgpu.config = #sgpu.spmm_config<kernel = tma, tile_n = 64, stages = 0>} : tensor<16x64xf16>, !sgpu.compressed<64x64xf16, #sgpu.nm<2:4>> -> tensor<16x64xf16>
  return %y : tensor<16x64xf16>
}

// -----

func.func @spmm_splits(%x: tensor<16x64xf16>, %w: !sgpu.compressed<64x64xf16, #sgpu.nm<2:4>>) -> tensor<16x64xf16> {
  // expected-error @+1 {{splits = 33 is not 1 to 32}}
  %y = sgpu.spmm %x, %w {sgpu.config = #sgpu.spmm_config<kernel = tma, tile_n = 64, stages = 2, splits = 33>} : tensor<16x64xf16>, !sgpu.compressed<64x64xf16, #sgpu.nm<2:4>> -> tensor<16x64xf16>
  return %y : tensor<16x64xf16>
}

// -----

func.func @spmm_cluster(%x: tensor<16x64xf16>, %w: !sgpu.compressed<64x64xf16, #sgpu.nm<2:4>>) -> tensor<16x64xf16> {
  // expected-error @+1 {{cluster = 3 is not 1, 2 or 4}}
  %y = sgpu.spmm %x, %w {sgpu.config = #sgpu.spmm_config<kernel = tma, tile_n = 64, stages = 2, cluster = 3>} : tensor<16x64xf16>, !sgpu.compressed<64x64xf16, #sgpu.nm<2:4>> -> tensor<16x64xf16>
  return %y : tensor<16x64xf16>
}

// -----

func.func @spmm_box(%x: tensor<16x64xf16>, %w: !sgpu.compressed<64x64xf16, #sgpu.nm<2:4>>) -> tensor<16x64xf16> {
  // expected-error @+1 {{store_box = 24 is not 0 (stores from registers) or a power of two from 16 to 128}}
  %y = sgpu.spmm %x, %w {sgpu.config = #sgpu.spmm_config<kernel = tma, tile_n = 64, stages = 2, store_box = 24>} : tensor<16x64xf16>, !sgpu.compressed<64x64xf16, #sgpu.nm<2:4>> -> tensor<16x64xf16>
  return %y : tensor<16x64xf16>
}

// -----

func.func @spmm_box_tile(%x: tensor<16x64xf16>, %w: !sgpu.compressed<64x64xf16, #sgpu.nm<2:4>>) -> tensor<16x64xf16> {
  // expected-error @+1 {{store_box = 64 is larger than the tile's 32 tokens}}
  %y = sgpu.spmm %x, %w {sgpu.config = #sgpu.spmm_config<kernel = tma, tile_n = 32, stages = 2, store_box = 64>} : tensor<16x64xf16>, !sgpu.compressed<64x64xf16, #sgpu.nm<2:4>> -> tensor<16x64xf16>
  return %y : tensor<16x64xf16>
}

// -----

func.func @pack_cluster(%h: tensor<16x1024xbf16>, %wd: tensor<64x1024xbf16>) -> tensor<16x64xbf16> {
  // expected-error @+1 {{cluster = 2 configures form = fused_producer, not form = kernel}}
  %p = sgpu.twell_pack %h {sgpu.config = #sgpu.twell_pack_config<form = kernel, cluster = 2>} : tensor<16x1024xbf16> -> !sgpu.twell<16x1024xbf16, #sgpu.twell<tile = 256, compression = 4>>
  %y = sgpu.twell_ffn %p, %wd : !sgpu.twell<16x1024xbf16, #sgpu.twell<tile = 256, compression = 4>>, tensor<64x1024xbf16> -> tensor<16x64xbf16>
  return %y : tensor<16x64xbf16>
}

// -----

func.func @pack_cluster3(%h: tensor<16x1024xbf16>, %wd: tensor<64x1024xbf16>) -> tensor<16x64xbf16> {
  // expected-error @+1 {{cluster = 3 is not 1, 2 or 4}}
  %p = sgpu.twell_pack %h {sgpu.config = #sgpu.twell_pack_config<form = fused_producer, cluster = 3>} : tensor<16x1024xbf16> -> !sgpu.twell<16x1024xbf16, #sgpu.twell<tile = 256, compression = 4>>
  %y = sgpu.twell_ffn %p, %wd : !sgpu.twell<16x1024xbf16, #sgpu.twell<tile = 256, compression = 4>>, tensor<64x1024xbf16> -> tensor<16x64xbf16>
  return %y : tensor<16x64xbf16>
}

// -----

func.func @ffn_passes(%h: tensor<16x1024xbf16>, %wd: tensor<64x1024xbf16>) -> tensor<16x64xbf16> {
  %p = sgpu.twell_pack %h : tensor<16x1024xbf16> -> !sgpu.twell<16x1024xbf16, #sgpu.twell<tile = 256, compression = 4>>
  // expected-error @+1 {{passes = 0 is not 1 to 64}}
  %y = sgpu.twell_ffn %p, %wd {sgpu.config = #sgpu.twell_ffn_config<consumer = cuda_cores, passes = 0>} : !sgpu.twell<16x1024xbf16, #sgpu.twell<tile = 256, compression = 4>>, tensor<64x1024xbf16> -> tensor<16x64xbf16>
  return %y : tensor<16x64xbf16>
}

// -----

func.func @ffn_tc_passes(%h: tensor<16x1024xbf16>, %wd: tensor<64x1024xbf16>) -> tensor<16x64xbf16> {
  %p = sgpu.twell_pack %h : tensor<16x1024xbf16> -> !sgpu.twell<16x1024xbf16, #sgpu.twell<tile = 256, compression = 4>>
  // expected-error @+1 {{passes = 2 configures the CUDA-core consumer; the tensor-core consumer runs in one}}
  %y = sgpu.twell_ffn %p, %wd {sgpu.config = #sgpu.twell_ffn_config<consumer = tensor_cores, passes = 2>} : !sgpu.twell<16x1024xbf16, #sgpu.twell<tile = 256, compression = 4>>, tensor<64x1024xbf16> -> tensor<16x64xbf16>
  return %y : tensor<16x64xbf16>
}

// -----

func.func @ffn_cuda_gather(%h: tensor<16x1024xbf16>, %wd: tensor<64x1024xbf16>) -> tensor<16x64xbf16> {
  %p = sgpu.twell_pack %h : tensor<16x1024xbf16> -> !sgpu.twell<16x1024xbf16, #sgpu.twell<tile = 256, compression = 4>>
  // expected-error @+1 {{tma_gather configures the tensor-core consumer}}
  %y = sgpu.twell_ffn %p, %wd {sgpu.config = #sgpu.twell_ffn_config<consumer = cuda_cores, tma_gather = true>} : !sgpu.twell<16x1024xbf16, #sgpu.twell<tile = 256, compression = 4>>, tensor<64x1024xbf16> -> tensor<16x64xbf16>
  return %y : tensor<16x64xbf16>
}

// -----

func.func @config_on_other_op(%h: tensor<16x1024xbf16>) -> !sgpu.twell<16x1024xbf16, #sgpu.twell<tile = 256, compression = 4>> {
  // expected-error @+1 {{'sgpu.config' = #sgpu.spmm_config<kernel = mma> configures sgpu.spmm, not 'sgpu.twell_pack'}}
  %p = sgpu.twell_pack %h {sgpu.config = #sgpu.spmm_config<kernel = mma>} : tensor<16x1024xbf16> -> !sgpu.twell<16x1024xbf16, #sgpu.twell<tile = 256, compression = 4>>
  return %p : !sgpu.twell<16x1024xbf16, #sgpu.twell<tile = 256, compression = 4>>
}

// -----

func.func @dict_on_spmm(%x: tensor<16x64xf16>, %w: !sgpu.compressed<64x64xf16, #sgpu.nm<2:4>>) -> tensor<16x64xf16> {
  // expected-error @+1 {{'sgpu.config' must be a typed configuration (#sgpu.spmm_config, #sgpu.twell_pack_config, #sgpu.twell_ffn_config, #sgpu.attention_config or #sgpu.launch_config), got {tile_n = 64 : i64}}}
  %y = sgpu.spmm %x, %w {sgpu.config = {tile_n = 64}} : tensor<16x64xf16>, !sgpu.compressed<64x64xf16, #sgpu.nm<2:4>> -> tensor<16x64xf16>
  return %y : tensor<16x64xf16>
}

// -----

func.func @config_dictionary(%q: tensor<1x1x4x16xf16>) {
  // expected-error @+1 {{'sgpu.config' must be a typed configuration (#sgpu.spmm_config, #sgpu.twell_pack_config, #sgpu.twell_ffn_config, #sgpu.attention_config or #sgpu.launch_config), got {warps = 8 : i64}}}
  %o = sgpu.attention %q, %q, %q {scale = 0.25 : f32, sgpu.config = {warps = 8 : i64}} : tensor<1x1x4x16xf16>, tensor<1x1x4x16xf16>, tensor<1x1x4x16xf16> -> tensor<1x1x4x16xf16>
  return
}

// -----

func.func @attention_config_on_rope(%x: tensor<2x4xf32>, %c: tensor<2x4xf32>) {
  // expected-error @+1 {{'sgpu.config' = #sgpu.attention_config<warps = 8> configures sgpu.attention, not 'sgpu.rope'}}
  %o = sgpu.rope %x, %c, %c {sgpu.config = #sgpu.attention_config<warps = 8>} : tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32> -> tensor<2x4xf32>
  return
}

// -----

func.func @launch_config_on_attention(%q: tensor<1x1x4x16xf16>) {
  // expected-error @+1 {{'sgpu.config' = #sgpu.launch_config<threads = 128> configures sgpu.embedding, sgpu.rope and sgpu.cache_update, not 'sgpu.attention'}}
  %o = sgpu.attention %q, %q, %q {scale = 0.25 : f32, sgpu.config = #sgpu.launch_config<threads = 128>} : tensor<1x1x4x16xf16>, tensor<1x1x4x16xf16>, tensor<1x1x4x16xf16> -> tensor<1x1x4x16xf16>
  return
}

// -----

// expected-error @+1 {{warps = 3 is not 2, 4 or 8}}
func.func @attention_config_warps() attributes {c = #sgpu.attention_config<warps = 3>} { return }

// -----

// expected-error @+1 {{min_blocks_per_sm = -1 is not 0 (no bound) to 32}}
func.func @attention_config_min_blocks() attributes {c = #sgpu.attention_config<min_blocks_per_sm = -1>} { return }

// -----

// expected-error @+1 {{rows_per_block = 33 is not 0 (chosen) to 32}}
func.func @attention_config_rows() attributes {c = #sgpu.attention_config<rows_per_block = 33>} { return }

// -----

// expected-error @+1 {{splits = 1025 is not 0 (chosen) to 1024}}
func.func @attention_config_splits() attributes {c = #sgpu.attention_config<splits = 1025>} { return }

// -----

// expected-error @+1 {{unroll = 3 is not 0 (chosen), 1 or 2}}
func.func @attention_config_unroll() attributes {c = #sgpu.attention_config<unroll = 3>} { return }

// -----

// expected-error @+1 {{lanes_per_key = 12 is not 0 (chosen) or a power of two up to 32}}
func.func @attention_config_lanes() attributes {c = #sgpu.attention_config<lanes_per_key = 12>} { return }

// -----

// expected-error @+1 {{warps and min_blocks_per_sm configure the tensor-core kernel, not kernel = cuda_cores}}
func.func @attention_config_cuda_warps() attributes {c = #sgpu.attention_config<kernel = cuda_cores, warps = 8>} { return }

// -----

// expected-error @+1 {{splits configures the decode kernels, not kernel = cuda_cores}}
func.func @attention_config_cuda_splits() attributes {c = #sgpu.attention_config<kernel = cuda_cores, splits = 2>} { return }

// -----

// expected-error @+1 {{unroll and lanes_per_key configure the CUDA-core decode kernel, not kernel = decode_tensor_cores}}
func.func @attention_config_mma_decode_unroll() attributes {c = #sgpu.attention_config<kernel = decode_tensor_cores, unroll = 1>} { return }

// -----

// expected-error @+1 {{rows_per_block configures the CUDA-core kernel, not kernel = tensor_cores}}
func.func @attention_config_mma_rows() attributes {c = #sgpu.attention_config<kernel = tensor_cores, rows_per_block = 2>} { return }

// -----

// expected-error @+1 {{threads = 100 is not a multiple of 32 from 32 to 1024}}
func.func @launch_config_threads() attributes {c = #sgpu.launch_config<threads = 100>} { return }

// -----

// expected-error @+1 {{warps and min_blocks_per_sm configure the tensor-core kernel, not kernel = decode}}
func.func @attention_config_decode_warps() attributes {c = #sgpu.attention_config<kernel = decode, warps = 8>} { return }

// -----

func.func @attention_call_f32(%q: memref<1x2x8x16xf32>) {
  // expected-error @+1 {{'sgpu.attention_call' op supports f16 or bf16, got 'f32'}}
  sgpu.attention_call %q, %q, %q into %q {scale = 0.5 : f32} : memref<1x2x8x16xf32>, memref<1x2x8x16xf32>, memref<1x2x8x16xf32>, memref<1x2x8x16xf32>
  return
}

// -----

func.func @attention_call_rank(%q: memref<2x8x16xf16>) {
  // expected-error @+1 {{'sgpu.attention_call' op expects query to be a row-major B x H x S x D memref, got 'memref<2x8x16xf16>'}}
  sgpu.attention_call %q, %q, %q into %q {scale = 0.5 : f32} : memref<2x8x16xf16>, memref<2x8x16xf16>, memref<2x8x16xf16>, memref<2x8x16xf16>
  return
}

// -----

func.func @attention_call_types(%q: memref<1x2x8x16xf16>, %k: memref<1x2x8x16xbf16>) {
  // expected-error @+1 {{'sgpu.attention_call' op query, key, value and result must share one element type}}
  sgpu.attention_call %q, %k, %k into %q {scale = 0.5 : f32} : memref<1x2x8x16xf16>, memref<1x2x8x16xbf16>, memref<1x2x8x16xbf16>, memref<1x2x8x16xf16>
  return
}

// -----

func.func @attention_call_kv(%q: memref<1x2x8x16xf16>, %k: memref<1x2x8x16xf16>, %v: memref<1x2x9x16xf16>) {
  // expected-error @+1 {{'sgpu.attention_call' op key and value must be 1x2x8x16, got 'memref<1x2x8x16xf16>' and 'memref<1x2x9x16xf16>'}}
  sgpu.attention_call %q, %k, %v into %q {scale = 0.5 : f32} : memref<1x2x8x16xf16>, memref<1x2x8x16xf16>, memref<1x2x9x16xf16>, memref<1x2x8x16xf16>
  return
}

// -----

func.func @attention_call_result(%q: memref<1x2x8x16xf16>, %o: memref<1x2x8x32xf16>) {
  // expected-error @+1 {{'sgpu.attention_call' op result must have the query's shape, got 'memref<1x2x8x32xf16>'}}
  sgpu.attention_call %q, %q, %q into %o {scale = 0.5 : f32} : memref<1x2x8x16xf16>, memref<1x2x8x16xf16>, memref<1x2x8x16xf16>, memref<1x2x8x32xf16>
  return
}

// -----

func.func @attention_call_heads(%q: memref<1x3x8x16xf16>, %k: memref<1x2x8x16xf16>) {
  // expected-error @+1 {{'sgpu.attention_call' op query heads (3) must be a multiple of key/value heads (2)}}
  sgpu.attention_call %q, %k, %k into %q {scale = 0.5 : f32} : memref<1x3x8x16xf16>, memref<1x2x8x16xf16>, memref<1x2x8x16xf16>, memref<1x3x8x16xf16>
  return
}

// -----

func.func @attention_call_causal(%q: memref<1x2x8x16xf16>, %k: memref<1x2x12x16xf16>) {
  // expected-error @+1 {{'sgpu.attention_call' op a causal library attention needs as many queries as keys, got 8 and 12}}
  sgpu.attention_call %q, %k, %k into %q {causal, scale = 0.5 : f32} : memref<1x2x8x16xf16>, memref<1x2x12x16xf16>, memref<1x2x12x16xf16>, memref<1x2x8x16xf16>
  return
}

// -----

func.func @attn_seq_major_mask(%q: tensor<1x16x8x32xf16>, %m: tensor<16x16xi1>) {
  // expected-error @+1 {{'sgpu.attention' op seq_major takes no mask or positions}}
  %o = sgpu.attention %q, %q, %q mask(%m : tensor<16x16xi1>) {scale = 0.125 : f32, seq_major} : tensor<1x16x8x32xf16>, tensor<1x16x8x32xf16>, tensor<1x16x8x32xf16> -> tensor<1x16x8x32xf16>
  return
}

// -----

func.func @attn_seq_major_result(%q: tensor<1x16x8x32xf16>) {
  // expected-error @+1 {{'sgpu.attention' op result must be 1x16x8x32, got 'tensor<1x8x16x32xf16>'}}
  %o = sgpu.attention %q, %q, %q {scale = 0.125 : f32, seq_major} : tensor<1x16x8x32xf16>, tensor<1x16x8x32xf16>, tensor<1x16x8x32xf16> -> tensor<1x8x16x32xf16>
  return
}

// -----

func.func @attn_seq_major_kv(%q: tensor<1x16x8x32xf16>, %k: tensor<1x16x2x32xf16>, %v: tensor<1x16x4x32xf16>) {
  // expected-error @+1 {{'sgpu.attention' op key and value must share heads and length}}
  %o = sgpu.attention %q, %k, %v {scale = 0.125 : f32, seq_major} : tensor<1x16x8x32xf16>, tensor<1x16x2x32xf16>, tensor<1x16x4x32xf16> -> tensor<1x16x8x32xf16>
  return
}

// -----

func.func @attention_call_seq_major_heads(%q: memref<1x8x3x16xf16>, %k: memref<1x8x2x16xf16>) {
  // expected-error @+1 {{'sgpu.attention_call' op query heads (3) must be a multiple of key/value heads (2)}}
  sgpu.attention_call %q, %k, %k into %q {scale = 0.5 : f32, seq_major} : memref<1x8x3x16xf16>, memref<1x8x2x16xf16>, memref<1x8x2x16xf16>, memref<1x8x3x16xf16>
  return
}

// -----

func.func @attention_call_seq_major_causal(%q: memref<1x8x2x16xf16>, %k: memref<1x12x2x16xf16>) {
  // expected-error @+1 {{'sgpu.attention_call' op a causal library attention needs as many queries as keys, got 8 and 12}}
  sgpu.attention_call %q, %k, %k into %q {causal, scale = 0.5 : f32, seq_major} : memref<1x8x2x16xf16>, memref<1x12x2x16xf16>, memref<1x12x2x16xf16>, memref<1x8x2x16xf16>
  return
}

// -----

func.func @attention_call_seq_major_rank(%q: memref<8x2x16xf16>) {
  // expected-error @+1 {{'sgpu.attention_call' op expects query to be a row-major B x S x H x D memref, got 'memref<8x2x16xf16>'}}
  sgpu.attention_call %q, %q, %q into %q {scale = 0.5 : f32, seq_major} : memref<8x2x16xf16>, memref<8x2x16xf16>, memref<8x2x16xf16>, memref<8x2x16xf16>
  return
}

// -----

func.func @cache_update_rope_table(%kc: tensor<4x2x64x16xf16> {sgpu.param = "k", sgpu.state}, %k: tensor<4x2x1x16xf16>, %pos: tensor<4x1xi32>, %t: tensor<1x1x1x8xf16>) {
  // expected-error @+1 {{'sgpu.cache_update' op cos 'tensor<1x1x1x8xf16>' does not broadcast to 'tensor<4x2x1x16xf16>'}}
  %c = sgpu.cache_update %kc, %k, %pos rope(%t, %t : tensor<1x1x1x8xf16>, tensor<1x1x1x8xf16>) : tensor<4x2x64x16xf16>, tensor<4x2x1x16xf16>, tensor<4x1xi32> -> tensor<4x2x64x16xf16>
  return
}

// -----

func.func @cache_update_rope_type(%kc: tensor<4x2x64x16xf16> {sgpu.param = "k", sgpu.state}, %k: tensor<4x2x1x16xf16>, %pos: tensor<4x1xi32>, %t: tensor<1x1x1x16xbf16>) {
  // expected-error @+1 {{'sgpu.cache_update' op cos must have the input's element type 'f16', got 'tensor<1x1x1x16xbf16>'}}
  %c = sgpu.cache_update %kc, %k, %pos rope(%t, %t : tensor<1x1x1x16xbf16>, tensor<1x1x1x16xbf16>) : tensor<4x2x64x16xf16>, tensor<4x2x1x16xf16>, tensor<4x1xi32> -> tensor<4x2x64x16xf16>
  return
}

// -----

func.func @cache_update_rope_one_table(%kc: tensor<4x2x64x16xf16> {sgpu.param = "k", sgpu.state}, %k: tensor<4x2x1x16xf16>, %pos: tensor<4x1xi32>, %t: tensor<1x1x1x16xf16>) {
  // expected-error @+1 {{'sgpu.cache_update' op rope takes both tables, cos and sin}}
  %c = "sgpu.cache_update"(%kc, %k, %pos, %t) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 0>} : (tensor<4x2x64x16xf16>, tensor<4x2x1x16xf16>, tensor<4x1xi32>, tensor<1x1x1x16xf16>) -> tensor<4x2x64x16xf16>
  return
}
