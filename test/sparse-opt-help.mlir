// The driver lists the project's passes and pipelines with their summaries.
// RUN: sparse-opt --help | FileCheck %s
// CHECK: SparseOpt: an MLIR compiler for sparse and communication-aware transformer inference
// CHECK-DAG: --convert-sgpu-to-gpu {{.*}}- Generate GPU kernels (sparse tensor cores, norms, TwELL, element-wise ops) and their host launches for sgpu and element-wise linalg ops
// CHECK-DAG: --convert-sgpu-to-loops {{.*}}- Lower sgpu ops to reference scf loops
// CHECK-DAG: --sgpu-compile {{.*}}- Compile input IR to PTX kernels plus a runtime program
// CHECK-DAG: --sgpu-emit-artifacts {{.*}}- Write the PTX, constants and the runtime program of a compiled module
// CHECK-DAG: --sgpu-async-collectives {{.*}}- Split all-reduces into start/wait and sink each wait to the first use
// CHECK-DAG: --sgpu-ladder-residual {{.*}}- Rewrite the tensor-parallel residual chain into ladder form (changes the model)
// CHECK-DAG: --sgpu-dense-matmul {{.*}}- Rewrite dense linear-layer matmuls into sgpu.matmul (library GEMMs)
// CHECK-DAG: --sgpu-fuse-epilogue {{.*}}- Fuse a bias add and a ReLU that follow sgpu.spmm or sgpu.matmul into its epilogue
// CHECK-DAG: --sgpu-fuse-elementwise {{.*}}- Fuse chains of element-wise linalg.generic ops into one op (one kernel)
// CHECK-DAG: --sgpu-fold-unit-transposes {{.*}}- Rewrite transposes that only move size-1 dimensions as reshapes
// CHECK-DAG: --sgpu-reference {{.*}}- Lower input IR through the CPU reference loops to the LLVM dialect
// CHECK-DAG: --sgpu-sparsify-ffn {{.*}}- Rewrite ReLU FFNs into TwELL packing plus a sparse consumer over the active neurons
// CHECK-DAG: --sgpu-slide-sparse {{.*}}- Rewrite matmuls with N:M-sparse weights into sgpu sparse matmuls
// CHECK-DAG: --sgpu-tensor-map-params {{.*}}- Make the tensor map arguments of lowered kernels by-value grid-constant parameters
