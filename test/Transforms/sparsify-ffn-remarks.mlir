// sgpu-sparsify-ffn leaves an FFN it cannot rewrite unchanged, with a remark
// at the down projection saying why; an invalid option is an error.
// RUN: split-file %s %t
// RUN: sparse-opt %t/remarks.mlir -split-input-file --sgpu-sparsify-ffn -verify-diagnostics | FileCheck %t/remarks.mlir
// RUN: sparse-opt %t/bad-fallback.mlir --sgpu-sparsify-ffn="fallback=sparse" -verify-diagnostics
// RUN: sparse-opt %t/bad-tile.mlir --sgpu-sparsify-ffn="tile=100" -verify-diagnostics
// RUN: sparse-opt %t/bad-compression.mlir --sgpu-sparsify-ffn="compression=3" -verify-diagnostics

//--- remarks.mlir
#mk = affine_map<(m, n, k) -> (m, k)>
#nk = affine_map<(m, n, k) -> (n, k)>
#mn = affine_map<(m, n, k) -> (m, n)>
#id = affine_map<(i, j) -> (i, j)>

// A gated FFN with SiLU (the importers' body: x * 1 / (1 + exp(-x))).
// CHECK-LABEL: func @silu
// CHECK-NOT: sgpu.twell
// CHECK: return
func.func @silu(%x: tensor<16x64xf16>, %wg: tensor<256x64xf16>, %wu: tensor<256x64xf16>,
                %wd: tensor<64x256xf16>) -> tensor<16x64xf16> {
  %z = arith.constant 0.0 : f16
  %e = tensor.empty() : tensor<16x256xf16>
  %a = linalg.fill ins(%z : f16) outs(%e : tensor<16x256xf16>) -> tensor<16x256xf16>
  %g = linalg.matmul indexing_maps = [#mk, #nk, #mn]
      ins(%x, %wg : tensor<16x64xf16>, tensor<256x64xf16>) outs(%a : tensor<16x256xf16>) -> tensor<16x256xf16>
  %s = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%g : tensor<16x256xf16>) outs(%e : tensor<16x256xf16>) {
  ^bb0(%v: f16, %o: f16):
    %one = arith.constant 1.0 : f16
    %n = arith.negf %v : f16
    %ex = math.exp %n : f16
    %d = arith.addf %one, %ex : f16
    %sg = arith.divf %one, %d : f16
    %r = arith.mulf %v, %sg : f16
    linalg.yield %r : f16
  } -> tensor<16x256xf16>
  %u = linalg.matmul indexing_maps = [#mk, #nk, #mn]
      ins(%x, %wu : tensor<16x64xf16>, tensor<256x64xf16>) outs(%a : tensor<16x256xf16>) -> tensor<16x256xf16>
  %hu = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%s, %u : tensor<16x256xf16>, tensor<16x256xf16>) outs(%e : tensor<16x256xf16>) {
  ^bb0(%p: f16, %q: f16, %o: f16):
    %r = arith.mulf %p, %q : f16
    linalg.yield %r : f16
  } -> tensor<16x256xf16>
  %e2 = tensor.empty() : tensor<16x64xf16>
  %a2 = linalg.fill ins(%z : f16) outs(%e2 : tensor<16x64xf16>) -> tensor<16x64xf16>
  // expected-remark @+1 {{FFN not sparsified (TwELL): its activation is SiLU, not ReLU; TwELL packs the exact zeros a ReLU leaves}}
  %y = linalg.matmul indexing_maps = [#mk, #nk, #mn]
      ins(%hu, %wd : tensor<16x256xf16>, tensor<64x256xf16>) outs(%a2 : tensor<16x64xf16>) -> tensor<16x64xf16>
  return %y : tensor<16x64xf16>
}

// -----

#mk = affine_map<(m, n, k) -> (m, k)>
#nk = affine_map<(m, n, k) -> (n, k)>
#mn = affine_map<(m, n, k) -> (m, n)>
#id = affine_map<(i, j) -> (i, j)>

// An ungated FFN with GELU (erf form).
// CHECK-LABEL: func @gelu
// CHECK-NOT: sgpu.twell
// CHECK: return
func.func @gelu(%x: tensor<16x64xbf16>, %wu: tensor<256x64xbf16>,
                %wd: tensor<64x256xbf16>) -> tensor<16x64xbf16> {
  %z = arith.constant 0.0 : bf16
  %e = tensor.empty() : tensor<16x256xbf16>
  %a = linalg.fill ins(%z : bf16) outs(%e : tensor<16x256xbf16>) -> tensor<16x256xbf16>
  %g = linalg.matmul indexing_maps = [#mk, #nk, #mn]
      ins(%x, %wu : tensor<16x64xbf16>, tensor<256x64xbf16>) outs(%a : tensor<16x256xbf16>) -> tensor<16x256xbf16>
  %h = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%g : tensor<16x256xbf16>) outs(%e : tensor<16x256xbf16>) {
  ^bb0(%v: bf16, %o: bf16):
    %c = arith.constant 0.707106769 : bf16
    %half = arith.constant 0.5 : bf16
    %one = arith.constant 1.0 : bf16
    %s = arith.mulf %v, %c : bf16
    %t = math.erf %s : bf16
    %hv = arith.mulf %v, %half : bf16
    %t1 = arith.addf %t, %one : bf16
    %r = arith.mulf %hv, %t1 : bf16
    linalg.yield %r : bf16
  } -> tensor<16x256xbf16>
  %e2 = tensor.empty() : tensor<16x64xbf16>
  %a2 = linalg.fill ins(%z : bf16) outs(%e2 : tensor<16x64xbf16>) -> tensor<16x64xbf16>
  // expected-remark @+1 {{FFN not sparsified (TwELL): its activation is GELU, not ReLU}}
  %y = linalg.matmul indexing_maps = [#mk, #nk, #mn]
      ins(%h, %wd : tensor<16x256xbf16>, tensor<64x256xbf16>) outs(%a2 : tensor<16x64xbf16>) -> tensor<16x64xbf16>
  return %y : tensor<16x64xbf16>
}

// -----

#mk = affine_map<(m, n, k) -> (m, k)>
#nk = affine_map<(m, n, k) -> (n, k)>
#mn = affine_map<(m, n, k) -> (m, n)>
#id = affine_map<(i, j) -> (i, j)>

// Sigmoid.
func.func @sigmoid(%x: tensor<16x64xf16>, %wu: tensor<256x64xf16>,
                   %wd: tensor<64x256xf16>) -> tensor<16x64xf16> {
  %z = arith.constant 0.0 : f16
  %e = tensor.empty() : tensor<16x256xf16>
  %a = linalg.fill ins(%z : f16) outs(%e : tensor<16x256xf16>) -> tensor<16x256xf16>
  %g = linalg.matmul indexing_maps = [#mk, #nk, #mn]
      ins(%x, %wu : tensor<16x64xf16>, tensor<256x64xf16>) outs(%a : tensor<16x256xf16>) -> tensor<16x256xf16>
  %h = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%g : tensor<16x256xf16>) outs(%e : tensor<16x256xf16>) {
  ^bb0(%v: f16, %o: f16):
    %one = arith.constant 1.0 : f16
    %n = arith.negf %v : f16
    %ex = math.exp %n : f16
    %d = arith.addf %one, %ex : f16
    %r = arith.divf %one, %d : f16
    linalg.yield %r : f16
  } -> tensor<16x256xf16>
  %e2 = tensor.empty() : tensor<16x64xf16>
  %a2 = linalg.fill ins(%z : f16) outs(%e2 : tensor<16x64xf16>) -> tensor<16x64xf16>
  // expected-remark @+1 {{its activation is sigmoid, not ReLU}}
  %y = linalg.matmul indexing_maps = [#mk, #nk, #mn]
      ins(%h, %wd : tensor<16x256xf16>, tensor<64x256xf16>) outs(%a2 : tensor<16x64xf16>) -> tensor<16x64xf16>
  return %y : tensor<16x64xf16>
}

// -----

#mk = affine_map<(m, n, k) -> (m, k)>
#nk = affine_map<(m, n, k) -> (n, k)>
#mn = affine_map<(m, n, k) -> (m, n)>
#id = affine_map<(i, j) -> (i, j)>

// A ReLU FFN in f32.
// CHECK-LABEL: func @f32
// CHECK-NOT: sgpu.twell
// CHECK: return
func.func @f32(%x: tensor<16x64xf32>, %wu: tensor<256x64xf32>,
               %wd: tensor<64x256xf32>) -> tensor<16x64xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16x256xf32>
  %a = linalg.fill ins(%z : f32) outs(%e : tensor<16x256xf32>) -> tensor<16x256xf32>
  %g = linalg.matmul indexing_maps = [#mk, #nk, #mn]
      ins(%x, %wu : tensor<16x64xf32>, tensor<256x64xf32>) outs(%a : tensor<16x256xf32>) -> tensor<16x256xf32>
  %h = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%g : tensor<16x256xf32>) outs(%e : tensor<16x256xf32>) {
  ^bb0(%v: f32, %o: f32):
    %r = arith.maximumf %v, %z : f32
    linalg.yield %r : f32
  } -> tensor<16x256xf32>
  %e2 = tensor.empty() : tensor<16x64xf32>
  %a2 = linalg.fill ins(%z : f32) outs(%e2 : tensor<16x64xf32>) -> tensor<16x64xf32>
  // expected-remark @+1 {{FFN not sparsified (TwELL): the FFN computes in 'f32'; TwELL packs 16-bit values (f16 or bf16)}}
  %y = linalg.matmul indexing_maps = [#mk, #nk, #mn]
      ins(%h, %wd : tensor<16x256xf32>, tensor<64x256xf32>) outs(%a2 : tensor<16x64xf32>) -> tensor<16x64xf32>
  return %y : tensor<16x64xf32>
}

// -----

#mk = affine_map<(m, n, k) -> (m, k)>
#nk = affine_map<(m, n, k) -> (n, k)>
#mn = affine_map<(m, n, k) -> (m, n)>
#id = affine_map<(i, j) -> (i, j)>

// f16 operands with the down projection accumulating to f32.
func.func @f32_result(%x: tensor<16x64xf16>, %wu: tensor<256x64xf16>,
                      %wd: tensor<64x256xf16>) -> tensor<16x64xf32> {
  %z = arith.constant 0.0 : f16
  %z32 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16x256xf16>
  %a = linalg.fill ins(%z : f16) outs(%e : tensor<16x256xf16>) -> tensor<16x256xf16>
  %g = linalg.matmul indexing_maps = [#mk, #nk, #mn]
      ins(%x, %wu : tensor<16x64xf16>, tensor<256x64xf16>) outs(%a : tensor<16x256xf16>) -> tensor<16x256xf16>
  %h = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%g : tensor<16x256xf16>) outs(%e : tensor<16x256xf16>) {
  ^bb0(%v: f16, %o: f16):
    %r = arith.maximumf %v, %z : f16
    linalg.yield %r : f16
  } -> tensor<16x256xf16>
  %e2 = tensor.empty() : tensor<16x64xf32>
  %a2 = linalg.fill ins(%z32 : f32) outs(%e2 : tensor<16x64xf32>) -> tensor<16x64xf32>
  // expected-remark @+1 {{the down projection's result is 'f32', not the activations' 'f16' (sgpu.twell_ffn takes and returns one 16-bit type)}}
  %y = linalg.matmul indexing_maps = [#mk, #nk, #mn]
      ins(%h, %wd : tensor<16x256xf16>, tensor<64x256xf16>) outs(%a2 : tensor<16x64xf32>) -> tensor<16x64xf32>
  return %y : tensor<16x64xf32>
}

// -----

#mk = affine_map<(m, n, k) -> (m, k)>
#nk = affine_map<(m, n, k) -> (n, k)>
#mn = affine_map<(m, n, k) -> (m, n)>
#id = affine_map<(i, j) -> (i, j)>

// Any F: F = 384 and F = 200 are not multiples of the tile 256; the last
// tile of a row is partial (no remark, the FFNs are rewritten).
// CHECK-LABEL: func @partial_tile
// CHECK: sgpu.twell_pack %{{.*}} {{.*}}: tensor<16x384xf16> -> !sgpu.twell<16x384xf16, #sgpu.twell<tile = 256, compression = 4>>
// CHECK: sgpu.twell_ffn
// CHECK: sgpu.twell_pack %{{.*}} {{.*}}: tensor<16x200xf16> -> !sgpu.twell<16x200xf16, #sgpu.twell<tile = 256, compression = 4>>
// CHECK: sgpu.twell_ffn
func.func @partial_tile(%x: tensor<16x64xf16>, %wu: tensor<384x64xf16>, %wd: tensor<64x384xf16>,
                    %wu2: tensor<200x64xf16>, %wd2: tensor<64x200xf16>) -> (tensor<16x64xf16>, tensor<16x64xf16>) {
  %z = arith.constant 0.0 : f16
  %e = tensor.empty() : tensor<16x384xf16>
  %a = linalg.fill ins(%z : f16) outs(%e : tensor<16x384xf16>) -> tensor<16x384xf16>
  %g = linalg.matmul indexing_maps = [#mk, #nk, #mn]
      ins(%x, %wu : tensor<16x64xf16>, tensor<384x64xf16>) outs(%a : tensor<16x384xf16>) -> tensor<16x384xf16>
  %h = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%g : tensor<16x384xf16>) outs(%e : tensor<16x384xf16>) {
  ^bb0(%v: f16, %o: f16):
    %r = arith.maximumf %v, %z : f16
    linalg.yield %r : f16
  } -> tensor<16x384xf16>
  %e2 = tensor.empty() : tensor<16x64xf16>
  %a2 = linalg.fill ins(%z : f16) outs(%e2 : tensor<16x64xf16>) -> tensor<16x64xf16>
  %y = linalg.matmul indexing_maps = [#mk, #nk, #mn]
      ins(%h, %wd : tensor<16x384xf16>, tensor<64x384xf16>) outs(%a2 : tensor<16x64xf16>) -> tensor<16x64xf16>
  %e3 = tensor.empty() : tensor<16x200xf16>
  %a3 = linalg.fill ins(%z : f16) outs(%e3 : tensor<16x200xf16>) -> tensor<16x200xf16>
  %g3 = linalg.matmul indexing_maps = [#mk, #nk, #mn]
      ins(%x, %wu2 : tensor<16x64xf16>, tensor<200x64xf16>) outs(%a3 : tensor<16x200xf16>) -> tensor<16x200xf16>
  %h3 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%g3 : tensor<16x200xf16>) outs(%e3 : tensor<16x200xf16>) {
  ^bb0(%v: f16, %o: f16):
    %r = arith.maximumf %v, %z : f16
    linalg.yield %r : f16
  } -> tensor<16x200xf16>
  %y3 = linalg.matmul indexing_maps = [#mk, #nk, #mn]
      ins(%h3, %wd2 : tensor<16x200xf16>, tensor<64x200xf16>) outs(%a2 : tensor<16x64xf16>) -> tensor<16x64xf16>
  return %y, %y3 : tensor<16x64xf16>, tensor<16x64xf16>
}

// -----

#mk = affine_map<(m, n, k) -> (m, k)>
#nk = affine_map<(m, n, k) -> (n, k)>
#mn = affine_map<(m, n, k) -> (m, n)>
#id = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (j)>

// A gated FFN whose up projection has a bias: the consumer computes
// X[m] . Wu[j] without one.
// CHECK-LABEL: func @up_bias
// CHECK-NOT: sgpu.twell
// CHECK: return
func.func @up_bias(%x: tensor<16x64xf16>, %wg: tensor<256x64xf16>, %wu: tensor<256x64xf16>,
                   %bu: tensor<256xf16>, %wd: tensor<64x256xf16>) -> tensor<16x64xf16> {
  %z = arith.constant 0.0 : f16
  %e = tensor.empty() : tensor<16x256xf16>
  %a = linalg.fill ins(%z : f16) outs(%e : tensor<16x256xf16>) -> tensor<16x256xf16>
  %g = linalg.matmul indexing_maps = [#mk, #nk, #mn]
      ins(%x, %wg : tensor<16x64xf16>, tensor<256x64xf16>) outs(%a : tensor<16x256xf16>) -> tensor<16x256xf16>
  %h = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%g : tensor<16x256xf16>) outs(%e : tensor<16x256xf16>) {
  ^bb0(%v: f16, %o: f16):
    %r = arith.maximumf %v, %z : f16
    linalg.yield %r : f16
  } -> tensor<16x256xf16>
  %u = linalg.matmul indexing_maps = [#mk, #nk, #mn]
      ins(%x, %wu : tensor<16x64xf16>, tensor<256x64xf16>) outs(%a : tensor<16x256xf16>) -> tensor<16x256xf16>
  %ub = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%u, %bu : tensor<16x256xf16>, tensor<256xf16>) outs(%e : tensor<16x256xf16>) {
  ^bb0(%p: f16, %q: f16, %o: f16):
    %r = arith.addf %p, %q : f16
    linalg.yield %r : f16
  } -> tensor<16x256xf16>
  %hu = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%h, %ub : tensor<16x256xf16>, tensor<16x256xf16>) outs(%e : tensor<16x256xf16>) {
  ^bb0(%p: f16, %q: f16, %o: f16):
    %r = arith.mulf %p, %q : f16
    linalg.yield %r : f16
  } -> tensor<16x256xf16>
  %e2 = tensor.empty() : tensor<16x64xf16>
  %a2 = linalg.fill ins(%z : f16) outs(%e2 : tensor<16x64xf16>) -> tensor<16x64xf16>
  // expected-remark @+1 {{the factor beside relu(X Wg^T) is not an up projection X Wu^T}}
  %y = linalg.matmul indexing_maps = [#mk, #nk, #mn]
      ins(%hu, %wd : tensor<16x256xf16>, tensor<64x256xf16>) outs(%a2 : tensor<16x64xf16>) -> tensor<16x64xf16>
  return %y : tensor<16x64xf16>
}

//--- bad-fallback.mlir
// expected-error @below {{unknown sgpu-sparsify-ffn fallback 'sparse'; expected dense}}
module {
}

//--- bad-tile.mlir
// expected-error @below {{invalid sgpu-sparsify-ffn options: TwELL tile width must be a power of two in [16, 65536] (tile-local 16-bit column indices), got 100}}
module {
}

//--- bad-compression.mlir
// expected-error @below {{invalid sgpu-sparsify-ffn options: TwELL compression factor must be 2, 4 or 8, got 3}}
module {
}
