//===- Passes.td - SparseOpt graph rewrites ----------------*- tablegen -*-===//

#ifndef SPARSEOPT_TRANSFORMS_PASSES_TD
#define SPARSEOPT_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def SGPUSlideSparse : Pass<"sgpu-slide-sparse", "::mlir::ModuleOp"> {
  let summary = "Rewrite matmuls with N:M-sparse weights into sgpu sparse matmuls";
  let description = [{
    Finds `linalg.matmul` ops computing `Y = X . W^T` whose weight operand's
    type carries a structured-sparsity encoding (`#sgpu.nm<n:m>`, or the
    `sparse_tensor` 2:4 synonym) and rewrites them into `sgpu.spmm` on a
    compressed weight. Both import forms are recognized: the weight as an
    `N x K` operand with transposing `indexing_maps`, and a `K x N` operand
    produced by `linalg.transpose` of the `N x K` weight.

    A 2:4 weight becomes `sgpu.compress` feeding `sgpu.spmm`. A
    (2N-2):2N weight (4:6, 6:8, 8:10, ...) is cut into N-1 overlapping 2:4
    windows per group of 2N over a lifted reduction axis
    `K' = roundUp(K, 2N) / 2N * 4(N-1)`: `sgpu.nm_decompose` of the weight
    and `sgpu.lift` of the activation feed a 2:4 `sgpu.spmm` that computes
    exactly the same product. With `lift=auto` (the default) and `chip`
    sm_90a, a 6:8 pair gets a tiled window order in which the TMA kernel
    reads most of the activations as they are: up to 16 tokens
    `tile_groups = 8` (per 64 columns of K, whose shared windows the kernel
    gathers in shared memory: the fused lift), above `tile_groups = 16`
    (per 128 columns, whose shared windows a small kernel copies: the split
    lift); `lift=fused` and `lift=split` force one of them. A weight
    that is a constant is checked,
    decomposed and compressed at compile time (`sgpu.assemble` of two
    constants); a pattern violation is an error naming the first row and
    group that break it.

    The accumulator of the matmul must be a zero fill (a matmul that adds to
    an existing value is left alone, with a remark).

    Bufferization drops tensor encodings, so every structured-sparsity
    encoding must be consumed here: one left on a value that is not a
    recognized matmul weight is an error.

    With `policy=auto` (the default) a cost model measured on the H200
    (`chip` sm_90a; docs/design.md, "Sparse or dense") keeps a
    matmul dense where the sparse kernel measured slower than the library
    GEMM: the weight loses its encoding and the matmul becomes
    `sgpu.matmul`, with a remark giving the measurement behind the choice.
    The weight must be a constant or an argument of the function that only
    this matmul reads (its encoding is then dropped from the signature; the
    caller's buffer is the dense weight either way). Only a measured chip
    is considered. Layers of the measured size (at least 32 M weight
    elements) follow the measured rules; smaller ones keep the declared
    sparsity at M <= 16 and from 4096 tokens and take the library GEMM
    between (2:4 is always kept). With `policy=sparse` the declared sparsity
    is always used.
  }];
  let options = [
    Option<"policy", "policy", "std::string", /*default=*/"\"auto\"",
           "auto: keep a matmul dense where the sparse kernel measured "
           "slower (with a remark); sparse: always use the declared "
           "sparsity">,
    Option<"chip", "chip", "std::string", /*default=*/"\"sm_90a\"",
           "Target GPU whose measurements the auto policy uses">,
    Option<"device", "device", "std::string", /*default=*/"\"\"",
           "GPU part of the chip (h200, h100-sxm, h100-pcie, ...; empty = "
           "the chip's reference part): its multiprocessor count decides "
           "which grids are one wave">,
    Option<"lift", "lift", "std::string", /*default=*/"\"auto\"",
           "the window order of 6:8 on sm_90a, for the TMA kernel's lift: "
           "auto (tile_groups = 8, lifted inside the kernel's operand "
           "loads, up to 16 tokens; else tile_groups = 16, the split lift), "
           "fused (always 8), split (always 16) or separate (the plain "
           "order, lifted by a gather kernel); other patterns and chips "
           "keep the plain order">
  ];
  let dependentDialects = ["::mlir::sgpu::SGPUDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::tensor::TensorDialect"];
}

