// RUN: sparse-opt %s -split-input-file -convert-sgpu-to-gpu -verify-diagnostics

// A weight computed in the function: no param to bind and prepare.
func.func @computed_weight(%x: tensor<8x32xf16>, %w: tensor<16x32xf16>) -> tensor<8x16xf16> {
  %w2 = arith.addf %w, %w : tensor<16x32xf16>
  %c = sgpu.compress %w2 : tensor<16x32xf16> -> !sgpu.compressed<16x32xf16, #sgpu.nm<2:4>>
  // expected-error @+1 {{the sparse weight must be a constant, sgpu.assemble of its parts, or an argument of the function that only this matmul reads (compressed on the GPU when the program's params are bound); a weight computed in the function is not supported}}
  %y = sgpu.spmm %x, %c : tensor<8x32xf16>, !sgpu.compressed<16x32xf16, #sgpu.nm<2:4>> -> tensor<8x16xf16>
  return %y : tensor<8x16xf16>
}

// -----

// A weight argument that is also returned: the program needs it at every
// run, so it cannot be a param prepared once.
func.func @shared_weight(%x: tensor<8x32xf16>, %w: tensor<16x32xf16>) -> (tensor<8x16xf16>, tensor<16x32xf16>) {
  %c = sgpu.compress %w : tensor<16x32xf16> -> !sgpu.compressed<16x32xf16, #sgpu.nm<2:4>>
  // expected-error @+1 {{the sparse weight must be a constant, sgpu.assemble of its parts, or an argument of the function that only this matmul reads (compressed on the GPU when the program's params are bound); a weight computed in the function is not supported}}
  %y = sgpu.spmm %x, %c : tensor<8x32xf16>, !sgpu.compressed<16x32xf16, #sgpu.nm<2:4>> -> tensor<8x16xf16>
  return %y, %w : tensor<8x16xf16>, tensor<16x32xf16>
}

// -----

// A TwELL value read by anything but sgpu.twell_ffn (here returned): its
// concrete buffers have no tensor form to hand over.
func.func @twell_returned(%h: tensor<8x512xbf16>) -> !sgpu.twell<8x512xbf16, #sgpu.twell<tile = 256, compression = 4>> {
  // expected-error @+1 {{the TwELL value is used by 'func.return'; the GPU lowering supports TwELL values read only by sgpu.twell_ffn}}
  %p = sgpu.twell_pack %h : tensor<8x512xbf16> -> !sgpu.twell<8x512xbf16, #sgpu.twell<tile = 256, compression = 4>>
  return %p : !sgpu.twell<8x512xbf16, #sgpu.twell<tile = 256, compression = 4>>
}

// -----

func.func @twell_tile_too_large(%h: tensor<8x16384xbf16>, %wd: tensor<64x16384xbf16>) -> tensor<8x64xbf16> {
  %p = sgpu.twell_pack %h : tensor<8x16384xbf16> -> !sgpu.twell<8x16384xbf16, #sgpu.twell<tile = 16384, compression = 2>>
  // expected-error @+1 {{sgpu.twell_ffn with 8191 entries per tile: the GPU consumer stages a tile's entries in shared memory, at most 4096 (use a smaller tile or a larger compression)}}
  %y = sgpu.twell_ffn %p, %wd : !sgpu.twell<8x16384xbf16, #sgpu.twell<tile = 16384, compression = 2>>, tensor<64x16384xbf16> -> tensor<8x64xbf16>
  return %y : tensor<8x64xbf16>
}

// -----

func.func @twell_too_wide(%h: tensor<8x64xbf16>, %wd: tensor<16392x64xbf16>) -> tensor<8x16392xbf16> {
  %p = sgpu.twell_pack %h : tensor<8x64xbf16> -> !sgpu.twell<8x64xbf16, #sgpu.twell<tile = 32, compression = 4>>
  // expected-error @+1 {{sgpu.twell_ffn with 16392 output features: the GPU consumer keeps its f32 output row in registers, at most 16384 features}}
  %y = sgpu.twell_ffn %p, %wd : !sgpu.twell<8x64xbf16, #sgpu.twell<tile = 32, compression = 4>>, tensor<16392x64xbf16> -> tensor<8x16392xbf16>
  return %y : tensor<8x16392xbf16>
}

