//===- SGPUDialect.td - the sgpu dialect -------------------*- tablegen -*-===//
//
// The sgpu dialect carries sparse and communication-aware tensor operations
// between the graph-level rewrites (which recognize patterns in linalg IR) and
// the lowerings that generate GPU kernels or CPU reference loops.
//
//===----------------------------------------------------------------------===//

#ifndef SPARSEOPT_DIALECT_SGPU_SGPUDIALECT_TD
#define SPARSEOPT_DIALECT_SGPU_SGPUDIALECT_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"

def SGPU_Dialect : Dialect {
  let name = "sgpu";
  let cppNamespace = "::mlir::sgpu";
  let summary = "Sparse and communication-aware transformer ops for NVIDIA GPUs";
  let description = [{
    The `sgpu` dialect holds the operations that SparseOpt's rewrites produce
    and its lowerings consume:

    * structured weight sparsity: `#sgpu.nm<M:G>` (2:4 and the (2N-2):2N
      family), compressed 2:4 weights (`!sgpu.compressed`), the N:M
      decomposition into overlapping 2:4 windows and the matching activation
      lift, and the 2:4 sparse matrix multiply that runs on sparse tensor
      cores;
    * TwELL activation sparsity: packed ReLU activations (`!sgpu.twell`) and
      the sparse FFN consumer;
    * tensor-parallel collectives: `sgpu.all_reduce` and its asynchronous
      split `sgpu.all_reduce_start` / `sgpu.all_reduce_wait`.

    All compute ops have value (tensor) semantics. `convert-sgpu-to-loops`
    defines their reference semantics as plain loops; `convert-sgpu-to-gpu`
    generates GPU kernels for them.
  }];
  let dependentDialects = ["::mlir::tensor::TensorDialect"];
  let useDefaultAttributePrinterParser = 1;
  let useDefaultTypePrinterParser = 1;
  let hasOperationAttrVerify = 1;
  let extraClassDeclaration = [{
    /// Module attribute: the model is ladder-trained; the last K layers may
    /// be rewritten by sgpu-ladder-residual.
    static constexpr ::llvm::StringLiteral kLadderLayersAttr = "sgpu.ladder_layers";
    /// Module attribute: TwELL packing options (#sgpu.twell<...>).
    static constexpr ::llvm::StringLiteral kTwellAttr = "sgpu.twell";
  }];
}

#endif // SPARSEOPT_DIALECT_SGPU_SGPUDIALECT_TD