def SGPUFuseSiblingSpmm : Pass<"sgpu-fuse-sibling-spmm", "::mlir::ModuleOp"> {
  let summary = "Sparse GEMMs of one activation (q, k, v) as one GEMM on concatenated weights";
  let description = [{
    Finds `sgpu.spmm` ops of one block that read the same activation (for
    (2N-2):2N, lifts of the same activation with the same pattern and
    window order), whose weights are arguments of the function compressed
    on the GPU when the program's params are bound (each read only by its
    `sgpu.compress` / `sgpu.nm_decompose`), with the same width, element
    type and pattern, each a whole number of 16-row tiles, and with no bias,
    activation or kernel choice yet, and whose fused GEMM still splits K
    where it streams weights (the TMA kernel's rule on `chip` sm_90a,
    `SplitKRule.h`, for one block of tokens: fewer blocks of 128 weight rows
    than half the `device`'s multiprocessors, and at least two splits of 8
    k-tiles; q, k and v of an 8B-shaped model, 6144 rows, qualify; gate and
    up, 28672 rows, do not). Each such group becomes one
    `sgpu.compress` (or `sgpu.nm_decompose`) of the `tensor.concat` of the
    weights along their rows, one `sgpu.spmm` of the summed width and one
    `tensor.extract_slice` of its columns per former result, in program
    order:

    ```mlir
    %w = tensor.concat dim(0) %wq, %wk, %wv
    %c = sgpu.compress %w
    %y = sgpu.spmm %x, %c          // M x (Nq + Nk + Nv)
    %q = tensor.extract_slice %y[0, 0] [M, Nq] [1, 1]
    ...
    ```

    The prepare stage compresses each argument into its rows of the fused
    weight (no copy of the weights, no memory beyond the parts'), so every
    program compiled from the model prepares the same buffers and can share
    them. Where the fused GEMM's plan splits K (decode sizes), its
    reduction writes each slice into a buffer of its own; otherwise the
    whole result is stored and each slice is a copy kernel (with
    `sliced-tma-store=true`, a plan that stores by TMA writes the slices
    through one tensor map each). A decode step
    of a grouped-query model then streams q, k and v as one weight, with one
    reduction, instead of three GEMMs of which two (k and v) are too small
    to fill the GPU. The rule depends on the weights alone, so a model's
    prefill (whose fused result is copied into its slices) and decode
    programs prepare the same buffers. Constant weights, dense (library)
    GEMMs and other chips are left as they are. `sgpu-compile` and
    `sgpu-reference` run it after `sgpu-fuse-epilogue`, so that GEMMs with
    a bias (Qwen's q, k and v) keep it in their epilogues.
  }];
  let options = [
    Option<"chip", "chip", "std::string", /*default=*/"\"sm_90a\"",
           "Target GPU: only sm_90a's TMA kernel splits K, so only there "
           "are siblings fused">,
    Option<"device", "device", "std::string", /*default=*/"\"\"",
           "GPU part of the chip (empty = the chip's reference part): its "
           "multiprocessor count bounds the fused rows">,
    Option<"always", "always", "bool", /*default=*/"false",
           "Fuse every group of siblings on any chip, whether or not its "
           "GEMM splits K (then the slices are copies); for tests of small "
           "shapes">
  ];
  let dependentDialects = ["::mlir::sgpu::SGPUDialect",
                           "::mlir::tensor::TensorDialect"];
}

def SGPUDenseMatmul : Pass<"sgpu-dense-matmul", "::mlir::ModuleOp"> {
  let summary = "Rewrite dense linear-layer matmuls into sgpu.matmul (library GEMMs)";
  let description = [{
    Finds `linalg.matmul` ops computing `Y = X . W^T` with a dense weight
    (no encoding), in the forms importers write for a torch `Linear` (the
    `N x K` weight with transposing `indexing_maps`, or `linalg.transpose`
    of it), with a zero-filled accumulator, static shapes and f16/bf16
    operands (an f16/bf16 or f32 result), and rewrites them into
    `sgpu.matmul`, which the GPU pipeline runs as a cuBLASLt call. Run it
    after `sgpu-slide-sparse` (which consumes the sparse weights) and before
    `sgpu-fuse-epilogue` (which folds a following bias add and ReLU into the
    call's epilogue).

    Other matmuls are left as they are: a multiply by a `K x N` operand that
    is not a transpose gets a remark saying so; matmuls of other element
    types, dynamic shapes or accumulating into a value are skipped silently.
  }];
  let dependentDialects = ["::mlir::sgpu::SGPUDialect"];
}

def SGPULadderResidual : Pass<"sgpu-ladder-residual", "::mlir::ModuleOp"> {
  let summary = "Rewrite the tensor-parallel residual chain into ladder form (changes the model)";
  let description = [{
    Opt-in, and a change of the model: run it only on models trained (or
    fine-tuned) with ladder residuals. It recognizes the pre-norm
    tensor-parallel residual chain `x_i = x_{i-1} + all_reduce(f_i(norm(x_{i-1})))`
    (a residual add is `arith.addf` on tensors or an element-wise
    `linalg.generic` add, one operand the result of an `sgpu.all_reduce`
    used only there; `norm` is `sgpu.rms_norm` or `sgpu.layer_norm`; the
    blocks alternate attention and MLP) and makes every converted block read
    the stream one block stale: `x_i = x_{i-1} + all_reduce(f_i(norm(x_{i-2})))`,
    so the all-reduce of block i can overlap block i+1 (docs/design.md,
    "Collectives and the ladder residual"). The first two blocks read the
    embedding; the residual adds keep their operands, each moved down to
    its first user (so the next block's work
    sits between an all-reduce and the add that consumes it), and the last
    ones still wait for the outstanding reductions before the final norm. `layers=K` converts only the blocks of the last K
    layers (two blocks per layer); 0 takes the module's
    `sgpu.ladder_layers`, or every layer when it has none. Converted adds
    carry `sgpu.ladder_block`; a marked chain is left alone, so running the
    pass again changes nothing. Follow it with `sgpu-async-collectives`.

    A function whose all-reduces do not form such a chain (an all-reduce
    not feeding a residual add, an add that does not continue the chain, a
    block that reads the stream other than through a norm) is an error at
    the op; a module without any all-reduce is an error too.
  }];
  let options = [
    Option<"layers", "layers", "int64_t", /*default=*/"0",
           "Convert the last K layers (two blocks each); 0: the module's "
           "sgpu.ladder_layers, or all layers">
  ];
  let dependentDialects = ["::mlir::sgpu::SGPUDialect"];
}

def SGPUAsyncCollectives : Pass<"sgpu-async-collectives", "::mlir::ModuleOp"> {
  let summary = "Split all-reduces into start/wait and sink each wait to the first use";
  let description = [{
    Rewrites every `sgpu.all_reduce` into `sgpu.all_reduce_start` where the
    all-reduce was (the collectives keep their program order, so every rank
    of the tensor-parallel group issues them in the same order) and
    `sgpu.all_reduce_wait` right before the first operation that uses the
    result (or before the terminator when nothing does), so the work in
    between overlaps the communication. The wait takes the started input as
    an operand, which keeps that buffer alive and unwritten until the
    collective is done.

    The order is checked: an all-reduce must be issued unconditionally in
    the body of its function, where every rank reaches it; one inside a
    region (an `scf.if`, a loop, a `linalg` body) is an error at the op.
    Running the pass again changes nothing (existing start/wait pairs are
    left as they are).
  }];
  let dependentDialects = ["::mlir::sgpu::SGPUDialect"];
}

def SGPUSimulateRanks : Pass<"sgpu-simulate-ranks", "::mlir::ModuleOp"> {
  let summary = "Compute every rank of a tensor-parallel function in one function (CPU testing)";
  let description = [{
    A testing aid for the CPU reference (`--sgpu-reference`), where an
    all-reduce is the identity (a group of one rank). It turns a function
    written for one rank of a tensor-parallel group (its arguments are that
    rank's inputs: weight shards, activations) into one function that
    computes all `ranks` ranks side by side, so a sharded model and the
    rewrites of its collectives (`sgpu-ladder-residual`,
    `sgpu-async-collectives`) can be checked numerically with several ranks.

    * Arguments: rank 0's arguments, then rank 1's, and so on, each rank's
      in the original order. An argument marked `sgpu.replicated` (a unit
      argument attribute: the same value on every rank, such as the
      embedding or a norm weight) is passed once, among rank 0's arguments,
      and every rank reads it. With arguments `(%x {sgpu.replicated}, %w1,
      %w2)` and `ranks=2` the function takes `(%x, %w1_0, %w2_0, %w1_1,
      %w2_1)`.
    * Results: every rank's results, rank 0's first, then rank 1's, ...
      After the all-reduces of a correct tensor-parallel model they are all
      equal, so a test can print them and check that they match.
    * Body: cloned once per rank, op by op (each op of the original is
      cloned for rank 0, 1, ... before the next one), each clone reading its
      rank's values. Every `sgpu.all_reduce`, and every
      `sgpu.all_reduce_start` / `sgpu.all_reduce_wait` pair, becomes the
      element-wise sum of the replicas' inputs, accumulated in rank order
      (a `linalg.generic` of `arith.addf`, emitted once where the collective
      stood, or where the start stood for a pair); all replicas read that
      sum. The k-th collective of every replica is thus one group, as when
      the ranks issue their collectives in the same order. With `ranks=1`
      each collective is the identity, as in the reference lowering.

    `func=NAME` simulates only `@NAME`; without it, every function of the
    module with a body is simulated. The function is rewritten in place,
    unless `into=NEW` (with `func`) is given: then `@NEW` receives the
    simulated function and `@NAME` is left as it is. `@NEW` may be a new
    name, or an external declaration with the simulated type, which lets
    other functions of the module (a test driver) call it; the pass can run
    several times with different `into` names and rank counts.

    Errors, at the op or function: `ranks` below 1; a function body of more
    than one block; a collective inside a region (an `scf.if`, a loop):
    it must be in the body itself, where every rank reaches it; a reduction
    other than `sum`; the buffer forms `sgpu.all_reduce_call`/`_sync` (run
    the pass on tensors, before bufferization); a call to a function that
    issues collectives, itself or through its own calls (each replica would
    run them alone: inline it first); and, when rewriting in place, any
    other use of the function, whose signature changes. Every function is
    checked before anything is rewritten.
  }];
  let options = [
    Option<"ranks", "ranks", "int64_t", /*default=*/"2",
           "Number of ranks of the tensor-parallel group to simulate (1 to 1024)">,
    Option<"funcName", "func", "std::string", /*default=*/"\"\"",
           "Simulate only this function (default: every function with a "
           "body)">,
    Option<"into", "into", "std::string", /*default=*/"\"\"",
           "Write the simulated function as this function (new, or an "
           "external declaration of the simulated type) and keep the "
           "original; needs func">
  ];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::tensor::TensorDialect"];
}

def SGPUFuseEpilogue : Pass<"sgpu-fuse-epilogue", "::mlir::ModuleOp"> {
  let summary = "Fuse a bias add and a ReLU that follow sgpu.spmm or sgpu.matmul into its epilogue";
  let description = [{
    Folds the element-wise work that follows an `sgpu.spmm` or an
    `sgpu.matmul` into the GEMM's epilogue, where it costs no extra pass over
    memory (for `sgpu.matmul`, the library GEMM's bias and ReLU epilogues):

    * a bias add: a `linalg.generic` adding a 1-D `N` vector broadcast along
      the rows (`(d0, d1) -> (d1)`) to the GEMM result becomes the GEMM's
      `bias` operand;
    * a ReLU: an element-wise `linalg.generic` computing `max(x, 0)`
      (`arith.maximumf`/`arith.maxnumf` against zero, or `arith.cmpf` +
      `arith.select`) becomes `activation = #sgpu.activation<relu>`, also
      when a `tensor.expand_shape` / `tensor.collapse_shape` sits between
      them (the reshape then carries the fused result).

    Only sole uses are fused (fusing a value with other users would change
    what they read), in the order of the math: bias, then activation.
  }];
  let dependentDialects = ["::mlir::sgpu::SGPUDialect"];
}

def SGPUSparsifyFFN : Pass<"sgpu-sparsify-ffn", "::mlir::ModuleOp"> {
  let summary = "Rewrite ReLU FFNs into TwELL packing plus a sparse consumer over the active neurons";
  let description = [{
    Opt-in (not part of a pipeline yet). Finds the feed-forward blocks whose
    hidden activations come out of a ReLU, in the linalg form the importers
    write:

    * ungated: `Y = relu(X . Wu^T) . Wd^T`
    * gated:   `Y = (relu(X . Wg^T) * (X . Wu^T)) . Wd^T`, the product's
      operands in either order

    Each projection is a `linalg.matmul` read as `X . W^T` (the `N x K`
    weight through transposing `indexing_maps`, or `linalg.transpose` of it;
    a plain `K x N` operand is accepted too and transposed back); the ReLU
    is an element-wise `linalg.generic` as `sgpu-fuse-epilogue` recognizes it
    (`arith.maximumf`/`arith.maxnumf` against zero, or `arith.cmpf` +
    `arith.select`); the product an element-wise `linalg.generic` of
    `arith.mulf`. `tensor.collapse_shape`/`tensor.expand_shape` ops that only
    regroup the leading (token) dimensions of a `[B, S, d]` input are looked
    through, and the ReLU's GEMM may be followed by a bias add.

    The down projection is replaced by

    ```mlir
    %p = sgpu.twell_pack %h : tensor<MxFxT> -> !sgpu.twell<MxFxT, #sgpu.twell<tile = T, compression = C>>
    %y = sgpu.twell_ffn %p, %wd [up(%x, %wu : ...)] : ...
    ```

    where `%h` is the ReLU output (collapsed to `[M, F]` when it is 3-D),
    packed right after the ReLU: the producer GEMM and its ReLU stay, and
    the GPU pipeline fuses the packing into that GEMM's epilogue. `%wd` is
    the down weight (`d x F`); a gated FFN also passes the up projection's
    input `%x` (`M x d`) and weight `%wu` (`F x d`), since the consumer
    computes `X[m] . Wu[j]` for the active neurons only. The product, the up
    projection and the reshapes that only fed the down projection are
    erased. A bias add after the down projection stays and reads the new
    result.

    Options: `tile` (TwELL tile width, a power of two in [16, 65536];
    default 256) and `compression` (2, 4 or 8; default 4). The module's
    `sgpu.twell` attribute (`#sgpu.twell<tile = T, compression = C>`, set by
    the importers' TwELL options) replaces the defaults; an option given
    explicitly wins over it. `fallback` says what happens to a row with a
    tile over capacity (more than T/C - 1 nonzeros): `dense` (the default
    and, for now, the only policy) keeps such rows in the dense part of the
    TwELL value, computed by the dense path of `sgpu.twell_ffn`, so the
    result is exact whatever the density. An invalid option value is an
    error at the module.

    An FFN of this shape that the pass cannot rewrite is left unchanged,
    with a remark at the down projection saying why: an activation other
    than ReLU (SiLU, sigmoid, GELU, ... are named), an element type other
    than f16/bf16 (TwELL entries hold 16-bit values) or operands of mixed
    types, a gated product whose second factor is not a plain `X . Wu^T` (a
    bias on the up projection), an encoded (structured-sparse) weight,
    dynamic shapes, and an accumulator that is not a zero fill. Any hidden
    size F is accepted: when the tile does not divide it, the last tile of
    each row is partial. Matmuls that are not the last GEMM of such an FFN
    are skipped silently.

    The choice between TwELL and dense. The density of the activations is
    known only at run time, so it comes from a calibration profile: run a
    program compiled with this pass on sample inputs, read its stats
    (`twell<i>.active_neurons` out of M*F, in the order the pass found the
    FFNs), and compile again with `densities=p0,p1,...` or
    `profile=<file>`. Each FFN is then rewritten only when the cost model
    (lib/Transforms/TwellCostModel.h: the gate GEMM, a pack pass over H and
    a consumer linear in the density, with rates measured on an H200)
    predicts at least 1.05x of dense; otherwise it stays dense, with a
    remark giving the density, the predicted speedup and the break-even
    density. Without densities every matched FFN is rewritten. Each pack
    records its layer's break-even density (`sgpu.twell_break_even`), which
    becomes the limit of the program's active-neuron stat, for run-time
    guards (`sparse_opt.twell.TwellGuard`). A count of
    densities other than the number of rewritable FFNs, a density outside
    [0, 1], both options at once or an unreadable profile is an error at
    the module.

    The consumer. With the blocks' union fractions as well (`unions=u0,...`
    or the profile's `"block_unions"`: a program compiled with
    `twell-consumer=tensor-cores` reports `twell<i>.block_neurons`, the
    neurons active in any row of each block of 64 rows, out of Nb * F), the
    model also predicts the tensor-core consumer (the block pack and the
    gathered GEMMs over the union, rates measured on an H200); where it
    beats both the CUDA-core consumer and 1.05x of dense, the pack gets
    `sgpu.twell_consumer = "tensor-cores"` (which `twell-consumer=auto`
    follows) and the union's break-even (`sgpu.twell_union_break_even`,
    the limit of the block_neurons stat), with a remark. On independent
    (random) activations the union of 64 rows is 1 - (1 - p)^64 of F and
    the tensor cores never win; activations whose rows share neurons can
    make them.
  }];
  let options = [
    Option<"tile", "tile", "unsigned", /*default=*/"256",
           "TwELL tile width T (a power of two in [16, 65536]); the last tile "
           "of a row is partial when T does not divide the hidden size F">,
    Option<"compression", "compression", "unsigned", /*default=*/"4",
           "TwELL compression factor C (2, 4 or 8): T/C words per row tile">,
    Option<"fallback", "fallback", "std::string", /*default=*/"\"dense\"",
           "Rows with a tile over capacity: dense (computed by the dense "
           "path; the only policy for now)">,
    ListOption<"densities", "densities", "double",
               "Calibrated active fractions (0..1), one per rewritable FFN in "
               "the order the pass finds them; an FFN the cost model "
               "predicts to lose stays dense">,
    ListOption<"unions", "unions", "double",
               "Calibrated union fractions (0..1) of the blocks of 64 rows, "
               "one per rewritable FFN (a tensor-core build's "
               "twell<i>.block_neurons stats); with densities, an FFN the "
               "model predicts faster on the tensor-core consumer gets it">,
    Option<"profile", "profile", "std::string", /*default=*/"\"\"",
           "Calibration profile: a JSON file {\"densities\": [...]} giving "
           "the same as `densities`, and optionally \"block_unions\": "
           "[...] the same as `unions` (as written by the Python runtime's "
           "Program.write_twell_profile)">
  ];
  let dependentDialects = ["::mlir::sgpu::SGPUDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect"];
}

def SGPUDecomposeAggregates : Pass<"sgpu-decompose-aggregates", "::mlir::ModuleOp"> {
  let summary = "Decompose aggregate linalg ops (linalg.softmax) into elementary linalg ops";
  let description = [{
    Ops such as `linalg.softmax` (the canonical softmax of imported models)
    have no loop lowering of their own; this pass rewrites every op
    implementing `AggregatedOpInterface` into the linalg ops it stands for
    (max-reduce, subtract, exp, sum-reduce, divide), so the CPU reference
    pipeline can lower them to loops.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect"];
}

def SGPUFoldUnitTransposes : Pass<"sgpu-fold-unit-transposes", "::mlir::ModuleOp"> {
  let summary = "Rewrite transposes that only move size-1 dimensions as reshapes";
  let description = [{
    A `linalg.transpose` whose permutation keeps the dimensions larger than
    1 in their order moves no element: `[B, 1, H, D] -> [B, H, 1, D]`, the
    head split of attention at one token per sequence (every decode step),
    has the same bytes in the same order. This pass rewrites such a
    transpose (static shapes, tensor semantics) as a `tensor.collapse_shape`
    to one dimension and a `tensor.expand_shape` to the result's shape,
    which bufferize to views of the same buffer: no kernel and no copy.
    Transposes that reorder dimensions larger than 1 are left alone. Both
    compile pipelines run it after the rewrites, so the CPU reference
    executes the same form the GPU program does.
  }];
  let dependentDialects = ["::mlir::tensor::TensorDialect"];
}

def SGPUFuseResidualNorm : Pass<"sgpu-fuse-residual-norm", "::mlir::ModuleOp"> {
  let summary = "Fuse a residual add into the RMS norm of its sum (sgpu.add_rms_norm)";
  let description = [{
    A pre-norm transformer block adds each sublayer's output to the
    residual stream and normalizes the sum for the next sublayer: an
    element-wise add (one kernel, writing the sum) and an `sgpu.rms_norm`
    (a second kernel, reading it back). This pass rewrites an all-parallel
    `linalg.generic` that adds two tensors of its result's type (identity
    maps, body `arith.addf` of its two inputs) and whose result an
    `sgpu.rms_norm` normalizes into one `sgpu.add_rms_norm`, whose `sum`
    result replaces the add for its other users (the stream goes on) and
    whose `result` replaces the norm: one kernel that reads both addends
    once and writes both. The values are the same (the sum is rounded to
    the element type before it is normalized, as before). An add with a
    broadcast, mixed types or another body, and a norm whose weight is
    defined after the add, are left as they are. `sgpu-compile` runs it
    after `convert-elementwise-to-linalg` and before
    `sgpu-fuse-elementwise`.
  }];
  let dependentDialects = ["::mlir::sgpu::SGPUDialect"];
}

def SGPUFoldAttentionTransposes : Pass<"sgpu-fold-attention-transposes", "::mlir::ModuleOp"> {
  let summary = "Give library attention the projections' B x S x H x D layout and drop the transposes around it";
  let description = [{
    The importers write attention as PyTorch models do: the projections'
    `B x S x H x D` outputs transposed to `B x H x S x D` (q, k, v), RoPE
    on the transposed q and k, `sgpu.attention`, and its result transposed
    back. Each transpose is a kernel and a pass over a whole activation.
    cuDNN's fused attention reads its operands through strides, so for an
    `sgpu.attention` that `sgpu-select-kernels` gave to the library
    (`#sgpu.attention_config<kernel = library>`) this pass rewrites

    - each of q, k and v that is a `linalg.transpose` with permutation
      `[0, 2, 1, 3]` to the transpose's input, and each that is an
      `sgpu.rope` of such a transpose (the rope used by the attention
      alone, its tables `B' x 1 x S x D`: one table for every head) to a
      rope of the transpose's input with the tables reshaped to
      `B' x S x 1 x D` (the same values: rope is element-wise along D, with
      the tables broadcast);
    - the attention to one with `seq_major`, whose result replaces the
      transposes that read it (permutation `[0, 2, 1, 3]`, its only users).

    Nothing is rewritten unless all of q, k, v and the result fold; the
    transposes and ropes left without a use are erased. An attention that
    runs a generated kernel, has a mask or positions, or whose rope is read
    elsewhere too (a KV-cache write) is left as it is. `sgpu-compile` runs
    it after `sgpu-select-kernels`.
  }];
  let dependentDialects = ["::mlir::sgpu::SGPUDialect",
                           "::mlir::tensor::TensorDialect"];
}

def SGPUFuseRopeCacheWrite : Pass<"sgpu-fuse-rope-cache-write", "::mlir::ModuleOp"> {
  let summary = "Rotate keys (RoPE) in the kernel that writes them into the KV cache";
  let description = [{
    A decode step ropes the new keys (`sgpu.rope`, a kernel that writes the
    rotated keys) and writes them into the cache (`sgpu.cache_update`,
    a second kernel that reads them back). Where the rope's result is read
    by the cache update alone, this pass gives the update the rope's input
    and tables (`sgpu.cache_update ... rope(%cos, %sin)`) and erases the
    rope: one kernel computes each rotated element from the unrotated keys
    and writes it into the cache, with the same f32 formula and rounding.
    A rope read elsewhere too (a prefill that attends over its new keys) is
    left as it is. `sgpu-compile` runs it after `sgpu-fuse-residual-norm`.
  }];
  let dependentDialects = ["::mlir::sgpu::SGPUDialect"];
}

def SGPUFuseElementwise : Pass<"sgpu-fuse-elementwise", "::mlir::ModuleOp"> {
  let summary = "Fuse chains of element-wise linalg.generic ops into one op (one kernel)";
  let description = [{
    Each element-wise `linalg.generic` becomes a kernel of its own, which
    reads its inputs from and writes its result to global memory. A chain
    of them (SwiGLU's `silu(gate) * up`: a SiLU, then a multiply) costs a
    launch and a round trip of the intermediate per link. This pass fuses
    a producer into its consumer when both are element-wise generics (all
    loops parallel) and the consumer is the producer's only user, with
    upstream's element-wise fusion (`linalg::populateElementwiseOpsFusionPatterns`):
    the fused body computes the producer's value in registers, with the
    same operations and roundings. Reductions, named ops and producers
    with several users are left as they are. `sgpu-compile` runs it after
    `convert-elementwise-to-linalg`.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect"];
}

def SGPUMergeIdenticalKernels : Pass<"sgpu-merge-identical-kernels", "::mlir::ModuleOp"> {
  let summary = "Keep one copy of each generated kernel and point every launch at it";
  let description = [{
    A model repeats its layers, and every lowering names its kernels by a
    counter (`sgpu_rms_norm_0`, `sgpu_rms_norm_1`, ...), so a 32-layer
    decoder would carry 32 copies of each norm, RoPE, attention and
    element-wise kernel: 32 times the PTX to emit, assemble and load. This
    pass compares the `gpu.func` kernels of each `gpu.module` by their
    printed form with the name left out (body, attributes, workgroup
    buffers and known block size all count), keeps the first of each set of
    identical kernels and rewrites every `gpu.launch_func` of the others to
    it before erasing them. Kernels that differ in anything (a shape
    constant, an epsilon, a block size) stay apart. `sgpu-compile` runs it
    right after `convert-sgpu-to-gpu`.
  }];
  let dependentDialects = ["::mlir::gpu::GPUDialect"];
}

def SGPUProgrammaticLaunch : Pass<"sgpu-programmatic-launch", "::mlir::ModuleOp"> {
  let summary = "Let each generated kernel start while the kernel before it ends (sm_90 programmatic dependent launch)";
  let description = [{
    On a `gpu.module` whose targets are all sm_90 or newer, every kernel
    gets `nvvm.griddepcontrol wait` and then `nvvm.griddepcontrol
    launch_dependents` at its entry, and every run-stage `gpu.launch_func`
    of such a kernel the unit attribute `sgpu.programmatic`, which
    `sgpu-emit-artifacts` writes as `pdl` on the launch line. The runtime
    launches those kernels with programmatic stream serialization: the
    next kernel is launched and placed while this one runs, and waits for
    its results at its entry, so a chain of short kernels (a decode step)
    no longer pays each launch after the previous kernel has ended.

    The wait comes before every memory access, so a marked kernel is
    ordered exactly as a plain launch would order it (and a kernel never
    ends before its predecessor, which keeps the chain transitive); it is a
    no-op under a plain launch (`SPARSEOPT_PDL=0`, a driver without
    `cuLaunchKernelEx`). A kernel that already contains a griddepcontrol
    op placed its own: the sm_90a spmm producer loads a run-invariant
    weight (a constant or a prepared param) into its first stages before
    its wait, and its other threads touch global memory only after data
    loaded after that wait. Library steps (cuBLASLt, cuDNN, NCCL) stay
    plain launches, fully ordered. Prepare-stage launches are not marked.
    Targets below sm_90 are left unchanged, and so is a program with
    collectives (`sgpu.all_reduce_call`): kernels placed early wait on
    multiprocessors that the NCCL kernels of the communication stream may
    need. `sgpu-compile` runs it after `sgpu-merge-identical-kernels`
    unless `programmatic-launch=false` (in the 8B-shaped decode step on an
    H100 it gave 2-3% for dense and 7-9% for 2:4, docs/performance.md).
  }];
  let dependentDialects = ["::mlir::gpu::GPUDialect", "::mlir::NVVM::NVVMDialect",
                           "::mlir::sgpu::SGPUDialect"];
}

def SGPUTensorMapParams : Pass<"sgpu-tensor-map-params"> {
  let summary = "Make the tensor map arguments of lowered kernels by-value grid-constant parameters";
  let description = [{
    A kernel that takes `sgpu.tensor_map` operands lists the indices of those
    arguments, each an `!llvm.ptr`, in its `sgpu.tensor_map_args` attribute.
    Runs after `convert-gpu-to-nvvm` (which keeps that attribute on the
    `llvm.func` kernel; with the bare-pointer calling convention the indices
    are unchanged) and gives each listed argument

    ```mlir
    {llvm.align = 64 : i64, llvm.byval = !llvm.array<16 x i64>, nvvm.grid_constant}
    ```

    so that the NVPTX backend declares a 128-byte, 64-byte-aligned `.param`
    (`.param .align 64 .b8 <kernel>_param_<i>[128]`) that the runtime fills
    with the encoded `CUtensorMap`, and the pointer becomes the parameter's
    generic address (`cvta.param`): the operand `cp.async.bulk.tensor` and
    `prefetch.tensormap` take. The attribute is removed.

    Runs on any operation (`sgpu-compile` nests it in `gpu.module`) and
    rewrites every `llvm.func` under it that carries the attribute. Errors,
    at the function: the attribute on anything but an `llvm.func` (the pass
    ran before the GPU-to-NVVM conversion), a function that is not a kernel
    (`nvvm.kernel`), an index past the last argument, and a listed argument
    that is not an `!llvm.ptr` in the generic address space.
  }];
  let dependentDialects = ["::mlir::sgpu::SGPUDialect",
                           "::mlir::LLVM::LLVMDialect",
                           "::mlir::NVVM::NVVMDialect"];
}

def SGPUEmitArtifacts : Pass<"sgpu-emit-artifacts", "::mlir::ModuleOp"> {
  let summary = "Write the PTX, constants and the runtime program of a compiled module";
  let description = [{
    Runs last in `sgpu-compile`. Expects one host function whose body only
    uses buffers (function arguments, `memref.get_global` constants,
    `memref.alloc`; a `memref.expand_shape`, `memref.collapse_shape` or
    `memref.cast` of a buffer is that buffer), `sgpu.tensor_map` of those
    buffers and `gpu.launch_func` with constant launch sizes, and a
    `gpu.binary` holding PTX. A kernel operand is a buffer (`b<id>`), an
    integer constant (`i32:<v>`, `i64:<v>`) or a tensor map
    (`tmap:b<id>:<dtype>:<dims>:<box>:<swizzle>`, encoded by the runtime at
    each run). Writes into `output-dir`:

    * `kernels.ptx`: the PTX of every generated kernel;
    * `const<N>.bin`: the raw bytes of each constant buffer;
    * `program.txt`: the program the runtime executes (`sparseopt-program 1`:
      buffers and launches, documented in docs/runtime.md);
    * `signature.json`: the host function's interface,
      `{"function": "<name>", "inputs": [{"shape": [128, 256], "dtype": "f16"}, ...], "outputs": [...]}`,
      one entry per memref argument and result with the element type as MLIR
      prints it (`f16`, `bf16`, `f32`, `i32`, `i8`, ...);
    * `summary.txt`: each kernel of the PTX with its count of sparse MMA
      instructions.

    Any other host operation is an error at its location: it would not run.
    So is a tensor map whose source is not one of the program's buffers or
    a reshape of one (a `memref.view` into one, say): the runtime encodes a
    map from a buffer's address. And so is PTX that calls a function it does
    not define: a libdevice function of a math op (`__nv_expf`) that
    `gpu-module-to-binary` did not link because it found no CUDA toolkit,
    which the driver would reject only when the program is loaded.
  }];
  let options = [
    Option<"outputDir", "output-dir", "std::string", /*default=*/"\"\"",
           "Directory to write kernels.ptx, program.txt and constants to">,
    Option<"entry", "entry", "std::string", /*default=*/"\"\"",
           "Host function to export (default: the only public function)">,
  ];
}

#endif // SPARSEOPT_TRANSFORMS_PASSES_TD