// -----

func.func @all_reduce_in_region(%x: tensor<8x64xf32>, %c: i1) -> tensor<8x64xf32> {
  %y = scf.if %c -> tensor<8x64xf32> {
    // expected-error @+1 {{'sgpu.all_reduce' inside a region has no GPU lowering: the runtime program is a straight line of host steps, so collectives must be in the function body}}
    %r = sgpu.all_reduce %x : tensor<8x64xf32>
    scf.yield %r : tensor<8x64xf32>
  } else {
    scf.yield %x : tensor<8x64xf32>
  }
  return %y : tensor<8x64xf32>
}

// -----

func.func @attention_head_too_large(%q: tensor<1x2x8x264xf32>) -> tensor<1x2x8x264xf32> {
  // expected-error @+1 {{'sgpu.attention' has no GPU lowering: the attention kernel keeps a head's columns in registers, at most 256 per head (got 264 and 264)}}
  %y = sgpu.attention %q, %q, %q {scale = 0.25 : f32} : tensor<1x2x8x264xf32>, tensor<1x2x8x264xf32>, tensor<1x2x8x264xf32> -> tensor<1x2x8x264xf32>
  return %y : tensor<1x2x8x264xf32>
}

// -----

func.func @attention_seq_major_generated(%q: tensor<1x8x2x16xf16>) -> tensor<1x8x2x16xf16> {
  // expected-error @+1 {{'sgpu.attention' has no GPU lowering: the generated attention kernels read B x H x S x D operands; a seq_major attention runs through cuDNN's fused attention (kernel = library, with the attention library allowed)}}
  %y = sgpu.attention %q, %q, %q {scale = 0.25 : f32, seq_major, sgpu.config = #sgpu.attention_config<kernel = tensor_cores>} : tensor<1x8x2x16xf16>, tensor<1x8x2x16xf16>, tensor<1x8x2x16xf16> -> tensor<1x8x2x16xf16>
  return %y : tensor<1x8x2x16xf16>
}

// -----

// auto gives a seq_major attention to the library, which takes no f32.
func.func @attention_seq_major_f32(%q: tensor<1x8x2x16xf32>) -> tensor<1x8x2x16xf32> {
  // expected-error @+1 {{'sgpu.attention' has no GPU lowering: a seq_major attention runs only through cuDNN's fused attention, which does not take it: cuDNN's fused attention takes f16 or bf16 only}}
  %y = sgpu.attention %q, %q, %q {scale = 0.25 : f32, seq_major} : tensor<1x8x2x16xf32>, tensor<1x8x2x16xf32>, tensor<1x8x2x16xf32> -> tensor<1x8x2x16xf32>
  return %y : tensor<1x8x2x16xf32>
}

// -----

func.func @attention_tensor_cores_f32(%q: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  // expected-error @+1 {{'sgpu.attention' has no GPU lowering: the tensor-core kernel does not take it: tensor cores take f16 or bf16, not 32-bit floats}}
  %y = sgpu.attention %q, %q, %q {scale = 0.25 : f32, sgpu.config = #sgpu.attention_config<kernel = tensor_cores>} : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32> -> tensor<1x2x8x16xf32>
  return %y : tensor<1x2x8x16xf32>
}

// -----

func.func @constant_not_24(%x: tensor<8x32xf16>) -> tensor<8x16xf16> {
  // expected-error @+1 {{weight is not 2:4 sparse: row 0, group 0 (columns 0..3) has 4 nonzeros}}
  %w = arith.constant dense<1.0> : tensor<16x32xf16>
  // expected-note @+1 {{compressed for this use}}
  %c = sgpu.compress %w : tensor<16x32xf16> -> !sgpu.compressed<16x32xf16, #sgpu.nm<2:4>>
  %y = sgpu.spmm %x, %c : tensor<8x32xf16>, !sgpu.compressed<16x32xf16, #sgpu.nm<2:4>> -> tensor<8x16xf16>
  return %y : tensor<8x16xf16>
}

// -----

// A reduction too long for one thread per result element.
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @reduction_too_long(%x: tensor<2x16777217xf32>, %init: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'linalg.generic' has no GPU lowering: it reduces 16777217 elements per result, more than the 16777216 a thread-per-result kernel takes}}
  %s = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<2x16777217xf32>) outs(%init : tensor<2xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %a, %o : f32
    linalg.yield %r : f32
  } -> tensor<2xf32>
  return %s : tensor<2xf32>
}

