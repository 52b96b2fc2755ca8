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
      split `sgpu.all_reduce_start` / `sgpu.all_reduce_wait`;
    * kernel parameters: `sgpu.tensor_map`, a TMA tensor map that the host
      passes to a kernel by value.

    All compute ops have value (tensor) semantics. `convert-sgpu-to-loops`
    defines their reference semantics as plain loops; `convert-sgpu-to-gpu`
    generates GPU kernels for them.

    Discardable attributes, checked by the dialect:

    * `sgpu.ladder_layers` (module, positive integer): the model is
      ladder-trained; the last K layers may be rewritten.
    * `sgpu.twell` (module, `#sgpu.twell<tile = T, compression = C>`): TwELL
      packing options.
    * `sgpu.tensor_map_args` (kernel function, `array<i64>` of distinct
      non-negative argument indices): the kernel's arguments that receive an
      `sgpu.tensor_map`, each an `!llvm.ptr`. `sgpu-tensor-map-params` checks
      the indices against the signature of the lowered `llvm.func` and turns
      those arguments into by-value `__grid_constant__` parameters.
    * `sgpu.ladder_block` (unit, on a residual add): the block that feeds
      this add reads the residual stream one block stale (ladder form);
      `sgpu-ladder-residual` sets it and leaves marked chains alone.
    * `sgpu.stage` (`gpu.launch_func`, the string `"prepare"`): the launch
      belongs to the program's prepare stage, run once when the runtime
      binds the program's params (weights compressed on the GPU), not at
      every run. `sgpu-emit-artifacts` writes it under `stage prepare`.
    * `sgpu.config` (op): the lowering's choices for the op. On
      `sgpu.spmm`, `sgpu.twell_pack` and `sgpu.twell_ffn` it is typed
      (`#sgpu.spmm_config`, `#sgpu.twell_pack_config`,
      `#sgpu.twell_ffn_config`, recorded by `sgpu-select-kernels`); on the
      model-block ops (`sgpu.attention`, ...) a dictionary whose absent keys
      take the pattern's defaults. A typed configuration on another op is
      an error.
    * `sgpu.replicated` (unit, on a function argument): the argument holds
      the same value on every rank of the tensor-parallel group (an
      embedding, a norm weight), as opposed to a per-rank shard.
      `sgpu-simulate-ranks` passes it once instead of once per rank.
  }];
  let dependentDialects = ["::mlir::tensor::TensorDialect",
                           "::mlir::LLVM::LLVMDialect"];
  let useDefaultAttributePrinterParser = 1;
  let useDefaultTypePrinterParser = 1;
  let hasOperationAttrVerify = 1;
  let hasRegionArgAttrVerify = 1;
  let extraClassDeclaration = [{
    /// Module attribute: the model is ladder-trained; the last K layers may
    /// be rewritten by sgpu-ladder-residual.
    static constexpr ::llvm::StringLiteral kLadderLayersAttr = "sgpu.ladder_layers";
    /// Module attribute: TwELL packing options (#sgpu.twell<...>).
    static constexpr ::llvm::StringLiteral kTwellAttr = "sgpu.twell";
    /// Kernel function attribute: indices of the arguments that are tensor
    /// maps (array<i64>), consumed by sgpu-tensor-map-params.
    static constexpr ::llvm::StringLiteral kTensorMapArgsAttr =
        "sgpu.tensor_map_args";
    /// Residual-add attribute (unit): the add's block is in ladder form.
    static constexpr ::llvm::StringLiteral kLadderBlockAttr = "sgpu.ladder_block";
    /// Function argument attribute (string): the argument is a weight the
    /// caller binds once, as a program param, under this qualified name
    /// (e.g. "layers.0.attn.q.weight"); the importers set it.
    static constexpr ::llvm::StringLiteral kParamAttr = "sgpu.param";
    /// Function argument attribute (unit, beside sgpu.param): the param is
    /// state the program updates in place (a KV cache), kept by the caller
    /// between runs and shared by the programs bound to it.
    static constexpr ::llvm::StringLiteral kStateAttr = "sgpu.state";
    /// Op attribute: a lowering's choices for this op, typed on sgpu.spmm
    /// and the TwELL ops (#sgpu.spmm_config, ...), else a dictionary (e.g.
    /// sgpu.attention: kernel = "auto" | "cuda-cores" | "tensor-cores",
    /// rows_per_block = N) whose absent keys take the pattern's defaults.
    static constexpr ::llvm::StringLiteral kConfigAttr = "sgpu.config";
    /// Launch attribute: the program stage of a gpu.launch_func ("prepare").
    static constexpr ::llvm::StringLiteral kStageAttr = "sgpu.stage";
    /// Launch attribute (array<i64: units, cluster, reserved>): the grid of
    /// a persistent kernel, sized when the program loads on its device:
    /// cluster * min(units, (multiprocessors - reserved) / cluster) blocks
    /// (at least one cluster). The launch's constant grid is that size on
    /// the compile's `device`; the kernel strides by the real grid.
    static constexpr ::llvm::StringLiteral kPersistentGridAttr =
        "sgpu.persistent_grid";
    /// Launch attribute (unit): the kernel waits for its predecessor itself
    /// (sgpu-programmatic-launch), so the runtime may launch it while that
    /// predecessor runs; written as `pdl` on the launch line.
    static constexpr ::llvm::StringLiteral kProgrammaticAttr =
        "sgpu.programmatic";
    /// Allocation attribute: the buffer (memref<Nxi32> or memref<Nxi64>) is
    /// a program stat, a counter the run steps leave in its first element,
    /// under this name ([A-Za-z0-9_.]+), readable after a run.
    static constexpr ::llvm::StringLiteral kStatAttr = "sgpu.stat";
    /// Allocation attribute (positive i64, with sgpu.stat): what the stat
    /// counts out of (the stat's value divided by it is a fraction).
    static constexpr ::llvm::StringLiteral kStatTotalAttr = "sgpu.stat_total";
    /// Allocation attribute (f64 in [0, 1], with sgpu.stat_total): the
    /// fraction of the total above which the program is expected to lose
    /// (a TwELL layer's break-even density), for run-time guards.
    static constexpr ::llvm::StringLiteral kStatLimitAttr = "sgpu.stat_limit";
    /// sgpu.twell_pack attribute (f64 in [0, 1]): the density above which
    /// sgpu-sparsify-ffn's cost model predicts the dense FFN to be faster.
    static constexpr ::llvm::StringLiteral kTwellBreakEvenAttr =
        "sgpu.twell_break_even";
    /// sgpu.twell_pack attribute ("cuda-cores" or "tensor-cores"): the
    /// consumer sgpu-sparsify-ffn's cost model chose for the layer's
    /// calibration density (convert-sgpu-to-gpu twell-consumer=auto).
    static constexpr ::llvm::StringLiteral kTwellConsumerAttr =
        "sgpu.twell_consumer";
    /// sgpu.twell_pack attribute (f64 in [0, 1]): the union fraction of the
    /// blocks of 64 rows above which the cost model predicts dense to beat
    /// the tensor-core consumer (the limit of its block_neurons stat).
    static constexpr ::llvm::StringLiteral kTwellUnionBreakEvenAttr =
        "sgpu.twell_union_break_even";
    /// Function argument attribute (unit): the same value on every rank.
    static constexpr ::llvm::StringLiteral kReplicatedAttr = "sgpu.replicated";
  }];
}

#endif // SPARSEOPT_DIALECT_SGPU_SGPUDIALECT_TD
