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
    Ops without a reference lowering yet (`sgpu.nm_decompose` of a weight
    known only at run time, `sgpu.twell_pack`, `sgpu.twell_ffn`) are reported
    as errors.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::bufferization::BufferizationDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect"];
}

def ConvertSGPUToGPU : Pass<"convert-sgpu-to-gpu", "::mlir::ModuleOp"> {
  let summary = "Generate GPU kernels (sparse tensor cores) and their host launches for sgpu ops";
  let description = [{
    Replaces each `sgpu.spmm` by a generated `gpu.func` in a `gpu.module`
    and a `gpu.launch_func` on the host; each `sgpu.lift` (the activation
    gather of a sliding-window matmul) by a generated gather kernel, one
    thread per lifted element (the lift fused into the GEMM's operand loads
    is not generated yet). The kernel runs on sparse tensor
    cores with `mma.sp::ordered_metadata.sync.aligned.m16n8k32` (f16/bf16 in,
    f32 accumulate): a thread block of 4 warps computes a 64 (features) x 64
    (tokens) tile, each warp 16 features x 64 tokens as 8 MMAs per 32-wide
    k-step, reading the compressed weight and its metadata in the layout of
    `!sgpu.compressed`. Token and K tails are masked, so any M and K work.

    `kernel=wgmma` (opt-in; sm_90a and PTX ISA 8.2 or later, else an error
    at the op) generates instead a warpgroup kernel on
    `wgmma.mma_async.sp.sync.aligned.m64nNk32.f32` (SS form, selector 0):
    one warpgroup (128 threads) per block computes a 64 (features) x N
    (tokens) tile, N = 128 when M > 128, else 64, with two k32 wgmmas per
    64-wide K stage. The compressed weight tile (A: 64 rows x 32 compressed
    columns) and the activation tile (B: N tokens x 64 K, K-major) sit in
    shared memory in the no-swizzle K-major canonical layout (core matrices
    of 8 rows x 16 B stored contiguously; LBO = 128 B to the next core
    matrix along K, SBO = 512 B (A) / 1024 B (B) to the next 8 rows),
    described by 64-bit matrix descriptors. The metadata words of
    `!sgpu.compressed` (the mma.sp m16n8k32 lane layout) are exactly the
    wgmma per-thread metadata of warp w for rows 16w..16w+15, so they are
    used unchanged. When K % 8 == 0 the tiles (and each thread's metadata
    words) are copied with `cp.async` (masked vectors zero-filled) into 5
    stages of dynamic shared memory, 4 tiles ahead of the one being
    multiplied (65 KiB for N = 64, 105 KiB for N = 128); otherwise they go
    through registers into two static stages (ping-pong), the next tile's
    global loads overlapping the current wgmmas. Generic-proxy writes are
    followed by `fence.proxy.async` and a barrier; each stage's wgmmas are
    one `wgmma.commit_group`, waited for with `wgmma.wait_group 0` before
    the next stage (ptxas does not keep the metadata register of an
    in-flight wgmma, so no group is left in flight across stages).

    `chip` selects the target; sparse MMA needs sm_80 or newer and the
    ordered-metadata form needs PTX ISA 8.5 (`features`). An op the chosen
    chip/feature pair cannot express is an error at the op, never a backend
    crash. Compressed weights must be known at compile time: `sgpu.compress`
    of a constant is compressed here (a weight that breaks 2:4 is an error
    naming the row and group), `sgpu.assemble` parts are used as they are;
    compressing weights on the GPU at run time is not generated yet.
  }];
  let options = [
    Option<"chip", "chip", "std::string", /*default=*/"\"sm_90a\"",
           "Target GPU architecture (sm_80, sm_86, sm_89, sm_90, sm_90a, ...)">,
    Option<"features", "features", "std::string", /*default=*/"\"+ptx85\"",
           "PTX ISA feature string of the target (e.g. +ptx85)">,
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
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::bufferization::BufferizationDialect",
                           "::mlir::gpu::GPUDialect",
                           "::mlir::LLVM::LLVMDialect",
                           "::mlir::NVVM::NVVMDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::vector::VectorDialect"];
}

#endif // SPARSEOPT_CONVERSION_PASSES_TD
