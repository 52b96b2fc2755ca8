// TwELL FFNs (ungated and gated, f16 and bf16) through sgpu-sparsify-ffn and
// the whole pipeline: the program clears the fallback-row count, packs the
// ReLU output (one block per row: 64 rows, F = 1024 in 4 tiles of 256, one
// warp per tile) and runs the consumer (one block per token, 256 threads
// over d = 256), and ptxas assembles every kernel for sm_90a. The small
// FFNs of the CPU end-to-end test compile to a program too.
// REQUIRES: ptxas
// RUN: rm -rf %t && mkdir -p %t
// RUN: sparse-opt %S/Inputs/twell-ffn-ungated-f16.mlir --sgpu-sparsify-ffn="tile=256 compression=4" --sgpu-compile="output-dir=%t/uf16" -o /dev/null
// RUN: FileCheck %s --check-prefix=PROGRAM < %t/uf16/program.txt
// RUN: %ptxas -arch=sm_90a -v %t/uf16/kernels.ptx -o %t/uf16.cubin 2>&1 | FileCheck %s --check-prefix=SM90A
// RUN: sparse-opt %S/Inputs/twell-ffn-ungated-bf16.mlir --sgpu-sparsify-ffn="tile=256 compression=4" --sgpu-compile="output-dir=%t/ubf16" -o /dev/null
// RUN: FileCheck %s --check-prefix=PROGRAM < %t/ubf16/program.txt
// RUN: %ptxas -arch=sm_90a -v %t/ubf16/kernels.ptx -o %t/ubf16.cubin 2>&1 | FileCheck %s --check-prefix=SM90A
// RUN: sparse-opt %S/Inputs/twell-ffn-gated-f16.mlir --sgpu-sparsify-ffn="tile=256 compression=4" --sgpu-compile="output-dir=%t/gf16" -o /dev/null
// RUN: FileCheck %s --check-prefix=PROGRAM < %t/gf16/program.txt
// RUN: %ptxas -arch=sm_90a -v %t/gf16/kernels.ptx -o %t/gf16.cubin 2>&1 | FileCheck %s --check-prefix=SM90A
// RUN: sparse-opt %S/Inputs/twell-ffn-gated-bf16.mlir --sgpu-sparsify-ffn="tile=256 compression=4" --sgpu-compile="output-dir=%t/gbf16" -o /dev/null
// RUN: FileCheck %s --check-prefix=PROGRAM < %t/gbf16/program.txt
// RUN: %ptxas -arch=sm_90a -v %t/gbf16/kernels.ptx -o %t/gbf16.cubin 2>&1 | FileCheck %s --check-prefix=SM90A

// PROGRAM: launch sgpu_twell_clear_0 grid 1 1 1 block 1 1 1 smem 0 args [[ROWS:b[0-9]+]]
// PROGRAM: launch sgpu_twell_pack_0 grid 64 1 1 block 128 1 1 smem 0 args {{.*}} [[ROWS]]
// PROGRAM: launch sgpu_twell_ffn_0 grid 64 1 1 block 256 1 1 smem 0 args
// PROGRAM-NOT: error

// SM90A-DAG: Compiling entry function 'sgpu_twell_clear_0' for 'sm_90a'
// SM90A-DAG: Compiling entry function 'sgpu_twell_pack_0' for 'sm_90a'
// SM90A-DAG: Compiling entry function 'sgpu_twell_ffn_0' for 'sm_90a'
