// RUN: sparse-opt %s -split-input-file -sgpu-fuse-rope-cache-write | FileCheck %s

// A decode step's keys: the RoPE only the cache write reads goes into it.
// CHECK-LABEL: func.func @decode_keys
// CHECK-NOT: sgpu.rope
// CHECK: %[[C:.*]] = sgpu.cache_update %arg3, %arg0, %arg1 rope(%arg2, %arg4 : tensor<1x1x1x16xbf16>, tensor<1x1x1x16xbf16>) : tensor<4x2x64x16xbf16>, tensor<4x2x1x16xbf16>, tensor<4x1xi32> -> tensor<4x2x64x16xbf16>
// CHECK: return %[[C]]
func.func @decode_keys(%k: tensor<4x2x1x16xbf16>, %pos: tensor<4x1xi32>, %cos: tensor<1x1x1x16xbf16>,
    %kc: tensor<4x2x64x16xbf16> {sgpu.param = "k", sgpu.state}, %sin: tensor<1x1x1x16xbf16>) -> tensor<4x2x64x16xbf16> {
  %r = sgpu.rope %k, %cos, %sin : tensor<4x2x1x16xbf16>, tensor<1x1x1x16xbf16>, tensor<1x1x1x16xbf16> -> tensor<4x2x1x16xbf16>
  %c = sgpu.cache_update %kc, %r, %pos : tensor<4x2x64x16xbf16>, tensor<4x2x1x16xbf16>, tensor<4x1xi32> -> tensor<4x2x64x16xbf16>
  return %c : tensor<4x2x64x16xbf16>
}

// -----

// A prefill attends over its roped keys too: the rope stays, the write
// copies its result.
// CHECK-LABEL: func.func @prefill_keys
// CHECK: %[[R:.*]] = sgpu.rope
// CHECK: sgpu.cache_update %arg3, %[[R]], %arg1 :
// CHECK: sgpu.attention %{{.*}}, %[[R]]
func.func @prefill_keys(%k: tensor<1x2x8x16xf16>, %pos: tensor<8xi32>, %t: tensor<1x1x8x16xf16>,
    %kc: tensor<4x2x64x16xf16> {sgpu.param = "k", sgpu.state}) -> (tensor<4x2x64x16xf16>, tensor<1x2x8x16xf16>) {
  %r = sgpu.rope %k, %t, %t : tensor<1x2x8x16xf16>, tensor<1x1x8x16xf16>, tensor<1x1x8x16xf16> -> tensor<1x2x8x16xf16>
  %c = sgpu.cache_update %kc, %r, %pos : tensor<4x2x64x16xf16>, tensor<1x2x8x16xf16>, tensor<8xi32> -> tensor<4x2x64x16xf16>
  %o = sgpu.attention %k, %r, %k {causal, scale = 0.25 : f32} : tensor<1x2x8x16xf16>, tensor<1x2x8x16xf16>, tensor<1x2x8x16xf16> -> tensor<1x2x8x16xf16>
  return %c, %o : tensor<4x2x64x16xf16>, tensor<1x2x8x16xf16>
}
