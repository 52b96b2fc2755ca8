// A fused GEMM whose result is only cut into column slices (sibling
// projections, sgpu-fuse-sibling-spmm) and that does not split K stores each
// slice with TMA into a buffer of its own with sliced-tma-store=true: one
// tensor map per slice, and every 64-feature box picks its slice's map and
// column (the slices start at multiples of 64). No copy kernels follow.
// Without the option (the default until it is checked on a GPU) the whole
// result is stored and the slices are copied out of it.
// REQUIRES: ptxas
// RUN: rm -rf %t && sparse-opt %s --sgpu-compile="split-k=1 sliced-tma-store=true output-dir=%t" -o /dev/null
// RUN: FileCheck %s --check-prefix=PROGRAM < %t/program.txt
// RUN: FileCheck %s --check-prefix=PTX < %t/kernels.ptx
// RUN: %ptxas -arch=sm_90a %t/kernels.ptx -o %t/kernels.cubin
// RUN: rm -rf %t.off && sparse-opt %s --sgpu-compile="split-k=1 output-dir=%t.off" -o /dev/null
// RUN: FileCheck %s --check-prefix=COPY < %t.off/program.txt

// PROGRAM: stage run
// PROGRAM-NEXT: launch sgpu_spmm_0 grid {{.*}} tmap:b{{[0-9]+}}:i32:28x512:8x32:0 tmap:[[Q:b[0-9]+]]:bf16:256x256:64x64:128 tmap:[[K:b[0-9]+]]:bf16:256x128:64x64:128 tmap:[[V:b[0-9]+]]:bf16:256x64:64x64:128
// PROGRAM-NEXT: end

// COPY: stage run
// COPY-NEXT: launch sgpu_spmm_0 grid {{.*}} tmap:b{{[0-9]+}}:bf16:256x448:64x64:128
// COPY-NEXT: launch sgpu_slice_0
// COPY-NEXT: launch sgpu_slice_1
// COPY-NEXT: launch sgpu_slice_2
// COPY-NEXT: end

// The map and the column: features from 256 go to k at -256, from 384 to v
// at -384.
// PTX-LABEL: .entry sgpu_spmm_0(
// PTX: selp.b32 {{.*}}, -256, 0,
// PTX: selp.b64
// PTX: selp.b32 {{.*}}, -384,
// PTX: selp.b64
// PTX: cp.async.bulk.tensor.2d.global.shared::cta.bulk_group
// PTX-NOT: .entry
func.func @qkv(%x: tensor<256x1024xbf16>, %wq: tensor<256x1024xbf16, #sgpu.nm<2:4>>,
               %wk: tensor<128x1024xbf16, #sgpu.nm<2:4>>, %wv: tensor<64x1024xbf16, #sgpu.nm<2:4>>)
    -> (tensor<256x256xbf16>, tensor<256x128xbf16>, tensor<256x64xbf16>) {
  %w = tensor.concat dim(0) %wq, %wk, %wv : (tensor<256x1024xbf16, #sgpu.nm<2:4>>, tensor<128x1024xbf16, #sgpu.nm<2:4>>, tensor<64x1024xbf16, #sgpu.nm<2:4>>) -> tensor<448x1024xbf16, #sgpu.nm<2:4>>
  %c = sgpu.compress %w : tensor<448x1024xbf16, #sgpu.nm<2:4>> -> !sgpu.compressed<448x1024xbf16, #sgpu.nm<2:4>>
  %y = sgpu.spmm %x, %c : tensor<256x1024xbf16>, !sgpu.compressed<448x1024xbf16, #sgpu.nm<2:4>> -> tensor<256x448xbf16>
  %q = tensor.extract_slice %y[0, 0] [256, 256] [1, 1] : tensor<256x448xbf16> to tensor<256x256xbf16>
  %k = tensor.extract_slice %y[0, 256] [256, 128] [1, 1] : tensor<256x448xbf16> to tensor<256x128xbf16>
  %v = tensor.extract_slice %y[0, 384] [256, 64] [1, 1] : tensor<256x448xbf16> to tensor<256x64xbf16>
  return %q, %k, %v : tensor<256x256xbf16>, tensor<256x128xbf16>, tensor<256x64xbf16>
}
