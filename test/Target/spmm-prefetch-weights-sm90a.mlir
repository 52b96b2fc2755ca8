// The sm_90a spmm kernel of a weight that is the same at every run (a param
// compressed in the prepare stage) loads the weight's values and metadata
// of its first stages before it waits for the kernel before it; only X's
// loads follow the wait (spmm-prefetch-weights-input-sm90a.mlir: a weight
// given as run inputs).
// The default (programmatic-launch=true):
// RUN: rm -rf %t && sparse-opt %s --sgpu-compile="sparse-policy=sparse split-k=1 output-dir=%t" -o /dev/null
// RUN: FileCheck %s --check-prefix=PROGRAM < %t/program.txt
// RUN: FileCheck %s --check-prefix=PTX < %t/kernels.ptx
// RUN: %ptxas -arch=sm_90a %t/kernels.ptx -o %t/kernels.cubin
// With programmatic-launch=false: plain launches, no wait.
// RUN: rm -rf %t.off && sparse-opt %s --sgpu-compile="sparse-policy=sparse split-k=1 programmatic-launch=false output-dir=%t.off" -o /dev/null
// RUN: FileCheck %s --check-prefix=OFF < %t.off/program.txt
// RUN: FileCheck %s --check-prefix=OFF-PTX < %t.off/kernels.ptx

// K = 256: four k-tiles, all four prefetched (one tile per block).
// PROGRAM: stage run
// PROGRAM-NEXT: launch sgpu_spmm_0 grid {{.*}} pdl args
// PTX-LABEL: .entry sgpu_spmm_0(
// PTX-NOT: griddepcontrol
// PTX: prefetch.tensormap
// PTX-COUNT-8: cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes
// PTX-NOT: cp.async.bulk.tensor.2d.shared::cluster
// PTX: griddepcontrol.wait;
// PTX-NEXT: griddepcontrol.launch_dependents;
// PTX: cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes
// PTX-NOT: griddepcontrol
// PTX: ret;

// OFF: launch sgpu_spmm_0 grid {{.*}} smem {{[0-9]+}} args
// OFF-PTX-NOT: griddepcontrol
func.func @param_weight(%x: tensor<64x256xbf16>, %w: tensor<256x256xbf16, #sgpu.nm<2:4>>) -> tensor<64x256xbf16> {
  %z = arith.constant 0.0 : bf16
  %e = tensor.empty() : tensor<64x256xbf16>
  %acc = linalg.fill ins(%z : bf16) outs(%e : tensor<64x256xbf16>) -> tensor<64x256xbf16>
  %y = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>,
                                      affine_map<(m, n, k) -> (n, k)>,
                                      affine_map<(m, n, k) -> (m, n)>]
      ins(%x, %w : tensor<64x256xbf16>, tensor<256x256xbf16, #sgpu.nm<2:4>>)
      outs(%acc : tensor<64x256xbf16>) -> tensor<64x256xbf16>
  return %y : tensor<64x256xbf16>
}
