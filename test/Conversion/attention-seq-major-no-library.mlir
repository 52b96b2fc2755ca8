// A seq_major attention (B x S x H x D operands) runs only through cuDNN's
// fused attention: where attention-library=false keeps every attention on
// the generated kernels, it is an error at the op, not a kernel that reads
// the operands in the wrong layout.
// RUN: sparse-opt %s -split-input-file -convert-sgpu-to-gpu="attention-library=false" -verify-diagnostics
// RUN: sparse-opt %s -split-input-file -sgpu-select-kernels="attention-library=false" -convert-sgpu-to-gpu="attention-library=false" -verify-diagnostics

func.func @seq_major(%q: tensor<1x16x4x64xbf16>) -> tensor<1x16x4x64xbf16> {
  // expected-error @+1 {{'sgpu.attention' has no GPU lowering: }}
  %y = sgpu.attention %q, %q, %q {causal, scale = 0.125 : f32, seq_major} : tensor<1x16x4x64xbf16>, tensor<1x16x4x64xbf16>, tensor<1x16x4x64xbf16> -> tensor<1x16x4x64xbf16>
  return %y : tensor<1x16x4x64xbf16>
}

// -----

// With the library allowed, what cuDNN cannot take (causal with fewer
// queries than keys) is an error too, with cuDNN's reason.
func.func @seq_major_offset_causal(%q: tensor<1x8x4x64xbf16>, %k: tensor<1x16x4x64xbf16>) -> tensor<1x8x4x64xbf16> {
  // expected-error @+1 {{a seq_major attention runs only through cuDNN's fused attention, which does not take it: cuDNN's causal mask is aligned to the first key: it needs as many queries as keys (got 8 and 16)}}
  %y = sgpu.attention %q, %k, %k {causal, scale = 0.125 : f32, seq_major, sgpu.config = #sgpu.attention_config<kernel = library>} : tensor<1x8x4x64xbf16>, tensor<1x16x4x64xbf16>, tensor<1x16x4x64xbf16> -> tensor<1x8x4x64xbf16>
  return %y : tensor<1x8x4x64xbf16>
}
