// The reference semantics of sgpu.cache_update with rope tables, run on the
// CPU: two new keys roped and written at positions 1 and 3 of a cache, once
// as a RoPE only the cache write reads (which sgpu-fuse-rope-cache-write
// turns into `cache_update ... rope(...)`) and once as a RoPE that is also
// returned (which it leaves alone). Both caches print the same f16 values.
// RUN: sparse-opt %s --sgpu-fuse-rope-cache-write | FileCheck %s --check-prefix=FUSED
// RUN: sparse-opt %s --sgpu-fuse-rope-cache-write --sgpu-reference | \
// RUN:   mlir-runner -e main -entry-point-result=void \
// RUN:     -shared-libs=%mlir_runner_utils,%mlir_c_runner_utils | FileCheck %s

// FUSED-LABEL: func.func @write_fused
// FUSED-NOT: sgpu.rope
// FUSED: sgpu.cache_update %arg3, %arg0, %arg1 rope(%arg2, %arg4 : tensor<1x1x2x4xf16>, tensor<1x1x2x4xf16>)
// FUSED-LABEL: func.func @write_unfused
// FUSED: sgpu.rope
// FUSED: sgpu.cache_update %arg3, %{{.*}}, %arg1 :

// Rows 1 and 3 hold the rotated keys, rows 0 and 2 stay zero:
// y = x cos + rotate_half(x) sin, rotate_half([a, b, c, d]) = [-c, -d, a, b].
// CHECK: sizes = [1, 1, 4, 4]
// CHECK-NEXT: [0, 0, 0, 0],
// CHECK-NEXT: [1, 2, 3, 4],
// CHECK-NEXT: [0, 0, 0, 0],
// CHECK-NEXT: [-0.25, 1.5, 3.25, 3.5]
// CHECK: sizes = [1, 1, 4, 4]
// CHECK-NEXT: [0, 0, 0, 0],
// CHECK-NEXT: [1, 2, 3, 4],
// CHECK-NEXT: [0, 0, 0, 0],
// CHECK-NEXT: [-0.25, 1.5, 3.25, 3.5]

func.func private @printMemrefF32(memref<*xf32>)

#id4 = affine_map<(a, b, c, d) -> (a, b, c, d)>

func.func @print(%t: tensor<1x1x4x4xf16>) {
  %e = tensor.empty() : tensor<1x1x4x4xf32>
  %f = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%t : tensor<1x1x4x4xf16>) outs(%e : tensor<1x1x4x4xf32>) {
  ^bb0(%v: f16, %o: f32):
    %w = arith.extf %v : f16 to f32
    linalg.yield %w : f32
  } -> tensor<1x1x4x4xf32>
  %m = bufferization.to_buffer %f : tensor<1x1x4x4xf32> to memref<1x1x4x4xf32>
  %u = memref.cast %m : memref<1x1x4x4xf32> to memref<*xf32>
  call @printMemrefF32(%u) : (memref<*xf32>) -> ()
  return
}

func.func @write_fused(%k: tensor<1x1x2x4xf16>, %pos: tensor<1x2xi64>, %cos: tensor<1x1x2x4xf16>,
                       %kc: tensor<1x1x4x4xf16> {sgpu.param = "k", sgpu.state},
                       %sin: tensor<1x1x2x4xf16>) -> tensor<1x1x4x4xf16> {
  %r = sgpu.rope %k, %cos, %sin : tensor<1x1x2x4xf16>, tensor<1x1x2x4xf16>, tensor<1x1x2x4xf16> -> tensor<1x1x2x4xf16>
  %c = sgpu.cache_update %kc, %r, %pos : tensor<1x1x4x4xf16>, tensor<1x1x2x4xf16>, tensor<1x2xi64> -> tensor<1x1x4x4xf16>
  return %c : tensor<1x1x4x4xf16>
}

func.func @write_unfused(%k: tensor<1x1x2x4xf16>, %pos: tensor<1x2xi64>, %cos: tensor<1x1x2x4xf16>,
                         %kc: tensor<1x1x4x4xf16> {sgpu.param = "k", sgpu.state},
                         %sin: tensor<1x1x2x4xf16>) -> (tensor<1x1x4x4xf16>, tensor<1x1x2x4xf16>) {
  %r = sgpu.rope %k, %cos, %sin : tensor<1x1x2x4xf16>, tensor<1x1x2x4xf16>, tensor<1x1x2x4xf16> -> tensor<1x1x2x4xf16>
  %c = sgpu.cache_update %kc, %r, %pos : tensor<1x1x4x4xf16>, tensor<1x1x2x4xf16>, tensor<1x2xi64> -> tensor<1x1x4x4xf16>
  return %c, %r : tensor<1x1x4x4xf16>, tensor<1x1x2x4xf16>
}

func.func @main() {
  %zero = arith.constant dense<0.0> : tensor<1x1x4x4xf16>
  %k = arith.constant dense<[[[[1.0, 2.0, 3.0, 4.0], [1.5, 2.5, 0.5, 1.0]]]]> : tensor<1x1x2x4xf16>
  // Position 1: cos 1, sin 0 (no rotation); position 3: cos 0.5 (lanes 0
  // and 2) and 1 (lanes 1 and 3), sin 2 (lanes 0 and 2) and 1 (1 and 3).
  %cos = arith.constant dense<[[[[1.0, 1.0, 1.0, 1.0], [0.5, 1.0, 0.5, 1.0]]]]> : tensor<1x1x2x4xf16>
  %sin = arith.constant dense<[[[[0.0, 0.0, 0.0, 0.0], [2.0, 1.0, 2.0, 1.0]]]]> : tensor<1x1x2x4xf16>
  %pos = arith.constant dense<[[1, 3]]> : tensor<1x2xi64>
  %kc1 = bufferization.alloc_tensor() copy(%zero) : tensor<1x1x4x4xf16>
  %kc2 = bufferization.alloc_tensor() copy(%zero) : tensor<1x1x4x4xf16>
  %a = call @write_fused(%k, %pos, %cos, %kc1, %sin) : (tensor<1x1x2x4xf16>, tensor<1x2xi64>, tensor<1x1x2x4xf16>, tensor<1x1x4x4xf16>, tensor<1x1x2x4xf16>) -> tensor<1x1x4x4xf16>
  %b:2 = call @write_unfused(%k, %pos, %cos, %kc2, %sin) : (tensor<1x1x2x4xf16>, tensor<1x2xi64>, tensor<1x1x2x4xf16>, tensor<1x1x4x4xf16>, tensor<1x1x2x4xf16>) -> (tensor<1x1x4x4xf16>, tensor<1x1x2x4xf16>)
  call @print(%a) : (tensor<1x1x4x4xf16>) -> ()
  call @print(%b#0) : (tensor<1x1x4x4xf16>) -> ()
  return
}
