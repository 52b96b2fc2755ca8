//===- Manifest.h - The program manifest (program.txt) ---------*- C++ -*-===//
//
// The in-memory form of an artifact directory's manifest and its parser.
// Parsing touches no GPU: it reads program.txt and checks that the module
// file and each constant file exist (constants with the declared size) and
// that every operand of a launch's tensor map or of a gemm fits its buffer,
// that prepare-stage steps use no input or output, and that each `check`
// line names a temp buffer and a declared param.
// The format is documented in sparseopt/runtime.h.
//
//===----------------------------------------------------------------------===//
#ifndef SPARSEOPT_RUNTIME_MANIFEST_H
#define SPARSEOPT_RUNTIME_MANIFEST_H

#include "Errors.h"
#include "Signature.h"

#include "sparseopt/launch_limits.h"
#include "sparseopt/program_format.h"

#include <cstdint>
#include <string>
#include <vector>

namespace sparseopt {

/// The manifest file name inside an artifact directory.
inline constexpr const char *kManifestFileName = "program.txt";
/// The manifest version the compiler writes (shared with it), and the
/// oldest this runtime still reads.
inline constexpr int kManifestVersion = SPARSEOPT_PROGRAM_VERSION;
inline constexpr int kOldestManifestVersion = SPARSEOPT_PROGRAM_OLDEST_VERSION;

enum class BufferKind { Input, Output, Param, Constant, Temp };

/// One `buffer` line.
struct BufferDecl {
  uint64_t id = 0;
  BufferKind kind = BufferKind::Temp;
  int slot = 0;       ///< input/output/param index (each kind its own space)
  uint64_t bytes = 0; ///< size in bytes
  std::string file;   ///< constant: path (artifact dir already prepended)
  /// temp: byte offset into the program's arena (`arena <offset>`), or -1
  /// for a temp with its own allocation.
  int64_t arenaOffset = -1;
  int line = 0;
};

/// "input 0", "output 1", "param 2", "constant" or "temp" for messages.
std::string bufferRole(const BufferDecl &buffer);

enum class ArgKind { Buffer, I32, I64, F32, TensorMap };

/// Element types a tensor map argument can describe.
enum class TensorMapDType { F16, BF16, F32, I32 };

/// The most dimensions a tensor map has (CUDA's limit for tiled maps).
inline constexpr unsigned kMaxTensorMapRank = 5;

/// The tensor map of a `tmap:` launch argument: a TMA tiled map over a dense
/// row-major buffer. Dimensions and box are stored as written, outermost
/// first. The parser checks every rule cuTensorMapEncodeTiled places on
/// them, so encoding can only fail for reasons of the device pointer.
struct TensorMapDecl {
  TensorMapDType dtype = TensorMapDType::F16;
  unsigned elementBytes = 2;
  unsigned rank = 0;                      ///< 1..kMaxTensorMapRank
  uint64_t dims[kMaxTensorMapRank] = {0}; ///< each 1..2^32
  uint32_t box[kMaxTensorMapRank] = {0};  ///< each 1..256
  unsigned swizzle = 0;                   ///< bytes: 0, 32, 64 or 128
  /// Index among the manifest's tensor map arguments (in file order), where
  /// a loaded program keeps this argument's encoded map.
  size_t slot = 0;

