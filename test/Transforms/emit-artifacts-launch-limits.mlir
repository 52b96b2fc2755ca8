// A launch the runtime would refuse (a grid of 2^32 blocks for an RMSNorm
// over 2^32 rows) is an error of the compile, at the op, not a program
// the runtime rejects later.
// RUN: rm -rf %t && not sparse-opt %s --sgpu-compile="output-dir=%t" -o /dev/null 2>&1 | FileCheck %s
// CHECK: :[[@LINE+3]]:8: error: the kernel's grid 4294967296 x 1 x 1 is beyond CUDA's limits (x < 2^31, y and z <= 65535): the shape is too large for this kernel
// RUN: test ! -e %t/program.txt
func.func @rows(%x: tensor<4294967296x2xf16>, %w: tensor<2xf16>) -> tensor<4294967296x2xf16> {
  %y = sgpu.rms_norm %x, %w {epsilon = 1.0e-06 : f32} : tensor<4294967296x2xf16>, tensor<2xf16> -> tensor<4294967296x2xf16>
  return %y : tensor<4294967296x2xf16>
}
