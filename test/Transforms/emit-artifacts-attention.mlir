// RUN: rm -rf %t && sparse-opt %s -sgpu-compile="output-dir=%t" -o /dev/null
// RUN: FileCheck %s < %t/program.txt

// A prefill attention that cuDNN's fused attention runs: an `attention`
// line of the runtime program with every extent, the element type, the
// scale (9 significant digits: the same f32 read back) and the causal mask,
// writing the program's output buffer directly; no kernel is launched, so
// the program has no module.
// CHECK: sparseopt-program 4
// CHECK-NOT: module
// CHECK: buffer 0 input 0 2097152
// CHECK: buffer 1 input 1 524288
// CHECK: buffer 2 input 2 524288
// CHECK: buffer [[O:[0-9]+]] output 0 2097152
// CHECK: attention b=1 h=32 hkv=8 sq=256 sk=256 d=128 type=bf16 scale=0.0883883461 q=b0 k=b1 v=b2 o=b[[O]] mask=causal
// CHECK-NOT: launch
// CHECK: end
func.func @prefill(%q: tensor<1x32x256x128xbf16>, %k: tensor<1x8x256x128xbf16>, %v: tensor<1x8x256x128xbf16>) -> tensor<1x32x256x128xbf16> {
  %o = sgpu.attention %q, %k, %v {causal, scale = 8.838834764e-02 : f32} : tensor<1x32x256x128xbf16>, tensor<1x8x256x128xbf16>, tensor<1x8x256x128xbf16> -> tensor<1x32x256x128xbf16>
  return %o : tensor<1x32x256x128xbf16>
}
