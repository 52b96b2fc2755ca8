// One compressed weight read by two spmms: compressed once (one prepare
// kernel, one prepare step of the program), both spmms read what it writes.
// RUN: sparse-opt %s --sgpu-slide-sparse="policy=sparse" -convert-sgpu-to-gpu | FileCheck %s
// RUN: rm -rf %t && sparse-opt %s --sgpu-compile="sparse-policy=sparse output-dir=%t" -o /dev/null
// RUN: FileCheck %s --check-prefix=PROGRAM < %t/program.txt

// PROGRAM-COUNT-1: launch sgpu_prepare_0
// PROGRAM-NOT: sgpu_prepare_1

// CHECK-LABEL: func.func @shared_compress
// CHECK: gpu.launch_func @sgpu_kernels::@sgpu_prepare_0
// CHECK-NOT: @sgpu_prepare_1
// CHECK: gpu.launch_func @sgpu_kernels::@sgpu_spmm_0
// CHECK: gpu.launch_func @sgpu_kernels::@sgpu_spmm_1
func.func @shared_compress(%x: tensor<7x64xf16>, %w: tensor<32x64xf16, #sgpu.nm<2:4>> {sgpu.param = "w"}) -> (tensor<7x32xf16>, tensor<7x32xf32>) {
  %c = sgpu.compress %w : tensor<32x64xf16, #sgpu.nm<2:4>> -> !sgpu.compressed<32x64xf16, #sgpu.nm<2:4>>
  %y = sgpu.spmm %x, %c : tensor<7x64xf16>, !sgpu.compressed<32x64xf16, #sgpu.nm<2:4>> -> tensor<7x32xf16>
  %z = sgpu.spmm %x, %c {activation = #sgpu.activation<relu>} : tensor<7x64xf16>, !sgpu.compressed<32x64xf16, #sgpu.nm<2:4>> -> tensor<7x32xf32>
  return %y, %z : tensor<7x32xf16>, tensor<7x32xf32>
}
