// The sm_90a TMA spmm kernel's epilogues on the GPU through the runtime:
// the TMA-store one (128-, 64- and 16-token staging boxes, a box entirely
// past M, M and N tails, bias and ReLU) and the register one on the same
// shapes, against numpy within one rounding of the output
// (check_spmm_epilogue.py lists the cases).
// REQUIRES: gpu
// RUN: rm -rf %t && mkdir -p %t
// RUN: %python %S/check_spmm_epilogue.py %sparse_opt_lib %t --compile %sparse_opt_bin/sparse-opt | FileCheck %s
// CHECK-COUNT-7: : ok
// CHECK: cases 7 failed 0
