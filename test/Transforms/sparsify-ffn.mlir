// sgpu-sparsify-ffn: ReLU FFNs (ungated and gated) become sgpu.twell_pack of
// the ReLU output plus sgpu.twell_ffn; the producer GEMM and its ReLU stay.
// RUN: sparse-opt %s -split-input-file --sgpu-sparsify-ffn -verify-diagnostics | FileCheck %s
// RUN: sparse-opt %s -split-input-file --sgpu-sparsify-ffn="tile=128 compression=8" | FileCheck %s --check-prefix=OPTS
// Then the library-GEMM rewrites: the gate GEMM and its ReLU become one
// sgpu.matmul with a ReLU epilogue, whose output is what gets packed.
// RUN: sparse-opt %s -split-input-file --sgpu-sparsify-ffn --sgpu-dense-matmul --sgpu-fuse-epilogue | FileCheck %s --check-prefix=FUSE
// Running it again changes nothing.
// RUN: sparse-opt %s -split-input-file --sgpu-sparsify-ffn --sgpu-sparsify-ffn | FileCheck %s

#mk = affine_map<(m, n, k) -> (m, k)>
#nk = affine_map<(m, n, k) -> (n, k)>
#mn = affine_map<(m, n, k) -> (m, n)>
#id = affine_map<(i, j) -> (i, j)>

