// sgpu-sparsify-ffn with calibrated densities: the TwELL cost model
// (lib/Transforms/TwellCostModel.h) keeps an FFN dense, with a remark,
// when its measured density predicts less than 1.05x of dense. At d = 2048
// TwELL pays below 0.96% (gated) and 0.86% (ungated).
// RUN: sparse-opt %s --sgpu-sparsify-ffn="densities=0.005,0.02" -verify-diagnostics | FileCheck %s
// RUN: echo '{"densities": [0.005, 0.02]}' > %t.json
// RUN: sparse-opt %s --sgpu-sparsify-ffn="profile=%t.json" -verify-diagnostics | FileCheck %s
// Both pay at 0.5%; without densities every FFN is rewritten.
// RUN: sparse-opt %s --sgpu-sparsify-ffn="densities=0.005,0.005" 2>&1 | FileCheck %s --check-prefix=BOTH
// RUN: sparse-opt %s --sgpu-sparsify-ffn | FileCheck %s --check-prefix=BOTH
// Bad calibrations are errors at the module.
// RUN: not sparse-opt %s --sgpu-sparsify-ffn="densities=0.005" 2>&1 | FileCheck %s --check-prefix=COUNT
// RUN: not sparse-opt %s --sgpu-sparsify-ffn="densities=0.005,1.5" 2>&1 | FileCheck %s --check-prefix=RANGE
// RUN: not sparse-opt %s --sgpu-sparsify-ffn="densities=0.005,0.1 profile=%t.json" 2>&1 | FileCheck %s --check-prefix=TWICE
// RUN: not sparse-opt %s --sgpu-sparsify-ffn="profile=%t.missing" 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: echo 'densities: 1' > %t.txt
// RUN: not sparse-opt %s --sgpu-sparsify-ffn="profile=%t.txt" 2>&1 | FileCheck %s --check-prefix=NOTJSON
// RUN: echo '{"density": [0.1, 0.1]}' > %t.noarray.json
// RUN: not sparse-opt %s --sgpu-sparsify-ffn="profile=%t.noarray.json" 2>&1 | FileCheck %s --check-prefix=NOARRAY
// RUN: echo '{"densities": []}' > %t.empty.json
// RUN: not sparse-opt %s --sgpu-sparsify-ffn="profile=%t.empty.json" 2>&1 | FileCheck %s --check-prefix=EMPTY
// RUN: echo '{"densities": [0.1, "low"]}' > %t.str.json
// RUN: not sparse-opt %s --sgpu-sparsify-ffn="profile=%t.str.json" 2>&1 | FileCheck %s --check-prefix=NOTNUMBER

// CHECK-LABEL: func @two_ffns
// CHECK: sgpu.twell_pack {{.*}} : tensor<16x512xbf16>
// CHECK: sgpu.twell_ffn {{.*}} -> tensor<16x2048xbf16>
// The second FFN (ungated) stays as it was.
// CHECK-NOT: sgpu.twell
// CHECK: linalg.matmul {{.*}} ins(%{{.*}}, %{{.*}} : tensor<16x512xbf16>, tensor<2048x512xbf16>)
// CHECK-NOT: sgpu.twell
// Each pack carries its layer's break-even density, for run-time guards.
// BOTH: sgpu.twell_pack %{{.*}} {sgpu.twell_break_even = 0.00959{{[0-9]*}} : f64}
// BOTH: sgpu.twell_ffn
// BOTH: sgpu.twell_pack %{{.*}} {sgpu.twell_break_even = 0.00857{{[0-9]*}} : f64}
// BOTH: sgpu.twell_ffn
// COUNT: error: sgpu-sparsify-ffn calibration: 1 densities for 2 rewritable FFN(s); give one per FFN, in the order of the program's twell<i> stats
// EMPTY: error: sgpu-sparsify-ffn calibration: 0 densities for 2 rewritable FFN(s)
// RANGE: error: sgpu-sparsify-ffn calibration: density 1.50 is outside [0, 1]
// TWICE: error: sgpu-sparsify-ffn calibration: give densities or profile, not both
// MISSING: error: sgpu-sparsify-ffn calibration: cannot read profile '{{.*}}.missing': No such file or directory
// NOTJSON: error: sgpu-sparsify-ffn calibration: profile '{{.*}}.txt' is not JSON
// NOARRAY: error: sgpu-sparsify-ffn calibration: profile '{{.*}}.noarray.json' has no "densities" array
// NOTNUMBER: error: sgpu-sparsify-ffn calibration: profile '{{.*}}.str.json': every density must be a number

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
  // expected-remark @+1 {{FFN kept dense (TwELL cost model): calibrated density 2.00% predicts 0.68x of dense; TwELL pays below 0.86% (ungated, d = 2048)}}
  %y2 = linalg.matmul indexing_maps = [#mk, #nk, #mn]
      ins(%h2, %w2 : tensor<16x512xbf16>, tensor<2048x512xbf16>)
      outs(%a2k : tensor<16x2048xbf16>) -> tensor<16x2048xbf16>
  return %y2 : tensor<16x2048xbf16>
}
