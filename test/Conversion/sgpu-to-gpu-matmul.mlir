// sgpu.matmul is no kernel: convert-sgpu-to-gpu makes it a library call on
// buffers (sgpu.gemm_call), which the runtime program runs with cuBLASLt.
// RUN: sparse-opt %s -convert-sgpu-to-gpu | FileCheck %s
// RUN: rm -rf %t && sparse-opt %s --sgpu-compile="output-dir=%t" -o /dev/null
// RUN: FileCheck %s --check-prefix=PROGRAM < %t/program.txt
// RUN: FileCheck %s --check-prefix=PTX --allow-empty < %t/kernels.ptx

// CHECK-LABEL: func @linear_relu
// CHECK-SAME: (%[[X:.*]]: tensor<16x64xbf16>, %[[W:.*]]: tensor<32x64xbf16>, %[[B:.*]]: tensor<32xbf16>)
// CHECK-DAG: %[[XB:.*]] = bufferization.to_buffer %[[X]] read_only : tensor<16x64xbf16> to memref<16x64xbf16>
// CHECK-DAG: %[[WB:.*]] = bufferization.to_buffer %[[W]] read_only : tensor<32x64xbf16> to memref<32x64xbf16>
// CHECK-DAG: %[[BB:.*]] = bufferization.to_buffer %[[B]] read_only : tensor<32xbf16> to memref<32xbf16>
// CHECK: %[[Y:.*]] = memref.alloc() : memref<16x32xbf16>
// CHECK: sgpu.gemm_call %[[XB]], %[[WB]] bias(%[[BB]] : memref<32xbf16>) into %[[Y]] {activation = #sgpu.activation<relu>} : memref<16x64xbf16>, memref<32x64xbf16>, memref<16x32xbf16>
// CHECK: %[[T:.*]] = bufferization.to_tensor %[[Y]] restrict writable
// CHECK: return %[[T]]
// CHECK-NOT: gpu.module

// The whole pipeline: the dense Linear + ReLU of an importer becomes one
// `gemm` line (bias and ReLU in its epilogue); no kernels, so no module.
// PROGRAM: sparseopt-program 4
// PROGRAM-NEXT: # host function @linear_relu
// PROGRAM-NEXT: buffer 0 input 0 2048
// PROGRAM-NEXT: buffer 1 input 1 4096
// PROGRAM-NEXT: buffer 2 input 2 64
// PROGRAM-NEXT: buffer 3 output 0 1024
// PROGRAM-NEXT: gemm m=16 n=32 k=64 in=bf16 out=bf16 x=b0 w=b1 y=b3 bias=b2:bf16 act=relu
// PROGRAM-NOT: launch
// PTX-NOT: .entry
func.func @linear_relu(%x: tensor<16x64xbf16>, %w: tensor<32x64xbf16>, %b: tensor<32xbf16>) -> tensor<16x32xbf16> {
  %y = sgpu.matmul %x, %w bias(%b : tensor<32xbf16>) {activation = #sgpu.activation<relu>}
         : tensor<16x64xbf16>, tensor<32x64xbf16> -> tensor<16x32xbf16>
  return %y : tensor<16x32xbf16>
}
