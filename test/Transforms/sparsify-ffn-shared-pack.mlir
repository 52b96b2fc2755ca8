// Two ungated FFNs reading one ReLU output share one TwELL pack. With block
// unions the cost model chooses per FFN, but a pack has one form: the
// first FFN (union 14%) would run faster on the tensor cores, the second
// (union 90%) on the CUDA cores, so the pack keeps the CUDA cores for both,
// with a remark at the pack, and no tensor-core attributes.
// RUN: sparse-opt %s --sgpu-sparsify-ffn="densities=0.005,0.005 unions=0.14,0.9" -verify-diagnostics | FileCheck %s
// Both on the tensor cores: the pack keeps the choice.
// RUN: sparse-opt %s --sgpu-sparsify-ffn="densities=0.005,0.005 unions=0.14,0.14" 2>&1 | FileCheck %s --check-prefix=BOTH

// CHECK-LABEL: func @shared
// CHECK: %[[P:.*]] = sgpu.twell_pack %{{.*}} {sgpu.twell_break_even = {{.*}} : f64} : tensor<16x512xbf16>
// CHECK-NOT: twell_consumer
// CHECK: sgpu.twell_ffn %[[P]]
// CHECK: sgpu.twell_ffn %[[P]]
// BOTH: sgpu.twell_pack %{{.*}} sgpu.twell_consumer = "tensor-cores"
// BOTH-COUNT-2: sgpu.twell_ffn

#mk = affine_map<(m, n, k) -> (m, k)>
#nk = affine_map<(m, n, k) -> (n, k)>
#mn = affine_map<(m, n, k) -> (m, n)>
#id = affine_map<(i, j) -> (i, j)>

func.func @shared(%x: tensor<16x2048xbf16>, %w1: tensor<512x2048xbf16>, %wa: tensor<2048x512xbf16>,
                  %wb: tensor<2048x512xbf16>) -> (tensor<16x2048xbf16>, tensor<16x2048xbf16>) {
  %z = arith.constant 0.0 : bf16
  %e512 = tensor.empty() : tensor<16x512xbf16>
  %a512 = linalg.fill ins(%z : bf16) outs(%e512 : tensor<16x512xbf16>) -> tensor<16x512xbf16>
  %g = linalg.matmul indexing_maps = [#mk, #nk, #mn]
      ins(%x, %w1 : tensor<16x2048xbf16>, tensor<512x2048xbf16>)
      outs(%a512 : tensor<16x512xbf16>) -> tensor<16x512xbf16>
  // expected-remark @+1 {{TwELL consumers of this pack: CUDA cores, since not all of them predict a gain on tensor cores}}
  %h = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%g : tensor<16x512xbf16>) outs(%e512 : tensor<16x512xbf16>) {
  ^bb0(%a: bf16, %o: bf16):
    %r = arith.maximumf %a, %z : bf16
    linalg.yield %r : bf16
  } -> tensor<16x512xbf16>
  %e2k = tensor.empty() : tensor<16x2048xbf16>
  %a2k = linalg.fill ins(%z : bf16) outs(%e2k : tensor<16x2048xbf16>) -> tensor<16x2048xbf16>
  // expected-remark @+1 {{TwELL on tensor cores (cost model)}}
  %ya = linalg.matmul indexing_maps = [#mk, #nk, #mn]
      ins(%h, %wa : tensor<16x512xbf16>, tensor<2048x512xbf16>)
      outs(%a2k : tensor<16x2048xbf16>) -> tensor<16x2048xbf16>
  %yb = linalg.matmul indexing_maps = [#mk, #nk, #mn]
      ins(%h, %wb : tensor<16x512xbf16>, tensor<2048x512xbf16>)
      outs(%a2k : tensor<16x2048xbf16>) -> tensor<16x2048xbf16>
  return %ya, %yb : tensor<16x2048xbf16>, tensor<16x2048xbf16>
}