// -----

// Bodies that use the loop indices (iota, position-dependent masks).
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func @index(%x: tensor<1x16x64xf32>) -> tensor<1x16x64xf32> {
  %e = tensor.empty() : tensor<1x16x64xf32>
  // expected-error @+1 {{'linalg.generic' has no GPU lowering: its body uses linalg.index (the loop indices), which is not supported}}
  %r = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%x : tensor<1x16x64xf32>) outs(%e : tensor<1x16x64xf32>) {
  ^bb0(%a: f32, %o: f32):
    %j = linalg.index 2 : index
    %i = arith.index_cast %j : index to i32
    %f = arith.sitofp %i : i32 to f32
    %s = arith.addf %a, %f : f32
    linalg.yield %s : f32
  } -> tensor<1x16x64xf32>
  return %r : tensor<1x16x64xf32>
}

// -----

// Dynamic shapes.
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @dynamic(%x: tensor<?x8xf32>, %e: tensor<?x8xf32>) -> tensor<?x8xf32> {
  // expected-error @+1 {{'linalg.generic' has no GPU lowering: operand #0 has a dynamic shape (tensor<?x8xf32>)}}
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<?x8xf32>) outs(%e : tensor<?x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.negf %a : f32
    linalg.yield %s : f32
  } -> tensor<?x8xf32>
  return %r : tensor<?x8xf32>
}

// -----

// Several results.
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @two_results(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %e = tensor.empty() : tensor<4x8xf32>
  // expected-error @+1 {{'linalg.generic' has no GPU lowering: it has 2 results; an element-wise kernel writes one}}
  %r:2 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<4x8xf32>) outs(%e, %e : tensor<4x8xf32>, tensor<4x8xf32>) {
  ^bb0(%a: f32, %o: f32, %p: f32):
    %n = arith.negf %a : f32
    linalg.yield %a, %n : f32, f32
  } -> (tensor<4x8xf32>, tensor<4x8xf32>)
  return %r#0, %r#1 : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// A body reading memory (the importers' embedding gather).
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @embedding(%ids: tensor<4x8xi32>, %table: tensor<128xf32>) -> tensor<4x8xf32> {
  %e = tensor.empty() : tensor<4x8xf32>
  // expected-error @+1 {{'linalg.generic' has no GPU lowering: its body has 'tensor.extract', which is not an arith or math op}}
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%ids : tensor<4x8xi32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%i: i32, %o: f32):
    %k = arith.index_cast %i : i32 to index
    %v = tensor.extract %table[%k] : tensor<128xf32>
    linalg.yield %v : f32
  } -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}

// -----

// A body using a value computed in the host function.
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @captured(%x: tensor<4x8xf32>, %s: tensor<f32>) -> tensor<4x8xf32> {
  %scale = tensor.extract %s[] : tensor<f32>
  %e = tensor.empty() : tensor<4x8xf32>
  // expected-error @+1 {{'linalg.generic' has no GPU lowering: its body uses a value defined outside it that is not a constant}}
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.mulf %a, %scale : f32
    linalg.yield %m : f32
  } -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}

// -----

