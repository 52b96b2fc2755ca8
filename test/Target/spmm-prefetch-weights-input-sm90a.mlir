// A weight given as run inputs (sgpu.assemble of arguments) may change
// between runs, so its sm_90a spmm kernel waits for the kernel before it at
// its entry (sgpu-programmatic-launch), before any load; the launch is
// still `pdl` (spmm-prefetch-weights-sm90a.mlir: a prepared weight).
// RUN: rm -rf %t && sparse-opt %s --sgpu-compile="split-k=1 output-dir=%t" -o /dev/null
// RUN: FileCheck %s --check-prefix=PROGRAM < %t/program.txt
// RUN: FileCheck %s --check-prefix=PTX < %t/kernels.ptx

// PROGRAM: launch sgpu_spmm_0 grid {{.*}} pdl args
// PTX-LABEL: .entry sgpu_spmm_0(
// PTX-NOT: cp.async.bulk.tensor
// PTX-NOT: prefetch.tensormap
// PTX: griddepcontrol.wait;
// PTX-NEXT: griddepcontrol.launch_dependents;
// PTX-NOT: griddepcontrol
// PTX: ret;
func.func @forward(%x: tensor<64x256xbf16>, %v: tensor<256x128xbf16>, %m: tensor<2048xi32>) -> tensor<64x256xbf16> {
  %w = sgpu.assemble %v, %m : tensor<256x128xbf16>, tensor<2048xi32> -> !sgpu.compressed<256x256xbf16, #sgpu.nm<2:4>>
  %y = sgpu.spmm %x, %w : tensor<64x256xbf16>, !sgpu.compressed<256x256xbf16, #sgpu.nm<2:4>> -> tensor<64x256xbf16>
  return %y : tensor<64x256xbf16>
}
