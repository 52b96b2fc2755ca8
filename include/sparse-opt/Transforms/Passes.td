//===- Passes.td - SparseOpt graph rewrites ----------------*- tablegen -*-===//

#ifndef SPARSEOPT_TRANSFORMS_PASSES_TD
#define SPARSEOPT_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def SGPUSlideSparse : Pass<"sgpu-slide-sparse", "::mlir::ModuleOp"> {
  let summary = "Rewrite matmuls with N:M-sparse weights into sgpu sparse matmuls";
  let description = [{
    Finds `linalg.matmul` ops computing `Y = X . W^T` whose weight operand's
    type carries a structured-sparsity encoding (`#sgpu.nm<2:4>` or the
    `sparse_tensor` 2:4 synonym) and rewrites them into `sgpu.spmm` on a
    compressed weight. Both import forms are recognized: the weight as an
    `N x K` operand with transposing `indexing_maps`, and a `K x N` operand
    produced by `linalg.transpose` of the `N x K` weight.

    A weight that is a constant is checked and compressed at compile time
    (`sgpu.assemble` of two constants); a pattern violation is an error
    naming the first row and group that break it. Other weights are
    compressed by `sgpu.compress`.

    The accumulator of the matmul must be a zero fill (a matmul that adds to
    an existing value is left alone, with a remark). Weights declaring a
    (2N-2):2N pattern other than 2:4 are reported as not yet lowered.

    Bufferization drops tensor encodings, so every structured-sparsity
    encoding must be consumed here: one left on a value that is not a
    recognized matmul weight is an error.
  }];
  let dependentDialects = ["::mlir::sgpu::SGPUDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::tensor::TensorDialect"];
}

def SGPUFuseActivation : Pass<"sgpu-fuse-activation", "::mlir::ModuleOp"> {
  let summary = "Fuse element-wise ReLU consumers into the epilogue of sgpu.spmm";
  let description = [{
    A `linalg.generic` (or named `linalg.max` against zero) that applies
    `max(x, 0)` element-wise to the only use of an `sgpu.spmm` result is
    folded into the spmm's `activation = #sgpu.activation<relu>` epilogue.
    The ReLU is recognized as `arith.maximumf`/`arith.maxnumf` with a zero
    constant, or `arith.cmpf` + `arith.select` against zero.
  }];
  let dependentDialects = ["::mlir::sgpu::SGPUDialect"];
}

def SGPUEmitArtifacts : Pass<"sgpu-emit-artifacts", "::mlir::ModuleOp"> {
  let summary = "Write the PTX, constants and the runtime program of a compiled module";
  let description = [{
    Runs last in `sgpu-compile`. Expects one host function whose body only
    uses buffers (function arguments, `memref.get_global` constants,
    `memref.alloc`) and `gpu.launch_func` with constant launch sizes, and a
    `gpu.binary` holding PTX. Writes into `output-dir`:

    * `kernels.ptx`: the PTX of every generated kernel;
    * `const<N>.bin`: the raw bytes of each constant buffer;
    * `program.txt`: the program the runtime executes (`sparseopt-program 1`:
      buffers and launches, documented in docs/runtime.md).

    Any other host operation is an error at its location: it would not run.
  }];
  let options = [
    Option<"outputDir", "output-dir", "std::string", /*default=*/"\"\"",
           "Directory to write kernels.ptx, program.txt and constants to">,
    Option<"entry", "entry", "std::string", /*default=*/"\"\"",
           "Host function to export (default: the only public function)">,
  ];
}

#endif // SPARSEOPT_TRANSFORMS_PASSES_TD
