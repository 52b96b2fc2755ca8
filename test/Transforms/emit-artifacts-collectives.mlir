// RUN: rm -rf %t && sparse-opt %s -sgpu-async-collectives -sgpu-compile="output-dir=%t" -o /dev/null
// RUN: FileCheck %s < %t/program.txt

// Two tensor-parallel blocks, their all-reduces made asynchronous: each
// becomes an `allreduce` line where it starts and a `wait` line before the
// first use of its result. A program of library GEMMs and collectives needs
// no module. Slots are reused once waited for.
// CHECK: sparseopt-program 4
// CHECK-NOT: module
// CHECK: buffer 0 input 0 8192
// CHECK: gemm m=16 n=512 k=256 in=f16 out=f16 x=b0 w=b1 y=b[[H:[0-9]+]] act=relu
// CHECK: gemm m=16 n=256 k=512 in=f16 out=f16 x=b[[H]] w=b2 y=b[[P:[0-9]+]]
// CHECK: buffer [[R:[0-9]+]] temp 8192
// CHECK-NEXT: allreduce slot=0 send=b[[P]] recv=b[[R]] count=4096 type=f16 op=sum
// CHECK-NEXT: wait slot=0
// CHECK: gemm m=16 n=512 k=256 in=f16 out=f16 x=b[[R]]
// CHECK: gemm m=16 n=256 k=512
// CHECK: buffer [[O:[0-9]+]] output 0 8192
// CHECK-NEXT: allreduce slot=0 send=b{{[0-9]+}} recv=b[[O]] count=4096 type=f16 op=sum
// CHECK-NEXT: wait slot=0
func.func @two_blocks(%x: tensor<16x256xf16>, %w1: tensor<512x256xf16>, %w2: tensor<256x512xf16>) -> tensor<16x256xf16> {
  %h = sgpu.matmul %x, %w1 {activation = #sgpu.activation<relu>} : tensor<16x256xf16>, tensor<512x256xf16> -> tensor<16x512xf16>
  %p = sgpu.matmul %h, %w2 : tensor<16x512xf16>, tensor<256x512xf16> -> tensor<16x256xf16>
  %r = sgpu.all_reduce %p : tensor<16x256xf16>
  %h2 = sgpu.matmul %r, %w1 {activation = #sgpu.activation<relu>} : tensor<16x256xf16>, tensor<512x256xf16> -> tensor<16x512xf16>
  %p2 = sgpu.matmul %h2, %w2 : tensor<16x512xf16>, tensor<256x512xf16> -> tensor<16x256xf16>
  %r2 = sgpu.all_reduce %p2 : tensor<16x256xf16>
  return %r2 : tensor<16x256xf16>
}

