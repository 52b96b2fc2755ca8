// RUN: sparse-opt %s -split-input-file -sgpu-fold-attention-transposes | FileCheck %s

// The importers' attention block, given to the library: the transposes of
// q, k, v and of the result go, RoPE runs on the untransposed q and k with
// the tables reshaped to 1 x S x 1 x D, and the attention is seq_major (its
// configuration and attributes kept).
// CHECK-LABEL: func.func @block
// CHECK-SAME: (%[[Q:.*]]: tensor<1x16x4x8xf16>, %[[K:.*]]: tensor<1x16x2x8xf16>, %[[V:.*]]: tensor<1x16x2x8xf16>, %[[C:.*]]: tensor<1x1x16x8xf16>, %[[S:.*]]: tensor<1x1x16x8xf16>)
// CHECK-NOT: linalg.transpose
// CHECK-DAG: %[[CC:.*]] = tensor.collapse_shape %[[C]] {{\[\[}}0], [1, 2], [3]] : tensor<1x1x16x8xf16> into tensor<1x16x8xf16>
// CHECK-DAG: %[[C2:.*]] = tensor.expand_shape %[[CC]] {{\[\[}}0], [1, 2], [3]] output_shape [1, 16, 1, 8]
// CHECK: %[[RQ:.*]] = sgpu.rope %[[Q]], %[[C2]], %{{.*}} {sgpu.config = #sgpu.launch_config<threads = 128>} : tensor<1x16x4x8xf16>, tensor<1x16x1x8xf16>, tensor<1x16x1x8xf16> -> tensor<1x16x4x8xf16>
// CHECK: %[[RK:.*]] = sgpu.rope %[[K]], {{.*}} -> tensor<1x16x2x8xf16>
// CHECK: %[[O:.*]] = sgpu.attention %[[RQ]], %[[RK]], %[[V]] {causal, scale = 3.500000e-01 : f32, seq_major, sgpu.config = #sgpu.attention_config<kernel = library>} : tensor<1x16x4x8xf16>, tensor<1x16x2x8xf16>, tensor<1x16x2x8xf16> -> tensor<1x16x4x8xf16>
// CHECK-NOT: linalg.transpose
// CHECK-NOT: sgpu.rope
// CHECK: return %[[O]]
func.func @block(%q: tensor<1x16x4x8xf16>, %k: tensor<1x16x2x8xf16>, %v: tensor<1x16x2x8xf16>,
    %c: tensor<1x1x16x8xf16>, %s: tensor<1x1x16x8xf16>) -> tensor<1x16x4x8xf16> {
  %eq = tensor.empty() : tensor<1x4x16x8xf16>
  %tq = linalg.transpose ins(%q : tensor<1x16x4x8xf16>) outs(%eq : tensor<1x4x16x8xf16>) permutation = [0, 2, 1, 3]
  %ek = tensor.empty() : tensor<1x2x16x8xf16>
  %tk = linalg.transpose ins(%k : tensor<1x16x2x8xf16>) outs(%ek : tensor<1x2x16x8xf16>) permutation = [0, 2, 1, 3]
  %ev = tensor.empty() : tensor<1x2x16x8xf16>
  %tv = linalg.transpose ins(%v : tensor<1x16x2x8xf16>) outs(%ev : tensor<1x2x16x8xf16>) permutation = [0, 2, 1, 3]
  %rq = sgpu.rope %tq, %c, %s {sgpu.config = #sgpu.launch_config<threads = 128>} : tensor<1x4x16x8xf16>, tensor<1x1x16x8xf16>, tensor<1x1x16x8xf16> -> tensor<1x4x16x8xf16>
  %rk = sgpu.rope %tk, %c, %s : tensor<1x2x16x8xf16>, tensor<1x1x16x8xf16>, tensor<1x1x16x8xf16> -> tensor<1x2x16x8xf16>
  %o = sgpu.attention %rq, %rk, %tv {causal, scale = 0.35 : f32, sgpu.config = #sgpu.attention_config<kernel = library>}
      : tensor<1x4x16x8xf16>, tensor<1x2x16x8xf16>, tensor<1x2x16x8xf16> -> tensor<1x4x16x8xf16>
  %eo = tensor.empty() : tensor<1x16x4x8xf16>
  %r = linalg.transpose ins(%o : tensor<1x4x16x8xf16>) outs(%eo : tensor<1x16x4x8xf16>) permutation = [0, 2, 1, 3]
  return %r : tensor<1x16x4x8xf16>
}

// -----

// Without RoPE: the three transposes and the one back go.
// CHECK-LABEL: func.func @plain
// CHECK-NOT: linalg.transpose
// CHECK: sgpu.attention %arg0, %arg1, %arg2 {scale = 1.250000e-01 : f32, seq_major, sgpu.config = #sgpu.attention_config<kernel = library>} : tensor<2x16x4x8xbf16>, tensor<2x16x4x8xbf16>, tensor<2x16x4x8xbf16> -> tensor<2x16x4x8xbf16>
// CHECK-NOT: linalg.transpose
func.func @plain(%q: tensor<2x16x4x8xbf16>, %k: tensor<2x16x4x8xbf16>, %v: tensor<2x16x4x8xbf16>) -> tensor<2x16x4x8xbf16> {
  %e = tensor.empty() : tensor<2x4x16x8xbf16>
  %tq = linalg.transpose ins(%q : tensor<2x16x4x8xbf16>) outs(%e : tensor<2x4x16x8xbf16>) permutation = [0, 2, 1, 3]
  %tk = linalg.transpose ins(%k : tensor<2x16x4x8xbf16>) outs(%e : tensor<2x4x16x8xbf16>) permutation = [0, 2, 1, 3]
  %tv = linalg.transpose ins(%v : tensor<2x16x4x8xbf16>) outs(%e : tensor<2x4x16x8xbf16>) permutation = [0, 2, 1, 3]
  %o = sgpu.attention %tq, %tk, %tv {scale = 0.125 : f32, sgpu.config = #sgpu.attention_config<kernel = library>}
      : tensor<2x4x16x8xbf16>, tensor<2x4x16x8xbf16>, tensor<2x4x16x8xbf16> -> tensor<2x4x16x8xbf16>
  %eo = tensor.empty() : tensor<2x16x4x8xbf16>
  %r = linalg.transpose ins(%o : tensor<2x4x16x8xbf16>) outs(%eo : tensor<2x16x4x8xbf16>) permutation = [0, 2, 1, 3]
  return %r : tensor<2x16x4x8xbf16>
}

// -----

// A generated kernel reads B x H x S x D: nothing changes.
// CHECK-LABEL: func.func @generated
// CHECK-COUNT-4: linalg.transpose
// CHECK-NOT: seq_major
func.func @generated(%q: tensor<1x16x4x8xf16>) -> tensor<1x16x4x8xf16> {
  %e = tensor.empty() : tensor<1x4x16x8xf16>
  %tq = linalg.transpose ins(%q : tensor<1x16x4x8xf16>) outs(%e : tensor<1x4x16x8xf16>) permutation = [0, 2, 1, 3]
  %tk = linalg.transpose ins(%q : tensor<1x16x4x8xf16>) outs(%e : tensor<1x4x16x8xf16>) permutation = [0, 2, 1, 3]
  %tv = linalg.transpose ins(%q : tensor<1x16x4x8xf16>) outs(%e : tensor<1x4x16x8xf16>) permutation = [0, 2, 1, 3]
  %o = sgpu.attention %tq, %tk, %tv {scale = 0.125 : f32, sgpu.config = #sgpu.attention_config<kernel = tensor_cores>}
      : tensor<1x4x16x8xf16>, tensor<1x4x16x8xf16>, tensor<1x4x16x8xf16> -> tensor<1x4x16x8xf16>
  %eo = tensor.empty() : tensor<1x16x4x8xf16>
  %r = linalg.transpose ins(%o : tensor<1x4x16x8xf16>) outs(%eo : tensor<1x16x4x8xf16>) permutation = [0, 2, 1, 3]
  return %r : tensor<1x16x4x8xf16>
}

// -----

// The rope of k is also written to a KV cache (it has a second use), the
// result is read without a transpose too, a table has one row per head, an
// operand is no transpose: each leaves the block as it is.
// CHECK-LABEL: func.func @rope_two_uses
// CHECK-NOT: seq_major
// CHECK-LABEL: func.func @result_read_directly
// CHECK-NOT: seq_major
// CHECK-LABEL: func.func @table_per_head
// CHECK-NOT: seq_major
// CHECK-LABEL: func.func @not_transposed
// CHECK-NOT: seq_major
func.func @rope_two_uses(%q: tensor<1x16x4x8xf16>, %c: tensor<1x1x16x8xf16>) -> (tensor<1x16x4x8xf16>, tensor<1x4x16x8xf16>) {
  %e = tensor.empty() : tensor<1x4x16x8xf16>
  %tq = linalg.transpose ins(%q : tensor<1x16x4x8xf16>) outs(%e : tensor<1x4x16x8xf16>) permutation = [0, 2, 1, 3]
  %rk = sgpu.rope %tq, %c, %c : tensor<1x4x16x8xf16>, tensor<1x1x16x8xf16>, tensor<1x1x16x8xf16> -> tensor<1x4x16x8xf16>
  %o = sgpu.attention %tq, %rk, %tq {scale = 0.125 : f32, sgpu.config = #sgpu.attention_config<kernel = library>}
      : tensor<1x4x16x8xf16>, tensor<1x4x16x8xf16>, tensor<1x4x16x8xf16> -> tensor<1x4x16x8xf16>
  %eo = tensor.empty() : tensor<1x16x4x8xf16>
  %r = linalg.transpose ins(%o : tensor<1x4x16x8xf16>) outs(%eo : tensor<1x16x4x8xf16>) permutation = [0, 2, 1, 3]
  return %r, %rk : tensor<1x16x4x8xf16>, tensor<1x4x16x8xf16>
}
func.func @result_read_directly(%q: tensor<1x16x4x8xf16>) -> (tensor<1x16x4x8xf16>, tensor<1x4x16x8xf16>) {
  %e = tensor.empty() : tensor<1x4x16x8xf16>
  %tq = linalg.transpose ins(%q : tensor<1x16x4x8xf16>) outs(%e : tensor<1x4x16x8xf16>) permutation = [0, 2, 1, 3]
  %o = sgpu.attention %tq, %tq, %tq {scale = 0.125 : f32, sgpu.config = #sgpu.attention_config<kernel = library>}
      : tensor<1x4x16x8xf16>, tensor<1x4x16x8xf16>, tensor<1x4x16x8xf16> -> tensor<1x4x16x8xf16>
  %eo = tensor.empty() : tensor<1x16x4x8xf16>
  %r = linalg.transpose ins(%o : tensor<1x4x16x8xf16>) outs(%eo : tensor<1x16x4x8xf16>) permutation = [0, 2, 1, 3]
  return %r, %o : tensor<1x16x4x8xf16>, tensor<1x4x16x8xf16>
}
func.func @table_per_head(%q: tensor<1x16x4x8xf16>, %c: tensor<1x4x16x8xf16>) -> tensor<1x16x4x8xf16> {
  %e = tensor.empty() : tensor<1x4x16x8xf16>
  %tq = linalg.transpose ins(%q : tensor<1x16x4x8xf16>) outs(%e : tensor<1x4x16x8xf16>) permutation = [0, 2, 1, 3]
  %rq = sgpu.rope %tq, %c, %c : tensor<1x4x16x8xf16>, tensor<1x4x16x8xf16>, tensor<1x4x16x8xf16> -> tensor<1x4x16x8xf16>
  %o = sgpu.attention %rq, %tq, %tq {scale = 0.125 : f32, sgpu.config = #sgpu.attention_config<kernel = library>}
      : tensor<1x4x16x8xf16>, tensor<1x4x16x8xf16>, tensor<1x4x16x8xf16> -> tensor<1x4x16x8xf16>
  %eo = tensor.empty() : tensor<1x16x4x8xf16>
  %r = linalg.transpose ins(%o : tensor<1x4x16x8xf16>) outs(%eo : tensor<1x16x4x8xf16>) permutation = [0, 2, 1, 3]
  return %r : tensor<1x16x4x8xf16>
}
func.func @not_transposed(%q: tensor<1x16x4x8xf16>, %v: tensor<1x4x16x8xf16>) -> tensor<1x16x4x8xf16> {
  %e = tensor.empty() : tensor<1x4x16x8xf16>
  %tq = linalg.transpose ins(%q : tensor<1x16x4x8xf16>) outs(%e : tensor<1x4x16x8xf16>) permutation = [0, 2, 1, 3]
  %o = sgpu.attention %tq, %tq, %v {scale = 0.125 : f32, sgpu.config = #sgpu.attention_config<kernel = library>}
      : tensor<1x4x16x8xf16>, tensor<1x4x16x8xf16>, tensor<1x4x16x8xf16> -> tensor<1x4x16x8xf16>
  %eo = tensor.empty() : tensor<1x16x4x8xf16>
  %r = linalg.transpose ins(%o : tensor<1x4x16x8xf16>) outs(%eo : tensor<1x16x4x8xf16>) permutation = [0, 2, 1, 3]
  return %r : tensor<1x16x4x8xf16>
}
