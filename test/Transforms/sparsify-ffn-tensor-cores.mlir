// sgpu-sparsify-ffn with calibrated block unions as well as densities: the
// cost model (lib/Transforms/TwellCostModel.h) also predicts the
// tensor-core consumer from the union fraction of the blocks of 64 rows,
// and where it beats the CUDA-core consumer and 1.05x of dense the pack
// records the choice (sgpu.twell_consumer) and the union's break-even
// (sgpu.twell_union_break_even). The gated FFN at 0.5% with a union of
// 14% (rows sharing neurons) goes to the tensor cores; the ungated one at
// 2% with a union of 90% stays dense, and its remark gives both models.
// RUN: sparse-opt %s --sgpu-sparsify-ffn="densities=0.005,0.02 unions=0.14,0.9" -verify-diagnostics | FileCheck %s
// RUN: echo '{"densities": [0.005, 0.02], "block_unions": [0.14, 0.9]}' > %t.json
// RUN: sparse-opt %s --sgpu-sparsify-ffn="profile=%t.json" -verify-diagnostics | FileCheck %s
// Random rows (union 27% at 0.5%): the CUDA cores, no consumer attribute.
// RUN: sparse-opt %s --sgpu-sparsify-ffn="densities=0.005,0.005 unions=0.27,0.27" 2>&1 | FileCheck %s --check-prefix=RANDOM
// Bad unions are errors at the module.
// RUN: not sparse-opt %s --sgpu-sparsify-ffn="densities=0.005,0.02 unions=0.1" 2>&1 | FileCheck %s --check-prefix=COUNT
// RUN: not sparse-opt %s --sgpu-sparsify-ffn="densities=0.005,0.02 unions=0.1,1.5" 2>&1 | FileCheck %s --check-prefix=RANGE
// RUN: not sparse-opt %s --sgpu-sparsify-ffn="unions=0.1,0.1" 2>&1 | FileCheck %s --check-prefix=ALONE
// RUN: not sparse-opt %s --sgpu-sparsify-ffn="unions=0.1,0.1 profile=%t.json" 2>&1 | FileCheck %s --check-prefix=TWICE
// RUN: echo '{"densities": [0.005, 0.02], "block_unions": [0.1, "x"]}' > %t.str.json
// RUN: not sparse-opt %s --sgpu-sparsify-ffn="profile=%t.str.json" 2>&1 | FileCheck %s --check-prefix=NOTNUMBER

// CHECK-LABEL: func @two_ffns
// CHECK: sgpu.twell_pack %{{.*}} {sgpu.twell_break_even = 0.00959{{[0-9]*}} : f64, sgpu.twell_consumer = "tensor-cores", sgpu.twell_union_break_even = 0.388{{[0-9]*}} : f64} : tensor<16x512xbf16>
// CHECK: sgpu.twell_ffn {{.*}} -> tensor<16x2048xbf16>
// CHECK-NOT: sgpu.twell
// CHECK: linalg.matmul {{.*}} ins(%{{.*}}, %{{.*}} : tensor<16x512xbf16>, tensor<2048x512xbf16>)
// RANDOM-NOT: twell_consumer
// RANDOM: sgpu.twell_pack %{{.*}} {sgpu.twell_break_even = 0.00959{{[0-9]*}} : f64}
// RANDOM-NOT: twell_consumer
// COUNT: error: sgpu-sparsify-ffn calibration: 1 block unions for 2 rewritable FFN(s); give one per FFN, in the order of the program's twell<i> stats
// RANGE: error: sgpu-sparsify-ffn calibration: block union 1.50 is outside [0, 1]
// ALONE: error: sgpu-sparsify-ffn calibration: block unions need densities too
// TWICE: error: sgpu-sparsify-ffn calibration: give unions or a profile, not both
// NOTNUMBER: error: sgpu-sparsify-ffn calibration: profile '{{.*}}.str.json': every block union must be a number

