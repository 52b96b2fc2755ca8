//===- Passes.td - SparseOpt lowerings ---------------------*- tablegen -*-===//

#ifndef SPARSEOPT_CONVERSION_PASSES_TD
#define SPARSEOPT_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertSGPUToLoops : Pass<"convert-sgpu-to-loops", "::mlir::ModuleOp"> {
  let summary = "Lower sgpu ops to reference scf loops (the ops' semantics, for the CPU)";
  let description = [{
    Replaces each sgpu compute op by plain `scf.for` loops over memrefs that
    compute exactly what the op defines, reading the compressed formats the
    way the GPU kernels do (values + metadata decoded per chunk). The result
    runs on the CPU with `mlir-runner` after the usual bufferization and
    LLVM lowering (pipeline `sgpu-reference`), so every rewrite can be
    checked numerically without a GPU.

    Lowered: `sgpu.spmm` (with its epilogue) on a weight from `sgpu.assemble`
    or from `sgpu.compress` of a constant (compressed here, at compile time),
    `sgpu.rms_norm`, `sgpu.layer_norm` and `sgpu.attention` (in f32),
    `sgpu.lift` (the sliding-window gather; `sgpu.nm_decompose` of a constant
    is decomposed at compile time), and the collectives for a single-rank
    group (identity).
    `sgpu.twell_pack` builds the concrete parts of its `!sgpu.twell` value
    (count/entry words per row and tile, per-row overflow flags, the dense
    fallback rows and their count; see the type) and `sgpu.twell_ffn`
    reads only those parts: the rows that overflowed through the dense
    fallback (every neuron), the others through each tile's count and
    entries, accumulating in f32 and rounding once. A TwELL value must come
    from `sgpu.twell_pack` and be read only by `sgpu.twell_ffn`; anything
    else is an error at the op. `twell-report` makes the program print the
    fallback-row count of every pack when it runs.
    Ops without a reference lowering yet (`sgpu.nm_decompose` of a weight
    known only at run time) are reported as errors.
  }];
  let options = [
    Option<"twellReport", "twell-report", "bool", /*default=*/"false",
           "Print `twell fallback rows: N` for every sgpu.twell_pack when "
           "the program runs">
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::bufferization::BufferizationDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::vector::VectorDialect"];
}

