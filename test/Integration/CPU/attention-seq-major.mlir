// The reference semantics of a seq_major sgpu.attention, run on the CPU:
// an attention block as the importers write it (q, k, v transposed from
// the projections' B x S x H x D layout, RoPE on q and k, causal
// grouped-query attention, the result transposed back), once configured
// for the library, which sgpu-fold-attention-transposes rewrites into a
// seq_major attention on RoPE of the untransposed q and k, and once
// configured for a generated kernel, which it leaves as it is. Both print
// the same values.
// RUN: sparse-opt %s --sgpu-fold-attention-transposes | FileCheck %s --check-prefix=FOLD
// RUN: sparse-opt %s --sgpu-fold-attention-transposes --sgpu-reference | \
// RUN:   mlir-runner -e main -entry-point-result=void \
// RUN:     -shared-libs=%mlir_runner_utils,%mlir_c_runner_utils | FileCheck %s

// FOLD-LABEL: func.func @block_library
// FOLD-NOT: linalg.transpose
// FOLD: sgpu.attention {{.*}}seq_major{{.*}} : tensor<1x3x2x4xf16>, tensor<1x3x1x4xf16>, tensor<1x3x1x4xf16> -> tensor<1x3x2x4xf16>
// FOLD-NOT: linalg.transpose
// FOLD-LABEL: func.func @block_generated
// FOLD-COUNT-4: linalg.transpose

// Both forms, the same values:
// CHECK: sizes = [1, 3, 2, 4]
// CHECK-NEXT: {{.*}}0.759766,{{ *}}-0.810059,{{ *}}-0.72998,{{ *}}-0.569824{{.*}}
// CHECK-NEXT: {{.*}}0.759766,{{ *}}-0.810059,{{ *}}-0.72998,{{ *}}-0.569824{{.*}}
// CHECK-NEXT: {{.*}}0.818848,{{ *}}-0.574707,{{ *}}-0.390869,{{ *}}-0.51123{{.*}}
// CHECK-NEXT: {{.*}}0.829102,{{ *}}-0.533691,{{ *}}-0.331787,{{ *}}-0.500977{{.*}}
// CHECK-NEXT: {{.*}}0.556641,{{ *}}-0.299561,{{ *}}-0.144409,{{ *}}-0.222046{{.*}}
// CHECK-NEXT: {{.*}}0.627441,{{ *}}-0.508301,{{ *}}-0.389893,{{ *}}-0.356201{{.*}}
// CHECK: sizes = [1, 3, 2, 4]
// CHECK-NEXT: {{.*}}0.759766,{{ *}}-0.810059,{{ *}}-0.72998,{{ *}}-0.569824{{.*}}
// CHECK-NEXT: {{.*}}0.759766,{{ *}}-0.810059,{{ *}}-0.72998,{{ *}}-0.569824{{.*}}
// CHECK-NEXT: {{.*}}0.818848,{{ *}}-0.574707,{{ *}}-0.390869,{{ *}}-0.51123{{.*}}
// CHECK-NEXT: {{.*}}0.829102,{{ *}}-0.533691,{{ *}}-0.331787,{{ *}}-0.500977{{.*}}
// CHECK-NEXT: {{.*}}0.556641,{{ *}}-0.299561,{{ *}}-0.144409,{{ *}}-0.222046{{.*}}
// CHECK-NEXT: {{.*}}0.627441,{{ *}}-0.508301,{{ *}}-0.389893,{{ *}}-0.356201{{.*}}

func.func private @printMemrefF32(memref<*xf32>)

#id4 = affine_map<(a, b, c, d) -> (a, b, c, d)>

func.func @print(%t: tensor<1x3x2x4xf16>) {
  %e = tensor.empty() : tensor<1x3x2x4xf32>
  %f = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%t : tensor<1x3x2x4xf16>) outs(%e : tensor<1x3x2x4xf32>) {
  ^bb0(%v: f16, %o: f32):
    %w = arith.extf %v : f16 to f32
    linalg.yield %w : f32
  } -> tensor<1x3x2x4xf32>
  %m = bufferization.to_buffer %f : tensor<1x3x2x4xf32> to memref<1x3x2x4xf32>
  %u = memref.cast %m : memref<1x3x2x4xf32> to memref<*xf32>
  call @printMemrefF32(%u) : (memref<*xf32>) -> ()
  return
}