  /// Bytes the map spans, product(dims) * elementBytes, into `out`; false
  /// when that does not fit in 64 bits.
  bool spanBytes(uint64_t &out) const;
};

/// "f16", "bf16", "f32" or "i32".
const char *tensorMapDTypeName(TensorMapDType dtype);

/// "f16 4096x2048, box 128x32, swizzle 64" for messages.
std::string describeTensorMap(const TensorMapDecl &map);

/// One kernel argument of a `launch` line.
struct ArgDecl {
  ArgKind kind = ArgKind::I32;
  uint64_t bufferId = 0; ///< Buffer, TensorMap: the id as written
  size_t buffer = 0;     ///< Buffer, TensorMap: index into Manifest::buffers
  /// Scalars: the value's bytes (4 or 8 of them), ready to be passed to
  /// cuLaunchKernel by address.
  alignas(8) unsigned char value[8] = {0};
  /// TensorMap: the map to encode over the buffer at each run.
  TensorMapDecl tensorMap;
};

/// A persistent grid (`grid persistent:<units>:<cluster>:<reserved> 1 1`):
/// cluster * min(units, (multiprocessors - reserved) / cluster) blocks, at
/// least one cluster, on the device the program loads on.
struct PersistentGrid {
  unsigned units = 0; ///< 0: the launch's grid is fixed
  unsigned cluster = 1;
  unsigned reserved = 0;
};

/// The x size of a grid `persistent` on a device of `multiprocessors`.
unsigned persistentGridX(const PersistentGrid &persistent,
                         unsigned multiprocessors);

/// One `launch` line.
struct LaunchDecl {
  std::string kernel;
  /// The grid; a persistent grid's x is its most blocks (units * cluster)
  /// until the program loads (ProgramResources.cpp resolves it on the
  /// device).
  unsigned grid[3] = {1, 1, 1};
  PersistentGrid persistent;
  unsigned block[3] = {1, 1, 1};
  unsigned sharedBytes = 0;
  /// `pdl`: the kernel waits for the step before it itself, so the runtime
  /// may launch it while that step finishes (programmatic dependent launch).
  bool programmatic = false;
  std::vector<ArgDecl> args;
  int line = 0;
};

/// Element types of `gemm` operands.
enum class GemmDType { F16, BF16, F32 };

/// "f16", "bf16" or "f32".
const char *gemmDTypeName(GemmDType dtype);

/// 2 or 4.
unsigned gemmDTypeBytes(GemmDType dtype);

/// The largest M, N or K of a gemm: an int32, as cuBLAS's own dimensions
/// are, which also keeps every operand's byte size (at most 4 * (2^31-1)^2)
/// below 2^64.
inline constexpr uint64_t kMaxGemmExtent = INT32_MAX;

/// A buffer operand of a `gemm` line.
struct GemmOperand {
  uint64_t bufferId = 0; ///< the id as written
  size_t buffer = 0;     ///< index into Manifest::buffers
};

/// One `gemm` line: Y[M,N] = act(X[M,K] * W[N,K]^T + bias[N]) with dense
/// row-major X and W of type `in`, Y of type `out` and bias of `biasType`,
/// accumulated and scaled in f32. Executed with cuBLASLt.
struct GemmDecl {
  uint64_t m = 1, n = 1, k = 1; ///< each 1..kMaxGemmExtent
  GemmDType in = GemmDType::F16;  ///< f16 or bf16
  GemmDType out = GemmDType::F16; ///< f16, bf16 or f32
  GemmOperand x, w, y;
  bool hasBias = false;
  GemmOperand bias;                    ///< valid when hasBias
  GemmDType biasType = GemmDType::F32; ///< valid when hasBias
  bool relu = false;                   ///< act=relu
  int line = 0;
};

/// The gemm in manifest syntax with every field, keys in their order, e.g.
/// "gemm m=16 n=4096 k=1024 in=f16 out=f16 x=b0 w=b1 y=b2 bias=b3:f32 act=relu".
std::string describeGemm(const GemmDecl &gemm);

/// One `attention` line: O = softmax(Q K^T * scale [causal]) V per batch
/// and head, with row-major Q, O of B x H x Sq x D and K, V of
/// B x Hkv x Sk x D (H a multiple of Hkv), all f16 or all bf16, softmax in
/// f32. `causal` (Sq = Sk) masks the keys after the query. Executed with
/// cuDNN's fused attention (Cudnn.h).
struct AttentionDecl {
  uint64_t b = 1, h = 1, hkv = 1, sq = 1, sk = 1, d = 8; ///< extents
  GemmDType type = GemmDType::F16; ///< f16 or bf16
  float scale = 1.0f;              ///< finite
  GemmOperand q, k, v, o;
  bool causal = false;    ///< mask=causal
  bool seqMajor = false;  ///< layout=bshd: q, k, v and o are B x S x H x D
  int line = 0;
};

/// The largest extent of an attention line (an int32, as cuDNN's tensor
/// dimensions are stored; the byte sizes stay far below 2^64 only when
/// checked, which resolveAttention does).
inline constexpr uint64_t kMaxAttentionExtent = INT32_MAX;

/// The attention line as parsed, keys in their order, e.g. "attention b=1
/// h=32 hkv=8 sq=2048 sk=2048 d=128 type=bf16 scale=0.0883883 q=b0 k=b1
/// v=b2 o=b3 mask=causal".
std::string describeAttention(const AttentionDecl &attention);

/// The reduction of an `allreduce` line (NCCL's ncclSum .. ncclAvg).
enum class ReduceOp { Sum, Prod, Max, Min, Avg };

/// "sum", "prod", "max", "min" or "avg".
const char *reduceOpName(ReduceOp op);

/// One `allreduce` line: recv[i] = op over the ranks of send[i] for
/// i < count, run with NCCL on the communicator's stream. send and recv may
/// be the same buffer (in place). The compute stream goes on at once; the
/// `wait` line of the same slot makes it wait for the result.
struct AllReduceDecl {
  int slot = 0;              ///< the slot its `wait` names
  uint64_t count = 1;        ///< elements, 1..kMaxAllReduceCount
  GemmDType type = GemmDType::F16;
  ReduceOp op = ReduceOp::Sum;
  GemmOperand send, recv;
  int line = 0;
  int waitLine = 0;          ///< the line of its `wait`
};

/// CUDA's launch limits, shared with the compiler (sparseopt/launch_limits.h).
inline constexpr unsigned kMaxGridX = SPARSEOPT_MAX_GRID_X;
inline constexpr unsigned kMaxGridYZ = SPARSEOPT_MAX_GRID_YZ;
inline constexpr unsigned kMaxBlockThreads = SPARSEOPT_MAX_BLOCK_THREADS;
inline constexpr unsigned kMaxBlockZ = SPARSEOPT_MAX_BLOCK_Z;
inline constexpr unsigned kMaxSharedBytes = SPARSEOPT_MAX_SHARED_BYTES;

/// The most elements of one all-reduce (NCCL takes a size_t count; this
/// keeps count * 4 bytes far from overflow).
inline constexpr uint64_t kMaxAllReduceCount = uint64_t(1) << 48;

/// "allreduce slot=0 send=b3 recv=b4 count=65536 type=bf16 op=sum": the line
/// as parsed.
std::string describeAllReduce(const AllReduceDecl &allReduce);

enum class StepKind { Launch, Gemm, Attention, AllReduce, Wait };

/// When a step runs: at every sparseopt_program_run (the default, and every
/// step of a program without `stage` lines), or once per
/// sparseopt_program_bind, after `stage prepare`.
enum class StepStage { Prepare, Run };

/// "prepare" or "run".
const char *stepStageName(StepStage stage);

/// One step of the program, in file order: a `launch`, `gemm`, `attention`,
/// `allreduce` or `wait` line.
struct StepDecl {
  StepKind kind = StepKind::Launch;
  /// Into Manifest::launches, ::gemms, ::attentions or ::allReduces (a wait: the
  /// all-reduce it waits for).
  size_t index = 0;
  StepStage stage = StepStage::Run;
};

/// The largest group count of a `check` line (an int32, like gemm extents).
inline constexpr uint64_t kMaxCheckGroups = INT32_MAX;

/// One `check` line (prepare stage only): after the prepare steps, the first
/// int32 of temp buffer `buffer` is 0 when param `param` keeps its declared
/// n:m pattern, else 2147483647 - (row * groups + group) of a group of m
/// consecutive elements with more than n nonzeros.
struct CheckDecl {
  uint64_t bufferId = 0; ///< the id as written
  size_t buffer = 0;     ///< index into Manifest::buffers
  int param = 0;         ///< the param index
  unsigned n = 2, m = 4; ///< 2:4 or (2N-2):2N, N = 2..8
  uint64_t groups = 1;   ///< groups of m elements per row, 1..kMaxCheckGroups
  int line = 0;
};

/// "check b5 param 0 pattern 2:4 groups 16": the line as parsed.
std::string describeCheck(const CheckDecl &check);

/// One `stat` line: a counter that the run steps leave in the first element
/// of a temp buffer (u32 or u64), readable after a run under `name`;
/// `total` (0: none) is what it counts out of, and `limit` (negative: none)
/// the fraction of it above which the program is expected to lose (a
/// TwELL layer's break-even density).
struct StatDecl {
  std::string name;      ///< [A-Za-z0-9_.]+, unique in the program
  uint64_t bufferId = 0; ///< the id as written
  size_t buffer = 0;     ///< index into Manifest::buffers
  unsigned bits = 32;    ///< 32 or 64
  uint64_t total = 0;
  double limit = -1.0;
  int line = 0;
};

/// A parsed and validated manifest.
struct Manifest {
  std::string dir;          ///< the artifact directory
  std::string manifestPath; ///< <dir>/program.txt
  std::string modulePath;   ///< module file, artifact dir prepended
  int moduleLine = 0;
  std::vector<BufferDecl> buffers;
  std::vector<LaunchDecl> launches;
  std::vector<GemmDecl> gemms;
  std::vector<AttentionDecl> attentions;
  /// The `allreduce` lines in file order (each has exactly one `wait`).
  std::vector<AllReduceDecl> allReduces;
  /// Every launch, gemm, allreduce and wait in file order. The prepare steps (if any) come
  /// first; a bind enqueues them, a run enqueues the run steps.
  std::vector<StepDecl> steps;
  /// The `check` lines in file order.
  std::vector<CheckDecl> checks;
  /// The `stat` lines in file order.
  std::vector<StatDecl> stats;
  /// Index into `buffers` of the buffer bound to each input/output/param
  /// slot.
  std::vector<size_t> inputs;
  std::vector<size_t> outputs;
  std::vector<size_t> params;
  /// signature.json, when the artifact has one (checked against the buffers).
  SignatureDecl signature;
  /// Number of `tmap:` launch arguments (their TensorMapDecl::slot values are
  /// 0..tensorMaps-1).
  size_t tensorMaps = 0;
  /// Bytes of the arena (`arena <bytes>`) that temps with an arena offset
  /// share by liveness; 0 without one.
  uint64_t arenaBytes = 0;
  int arenaLine = 0;

  /// "<manifestPath>:<line>" for messages.
  std::string where(int line) const;
};

/// Reads and validates <artifactDir>/program.txt into `out`.
/// Errors: IO (a file is missing or unreadable), PARSE (malformed manifest,
/// constant size mismatch, a tensor map or gemm operand larger than its
/// buffer, a prepare step using an input or output, a bad `check` or
/// `stat` line);
/// messages start with "<manifest path>:<line>: ".
Status parseManifest(const std::string &artifactDir, Manifest &out);

} // namespace sparseopt

#endif // SPARSEOPT_RUNTIME_MANIFEST_H
