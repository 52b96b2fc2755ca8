// Prefill attention through cuDNN's fused attention (the runtime's
// `attention` line: causal and full, grouped-query and plain heads), the
// residual add fused into the RMS norm (sgpu.add_rms_norm, both of its
// kernel's forms), RoPE, and an attention block whose transposes fold into
// the library call (layout=bshd), run on the GPU through the runtime, match numpy
// (check_model_ops.py lists the cases and the bounds).
// REQUIRES: gpu
// RUN: rm -rf %t && mkdir -p %t
// RUN: %python %S/check_model_ops.py %sparse_opt_lib %t --compile %sparse_opt_bin/sparse-opt | FileCheck %s
// CHECK-COUNT-8: : ok
// CHECK: cases 8 failed 0