// The options of every kernel choice, shared by sgpu-select-kernels (which
// records the choices on the ops) and convert-sgpu-to-gpu (which makes them
// for ops that arrive without one).
defvar KernelSelectionOptions = [
    Option<"chip", "chip", "std::string", /*default=*/"\"sm_90a\"",
           "Target GPU architecture (sm_80, sm_86, sm_89, sm_90, sm_90a, ...)">,
    Option<"features", "features", "std::string", /*default=*/"\"+ptx85\"",
           "PTX ISA feature string of the target (e.g. +ptx85)">,
    Option<"device", "device", "std::string", /*default=*/"\"\"",
           "GPU part the grids and pipeline depths are sized for (h200, "
           "h100-sxm, h100-pcie, a100; empty = the chip's reference part, "
           "h200 for sm_90a): its multiprocessor count sizes persistent, "
           "split-K and decode-attention grids, its shared memory the "
           "stages">,
    Option<"kernel", "kernel", "std::string", /*default=*/"\"auto\"",
           "spmm kernel: auto (wgmma where the chip and PTX ISA have it, "
           "else mma), mma (warp-level mma.sp, any chip >= sm_80) or "
           "wgmma (warpgroup wgmma.mma_async.sp, sm_90a only)">,
    Option<"tileN", "tile-n", "int64_t", /*default=*/"0",
           "kernel=wgmma, TMA kernel: tokens per block (16, 32, 64, 128 or "
           "256; 0 = the tile table)">,
    Option<"stages", "stages", "int64_t", /*default=*/"0",
           "kernel=wgmma, TMA kernel: shared-memory pipeline stages (2 or "
           "more; 0 = as many as fit, at most 8)">,
    Option<"persistent", "persistent", "bool", /*default=*/"true",
           "kernel=wgmma, TMA kernel: one block per multiprocessor walking "
           "the output tiles (the producer loads the next tile during the "
           "epilogue), counted again by the runtime on the device the "
           "program loads on; false: one block per tile">,
    Option<"lift", "lift", "std::string", /*default=*/"\"auto\"",
           "6:8 lifts in the tiled window order (tile_groups = 8) feeding the "
           "TMA kernel: auto (fused up to 16 tokens, where it measured "
           "fastest, split above), fused (the kernel loads X and its "
           "producer warps gather the shared windows in shared memory), "
           "split (the kernel loads X, and by TMA the shared windows, which "
           "a small kernel copies into an [M, K'/3] array: a third of the "
           "lifted bytes) or separate (a gather kernel writes the whole "
           "lifted [M, K'] activation)">,
    Option<"twellProducer", "twell-producer", "std::string",
           /*default=*/"\"auto\"",
           "producer of each sgpu.twell_pack whose input is a ReLU "
           "sgpu.matmul: library (the cuBLASLt GEMM, then the pack kernel "
           "over H), fused (sm_90a: a generated TMA + wgmma GEMM whose "
           "epilogue packs, H never written; where it applies, else the "
           "library path with a remark) or auto (library: the fused "
           "producer measured a tie with it on the H200)">,
    Option<"twellConsumer", "twell-consumer", "std::string",
           /*default=*/"\"auto\"",
           "consumer of each sgpu.twell_ffn: cuda-cores (one block per row "
           "over its active neurons), tensor-cores (sm_90a: wgmma over "
           "blocks of 64 rows and the union of their active neurons; where "
           "it applies, else the CUDA cores with a remark) or auto (the "
           "choice sgpu-sparsify-ffn recorded on the pack, else cuda-cores)">,
    Option<"twellGather", "twell-gather", "std::string",
           /*default=*/"\"cp-async\"",
           "how the tensor-core TwELL consumer's GEMMs copy their gathered "
           "weight rows into shared memory: cp-async (16 bytes per thread, "
           "the default) or tma (a TMA box of one row and 64 columns per "
           "row)">,
    Option<"twellPack", "twell-pack", "std::string", /*default=*/"\"auto\"",
           "where a TwELL pack fed by the library GEMM runs: kernel (the "
           "pack kernel writes the packed form), consumer (fused into its "
           "one CUDA-core consumer, which finds each row's active neurons "
           "in H itself: no pack kernel and no packed form; needs one pass "
           "and F a multiple of 8, at most 64 columns per consumer thread; "
           "where it cannot apply, a remark says why) or auto (consumer where it applies, "
           "else kernel: the fused form measured 2-3% faster end to end on "
           "the H200 at d = 2048 and 4096, F = 5632)">,
    Option<"twellPasses", "twell-passes", "int64_t", /*default=*/"0",
           "passes of the CUDA-core TwELL consumer over the neurons (1..64, "
           "capped at the tile count): each pass visits a range of the "
           "tiles, so the weight rows it reads can stay in L2, and the rows' "
           "f32 partial sums wait in a buffer between passes. 0 (the "
           "default): one pass, except for rows of at most 4 KiB whose Wu "
           "and Wd rows exceed 64 MiB: then enough passes that each visits "
           "at most 40 MiB (3 at d = 2048, F = 14336, gated bf16)">,
    Option<"epilogue", "epilogue", "std::string", /*default=*/"\"auto\"",
           "kernel=wgmma, TMA spmm kernel: how output tiles reach Y. tma: "
           "each consumer warpgroup writes its tile into shared memory "
           "(stmatrix) and one thread issues TMA bulk tensor stores, so the "
           "tensor cores resume while the copy engine writes; needs a 16-bit "
           "result, no split-K and N % 8 == 0, elsewhere a remark says why. "
           "registers: stores from the accumulator registers. auto (the "
           "default): tma wherever it applies, silently registers elsewhere">,
    Option<"cluster", "cluster", "int64_t", /*default=*/"0",
           "kernel=wgmma, TMA kernels (spmm and the fused TwELL producer): "
           "blocks per cluster, 0, 1, 2 or 4. With 2 (4) the blocks of a "
           "cluster share their B tile (the spmm's X, the producer's W): each "
           "loads half (a quarter) and multicasts it to all, halving "
           "(quartering) those L2 reads. Only where the grid has no split-K "
           "and a number of 128-row blocks that is a multiple of the cluster, "
           "without the fused 6:8 lift; elsewhere a remark says why. "
           "0 (the default): 2 for spmms of at least 4096 tokens, where it "
           "measured faster on the H200, else 1 (the TwELL producer: 1)">,
    Option<"reserveSMs", "reserve-sms", "int64_t", /*default=*/"0",
           "kernel=wgmma, TMA kernel: multiprocessors a persistent grid "
           "leaves free (0 to the device's count less one), e.g. for NCCL "
           "kernels running alongside">,
    Option<"splitK", "split-k", "int64_t", /*default=*/"0",
           "kernel=wgmma, TMA kernel: split-K block count (1 to 32; 0 = the "
           "tile table)">,
    Option<"attentionLibrary", "attention-library", "bool",
           /*default=*/"true",
           "sgpu.attention without a kernel of its own choosing: true gives "
           "a prefill attention to cuDNN's fused attention where it applies "
           "(an `attention` line of the runtime program; it measured about "
           "twice as fast as the generated tensor-core kernel), false keeps "
           "the generated kernels (a program that runs without cuDNN)">,
];

