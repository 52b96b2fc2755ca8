// The generated lift kernel (LiftToGPU.cpp), run on the GPU through the
// runtime: every form (two chunks or one chunk per thread, the
// per-element fallback for an odd K), both window orders, chunks
// straddling K and groups past it, f16 and bf16, matches the formats
// library's lift bit for bit (check_lift.py lists the cases).
// REQUIRES: gpu
// RUN: rm -rf %t && mkdir -p %t
// RUN: %python %S/check_lift.py %sparse_opt_lib %t --compile %sparse_opt_bin/sparse-opt | FileCheck %s
// CHECK-COUNT-11: : ok
// CHECK: cases 11 failed 0
