// The cost model's "one wave" is the device's multiprocessor count: 124
// blocks of 128 weight rows are one wave on an H200 (132 multiprocessors,
// the sm_90a reference part), where 6:8 at 16 tokens keeps the sparse
// kernel, and two on an H100 PCIe (114), where it goes to the library GEMM.
// RUN: sparse-opt %s --sgpu-slide-sparse -mlir-elide-elementsattrs-if-larger=4 | FileCheck %s --check-prefix=H200
// RUN: sparse-opt %s --sgpu-slide-sparse="device=h100-pcie" -mlir-elide-elementsattrs-if-larger=4 2>&1 | FileCheck %s --check-prefix=PCIE
// RUN: not sparse-opt %s --sgpu-slide-sparse="device=h300" 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not sparse-opt %s --sgpu-slide-sparse="chip=sm_80 device=h200" 2>&1 | FileCheck %s --check-prefix=FOREIGN
// The compile pipeline passes the device to both passes.
// RUN: sparse-opt %s --sgpu-compile="device=h100-pcie" 2>&1 | FileCheck %s --check-prefix=PCIE

// H200: sgpu.spmm
// H200-NOT: sgpu.matmul
// PCIE: remark: kept dense (library GEMM) instead of the #sgpu.nm<6:8> sparse kernel: {{.*}}(6:8: 57 to 114 blocks){{.*}}(M = 16, 124 blocks of 128 weight rows)
// BAD: error: invalid sgpu-slide-sparse device: unknown device 'h300' (known: h200, h100-sxm, h100-pcie, a100)
// FOREIGN: error: invalid sgpu-slide-sparse device: device 'h200' is an sm_90 part, not sm_80
func.func @one_wave_68(%x: tensor<16x4096xf16>) -> tensor<16x15872xf16> {
  %w = arith.constant dense<0.0> : tensor<15872x4096xf16, #sgpu.nm<6:8>>
  %z = arith.constant 0.0 : f16
  %e = tensor.empty() : tensor<16x15872xf16>
  %acc = linalg.fill ins(%z : f16) outs(%e : tensor<16x15872xf16>) -> tensor<16x15872xf16>
  %y = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>,
                                      affine_map<(m, n, k) -> (n, k)>,
                                      affine_map<(m, n, k) -> (m, n)>]
      ins(%x, %w : tensor<16x4096xf16>, tensor<15872x4096xf16, #sgpu.nm<6:8>>)
      outs(%acc : tensor<16x15872xf16>) -> tensor<16x15872xf16>
  return %y : tensor<16x15872xf16>
}