#mk = affine_map<(m, n, k) -> (m, k)>
#nk = affine_map<(m, n, k) -> (n, k)>
#mn = affine_map<(m, n, k) -> (m, n)>
#id = affine_map<(i, j) -> (i, j)>

func.func @two_ffns(%x: tensor<16x2048xbf16>, %wg: tensor<512x2048xbf16>, %wu: tensor<512x2048xbf16>,
                    %wd: tensor<2048x512xbf16>, %w1: tensor<512x2048xbf16>,
                    %w2: tensor<2048x512xbf16>) -> tensor<16x2048xbf16> {
  %z = arith.constant 0.0 : bf16
  %e512 = tensor.empty() : tensor<16x512xbf16>
  %a512 = linalg.fill ins(%z : bf16) outs(%e512 : tensor<16x512xbf16>) -> tensor<16x512xbf16>
  %g = linalg.matmul indexing_maps = [#mk, #nk, #mn]
      ins(%x, %wg : tensor<16x2048xbf16>, tensor<512x2048xbf16>)
      outs(%a512 : tensor<16x512xbf16>) -> tensor<16x512xbf16>
  %h = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%g : tensor<16x512xbf16>) outs(%e512 : tensor<16x512xbf16>) {
  ^bb0(%a: bf16, %o: bf16):
    %r = arith.maximumf %a, %z : bf16
    linalg.yield %r : bf16
  } -> tensor<16x512xbf16>
  %u = linalg.matmul indexing_maps = [#mk, #nk, #mn]
      ins(%x, %wu : tensor<16x2048xbf16>, tensor<512x2048xbf16>)
      outs(%a512 : tensor<16x512xbf16>) -> tensor<16x512xbf16>
  %hu = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%h, %u : tensor<16x512xbf16>, tensor<16x512xbf16>) outs(%e512 : tensor<16x512xbf16>) {
  ^bb0(%a: bf16, %b: bf16, %o: bf16):
    %r = arith.mulf %a, %b : bf16
    linalg.yield %r : bf16
  } -> tensor<16x512xbf16>
  %e2k = tensor.empty() : tensor<16x2048xbf16>
  %a2k = linalg.fill ins(%z : bf16) outs(%e2k : tensor<16x2048xbf16>) -> tensor<16x2048xbf16>
  // expected-remark @+1 {{TwELL on tensor cores (cost model): calibrated union 14.00% of the blocks of 64 rows predicts 1.57x of dense, the CUDA cores 1.48x at density 0.50%}}
  %y1 = linalg.matmul indexing_maps = [#mk, #nk, #mn]
      ins(%hu, %wd : tensor<16x512xbf16>, tensor<2048x512xbf16>)
      outs(%a2k : tensor<16x2048xbf16>) -> tensor<16x2048xbf16>
  %g2 = linalg.matmul indexing_maps = [#mk, #nk, #mn]
      ins(%y1, %w1 : tensor<16x2048xbf16>, tensor<512x2048xbf16>)
      outs(%a512 : tensor<16x512xbf16>) -> tensor<16x512xbf16>
  %h2 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%g2 : tensor<16x512xbf16>) outs(%e512 : tensor<16x512xbf16>) {
  ^bb0(%a: bf16, %o: bf16):
    %r = arith.maximumf %a, %z : bf16
    linalg.yield %r : bf16
  } -> tensor<16x512xbf16>
  // expected-remark @+1 {{FFN kept dense (TwELL cost model): calibrated density 2.00% predicts 0.68x of dense; TwELL pays below 0.86% (ungated, d = 2048); on tensor cores, union 90.00% predicts 0.66x (pays below 35.62%)}}
  %y2 = linalg.matmul indexing_maps = [#mk, #nk, #mn]
      ins(%h2, %w2 : tensor<16x512xbf16>, tensor<2048x512xbf16>)
      outs(%a2k : tensor<16x2048xbf16>) -> tensor<16x2048xbf16>
  return %y2 : tensor<16x2048xbf16>
}
