// RUN: rm -rf %t && sparse-opt %s -sgpu-compile="output-dir=%t" -o /dev/null
// RUN: FileCheck %s < %t/program.txt

// The projections' B x S x H x D q, k and v, transposed for the attention
// and its result transposed back, as the importers write it: in
// sgpu-compile the transposes fold into the library call
// (sgpu-fold-attention-transposes), so the program is one `attention` line
// with layout=bshd that reads the inputs in place and writes the output,
// and no kernel.
// CHECK: sparseopt-program 4
// CHECK-NOT: module
// CHECK: buffer 0 input 0 2097152
// CHECK: buffer 1 input 1 524288
// CHECK: buffer 2 input 2 524288
// CHECK: buffer [[O:[0-9]+]] output 0 2097152
// CHECK: attention b=1 h=32 hkv=8 sq=256 sk=256 d=128 type=bf16 scale=0.0883883461 q=b0 k=b1 v=b2 o=b[[O]] mask=causal layout=bshd
// CHECK-NOT: launch
// CHECK: end
func.func @prefill(%q: tensor<1x256x32x128xbf16>, %k: tensor<1x256x8x128xbf16>, %v: tensor<1x256x8x128xbf16>) -> tensor<1x256x32x128xbf16> {
  %eq = tensor.empty() : tensor<1x32x256x128xbf16>
  %tq = linalg.transpose ins(%q : tensor<1x256x32x128xbf16>) outs(%eq : tensor<1x32x256x128xbf16>) permutation = [0, 2, 1, 3]
  %ek = tensor.empty() : tensor<1x8x256x128xbf16>
  %tk = linalg.transpose ins(%k : tensor<1x256x8x128xbf16>) outs(%ek : tensor<1x8x256x128xbf16>) permutation = [0, 2, 1, 3]
  %tv = linalg.transpose ins(%v : tensor<1x256x8x128xbf16>) outs(%ek : tensor<1x8x256x128xbf16>) permutation = [0, 2, 1, 3]
  %o = sgpu.attention %tq, %tk, %tv {causal, scale = 8.838834764e-02 : f32} : tensor<1x32x256x128xbf16>, tensor<1x8x256x128xbf16>, tensor<1x8x256x128xbf16> -> tensor<1x32x256x128xbf16>
  %eo = tensor.empty() : tensor<1x256x32x128xbf16>
  %r = linalg.transpose ins(%o : tensor<1x32x256x128xbf16>) outs(%eo : tensor<1x256x32x128xbf16>) permutation = [0, 2, 1, 3]
  return %r : tensor<1x256x32x128xbf16>
}
