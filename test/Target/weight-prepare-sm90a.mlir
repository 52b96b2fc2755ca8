// The prepare kernels of weight arguments (2:4 and 8:10, bf16) assemble
// with ptxas, with their atomics: the status word's max and the metadata
// nibbles' OR.
// REQUIRES: ptxas
// RUN: rm -rf %t && sparse-opt %s --sgpu-compile="sparse-policy=sparse output-dir=%t" -o /dev/null
// RUN: FileCheck %s --check-prefix=PTX < %t/kernels.ptx
// RUN: %ptxas -arch=sm_90a -v %t/kernels.ptx -o %t/kernels.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS

// PTX-LABEL: .visible .entry sgpu_prepare_0(
// PTX: atom.global.max.s32
// PTX: atom.global.or.b32
// PTX-LABEL: .visible .entry sgpu_prepare_1(
// PTX: atom.global.max.s32
// PTX: atom.global.or.b32
// PTXAS-DAG: Compiling entry function 'sgpu_prepare_0' for 'sm_90a'
// PTXAS-DAG: Compiling entry function 'sgpu_prepare_1' for 'sm_90a'
func.func @layers(%x: tensor<16x64xbf16>, %w1: tensor<64x64xbf16, #sgpu.nm<2:4>>,
                  %w2: tensor<32x64xbf16, #sgpu.nm<8:10>>) -> tensor<16x32xbf16> {
  %z = arith.constant 0.0 : bf16
  %e1 = tensor.empty() : tensor<16x64xbf16>
  %a1 = linalg.fill ins(%z : bf16) outs(%e1 : tensor<16x64xbf16>) -> tensor<16x64xbf16>
  %h = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>,
                                      affine_map<(m, n, k) -> (n, k)>,
                                      affine_map<(m, n, k) -> (m, n)>]
      ins(%x, %w1 : tensor<16x64xbf16>, tensor<64x64xbf16, #sgpu.nm<2:4>>)
      outs(%a1 : tensor<16x64xbf16>) -> tensor<16x64xbf16>
  %e2 = tensor.empty() : tensor<16x32xbf16>
  %a2 = linalg.fill ins(%z : bf16) outs(%e2 : tensor<16x32xbf16>) -> tensor<16x32xbf16>
  %y = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>,
                                      affine_map<(m, n, k) -> (n, k)>,
                                      affine_map<(m, n, k) -> (m, n)>]
      ins(%h, %w2 : tensor<16x64xbf16>, tensor<32x64xbf16, #sgpu.nm<8:10>>)
      outs(%a2 : tensor<16x32xbf16>) -> tensor<16x32xbf16>
  return %y : tensor<16x32xbf16>
}
