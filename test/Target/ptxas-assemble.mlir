// The generated PTX assembles with the CUDA toolkit's ptxas for the chip it
// targets, without spills. Unsupported where ptxas is absent.
// REQUIRES: ptxas
// RUN: rm -rf %t && mkdir -p %t
// RUN: sparse-opt %S/spmm-f16-sm90a.mlir --sgpu-compile="output-dir=%t/f16" -o /dev/null
// RUN: %ptxas -arch=sm_90a -v %t/f16/kernels.ptx -o %t/f16.cubin 2>&1 | FileCheck %s --check-prefix=SM90A
// RUN: sparse-opt %S/spmm-bf16-sm80.mlir --sgpu-compile="chip=sm_80 features=+ptx86 output-dir=%t/bf16" -o /dev/null
// RUN: %ptxas -arch=sm_80 -v %t/bf16/kernels.ptx -o %t/bf16.cubin 2>&1 | FileCheck %s --check-prefix=SM80
// RUN: sparse-opt %sparse_opt_src/examples/linear_relu_24.mlir --sgpu-compile="output-dir=%t/example" -o /dev/null
// RUN: %ptxas -arch=sm_90a -v %t/example/kernels.ptx -o %t/example.cubin 2>&1 | FileCheck %s --check-prefix=SM90A

// SM90A: Compiling entry function 'sgpu_spmm_0' for 'sm_90a'
// SM90A: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// SM80: Compiling entry function 'sgpu_spmm_0' for 'sm_80'
// SM80: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