// Ungated, weights through the (n, k) map: Wd (d x F) goes to the consumer
// as it is.
// CHECK-LABEL: func @ungated
// CHECK-SAME: (%[[X:.*]]: tensor<16x64xf16>, %[[WU:.*]]: tensor<512x64xf16>, %[[WD:.*]]: tensor<64x512xf16>)
// CHECK: %[[G:.*]] = linalg.matmul {{.*}} ins(%[[X]], %[[WU]]
// CHECK: %[[H:.*]] = linalg.generic {{.*}} ins(%[[G]] : tensor<16x512xf16>)
// CHECK: arith.maximumf
// CHECK: %[[P:.*]] = sgpu.twell_pack %[[H]] {{.*}}: tensor<16x512xf16> -> !sgpu.twell<16x512xf16, #sgpu.twell<tile = 256, compression = 4>>
// CHECK-NOT: linalg.matmul
// CHECK: %[[Y:.*]] = sgpu.twell_ffn %[[P]], %[[WD]] : !sgpu.twell<16x512xf16, #sgpu.twell<tile = 256, compression = 4>>, tensor<64x512xf16> -> tensor<16x64xf16>
// CHECK-NEXT: return %[[Y]]
// OPTS-LABEL: func @ungated
// OPTS: sgpu.twell_pack {{.*}} -> !sgpu.twell<16x512xf16, #sgpu.twell<tile = 128, compression = 8>>
// OPTS: sgpu.twell_ffn
func.func @ungated(%x: tensor<16x64xf16>, %wu: tensor<512x64xf16>,
                   %wd: tensor<64x512xf16>) -> tensor<16x64xf16> {
  %z = arith.constant 0.0 : f16
  %e0 = tensor.empty() : tensor<16x512xf16>
  %a0 = linalg.fill ins(%z : f16) outs(%e0 : tensor<16x512xf16>) -> tensor<16x512xf16>
  %g = linalg.matmul indexing_maps = [#mk, #nk, #mn]
      ins(%x, %wu : tensor<16x64xf16>, tensor<512x64xf16>)
      outs(%a0 : tensor<16x512xf16>) -> tensor<16x512xf16>
  %e1 = tensor.empty() : tensor<16x512xf16>
  %h = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%g : tensor<16x512xf16>) outs(%e1 : tensor<16x512xf16>) {
  ^bb0(%a: f16, %o: f16):
    %r = arith.maximumf %a, %z : f16
    linalg.yield %r : f16
  } -> tensor<16x512xf16>
  %e2 = tensor.empty() : tensor<16x64xf16>
  %a2 = linalg.fill ins(%z : f16) outs(%e2 : tensor<16x64xf16>) -> tensor<16x64xf16>
  %y = linalg.matmul indexing_maps = [#mk, #nk, #mn]
      ins(%h, %wd : tensor<16x512xf16>, tensor<64x512xf16>)
      outs(%a2 : tensor<16x64xf16>) -> tensor<16x64xf16>
  return %y : tensor<16x64xf16>
}

// -----

#mk = affine_map<(m, n, k) -> (m, k)>
#nk = affine_map<(m, n, k) -> (n, k)>
#mn = affine_map<(m, n, k) -> (m, n)>
#id = affine_map<(i, j) -> (i, j)>

// Gated, relu(gate) * up: the up projection is erased, its input and
// weight go to the consumer; the gate GEMM and its ReLU stay.
// CHECK-LABEL: func @gated
// CHECK-SAME: (%[[X:.*]]: tensor<32x64xbf16>, %[[WG:.*]]: tensor<256x64xbf16>, %[[WU:.*]]: tensor<256x64xbf16>, %[[WD:.*]]: tensor<64x256xbf16>)
// CHECK: %[[G:.*]] = linalg.matmul {{.*}} ins(%[[X]], %[[WG]]
// CHECK: %[[H:.*]] = linalg.generic {{.*}} ins(%[[G]] : tensor<32x256xbf16>)
// CHECK: %[[P:.*]] = sgpu.twell_pack %[[H]] {{.*}}: tensor<32x256xbf16> -> !sgpu.twell<32x256xbf16, #sgpu.twell<tile = 256, compression = 4>>
// CHECK-NOT: linalg.matmul
// CHECK-NOT: arith.mulf
// CHECK: %[[Y:.*]] = sgpu.twell_ffn %[[P]], %[[WD]] up(%[[X]], %[[WU]] : tensor<32x64xbf16>, tensor<256x64xbf16>) : !sgpu.twell<32x256xbf16, #sgpu.twell<tile = 256, compression = 4>>, tensor<64x256xbf16> -> tensor<32x64xbf16>
// CHECK-NEXT: return %[[Y]]
// FUSE-LABEL: func @gated
// FUSE: %[[G:.*]] = sgpu.matmul %arg0, %arg1 {activation = #sgpu.activation<relu>}
// FUSE-NEXT: %[[P:.*]] = sgpu.twell_pack %[[G]]
// FUSE-NEXT: sgpu.twell_ffn %[[P]], %arg3 up(%arg0, %arg2 :
// OPTS-LABEL: func @gated
// OPTS: sgpu.twell_pack {{.*}} -> !sgpu.twell<32x256xbf16, #sgpu.twell<tile = 128, compression = 8>>
func.func @gated(%x: tensor<32x64xbf16>, %wg: tensor<256x64xbf16>,
                 %wu: tensor<256x64xbf16>, %wd: tensor<64x256xbf16>) -> tensor<32x64xbf16> {
  %z = arith.constant 0.0 : bf16
  %e0 = tensor.empty() : tensor<32x256xbf16>
  %a0 = linalg.fill ins(%z : bf16) outs(%e0 : tensor<32x256xbf16>) -> tensor<32x256xbf16>
  %g = linalg.matmul indexing_maps = [#mk, #nk, #mn]
      ins(%x, %wg : tensor<32x64xbf16>, tensor<256x64xbf16>)
      outs(%a0 : tensor<32x256xbf16>) -> tensor<32x256xbf16>
  %e1 = tensor.empty() : tensor<32x256xbf16>
  %h = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%g : tensor<32x256xbf16>) outs(%e1 : tensor<32x256xbf16>) {
  ^bb0(%a: bf16, %o: bf16):
    %r = arith.maximumf %a, %z : bf16
    linalg.yield %r : bf16
  } -> tensor<32x256xbf16>
  %u = linalg.matmul indexing_maps = [#mk, #nk, #mn]
      ins(%x, %wu : tensor<32x64xbf16>, tensor<256x64xbf16>)
      outs(%a0 : tensor<32x256xbf16>) -> tensor<32x256xbf16>
  %e3 = tensor.empty() : tensor<32x256xbf16>
  %hu = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%h, %u : tensor<32x256xbf16>, tensor<32x256xbf16>) outs(%e3 : tensor<32x256xbf16>) {
  ^bb0(%a: bf16, %b: bf16, %o: bf16):
    %r = arith.mulf %a, %b : bf16
    linalg.yield %r : bf16
  } -> tensor<32x256xbf16>
  %e2 = tensor.empty() : tensor<32x64xbf16>
  %a2 = linalg.fill ins(%z : bf16) outs(%e2 : tensor<32x64xbf16>) -> tensor<32x64xbf16>
  %y = linalg.matmul indexing_maps = [#mk, #nk, #mn]
      ins(%hu, %wd : tensor<32x256xbf16>, tensor<64x256xbf16>)
      outs(%a2 : tensor<32x64xbf16>) -> tensor<32x64xbf16>
  return %y : tensor<32x64xbf16>
}

// -----

#mk = affine_map<(m, n, k) -> (m, k)>
#nk = affine_map<(m, n, k) -> (n, k)>
#mn = affine_map<(m, n, k) -> (m, n)>
#id = affine_map<(i, j) -> (i, j)>

// Gated, the other operand order: up * relu(gate), the product's body
// multiplying its arguments the other way round, the ReLU as cmpf + select,
// and weights through linalg.transpose (the forms of older ONNX exports).
// The consumer takes the transposes' sources.
// CHECK-LABEL: func @gated_swapped
// CHECK-SAME: (%[[X:.*]]: tensor<8x32xf16>, %[[WG:.*]]: tensor<128x32xf16>, %[[WU:.*]]: tensor<128x32xf16>, %[[WD:.*]]: tensor<32x128xf16>)
// CHECK: %[[H:.*]] = linalg.generic
// CHECK: arith.select
// CHECK: %[[P:.*]] = sgpu.twell_pack %[[H]] {{.*}}: tensor<8x128xf16> -> !sgpu.twell<8x128xf16, #sgpu.twell<tile = 64, compression = 2>>
// CHECK-NOT: linalg.matmul
// CHECK-NOT: linalg.transpose
// CHECK: %[[Y:.*]] = sgpu.twell_ffn %[[P]], %[[WD]] up(%[[X]], %[[WU]] : tensor<8x32xf16>, tensor<128x32xf16>)
// CHECK-NEXT: return %[[Y]]
// The module's sgpu.twell is overridden by an explicit option.
// OPTS-LABEL: func @gated_swapped
// OPTS: sgpu.twell_pack {{.*}} -> !sgpu.twell<8x128xf16, #sgpu.twell<tile = 128, compression = 8>>
module attributes {sgpu.twell = #sgpu.twell<tile = 64, compression = 2>} {
func.func @gated_swapped(%x: tensor<8x32xf16>, %wg: tensor<128x32xf16>,
                         %wu: tensor<128x32xf16>, %wd: tensor<32x128xf16>) -> tensor<8x32xf16> {
  %z = arith.constant 0.0 : f16
  %eg = tensor.empty() : tensor<32x128xf16>
  %wgt = linalg.transpose ins(%wg : tensor<128x32xf16>) outs(%eg : tensor<32x128xf16>) permutation = [1, 0]
  %e0 = tensor.empty() : tensor<8x128xf16>
  %a0 = linalg.fill ins(%z : f16) outs(%e0 : tensor<8x128xf16>) -> tensor<8x128xf16>
  %g = linalg.matmul ins(%x, %wgt : tensor<8x32xf16>, tensor<32x128xf16>)
      outs(%a0 : tensor<8x128xf16>) -> tensor<8x128xf16>
  %e1 = tensor.empty() : tensor<8x128xf16>
  %h = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%g : tensor<8x128xf16>) outs(%e1 : tensor<8x128xf16>) {
  ^bb0(%a: f16, %o: f16):
    %c = arith.cmpf ogt, %a, %z : f16
    %r = arith.select %c, %a, %z : f16
    linalg.yield %r : f16
  } -> tensor<8x128xf16>
  %eu = tensor.empty() : tensor<32x128xf16>
  %wut = linalg.transpose ins(%wu : tensor<128x32xf16>) outs(%eu : tensor<32x128xf16>) permutation = [1, 0]
  %u = linalg.matmul ins(%x, %wut : tensor<8x32xf16>, tensor<32x128xf16>)
      outs(%a0 : tensor<8x128xf16>) -> tensor<8x128xf16>
  %e3 = tensor.empty() : tensor<8x128xf16>
  %hu = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%u, %h : tensor<8x128xf16>, tensor<8x128xf16>) outs(%e3 : tensor<8x128xf16>) {
  ^bb0(%a: f16, %b: f16, %o: f16):
    %r = arith.mulf %b, %a : f16
    linalg.yield %r : f16
  } -> tensor<8x128xf16>
  %ed = tensor.empty() : tensor<128x32xf16>
  %wdt = linalg.transpose ins(%wd : tensor<32x128xf16>) outs(%ed : tensor<128x32xf16>) permutation = [1, 0]
  %e2 = tensor.empty() : tensor<8x32xf16>
  %a2 = linalg.fill ins(%z : f16) outs(%e2 : tensor<8x32xf16>) -> tensor<8x32xf16>
  %y = linalg.matmul ins(%hu, %wdt : tensor<8x128xf16>, tensor<128x32xf16>)
      outs(%a2 : tensor<8x32xf16>) -> tensor<8x32xf16>
  return %y : tensor<8x32xf16>
}
}

