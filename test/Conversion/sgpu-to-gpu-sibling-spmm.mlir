// Sibling GEMMs fused by sgpu-fuse-sibling-spmm: the prepare stage
// compresses each weight argument into its rows of one compressed weight
// (one kernel, status word and check per argument, the second part's kernel
// writing from row 256 on); a split-K plan's reduction writes each column
// slice into a buffer of its own (TMA stores do too:
// Target/spmm-sliced-store-sm90a.mlir); any other plan stores the whole
// result and copies the slices out.
// RUN: sparse-opt %s -split-input-file -convert-sgpu-to-gpu | FileCheck %s
// The program of the last case (each case overwrites the output dir):
// RUN: rm -rf %t && mkdir -p %t && sparse-opt %s -split-input-file --sgpu-compile="output-dir=%t/a" -o /dev/null
// RUN: FileCheck %s --check-prefix=PROGRAM < %t/a/program.txt

// Too little K to split, and register stores: the whole result is
// stored, the slices copied.
// CHECK-LABEL: func.func @qk_small
// CHECK: gpu.launch_func @sgpu_kernels::@sgpu_spmm_0
// CHECK: gpu.launch_func @sgpu_kernels::@sgpu_slice_0
// CHECK: gpu.launch_func @sgpu_kernels::@sgpu_slice_1
func.func @qk_small(%x: tensor<8x64xbf16>, %wq: tensor<32x64xbf16, #sgpu.nm<2:4>>,
                    %wk: tensor<16x64xbf16, #sgpu.nm<2:4>>) -> (tensor<8x32xbf16>, tensor<8x16xbf16>) {
  %w = tensor.concat dim(0) %wq, %wk : (tensor<32x64xbf16, #sgpu.nm<2:4>>, tensor<16x64xbf16, #sgpu.nm<2:4>>) -> tensor<48x64xbf16, #sgpu.nm<2:4>>
  %c = sgpu.compress %w : tensor<48x64xbf16, #sgpu.nm<2:4>> -> !sgpu.compressed<48x64xbf16, #sgpu.nm<2:4>>
  %y = sgpu.spmm %x, %c : tensor<8x64xbf16>, !sgpu.compressed<48x64xbf16, #sgpu.nm<2:4>> -> tensor<8x48xbf16>
  %q = tensor.extract_slice %y[0, 0] [8, 32] [1, 1] : tensor<8x48xbf16> to tensor<8x32xbf16>
  %k = tensor.extract_slice %y[0, 32] [8, 16] [1, 1] : tensor<8x48xbf16> to tensor<8x16xbf16>
  return %q, %k : tensor<8x32xbf16>, tensor<8x16xbf16>
}

// -----

// CHECK-LABEL: func.func @qk_decode
// CHECK: %[[WQ:.*]] = bufferization.to_buffer %arg1
// CHECK: %[[WK:.*]] = bufferization.to_buffer %arg2
// CHECK: %[[V:.*]] = memref.alloc() : memref<384x1024xbf16>
// CHECK: %[[M:.*]] = memref.alloc() : memref<24576xi32>
// CHECK: %[[S0:.*]] = memref.alloc() : memref<1xi32>
// CHECK: gpu.launch_func @sgpu_kernels::@sgpu_prepare_0 {{.*}} args(%[[WQ]] : memref<256x2048xbf16>, %[[V]] : memref<384x1024xbf16>, %[[M]] : memref<24576xi32>, %[[S0]] : memref<1xi32>) {sgpu.stage = "prepare"}
// CHECK: sgpu.weight_check %[[S0]] for %[[WQ]]
// CHECK: %[[S1:.*]] = memref.alloc() : memref<1xi32>
// CHECK: gpu.launch_func @sgpu_kernels::@sgpu_prepare_1 {{.*}} args(%[[WK]] : memref<128x2048xbf16>, %[[V]] : memref<384x1024xbf16>, %[[M]] : memref<24576xi32>, %[[S1]] : memref<1xi32>) {sgpu.stage = "prepare"}
// CHECK: sgpu.weight_check %[[S1]] for %[[WK]]
// CHECK-NOT: tensor.concat
// CHECK: %[[Q:.*]] = memref.alloc() : memref<2x256xbf16>
// CHECK: %[[K:.*]] = memref.alloc() : memref<2x128xbf16>
// CHECK: %[[WS:.*]] = memref.alloc() : memref<4x2x384xf32>
// CHECK: gpu.launch_func @sgpu_kernels::@sgpu_spmm_0 {{.*}} args({{.*}}, %[[WS]] : memref<4x2x384xf32>)
// CHECK: gpu.launch_func @sgpu_kernels::@sgpu_spmm_0_reduce {{.*}} args(%[[WS]] : memref<4x2x384xf32>, %[[Q]] : memref<2x256xbf16>, %[[K]] : memref<2x128xbf16>)
// CHECK-NOT: gpu.launch_func
// CHECK: %[[QT:.*]] = bufferization.to_tensor %[[Q]]
// CHECK: %[[KT:.*]] = bufferization.to_tensor %[[K]]
// CHECK: return %[[QT]], %[[KT]]
// The second part is stored from row 256 (its 16-row metadata tile 16).
// CHECK: gpu.func @sgpu_prepare_1
// CHECK: arith.addi %{{.*}}, %c256
// The reduction: columns below 256 to q, the rest to k at column - 256.
// CHECK: gpu.func @sgpu_spmm_0_reduce(%{{.*}}: memref<4x2x384xf32>, %[[RQ:.*]]: memref<2x256xbf16>, %[[RK:.*]]: memref<2x128xbf16>)
// CHECK: scf.if
// CHECK: memref.store %{{.*}}, %[[RQ]]
// CHECK: } else {
// CHECK: arith.subi %{{.*}}, %c256
// CHECK: memref.store %{{.*}}, %[[RK]]

// PROGRAM: stage prepare
// PROGRAM-NEXT: launch sgpu_prepare_0 {{.*}} args b1 [[V:b[0-9]+]] [[M:b[0-9]+]] [[S0:b[0-9]+]]
// PROGRAM-NEXT: check [[S0]] param 0
// PROGRAM-NEXT: launch sgpu_prepare_1 {{.*}} args b2 [[V]] [[M]] [[S1:b[0-9]+]]
// PROGRAM-NEXT: check [[S1]] param 1
// PROGRAM-NEXT: stage run
// PROGRAM-NEXT: launch sgpu_spmm_0 grid
// PROGRAM-NEXT: launch sgpu_spmm_0_reduce {{.*}} args b{{[0-9]+}} [[OQ:b[0-9]+]] [[OK:b[0-9]+]]
// PROGRAM-NEXT: end
func.func @qk_decode(%x: tensor<2x2048xbf16>, %wq: tensor<256x2048xbf16, #sgpu.nm<2:4>>,
                     %wk: tensor<128x2048xbf16, #sgpu.nm<2:4>>) -> (tensor<2x256xbf16>, tensor<2x128xbf16>) {
  %w = tensor.concat dim(0) %wq, %wk : (tensor<256x2048xbf16, #sgpu.nm<2:4>>, tensor<128x2048xbf16, #sgpu.nm<2:4>>) -> tensor<384x2048xbf16, #sgpu.nm<2:4>>
  %c = sgpu.compress %w : tensor<384x2048xbf16, #sgpu.nm<2:4>> -> !sgpu.compressed<384x2048xbf16, #sgpu.nm<2:4>>
  %y = sgpu.spmm %x, %c : tensor<2x2048xbf16>, !sgpu.compressed<384x2048xbf16, #sgpu.nm<2:4>> -> tensor<2x384xbf16>
  %q = tensor.extract_slice %y[0, 0] [2, 256] [1, 1] : tensor<2x384xbf16> to tensor<2x256xbf16>
  %k = tensor.extract_slice %y[0, 256] [2, 128] [1, 1] : tensor<2x384xbf16> to tensor<2x128xbf16>
  return %q, %k : tensor<2x256xbf16>, tensor<2x128xbf16>
}
