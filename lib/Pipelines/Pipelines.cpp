//===- Pipelines.cpp - sgpu-compile and sgpu-reference --------------------===//

#include "sparse-opt/Pipelines/Pipelines.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace {

struct CompileOptions : public PassPipelineOptions<CompileOptions> {
  PassOptions::Option<std::string> chip{
      *this, "chip", llvm::cl::desc("Target GPU (sm_80, sm_90, sm_90a, ...)"),
      llvm::cl::init("sm_90a")};
  PassOptions::Option<std::string> features{
      *this, "features",
      llvm::cl::desc("PTX ISA features (+ptx85 .. +ptx88); sparse MMA with "
                     "ordered metadata needs +ptx85"),
      llvm::cl::init("+ptx85")};
  PassOptions::Option<std::string> device{
      *this, "device",
      llvm::cl::desc("GPU part the grids and pipeline depths are sized for "
                     "(h200, h100-sxm, h100-pcie, a100; empty = the chip's "
                     "reference part, h200 for sm_90a)"),
      llvm::cl::init("")};
  PassOptions::Option<std::string> kernel{
      *this, "kernel",
      llvm::cl::desc("spmm kernel: auto (wgmma where the chip has it, else "
                     "mma), mma (warp-level mma.sp) or wgmma (warpgroup "
                     "wgmma.mma_async.sp, sm_90a only)"),
      llvm::cl::init("auto")};
  PassOptions::Option<int64_t> tileN{
      *this, "tile-n",
      llvm::cl::desc("wgmma TMA kernel: tokens per block (16..256, a power "
                     "of two; 0 = the tile table)"),
      llvm::cl::init(0)};
  PassOptions::Option<int64_t> stages{
      *this, "stages",
      llvm::cl::desc("wgmma TMA kernel: pipeline stages (0 = as many as fit, "
                     "at most 8)"),
      llvm::cl::init(0)};
  PassOptions::Option<int64_t> splitK{
      *this, "split-k",
      llvm::cl::desc("wgmma TMA kernel: split-K block count (1..32; 0 = the "
                     "tile table)"),
      llvm::cl::init(0)};
  PassOptions::Option<bool> persistent{
      *this, "persistent",
      llvm::cl::desc("wgmma TMA kernel: a persistent grid (one block per "
                     "multiprocessor walking the tiles); false: a block per "
                     "tile"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> programmaticLaunch{
      *this, "programmatic-launch",
      llvm::cl::desc("sm_90 and newer: every generated kernel waits for its "
                     "predecessor itself, so the runtime launches it while "
                     "that predecessor runs (sgpu-programmatic-launch; `pdl` "
                     "launch lines; the spmm kernels of prepared weights load "
                     "them before that wait). On by default (measured: "
                     "docs/performance.md); false: plain launches"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> slicedTmaStore{
      *this, "sliced-tma-store",
      llvm::cl::desc("A fused sibling GEMM (sgpu-fuse-sibling-spmm) stored "
                     "by TMA writes its column slices through one tensor map "
                     "each instead of copying them out of the whole result "
                     "(off until checked on a GPU)"),
      llvm::cl::init(false)};
  PassOptions::Option<int64_t> reserveSMs{
      *this, "reserve-sms",
      llvm::cl::desc("wgmma TMA kernel: multiprocessors a persistent grid "
                     "leaves free for communication kernels (0 to the "
                     "device's multiprocessors less one)"),
      llvm::cl::init(0)};
  PassOptions::Option<bool> attentionLibrary{
      *this, "attention-library",
      llvm::cl::desc("true: a prefill attention runs as cuDNN's fused "
                     "attention where it applies (the runtime opens cuDNN "
                     "9); false: the generated attention kernels only"),
      llvm::cl::init(true)};
  PassOptions::Option<std::string> sparsePolicy{
      *this, "sparse-policy",
      llvm::cl::desc("auto: keep a sparse-annotated matmul dense (a library "
                     "GEMM, with a remark) where the sparse kernel measured "
                     "slower on the chip; sparse: always the sparse kernel"),
      llvm::cl::init("auto")};
  PassOptions::Option<std::string> lift{
      *this, "lift",
      llvm::cl::desc("(2N-2):2N activation lift: auto (6:8 weights in the "
                     "tiled window order; on sm_90a the TMA kernel loads X "
                     "itself and gathers the shared windows in shared "
                     "memory up to 16 tokens, where that measured fastest, "
                     "else split), fused (that gather wherever it applies), "
                     "split (a small kernel copies only the shared windows, "
                     "a third of the lifted bytes, which the kernel loads "
                     "by TMA beside X) or separate (the plain window order "
                     "and a gather kernel writing the whole lifted X)"),
      llvm::cl::init("auto")};
  PassOptions::Option<int64_t> cluster{
      *this, "cluster",
      llvm::cl::desc("wgmma TMA kernels: blocks per cluster (0 = the tile "
                     "table: 2 for spmms of at least 4096 tokens; 1; 2 or "
                     "4, which multicast each shared B tile to all blocks "
                     "of the cluster)"),
      llvm::cl::init(0)};
  PassOptions::Option<std::string> epilogue{
      *this, "epilogue",
      llvm::cl::desc("sm_90a TMA spmm output tiles: auto (tma where it "
                     "applies), tma (shared-memory staging and TMA bulk "
                     "stores; a remark where it does not apply) or "
                     "registers (stores from the accumulators)"),
      llvm::cl::init("auto")};
  PassOptions::Option<std::string> twellProducer{
      *this, "twell-producer",
      llvm::cl::desc("producer of TwELL packs fed by a ReLU GEMM: auto "
                     "(library: the fused one measured a tie), library "
                     "(cuBLASLt GEMM, then the pack kernel) or fused (sm_90a: "
                     "a generated wgmma GEMM whose epilogue packs)"),
      llvm::cl::init("auto")};
  PassOptions::Option<std::string> twellConsumer{
      *this, "twell-consumer",
      llvm::cl::desc("consumer of TwELL FFNs: auto (the choice "
                     "sgpu-sparsify-ffn recorded, else cuda-cores), "
                     "cuda-cores (one block per row) or tensor-cores "
                     "(sm_90a: wgmma over blocks of 64 rows)"),
      llvm::cl::init("auto")};
  PassOptions::Option<std::string> twellGather{
      *this, "twell-gather",
      llvm::cl::desc("tensor-core TwELL consumer: how the gathered weight "
                     "rows reach shared memory, cp-async (default) or tma"),
      llvm::cl::init("cp-async")};
  PassOptions::Option<std::string> twellPack{
      *this, "twell-pack",
      llvm::cl::desc("TwELL pack after the library GEMM: auto (consumer where it applies), "
                     "kernel (the pack kernel) or consumer (fused into its "
                     "one CUDA-core consumer, which reads H)"),
      llvm::cl::init("auto")};
  PassOptions::Option<int64_t> twellPasses{
      *this, "twell-passes",
      llvm::cl::desc("CUDA-core TwELL consumer: passes over the neurons "
                     "(0 = auto: one, or enough that each pass reads at most "
                     "40 MiB of weight rows when rows are <= 4 KiB and the "
                     "weights > 64 MiB)"),
      llvm::cl::init(0)};
  PassOptions::Option<std::string> outputDir{
      *this, "output-dir",
      llvm::cl::desc("Write kernels.ptx, program.txt, constants and "
                     "summary.txt here (nothing is written when empty)"),
      llvm::cl::init("")};
};

struct ReferenceOptions : public PassPipelineOptions<ReferenceOptions> {
  PassOptions::Option<bool> twellReport{
      *this, "twell-report",
      llvm::cl::desc("Print the fallback-row count of every sgpu.twell_pack "
                     "when the program runs"),
      llvm::cl::init(false)};
};

/// ` device=NAME`, or nothing for the chip's reference part (an empty
/// value cannot be written in a pipeline string).
std::string deviceOption(StringRef device) {
  return device.empty() ? std::string() : (" device=" + device).str();
}

/// Front half shared by both pipelines: recognize and rewrite. Sparse
/// weights first (the policy may keep some dense), then the dense linear
/// layers, then the epilogues of both; then transposes that move no
/// element become views.
std::string rewritePasses(StringRef chip = "sm_90a",
                          StringRef policy = "auto", StringRef lift = "auto",
                          StringRef device = "") {
  // Siblings fuse after the epilogues: a GEMM with a bias (Qwen's q, k
  // and v) keeps it in its epilogue rather than fusing and adding it to a
  // slice in a kernel of its own.
  return ("sgpu-slide-sparse{chip=" + chip + " policy=" + policy +
          " lift=" + lift + deviceOption(device) +
          "},sgpu-dense-matmul,sgpu-fuse-epilogue,sgpu-fuse-sibling-spmm{chip=" +
          chip + deviceOption(device) +
          "},sgpu-fold-unit-transposes,canonicalize")
      .str();
}

// convert-sgpu-to-gpu validates the chip/feature pair before anything is
// generated, so an unusable target fails the run with a diagnostic.
LogicalResult buildCompile(OpPassManager &pm, const CompileOptions &opts) {
  std::string p;
  llvm::raw_string_ostream os(p);
  // Collectives start where they are and are waited for at their first
  // use, so a program overlaps them with whatever comes in between.
  // The tiled window orders are the TMA kernel's; the warp-level kernel
  // takes the plain order (no padding of K to whole tiles).
  std::string lift =
      opts.kernel.getValue() == "mma" ? "separate" : opts.lift.getValue();
  os << rewritePasses(opts.chip.getValue(), opts.sparsePolicy.getValue(), lift,
                      opts.device.getValue())
     << ",sgpu-async-collectives,";
  // Element-wise arith / math ops on tensors (a residual `arith.addf`)
  // become linalg.generic for the element-wise kernels of
  // convert-sgpu-to-gpu, which also generalizes the named element-wise
  // linalg ops itself. This runs after the rewrites: they match
  // linalg.matmul and the bias / ReLU generics in the forms the importers
  // write, and named ops such as linalg.matmul are never generalized here
  // (one no rewrite took stays an error at its own name).
  os << "convert-elementwise-to-linalg,";
  // A residual add whose sum an RMS norm reads becomes one kernel that
  // writes both (before the chains below could absorb the add).
  os << "sgpu-fuse-residual-norm,";
  // A RoPE of the new keys that only the KV-cache write reads is computed
  // by that write's kernel.
  os << "sgpu-fuse-rope-cache-write,";
  // A chain of element-wise generics (SwiGLU's SiLU and multiply) becomes
  // one generic: one kernel, the intermediate in registers.
  os << "sgpu-fuse-elementwise,";
  // linalg.softmax outside the recognized attention becomes its max,
  // subtract, exp, sum and divide (element-wise and reduction kernels).
  os << "sgpu-decompose-aggregates,";
  // Every kernel choice is recorded on its op first (sgpu.config), where
  // -mlir-print-ir-after=sgpu-select-kernels shows it; the lowering then
  // builds what the ops say. Both take the target and the device.
  std::string target;
  llvm::raw_string_ostream ts(target);
  ts << "chip=" << opts.chip.getValue()
     << " features=" << opts.features.getValue()
     << deviceOption(opts.device.getValue())
     << " reserve-sms=" << opts.reserveSMs.getValue()
     << " attention-library="
     << (opts.attentionLibrary.getValue() ? "true" : "false");
  os << "sgpu-select-kernels{" << target
     << " kernel=" << opts.kernel.getValue()
     << " tile-n=" << opts.tileN.getValue()
     << " stages=" << opts.stages.getValue()
     << " split-k=" << opts.splitK.getValue()
     << " lift=" << opts.lift.getValue()
     << " persistent=" << (opts.persistent.getValue() ? "true" : "false")
     << " twell-producer=" << opts.twellProducer.getValue()
     << " twell-consumer=" << opts.twellConsumer.getValue()
     << " twell-gather=" << opts.twellGather.getValue()
     << " twell-passes=" << opts.twellPasses.getValue()
     << " twell-pack=" << opts.twellPack.getValue()
     << " cluster=" << opts.cluster.getValue()
     << " epilogue=" << opts.epilogue.getValue() << "},";
  // Library attention reads the projections' layout: the transposes
  // around it go.
  os << "sgpu-fold-attention-transposes,";
  os << "convert-sgpu-to-gpu{" << target << " programmatic-launch="
     << (opts.programmaticLaunch.getValue() ? "true" : "false")
     << " sliced-tma-store="
     << (opts.slicedTmaStore.getValue() ? "true" : "false") << "},";
  os << "sgpu-merge-identical-kernels,";
  // After merging: each kept kernel gets its grid-dependency wait once.
  if (opts.programmaticLaunch)
    os << "sgpu-programmatic-launch,";
  os << "one-shot-bufferize{bufferize-function-boundaries=true "
        "function-boundary-type-conversion=identity-layout-map},";
  os << "canonicalize,";
  // sgpu-tensor-map-params follows the NVVM conversion directly: it turns
  // the tensor map arguments of the lowered kernels into by-value params.
  os << "gpu.module(convert-scf-to-cf,"
        "convert-gpu-to-nvvm{use-bare-ptr-memref-call-conv=true},"
        "sgpu-tensor-map-params,"
        "canonicalize,cse,reconcile-unrealized-casts),";
  os << "gpu-module-to-binary{format=isa}";
  if (!opts.outputDir.empty())
    os << ",sgpu-emit-artifacts{output-dir=" << opts.outputDir.getValue()
       << "}";
  return parsePassPipeline(p, pm, llvm::errs());
}

LogicalResult buildReference(OpPassManager &pm,
                             const ReferenceOptions &opts) {
  std::string p = rewritePasses() +
                  ",sgpu-decompose-aggregates,"
                  "convert-sgpu-to-loops{twell-report=" +
                  (opts.twellReport ? "true" : "false") +
                  "},"
                  "one-shot-bufferize{bufferize-function-boundaries=true "
                  "function-boundary-type-conversion=identity-layout-map},"
                  "convert-linalg-to-loops,lower-affine,convert-scf-to-cf,"
                  "arith-expand{include-bf16=true},convert-math-to-llvm,"
                  "convert-math-to-libm,"
                  "expand-strided-metadata,"
                  "finalize-memref-to-llvm,convert-vector-to-llvm,"
                  "convert-to-llvm,reconcile-unrealized-casts";
  return parsePassPipeline(p, pm, llvm::errs());
}

} // namespace

void mlir::sgpu::registerSparseOptPipelines() {
  PassPipelineRegistration<CompileOptions>(
      "sgpu-compile",
      "Compile input IR to PTX kernels plus a runtime program (rewrites, "
      "GPU kernel generation, bufferization, NVVM, PTX)",
      [](OpPassManager &pm, const CompileOptions &opts) {
        (void)buildCompile(pm, opts);
      });
  PassPipelineRegistration<ReferenceOptions>(
      "sgpu-reference",
      "Lower input IR through the CPU reference loops to the LLVM dialect, "
      "ready for mlir-runner",
      [](OpPassManager &pm, const ReferenceOptions &opts) {
        (void)buildReference(pm, opts);
      });
}
