// The reference semantics of sgpu.add_rms_norm, run on the CPU, against the
// add and sgpu.rms_norm it replaces: the sum is rounded to the element type
// (256 + 1 is 256 in bf16) and the norm reads the rounded sum, so both forms
// print the same values.
// RUN: sparse-opt %s --sgpu-reference | \
// RUN:   mlir-runner -e main -entry-point-result=void \
// RUN:     -shared-libs=%mlir_runner_utils,%mlir_c_runner_utils | FileCheck %s

func.func private @printMemrefF32(memref<*xf32>)

#id = affine_map<(i, j) -> (i, j)>

func.func @print(%t: tensor<2x4xbf16>) {
  %e = tensor.empty() : tensor<2x4xf32>
  %f = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%t : tensor<2x4xbf16>) outs(%e : tensor<2x4xf32>) {
  ^bb0(%v: bf16, %o: f32):
    %w = arith.extf %v : bf16 to f32
    linalg.yield %w : f32
  } -> tensor<2x4xf32>
  %m = bufferization.to_buffer %f : tensor<2x4xf32> to memref<2x4xf32>
  %u = memref.cast %m : memref<2x4xf32> to memref<*xf32>
  call @printMemrefF32(%u) : (memref<*xf32>) -> ()
  return
}

func.func @main() {
  %x = arith.constant dense<[[1.0, 2.0, 3.0, 4.0], [256.0, 0.0, 0.0, 0.0]]> : tensor<2x4xbf16>
  %r = arith.constant dense<[[0.5, 0.5, 0.5, 0.5], [1.0, 1.0, 1.0, 1.0]]> : tensor<2x4xbf16>
  %w = arith.constant dense<[1.0, 1.0, 2.0, 1.0]> : tensor<4xbf16>
  %s, %y = sgpu.add_rms_norm %x, %r, %w {epsilon = 0.0 : f32}
      : tensor<2x4xbf16>, tensor<2x4xbf16>, tensor<4xbf16> -> tensor<2x4xbf16>, tensor<2x4xbf16>
  // Row 0: s = x + 0.5, 1 / rms = 1 / sqrt(41 / 4); row 1: s = (256, 1, 1,
  // 1), 1 / rms = 1 / sqrt(65539 / 4).
  // CHECK: [1.5,   2.5,   3.5,   4.5],
  // CHECK-NEXT: [256,   1,   1,   1]
  call @print(%s) : (tensor<2x4xbf16>) -> ()
  // CHECK: [0.46875,   0.78125,   2.1875,   1.40625],
  // CHECK-NEXT: [2,   0.0078125,   0.015625,   0.0078125]
  call @print(%y) : (tensor<2x4xbf16>) -> ()

  // The unfused form prints the same.
  %e = tensor.empty() : tensor<2x4xbf16>
  %s2 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %r : tensor<2x4xbf16>, tensor<2x4xbf16>) outs(%e : tensor<2x4xbf16>) {
  ^bb0(%p: bf16, %q: bf16, %o: bf16):
    %v = arith.addf %p, %q : bf16
    linalg.yield %v : bf16
  } -> tensor<2x4xbf16>
  %y2 = sgpu.rms_norm %s2, %w {epsilon = 0.0 : f32} : tensor<2x4xbf16>, tensor<4xbf16> -> tensor<2x4xbf16>
  // CHECK: [1.5,   2.5,   3.5,   4.5],
  // CHECK-NEXT: [256,   1,   1,   1]
  call @print(%s2) : (tensor<2x4xbf16>) -> ()
  // CHECK: [0.46875,   0.78125,   2.1875,   1.40625],
  // CHECK-NEXT: [2,   0.0078125,   0.015625,   0.0078125]
  call @print(%y2) : (tensor<2x4xbf16>) -> ()
  return
}