// -----

#mk = affine_map<(m, n, k) -> (m, k)>
#nk = affine_map<(m, n, k) -> (n, k)>
#mn = affine_map<(m, n, k) -> (m, n)>
#id3 = affine_map<(b, s, f) -> (b, s, f)>
#id = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (j)>

// A [B, S, d] input as the importers write it: every linear collapses the
// tokens and expands back, the ReLU runs on the 3-D tensor after the
// gate's bias add. The packed H is the ReLU output collapsed to [M, F]; the
// down projection's bias add stays and reads the consumer's result. The
// down weight is a K x N operand (no transpose), so one is inserted.
// CHECK-LABEL: func @tokens_3d
// CHECK-SAME: (%[[X:.*]]: tensor<2x8x64xf16>, %[[WU:.*]]: tensor<512x64xf16>, %[[BU:.*]]: tensor<512xf16>, %[[WDT:.*]]: tensor<512x64xf16>, %[[BD:.*]]: tensor<64xf16>)
// CHECK: %[[H:.*]] = linalg.generic {{.*}} ins(%{{.*}} : tensor<2x8x512xf16>)
// CHECK: %[[H2:.*]] = tensor.collapse_shape %[[H]] {{\[\[}}0, 1], [2]] : tensor<2x8x512xf16> into tensor<16x512xf16>
// CHECK: %[[P:.*]] = sgpu.twell_pack %[[H2]] {{.*}}: tensor<16x512xf16>
// CHECK: %[[WD:.*]] = linalg.transpose ins(%[[WDT]] : tensor<512x64xf16>) outs(%{{.*}} : tensor<64x512xf16>) permutation = [1, 0]
// CHECK: %[[Y:.*]] = sgpu.twell_ffn %[[P]], %[[WD]] : {{.*}} -> tensor<16x64xf16>
// CHECK: %[[YB:.*]] = linalg.generic {{.*}} ins(%[[Y]], %[[BD]] : tensor<16x64xf16>, tensor<64xf16>)
// CHECK: tensor.expand_shape %[[YB]]
func.func @tokens_3d(%x: tensor<2x8x64xf16>, %wu: tensor<512x64xf16>, %bu: tensor<512xf16>,
                     %wdt: tensor<512x64xf16>, %bd: tensor<64xf16>) -> tensor<2x8x64xf16> {
  %z = arith.constant 0.0 : f16
  %x2 = tensor.collapse_shape %x [[0, 1], [2]] : tensor<2x8x64xf16> into tensor<16x64xf16>
  %e0 = tensor.empty() : tensor<16x512xf16>
  %a0 = linalg.fill ins(%z : f16) outs(%e0 : tensor<16x512xf16>) -> tensor<16x512xf16>
  %g = linalg.matmul indexing_maps = [#mk, #nk, #mn]
      ins(%x2, %wu : tensor<16x64xf16>, tensor<512x64xf16>)
      outs(%a0 : tensor<16x512xf16>) -> tensor<16x512xf16>
  %gb = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%g, %bu : tensor<16x512xf16>, tensor<512xf16>) outs(%e0 : tensor<16x512xf16>) {
  ^bb0(%a: f16, %b: f16, %o: f16):
    %r = arith.addf %a, %b : f16
    linalg.yield %r : f16
  } -> tensor<16x512xf16>
  %g3 = tensor.expand_shape %gb [[0, 1], [2]] output_shape [2, 8, 512] : tensor<16x512xf16> into tensor<2x8x512xf16>
  %e1 = tensor.empty() : tensor<2x8x512xf16>
  %h = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%g3 : tensor<2x8x512xf16>) outs(%e1 : tensor<2x8x512xf16>) {
  ^bb0(%a: f16, %o: f16):
    %r = arith.maximumf %a, %z : f16
    linalg.yield %r : f16
  } -> tensor<2x8x512xf16>
  %h2 = tensor.collapse_shape %h [[0, 1], [2]] : tensor<2x8x512xf16> into tensor<16x512xf16>
  %e2 = tensor.empty() : tensor<16x64xf16>
  %a2 = linalg.fill ins(%z : f16) outs(%e2 : tensor<16x64xf16>) -> tensor<16x64xf16>
  %y = linalg.matmul ins(%h2, %wdt : tensor<16x512xf16>, tensor<512x64xf16>)
      outs(%a2 : tensor<16x64xf16>) -> tensor<16x64xf16>
  %yb = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%y, %bd : tensor<16x64xf16>, tensor<64xf16>) outs(%e2 : tensor<16x64xf16>) {
  ^bb0(%a: f16, %b: f16, %o: f16):
    %r = arith.addf %a, %b : f16
    linalg.yield %r : f16
  } -> tensor<16x64xf16>
  %y3 = tensor.expand_shape %yb [[0, 1], [2]] output_shape [2, 8, 64] : tensor<16x64xf16> into tensor<2x8x64xf16>
  return %y3 : tensor<2x8x64xf16>
}