// A fill of a value computed in the host function.
func.func @fill_scalar(%s: tensor<f32>) -> tensor<4x8xf32> {
  %v = tensor.extract %s[] : tensor<f32>
  %e = tensor.empty() : tensor<4x8xf32>
  // expected-error @+1 {{'linalg.fill' has no GPU lowering: operand #0 is a scalar that is not a constant}}
  %f = linalg.fill ins(%v : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  return %f : tensor<4x8xf32>
}

// -----

// A map that is not a projected permutation (a diagonal read).
#diag = affine_map<(d0, d1) -> (d1, d1)>
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @diagonal(%x: tensor<8x8xf32>) -> tensor<4x8xf32> {
  %e = tensor.empty() : tensor<4x8xf32>
  // expected-error @+1 {{'linalg.generic' has no GPU lowering: the indexing map (d0, d1) -> (d1, d1) of operand #0 is not a projected permutation (only broadcasts and transposes are read element-wise)}}
  %r = linalg.generic {indexing_maps = [#diag, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<8x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  } -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}

// -----

// A result map that drops a parallel loop.
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @projected_result(%x: tensor<4x8xf32>, %e: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'linalg.generic' has no GPU lowering: the result's indexing map (d0, d1) -> (d0) is not a permutation}}
  %r = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<4x8xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  } -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

// Index elements inside the function (its arguments and results have a
// size in memory; buffer-limits.mlir covers index at the boundary).
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @index_elements(%x: tensor<4x8xi64>) -> tensor<4x8xi64> {
  %e = tensor.empty() : tensor<4x8xindex>
  // expected-error @+1 {{'linalg.generic' has no GPU lowering: operand #1 has index elements, which have no fixed size in memory}}
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<4x8xi64>) outs(%e : tensor<4x8xindex>) {
  ^bb0(%a: i64, %o: index):
    %i = arith.index_cast %a : i64 to index
    linalg.yield %i : index
  } -> tensor<4x8xindex>
  %e2 = tensor.empty() : tensor<4x8xi64>
  // expected-error @+1 {{'linalg.generic' has no GPU lowering: operand #0 has index elements, which have no fixed size in memory}}
  %r2 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%r : tensor<4x8xindex>) outs(%e2 : tensor<4x8xi64>) {
  ^bb0(%a: index, %o: i64):
    %i = arith.index_cast %a : index to i64
    linalg.yield %i : i64
  } -> tensor<4x8xi64>
  return %r2 : tensor<4x8xi64>
}

// -----

func.func @attention_lanes_per_key_too_few(%q: tensor<1x4x1x64xbf16>, %kc: tensor<1x2x32x64xbf16>, %p: tensor<1x1xi32>) -> tensor<1x4x1x64xbf16> {
  // expected-error @+1 {{'sgpu.attention' has no GPU lowering: lanes_per_key, splits and unroll configure the decode kernels, which do not take it: head sizes must be equal and split over a power of two of lanes (lanes_per_key, at most 32) with at most 16 bytes each (got 64 and 64, lanes_per_key 4)}}
  %y = sgpu.attention %q, %kc, %kc positions(%p : tensor<1x1xi32>) {causal, scale = 0.125 : f32, sgpu.config = #sgpu.attention_config<lanes_per_key = 4>} : tensor<1x4x1x64xbf16>, tensor<1x2x32x64xbf16>, tensor<1x2x32x64xbf16> -> tensor<1x4x1x64xbf16>
  return %y : tensor<1x4x1x64xbf16>
}

// -----

// A call: the runtime program is one host function.
func.func private @helper(%x: tensor<64xf32>) -> tensor<64xf32>
func.func @calls(%x: tensor<64xf32>) -> tensor<64xf32> {
  // expected-error @+1 {{calls are not supported: the runtime program is one host function; inline @helper (the inline pass) before compiling}}
  %y = func.call @helper(%x) : (tensor<64xf32>) -> tensor<64xf32>
  return %y : tensor<64xf32>
}

// -----

// The decode kernel's choices on an op that kernel does not run (no KV
// cache) are an error, not ignored.
func.func @attention_splits_not_decode(%q: tensor<1x2x8x16xf16>) -> tensor<1x2x8x16xf16> {
  // expected-error @+1 {{'sgpu.attention' has no GPU lowering: lanes_per_key, splits and unroll configure the decode kernels, which do not take it: no positions (not attention over a KV cache)}}
  %y = sgpu.attention %q, %q, %q {scale = 0.25 : f32, sgpu.config = #sgpu.attention_config<splits = 4>} : tensor<1x2x8x16xf16>, tensor<1x2x8x16xf16>, tensor<1x2x8x16xf16> -> tensor<1x2x8x16xf16>
  return %y : tensor<1x2x8x16xf16>
}

// -----

func.func @attention_decode_not_decode(%q: tensor<1x2x8x16xf16>) -> tensor<1x2x8x16xf16> {
  // expected-error @+1 {{'sgpu.attention' has no GPU lowering: the decode kernel does not take it: no positions (not attention over a KV cache)}}
  %y = sgpu.attention %q, %q, %q {scale = 0.25 : f32, sgpu.config = #sgpu.attention_config<kernel = decode>} : tensor<1x2x8x16xf16>, tensor<1x2x8x16xf16>, tensor<1x2x8x16xf16> -> tensor<1x2x8x16xf16>
  return %y : tensor<1x2x8x16xf16>
}

// -----

// The tensor-core decode kernel, asked for where it cannot run: f32, a head
// size other than 64 or 128, more than 8 query heads per key/value head.
func.func @attention_decode_mma_f32(%q: tensor<1x4x1x64xf32>, %kc: tensor<1x2x32x64xf32>, %p: tensor<1x1xi32>) -> tensor<1x4x1x64xf32> {
  // expected-error @+1 {{'sgpu.attention' has no GPU lowering: the tensor-core decode kernel does not take it: tensor cores take f16 or bf16 operands here}}
  %y = sgpu.attention %q, %kc, %kc positions(%p : tensor<1x1xi32>) {causal, scale = 0.125 : f32, sgpu.config = #sgpu.attention_config<kernel = decode_tensor_cores>} : tensor<1x4x1x64xf32>, tensor<1x2x32x64xf32>, tensor<1x2x32x64xf32> -> tensor<1x4x1x64xf32>
  return %y : tensor<1x4x1x64xf32>
}

// -----

func.func @attention_decode_mma_d32(%q: tensor<1x4x1x32xbf16>, %kc: tensor<1x2x32x32xbf16>, %p: tensor<1x1xi32>) -> tensor<1x4x1x32xbf16> {
  // expected-error @+1 {{'sgpu.attention' has no GPU lowering: the tensor-core decode kernel does not take it: the head size must be 64 or 128 (got 32)}}
  %y = sgpu.attention %q, %kc, %kc positions(%p : tensor<1x1xi32>) {causal, scale = 0.125 : f32, sgpu.config = #sgpu.attention_config<kernel = decode_tensor_cores, splits = 2>} : tensor<1x4x1x32xbf16>, tensor<1x2x32x32xbf16>, tensor<1x2x32x32xbf16> -> tensor<1x4x1x32xbf16>
  return %y : tensor<1x4x1x32xbf16>
}

// -----

func.func @attention_decode_mma_group16(%q: tensor<1x16x1x64xbf16>, %kc: tensor<1x1x32x64xbf16>, %p: tensor<1x1xi32>) -> tensor<1x16x1x64xbf16> {
  // expected-error @+1 {{'sgpu.attention' has no GPU lowering: the tensor-core decode kernel does not take it: 16 query heads per key/value head exceed the 8 rows a tile gives them}}
  %y = sgpu.attention %q, %kc, %kc positions(%p : tensor<1x1xi32>) {causal, scale = 0.125 : f32, sgpu.config = #sgpu.attention_config<kernel = decode_tensor_cores>} : tensor<1x16x1x64xbf16>, tensor<1x1x32x64xbf16>, tensor<1x1x32x64xbf16> -> tensor<1x16x1x64xbf16>
  return %y : tensor<1x16x1x64xbf16>
}