def SGPUSelectKernels : Pass<"sgpu-select-kernels", "::mlir::ModuleOp"> {
  let summary = "Choose the kernel configuration of every sparse GEMM, TwELL and attention op and record it on the op";
  let description = [{
    Makes every choice of the GPU lowering of `sgpu.spmm`, `sgpu.twell_pack`
    and `sgpu.twell_ffn` and records it, typed, as the op's `sgpu.config`;
    `convert-sgpu-to-gpu` then builds exactly what the attribute says. Each
    choice an option asked for that does not apply gets a remark that says
    why (as `convert-sgpu-to-gpu` would give).

    * `sgpu.spmm` gets `#sgpu.spmm_config`: the kernel (`tma` on sm_90a
      where K allows TMA, `wgmma` for other K, `mma` elsewhere), how the
      feeding `sgpu.lift` is lowered (`separate`, `padded`, `fused` or
      `split`) and, for `tma`, the tile table's tokens per block, stages,
      split-K, cluster, the TMA-store box and the persistent grid, for the
      `device`'s multiprocessors and shared memory.
    * `sgpu.twell_pack` gets `#sgpu.twell_pack_config` (the pack kernel,
      the fused producer, packed inside its consumer, or the tensor-core
      block form) and each `sgpu.twell_ffn` `#sgpu.twell_ffn_config` (CUDA
      or tensor cores, passes, the TMA gather).
    * `sgpu.attention` gets `#sgpu.attention_config`: the split-KV
      `decode` kernel for one query per sequence over a KV cache (its
      splits sized to the `device`'s multiprocessors, lanes per key row,
      keys per step), else `tensor_cores` for f16/bf16 without a mask (its
      warps), else `cuda_cores` (query rows per block).

    An op that already has an `sgpu.config` keeps it (a configuration
    written by hand, or a tuner's); a pack and its consumers are chosen
    together, so where one of them has a configuration the others are left
    alone. The options are `convert-sgpu-to-gpu`'s, with the same meaning.
    `sgpu-compile` runs this pass before `convert-sgpu-to-gpu`.

    Example: `sparse-opt --sgpu-slide-sparse --sgpu-select-kernels` shows
    what the compiler will build, and an edited `sgpu.config` is what it
    then builds.
  }];
  let options = KernelSelectionOptions;
}

def ConvertSGPUToGPU : Pass<"convert-sgpu-to-gpu", "::mlir::ModuleOp"> {
  let summary = "Generate GPU kernels (sparse tensor cores, norms, TwELL, element-wise ops) and their host launches for sgpu and element-wise linalg ops";
  let description = [{
    Every kernel choice of `sgpu.spmm`, `sgpu.twell_pack` and
    `sgpu.twell_ffn` is read from the op's typed `sgpu.config`
    (`#sgpu.spmm_config`, `#sgpu.twell_pack_config`,
    `#sgpu.twell_ffn_config`), as `sgpu-select-kernels` recorded it or as
    written by hand; an op that arrives without one is configured here
    first, by the same selection and this pass's options (which are
    `sgpu-select-kernels`'s). A configuration that does not fit its op, the
    target or the device's shared memory is an error at the op that says
    why. What the options below describe is what the selection chooses.

    Every op is checked before anything is rewritten: one without a GPU
    lowering is an error at the op that says why. The lowerings are
    conversion patterns, one family at a time in a fixed order (weight
    preparation, spmm, lift, norms, element-wise ops, reductions, the
    model-block ops, TwELL), after the dense GEMMs and collectives became
    runtime steps; a last conversion admits none of the ops they replace.

    Replaces each `sgpu.spmm` by a generated `gpu.func` in a `gpu.module`
    and a `gpu.launch_func` on the host; each `sgpu.lift` (the activation
    gather of a sliding-window matmul) by a generated gather kernel, one
    thread per one or two 4-column chunks. A 6:8 lift in a tiled window
    order that feeds the sm_90a TMA kernel is lowered with it instead
    (option `lift`): with `tile_groups = 8` fused into the kernel's operand
    loads (up to 16 tokens by default), with `tile_groups = 16` split (a
    kernel copies only the shared windows into an [M, K'/3] array, and the
    GEMM loads each k-tile from X or from that array). The kernel runs on sparse tensor
    cores with `mma.sp::ordered_metadata.sync.aligned.m16n8k32` (f16/bf16 in,
    f32 accumulate): a thread block of 4 warps computes a 64 (features) x 64
    (tokens) tile, each warp 16 features x 64 tokens as 8 MMAs per 32-wide
    k-step, reading the compressed weight and its metadata in the layout of
    `!sgpu.compressed`. Token and K tails are masked, so any M and K work.

    `kernel=wgmma` (sm_90a and PTX ISA 8.2 or later, else an error at the
    op; `kernel=auto`, the default, picks it wherever the target allows and
    `mma` elsewhere) generates warpgroup kernels on
    `wgmma.mma_async.sp.sync.aligned.m64nNk32.f32` (SS form, selector 0).
    When K % 8 == 0 it is a warp-specialized kernel: a producer warpgroup
    issues TMA loads of the compressed weight (128 rows, 64B swizzle), of X
    (N tokens x 64 K, 128B swizzle) and of the metadata words into a
    multi-stage mbarrier pipeline; two consumer warpgroups each compute 64
    features x N tokens and keep one wgmma group in flight across k-tiles
    (metadata registers double-buffered by a two-tile unrolled loop and kept
    alive until their group retires). The host side creates the three
    `sgpu.tensor_map`s; the kernel takes them as `!llvm.ptr` parameters listed
    in `sgpu.tensor_map_args` (made by-value grid constants by
    `sgpu-tensor-map-params`). N (16..256) and the stage count come from a
    tile table (`tile-n` / `stages` override them). Where the grid would
    fill less than half the multiprocessors (few 128-row weight blocks and
    few tokens), the k-tiles are split over several blocks (split-K, at
    least 8 k-tiles each, `split-k` overrides the count): each writes f32
    partial sums to a workspace and a generated reduce kernel adds them,
    the bias and the activation. The grid is persistent (`persistent`,
    default true): at most one block per multiprocessor of the `device`
    (132 on the H200, 114 on an H100 PCIe), each walking
    the output tiles in the grouped order with its stage ring running on
    across tiles, so the next tile's loads overlap this tile's epilogue;
    `reserve-sms=R` caps it at that count less R, leaving R multiprocessors to
    the communication kernels of a tensor-parallel program.
    Output tiles leave through TMA (`epilogue=auto`, where the result is
    16-bit, N % 8 == 0 and there is no split-K): each consumer warpgroup
    writes its rounded values into a 128B-swizzled shared-memory box with
    `stmatrix .trans` and one thread issues the bulk tensor store, Y being
    one more tensor map; the box shrinks (128 down to 16 tokens) rather
    than cost a pipeline stage. `epilogue=registers` stores from the
    accumulators (warp shuffles pair adjacent features); `epilogue=tma`
    asks for TMA stores and remarks where they do not apply.
    Other K take a one-
    warpgroup kernel that stages tiles through registers into two shared
    memory stages (no swizzle) and waits for each stage's wgmmas.

    `chip` selects the target; sparse MMA needs sm_80 or newer and the
    ordered-metadata form needs PTX ISA 8.5 (`features`). An op the chosen
    chip/feature pair cannot express is an error at the op, never a backend
    crash. Compressed weights must be known at compile time: `sgpu.compress`
    of a constant is compressed here (a weight that breaks 2:4 is an error
    naming the row and group), `sgpu.assemble` parts are used as they are,
    and a weight that is an argument of the function read only by its
    `sgpu.compress` / `sgpu.nm_decompose` is compressed by a generated
    kernel (`sgpu_prepare_<i>`: the greedy window assignment and the 2:4
    encoding of the compile-time compression) launched in
    the program's prepare stage (`sgpu.stage = "prepare"`), followed by an
    `sgpu.weight_check` of its status word; the runtime runs it once, when
    the weight is bound as a param, and fails the bind with the first row
    and group that break the pattern.

    `sgpu.matmul` (a dense GEMM) gets no kernel: it becomes `sgpu.gemm_call`
    on buffers, which the runtime program runs with cuBLASLt in order with
    the launches.

    Collectives get none either: `sgpu.all_reduce_start` becomes
    `sgpu.all_reduce_call` from the input's buffer into a new one (out of
    place), its `sgpu.all_reduce_wait` becomes `sgpu.all_reduce_sync` (which
    reads the input again, so bufferization keeps that buffer unwritten
    until then) and the result tensor over the new buffer; a blocking
    `sgpu.all_reduce` becomes both, back to back. The runtime program runs
    them with NCCL on the communicator's stream (`allreduce` / `wait`
    lines). A collective inside a region is an error: the program is a
    straight line.

    `sgpu.rms_norm` and `sgpu.layer_norm` (static shapes, f16/bf16/f32,
    normalized over the last dimension D) become generated kernels with
    one block per row: min(256, D rounded up to a warp) threads accumulate
    strided columns in f32, reduce with `gpu.shuffle xor` inside warps and
    through shared memory across warps, and write the row with the formula
    of the CPU reference (layer norm: mean, then the biased variance in a
    second pass; rsqrt as a correctly rounded 1 / sqrt, as the reference
    lowers it), rounded to the element type.

    `sgpu.twell_pack` and `sgpu.twell_ffn` (TwELL activations, CUDA cores):
    the pack allocates the concrete parts of its `!sgpu.twell` value on the
    host, plus two counters that are program stats
    (`twell<i>.fallback_rows`, `twell<i>.active_neurons`), and launches
    `sgpu_twell_clear_<i>` (1 thread: both counters := 0, every run) and
    `sgpu_twell_pack_<i>` (one block per row, min(8, tiles) warps: each lane
    tests 8 columns of one 16-byte load and a shuffle scan of the lanes'
    counts places the entries in column order; word 0 the true count, the
    overflow decided per row through shared memory, an overflowing row
    copied to the fallback and counted). The down projection Wd is
    transposed by `sgpu_twell_down_t_<i>` (once, in the prepare stage, when
    it is a constant or an argument only TwELL consumers read). Each
    `sgpu.twell_ffn` becomes `sgpu_twell_ffn_<i>`: one block per token
    stages the row's active neurons (column, value) in shared memory,
    warps compute the gated `X[m] . Wu[j]` one neuron each (16-byte loads,
    shuffles), and each thread accumulates 8-feature vectors of
    `coef * WdT[j]` in f32 registers (d at most 16384; a tile's capacity at
    most 4096 entries). A TwELL value must come from `sgpu.twell_pack` and
    be read only by `sgpu.twell_ffn`; anything else is an error at the op.

    `twell-producer=fused` (sm_90a) replaces a pack whose input is
    `sgpu.matmul {activation = relu}` (no other user, 16-bit types, K a
    multiple of 8, tile 64, 128 or 256) and that matmul by one generated
    GEMM, `sgpu_twell_producer_<i>`: the TMA pipeline of the spmm kernel in
    its dense mode (A = X, 128 tokens per block; B = W, 256 features per
    block; four `wgmma.mma_async` m64n256k16 per stage), whose epilogue adds
    the bias, applies the ReLU, rounds, and packs each (row, tile) within
    the lane quad that holds it (mask shuffles and population counts place
    the entries in column order). H is never written. A tile over capacity
    is written densely into its row's fallback and the row is flagged with
    an atomic; `sgpu_twell_fixup_<i>` then fills the rest of each flagged
    row's fallback from its entries, and `sgpu_twell_clear_<i>` clears the
    flags and counters before the GEMM. Its tile is fixed (128 tokens x 256
    features, as many 48 KiB stages as fit, at most 4; the spmm options
    `tile-n`, `stages` and `split-k` do not apply; `reserve-sms` does).
    Where the fused producer does not
    apply, the pack keeps the library path with a remark saying why.
    `auto` (the default) keeps the library path: on the H200 the fused
    producer measured a tie with it (0.96-1.00x).

    `twell-consumer=tensor-cores` (sm_90a, d a multiple of 8, the library
    producer) runs the FFN on wgmma over blocks of 64 rows: the pack
    becomes `sgpu_twell_blocks_<i>`, which writes, per block, the neurons
    active in any of its rows (their union, `idx`, and its size, `count`)
    and the block's H at those neurons (`coef`); a gated consumer becomes
    `sgpu_twell_up_<i>` (P = (X . Wu[idx]^T) * coef over the union, 256
    gathered rows of Wu per tile copied by cp.async into the TMA pipeline's
    stages, over coef, or into a P buffer of its own when the pack has
    other consumers) and both become `sgpu_twell_down_<i>`
    (Y = P . WdT[idx], WdT's gathered rows as an MN-major B operand,
    ceil(U / 64) k-tiles per block). No row falls back (the form has no
    capacity); the nonzero count is measured as with the pack kernel. Where
    it does not apply, the CUDA-core consumer stays with a remark. `auto`
    (the default) follows the choice `sgpu-sparsify-ffn` recorded on the
    pack from its calibration density (`sgpu.twell_consumer`), else the
    CUDA cores.

    Every element-wise linalg op of the host functions becomes a generated
    kernel with one thread per 8, 4 or 2 consecutive result elements (16
    bytes at most per operand; one element when the last dimension allows
    none), 256 threads per block, operands read with vector loads where
    their last dimension is the result's:
    `linalg.generic` with only parallel loops, static shapes, one result,
    inputs indexed by projected permutations (broadcasts such as a bias row
    or a `[D]` weight, transposes) and a body of scalar `arith` / `math`
    ops, which the kernel clones. Named element-wise ops (`linalg.fill`,
    `linalg.add`, `linalg.transpose`, ...) are generalized first; element-
    wise `arith` / `math` ops on tensors reach the pass as generics through
    `convert-elementwise-to-linalg` in `sgpu-compile`. A fill or generic
    that only initializes the `outs` of one that never reads it is erased.
    Any other linalg op left in a host function (a reduction, a body with
    `linalg.index`, dynamic shapes, several results) is an error at the op:
    `'linalg.generic' has no GPU lowering: <why>`.
  }];
  let options = !listconcat(KernelSelectionOptions, [
    Option<"programmaticLaunch", "programmatic-launch", "bool",
           /*default=*/"false",
           "sm_90a TMA spmm kernels of a run-invariant weight load its first "
           "stages before they wait for the kernel before them "
           "(griddepcontrol.wait; for programs compiled with "
           "sgpu-programmatic-launch, which sgpu-compile's "
           "programmatic-launch=true runs)">,
    Option<"slicedTmaStore", "sliced-tma-store", "bool",
           /*default=*/"false",
           "A fused sibling GEMM (sgpu-fuse-sibling-spmm) whose plan "
           "stores by TMA and does not split K writes its column slices "
           "through one tensor map each instead of storing the whole "
           "result and copying the slices out (off until checked on a "
           "GPU)">]);
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::bufferization::BufferizationDialect",
                           "::mlir::gpu::GPUDialect",
                           "::mlir::LLVM::LLVMDialect",
                           "::mlir::NVVM::NVVMDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::vector::VectorDialect"];
}

#endif // SPARSEOPT_CONVERSION_PASSES_TD