// -----

#mk = affine_map<(m, n, k) -> (m, k)>
#nk = affine_map<(m, n, k) -> (n, k)>
#mn = affine_map<(m, n, k) -> (m, n)>
#id = affine_map<(i, j) -> (i, j)>

// Two FFNs in one function, the second reading the first's output: each
// gets its own pack and consumer; the second one's packed H is the ReLU of
// a GEMM on the first consumer's result. Other matmuls (the head) are left
// alone without a remark.
// CHECK-LABEL: func @two_ffns
// CHECK: %[[P1:.*]] = sgpu.twell_pack %{{.*}} {{.*}}: tensor<16x256xf16>
// CHECK: %[[Y1:.*]] = sgpu.twell_ffn %[[P1]], %{{.*}} up(%{{.*}}, %{{.*}} :
// CHECK: linalg.matmul {{.*}} ins(%[[Y1]],
// CHECK: %[[P2:.*]] = sgpu.twell_pack %{{.*}} {{.*}}: tensor<16x512xf16>
// CHECK: %[[Y2:.*]] = sgpu.twell_ffn %[[P2]], %{{.*}} : {{.*}} -> tensor<16x64xf16>
// CHECK: %[[O:.*]] = linalg.matmul {{.*}} ins(%[[Y2]], %{{.*}} : tensor<16x64xf16>, tensor<100x64xf16>)
// CHECK: return %[[O]]
func.func @two_ffns(%x: tensor<16x64xf16>, %wg: tensor<256x64xf16>, %wu: tensor<256x64xf16>,
                    %wd: tensor<64x256xf16>, %w1: tensor<512x64xf16>, %w2: tensor<64x512xf16>,
                    %wo: tensor<100x64xf16>) -> tensor<16x100xf16> {
  %z = arith.constant 0.0 : f16
  %e256 = tensor.empty() : tensor<16x256xf16>
  %a256 = linalg.fill ins(%z : f16) outs(%e256 : tensor<16x256xf16>) -> tensor<16x256xf16>
  %g = linalg.matmul indexing_maps = [#mk, #nk, #mn]
      ins(%x, %wg : tensor<16x64xf16>, tensor<256x64xf16>)
      outs(%a256 : tensor<16x256xf16>) -> tensor<16x256xf16>
  %h = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%g : tensor<16x256xf16>) outs(%e256 : tensor<16x256xf16>) {
  ^bb0(%a: f16, %o: f16):
    %r = arith.maximumf %z, %a : f16
    linalg.yield %r : f16
  } -> tensor<16x256xf16>
  %u = linalg.matmul indexing_maps = [#mk, #nk, #mn]
      ins(%x, %wu : tensor<16x64xf16>, tensor<256x64xf16>)
      outs(%a256 : tensor<16x256xf16>) -> tensor<16x256xf16>
  %hu = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%h, %u : tensor<16x256xf16>, tensor<16x256xf16>) outs(%e256 : tensor<16x256xf16>) {
  ^bb0(%a: f16, %b: f16, %o: f16):
    %r = arith.mulf %a, %b : f16
    linalg.yield %r : f16
  } -> tensor<16x256xf16>
  %e64 = tensor.empty() : tensor<16x64xf16>
  %a64 = linalg.fill ins(%z : f16) outs(%e64 : tensor<16x64xf16>) -> tensor<16x64xf16>
  %y1 = linalg.matmul indexing_maps = [#mk, #nk, #mn]
      ins(%hu, %wd : tensor<16x256xf16>, tensor<64x256xf16>)
      outs(%a64 : tensor<16x64xf16>) -> tensor<16x64xf16>
  %e512 = tensor.empty() : tensor<16x512xf16>
  %a512 = linalg.fill ins(%z : f16) outs(%e512 : tensor<16x512xf16>) -> tensor<16x512xf16>
  %g2 = linalg.matmul indexing_maps = [#mk, #nk, #mn]
      ins(%y1, %w1 : tensor<16x64xf16>, tensor<512x64xf16>)
      outs(%a512 : tensor<16x512xf16>) -> tensor<16x512xf16>
  %h2 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%g2 : tensor<16x512xf16>) outs(%e512 : tensor<16x512xf16>) {
  ^bb0(%a: f16, %o: f16):
    %r = arith.maximumf %a, %z : f16
    linalg.yield %r : f16
  } -> tensor<16x512xf16>
  %y2 = linalg.matmul indexing_maps = [#mk, #nk, #mn]
      ins(%h2, %w2 : tensor<16x512xf16>, tensor<64x512xf16>)
      outs(%a64 : tensor<16x64xf16>) -> tensor<16x64xf16>
  %e100 = tensor.empty() : tensor<16x100xf16>
  %a100 = linalg.fill ins(%z : f16) outs(%e100 : tensor<16x100xf16>) -> tensor<16x100xf16>
  %o = linalg.matmul indexing_maps = [#mk, #nk, #mn]
      ins(%y2, %wo : tensor<16x64xf16>, tensor<100x64xf16>)
      outs(%a100 : tensor<16x100xf16>) -> tensor<16x100xf16>
  return %o : tensor<16x100xf16>
}
