// A sparse weight that is a function argument is compressed on the GPU by a
// generated kernel of the program's prepare stage (run once, when the
// runtime binds the weight as a param), with a status word that the
// program's `check` line turns into an error naming the row and group.
// RUN: sparse-opt %s -split-input-file --sgpu-slide-sparse="policy=sparse" -convert-sgpu-to-gpu | FileCheck %s
// RUN: rm -rf %t && mkdir -p %t && sparse-opt %s --sgpu-compile="sparse-policy=sparse output-dir=%t/a" -o /dev/null
// RUN: FileCheck %s --check-prefix=PROGRAM < %t/a/program.txt
// RUN: FileCheck %s --check-prefix=SIG < %t/a/signature.json

// CHECK-LABEL: func.func @linear_68
// CHECK-SAME: %[[X:.*]]: tensor<16x64xf16>, %[[W:.*]]: tensor<48x64xf16, #sgpu.nm<6:8>>
// CHECK: %[[WB:.*]] = bufferization.to_buffer %[[W]] read_only : tensor<48x64xf16, #sgpu.nm<6:8>> to memref<48x64xf16>
// CHECK: %[[V:.*]] = memref.alloc() : memref<48x48xf16>
// CHECK: %[[E:.*]] = memref.alloc() : memref<144xi32>
// CHECK: %[[S:.*]] = memref.alloc() : memref<1xi32>
// One thread per (row, group of 8 columns): 48 x 8 threads, two blocks.
// CHECK: gpu.launch_func @sgpu_kernels::@sgpu_prepare_0 {{.*}} args(%[[WB]] : memref<48x64xf16>, %[[V]] : memref<48x48xf16>, %[[E]] : memref<144xi32>, %[[S]] : memref<1xi32>) {sgpu.stage = "prepare"}
// CHECK: sgpu.weight_check %[[S]] for %[[WB]] {groups = 8 : i64, pattern = #sgpu.nm<6:8>} : memref<1xi32>, memref<48x64xf16>
// CHECK-DAG: bufferization.to_tensor %[[V]] restrict
// CHECK-DAG: bufferization.to_tensor %[[E]] restrict
// CHECK: gpu.launch_func @sgpu_kernels::@sgpu_spmm_0
// The kernel: the violation report (an atomic max of 2^31-1 - (n*8 + g)),
// the greedy window assignment and, per window, two value stores and an
// atomic OR of the nibble.
// CHECK: gpu.func @sgpu_prepare_0(%{{.*}}: memref<48x64xf16>, %{{.*}}: memref<48x48xf16>, %{{.*}}: memref<144xi32>, %{{.*}}: memref<1xi32>) kernel
// CHECK: arith.bitcast %{{.*}} : f16 to i16
// CHECK: arith.cmpi ugt, %{{.*}}, %c6_i32 : i32
// CHECK: memref.atomic_rmw maxs
// CHECK-COUNT-3: memref.atomic_rmw ori
// CHECK-NOT: memref.atomic_rmw
// CHECK: gpu.return

// The program: the weight is param 0, its kernel and check the prepare
// stage; the spmm runs at every call. The weight is in the tiled window
// order (K' = 96 per 64 columns), so the sm_90a kernel lifts X in its own
// operand loads: no lift kernel, X's tensor map is the [16, 64] input
// itself, and the values have a second map for the gathered step.
// PROGRAM: buffer 0 input 0 2048
// PROGRAM-NEXT: buffer 1 param 0 6144
// PROGRAM: stage prepare
// PROGRAM-NEXT: launch sgpu_prepare_0 grid 2 1 1 block 256 1 1 smem 0 args b1 b2 b3 b4
// PROGRAM-NEXT: check b4 param 0 pattern 6:8 groups 8
// PROGRAM-NEXT: stage run
// PROGRAM-NEXT: launch sgpu_spmm_0 grid 1 1 1 block 384 1 1 smem {{[0-9]+}} pdl args tmap:b0:f16:16x64:16x64:128 tmap:b2:f16:48x48:128x32:64 tmap:b2:f16:48x48:128x16:32 tmap:b3:i32:3x48:8x48:0 tmap:b5:f16:16x48:16x64:128
// PROGRAM-NOT: launch
// SIG: "params":[1]
func.func @linear_68(%x: tensor<16x64xf16>, %w: tensor<48x64xf16, #sgpu.nm<6:8>>) -> tensor<16x48xf16> {
  %z = arith.constant 0.0 : f16
  %e = tensor.empty() : tensor<16x48xf16>
  %acc = linalg.fill ins(%z : f16) outs(%e : tensor<16x48xf16>) -> tensor<16x48xf16>
  %y = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>,
                                      affine_map<(m, n, k) -> (n, k)>,
                                      affine_map<(m, n, k) -> (m, n)>]
      ins(%x, %w : tensor<16x64xf16>, tensor<48x64xf16, #sgpu.nm<6:8>>)
      outs(%acc : tensor<16x48xf16>) -> tensor<16x48xf16>
  return %y : tensor<16x48xf16>
}

// -----

// 2:4 (one window per group of 4), bf16, with a bias (private: the
// program above is the module's entry when compiled whole).
// CHECK-LABEL: func.func private @linear_24
// CHECK: gpu.launch_func @sgpu_kernels::@sgpu_prepare_0 {{.*}} {sgpu.stage = "prepare"}
// CHECK: sgpu.weight_check %{{.*}} for %{{.*}} {groups = 16 : i64, pattern = #sgpu.nm<2:4>}
// CHECK: gpu.func @sgpu_prepare_0
// CHECK: arith.cmpi ugt, %{{.*}}, %c2_i32 : i32
// CHECK-COUNT-1: memref.atomic_rmw ori
func.func private @linear_24(%x: tensor<8x64xbf16>, %w: tensor<32x64xbf16, #sgpu.nm<2:4>>, %b: tensor<32xbf16>) -> tensor<8x32xbf16> {
  %z = arith.constant 0.0 : bf16
  %e = tensor.empty() : tensor<8x32xbf16>
  %acc = linalg.fill ins(%z : bf16) outs(%e : tensor<8x32xbf16>) -> tensor<8x32xbf16>
  %y = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>,
                                      affine_map<(m, n, k) -> (n, k)>,
                                      affine_map<(m, n, k) -> (m, n)>]
      ins(%x, %w : tensor<8x64xbf16>, tensor<32x64xbf16, #sgpu.nm<2:4>>)
      outs(%acc : tensor<8x32xbf16>) -> tensor<8x32xbf16>
  %eb = tensor.empty() : tensor<8x32xbf16>
  %yb = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (i, j)>],
                        iterator_types = ["parallel", "parallel"]}
      ins(%y, %b : tensor<8x32xbf16>, tensor<32xbf16>) outs(%eb : tensor<8x32xbf16>) {
  ^bb0(%a: bf16, %c: bf16, %o: bf16):
    %s = arith.addf %a, %c : bf16
    linalg.yield %s : bf16
  } -> tensor<8x32xbf16>
  return %yb : tensor<8x32xbf16>
}