func.func @block_library(%q: tensor<1x3x2x4xf16>, %k: tensor<1x3x1x4xf16>, %v: tensor<1x3x1x4xf16>,
    %c: tensor<1x1x3x4xf16>, %s: tensor<1x1x3x4xf16>) -> tensor<1x3x2x4xf16> {
  %eq = tensor.empty() : tensor<1x2x3x4xf16>
  %tq = linalg.transpose ins(%q : tensor<1x3x2x4xf16>) outs(%eq : tensor<1x2x3x4xf16>) permutation = [0, 2, 1, 3]
  %ek = tensor.empty() : tensor<1x1x3x4xf16>
  %tk = linalg.transpose ins(%k : tensor<1x3x1x4xf16>) outs(%ek : tensor<1x1x3x4xf16>) permutation = [0, 2, 1, 3]
  %ev = tensor.empty() : tensor<1x1x3x4xf16>
  %tv = linalg.transpose ins(%v : tensor<1x3x1x4xf16>) outs(%ev : tensor<1x1x3x4xf16>) permutation = [0, 2, 1, 3]
  %rq = sgpu.rope %tq, %c, %s : tensor<1x2x3x4xf16>, tensor<1x1x3x4xf16>, tensor<1x1x3x4xf16> -> tensor<1x2x3x4xf16>
  %rk = sgpu.rope %tk, %c, %s : tensor<1x1x3x4xf16>, tensor<1x1x3x4xf16>, tensor<1x1x3x4xf16> -> tensor<1x1x3x4xf16>
  %o = sgpu.attention %rq, %rk, %tv {causal, scale = 0.5 : f32, sgpu.config = #sgpu.attention_config<kernel = library>}
      : tensor<1x2x3x4xf16>, tensor<1x1x3x4xf16>, tensor<1x1x3x4xf16> -> tensor<1x2x3x4xf16>
  %eo = tensor.empty() : tensor<1x3x2x4xf16>
  %r = linalg.transpose ins(%o : tensor<1x2x3x4xf16>) outs(%eo : tensor<1x3x2x4xf16>) permutation = [0, 2, 1, 3]
  return %r : tensor<1x3x2x4xf16>
}

func.func @block_generated(%q: tensor<1x3x2x4xf16>, %k: tensor<1x3x1x4xf16>, %v: tensor<1x3x1x4xf16>,
    %c: tensor<1x1x3x4xf16>, %s: tensor<1x1x3x4xf16>) -> tensor<1x3x2x4xf16> {
  %eq = tensor.empty() : tensor<1x2x3x4xf16>
  %tq = linalg.transpose ins(%q : tensor<1x3x2x4xf16>) outs(%eq : tensor<1x2x3x4xf16>) permutation = [0, 2, 1, 3]
  %ek = tensor.empty() : tensor<1x1x3x4xf16>
  %tk = linalg.transpose ins(%k : tensor<1x3x1x4xf16>) outs(%ek : tensor<1x1x3x4xf16>) permutation = [0, 2, 1, 3]
  %ev = tensor.empty() : tensor<1x1x3x4xf16>
  %tv = linalg.transpose ins(%v : tensor<1x3x1x4xf16>) outs(%ev : tensor<1x1x3x4xf16>) permutation = [0, 2, 1, 3]
  %rq = sgpu.rope %tq, %c, %s : tensor<1x2x3x4xf16>, tensor<1x1x3x4xf16>, tensor<1x1x3x4xf16> -> tensor<1x2x3x4xf16>
  %rk = sgpu.rope %tk, %c, %s : tensor<1x1x3x4xf16>, tensor<1x1x3x4xf16>, tensor<1x1x3x4xf16> -> tensor<1x1x3x4xf16>
  %o = sgpu.attention %rq, %rk, %tv {causal, scale = 0.5 : f32, sgpu.config = #sgpu.attention_config<kernel = cuda_cores>}
      : tensor<1x2x3x4xf16>, tensor<1x1x3x4xf16>, tensor<1x1x3x4xf16> -> tensor<1x2x3x4xf16>
  %eo = tensor.empty() : tensor<1x3x2x4xf16>
  %r = linalg.transpose ins(%o : tensor<1x2x3x4xf16>) outs(%eo : tensor<1x3x2x4xf16>) permutation = [0, 2, 1, 3]
  return %r : tensor<1x3x2x4xf16>
}

func.func @main() {
  %q = arith.constant dense<[[[[-0.52, 0.09, -0.26, 0.21], [0.25, -0.87, -0.97, 0.67]], [[-0.48, -0.53, 0.99, -0.06], [0.67, -0.05, 0.28, -0.70]], [[0.27, 0.74, 0.05, 0.48], [0.34, -0.87, 0.52, 0.18]]]]> : tensor<1x3x2x4xf16>
  %k = arith.constant dense<[[[[-0.40, -0.94, 0.73, -0.05]], [[0.44, 0.76, 0.43, 0.84]], [[-0.21, 0.60, -0.11, 0.87]]]]> : tensor<1x3x1x4xf16>
  %v = arith.constant dense<[[[[0.76, -0.81, -0.73, -0.57]], [[0.93, -0.13, 0.25, -0.40]], [[0.01, -0.23, -0.30, 0.17]]]]> : tensor<1x3x1x4xf16>
  %c = arith.constant dense<[[[[1.0000, 1.0000, 1.0000, 1.0000], [0.5403, 1.0000, 0.5403, 1.0000], [-0.4161, 0.9998, -0.4161, 0.9998]]]]> : tensor<1x1x3x4xf16>
  %s = arith.constant dense<[[[[0.0000, 0.0000, 0.0000, 0.0000], [0.8415, 0.0100, 0.8415, 0.0100], [0.9093, 0.0200, 0.9093, 0.0200]]]]> : tensor<1x1x3x4xf16>
  %a = call @block_library(%q, %k, %v, %c, %s) : (tensor<1x3x2x4xf16>, tensor<1x3x1x4xf16>, tensor<1x3x1x4xf16>, tensor<1x1x3x4xf16>, tensor<1x1x3x4xf16>) -> tensor<1x3x2x4xf16>
  %b = call @block_generated(%q, %k, %v, %c, %s) : (tensor<1x3x2x4xf16>, tensor<1x3x1x4xf16>, tensor<1x3x1x4xf16>, tensor<1x1x3x4xf16>, tensor<1x1x3x4xf16>) -> tensor<1x3x2x4xf16>
  call @print(%a) : (tensor<1x3x2x4xf16>) -> ()
  call @print(%b) : (tensor<1x3x2x4xf16>) -> ()
  return
}
