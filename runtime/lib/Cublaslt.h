//===- Cublaslt.h - cuBLASLt, loaded at run time, for gemm steps -*- C++ -*-===//
//
// The `gemm` lines of a program run as cuBLASLt matmuls. Like the driver,
// cuBLASLt is never linked: it is dlopen()ed the first time a program with a
// gemm line is loaded (programs without one never need it), and each entry
// point is resolved into a table whose pointer types come from the
// declarations in cublasLt.h, so every call is checked against the real
// prototype.
//
// A loaded program owns one GemmResources: a cuBLASLt handle, one workspace
// and, per gemm line, a matmul descriptor, its matrix layouts and its
// algorithm, all made once at load: the fastest of the heuristic's
// candidates timed on the device (CublasltAutotune.h), or the heuristic's
// first where autotuning is off. A run only sets the
// bias pointer and enqueues cublasLtMatmul: no allocation and no
// synchronization, so runs can be captured in a CUDA graph.
//
//===----------------------------------------------------------------------===//
#ifndef SPARSEOPT_RUNTIME_CUBLASLT_H
#define SPARSEOPT_RUNTIME_CUBLASLT_H

#include "Driver.h"
#include "Manifest.h"

#include <cublasLt.h>

#include <string>
#include <utility>
#include <vector>

namespace sparseopt {

/// Every cuBLASLt entry point the runtime needs, by its exported symbol
/// name. All of them exist since CUDA 10.1. Cublaslt.cpp statically checks
/// that no listed name is a macro of the header.
#define SPARSEOPT_CUBLASLT_ENTRY_POINTS(X)                                    \
  X(cublasLtGetVersion)                                                        \
  X(cublasLtCreate)                                                            \
  X(cublasLtDestroy)                                                           \
  X(cublasLtMatmulDescCreate)                                                  \
  X(cublasLtMatmulDescDestroy)                                                 \
  X(cublasLtMatmulDescSetAttribute)                                            \
  X(cublasLtMatrixLayoutCreate)                                                \
  X(cublasLtMatrixLayoutDestroy)                                               \
  X(cublasLtMatmulPreferenceCreate)                                            \
  X(cublasLtMatmulPreferenceDestroy)                                           \
  X(cublasLtMatmulPreferenceSetAttribute)                                      \
  X(cublasLtMatmulAlgoGetHeuristic)                                            \
  X(cublasLtMatmul)

/// Entry points used only for messages, resolved when the library has them
/// (they appeared in CUDA 11.4); null otherwise.
#define SPARSEOPT_CUBLASLT_OPTIONAL_ENTRY_POINTS(X)                           \
  X(cublasLtGetStatusName)                                                     \
  X(cublasLtGetStatusString)

/// Function pointers into the loaded cuBLASLt, one member per entry point,
/// named like the symbol (e.g. `cublasLt().cublasLtMatmul(...)`).
struct CublasLtApi {
#define SPARSEOPT_DECLARE_ENTRY_POINT(name) decltype(&::name) name = nullptr;
  SPARSEOPT_CUBLASLT_ENTRY_POINTS(SPARSEOPT_DECLARE_ENTRY_POINT)
  SPARSEOPT_CUBLASLT_OPTIONAL_ENTRY_POINTS(SPARSEOPT_DECLARE_ENTRY_POINT)
#undef SPARSEOPT_DECLARE_ENTRY_POINT
};

/// Name of the environment variable that overrides the library.
inline constexpr const char *kCublasLtLibraryEnvVar =
    "SPARSEOPT_CUBLASLT_LIBRARY";

/// The library files tried in order when the variable is unset or empty:
/// the sonames of CUDA 13 and 12 (dlopen returns a copy already loaded in
/// the process, e.g. PyTorch's bundled one), the development link, and the
/// toolkit's default location for processes whose library path lacks it.
inline constexpr const char *kDefaultCublasLtLibraries[] = {
    "libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so",
    "/usr/local/cuda/lib64/libcublasLt.so"};

/// Opens cuBLASLt and resolves every entry point. Thread-safe; a success is
/// permanent (later calls return OK at once), a failure is not cached.
/// Errors: NO_LIBRARY, with a message that starts with "<context>: " and
/// names every file tried and why each was rejected.
Status loadCublasLt(const std::string &context) noexcept;

/// The entry-point table. Only valid after loadCublasLt() returned OK.
const CublasLtApi &cublasLt() noexcept;

/// "CUBLAS_STATUS_NOT_SUPPORTED (the functionality requested is not
/// supported)", with the library's own names when it has them.
std::string cublasStatusText(cublasStatus_t status);

/// Bytes of the one workspace a program with gemm lines allocates: what
/// cuBLASLt's heuristic may use per matmul (PyTorch uses 32 MiB on Hopper).
inline constexpr size_t kGemmWorkspaceBytes = size_t(32) << 20;

/// The most algorithms the heuristic is asked for per gemm line: the
/// candidates load-time autotuning times (CublasltAutotune.h).
inline constexpr unsigned kGemmAutotuneCandidates = 8;

/// The alignment in bytes the chosen algorithms may rely on for every
/// operand; runs check it. cudaMalloc and PyTorch's allocator give 256.
inline constexpr unsigned kGemmOperandAlignment = 16;

/// Fails with INVALID_ARGUMENT, "<step> operand <name> (buffer <id>,
/// <role>): device pointer 0x... is not 16-byte aligned, as <needs> needs",
/// for the first of `operands` whose address is not kGemmOperandAlignment-
/// aligned (library plans are made for aligned operands).
Status checkOperandAlignment(
    const char *api, const Manifest &m, const char *step, const char *needs,
    const std::vector<std::pair<const char *, const GemmOperand *>> &operands,
    const std::vector<CUdeviceptr> &address);

/// What one gemm line needs at run time, made at load.
struct GemmPlan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr; ///< W, K x N column-major (TRANSA = T)
  cublasLtMatrixLayout_t b = nullptr; ///< X, K x M column-major
  cublasLtMatrixLayout_t d = nullptr; ///< Y, N x M column-major (also C)
  cublasLtMatmulAlgo_t algo = {};
};

/// The cuBLASLt state of one loaded program.
struct GemmResources {
  cublasLtHandle_t handle = nullptr;
  CUdeviceptr workspace = 0; ///< kGemmWorkspaceBytes
  std::vector<GemmPlan> plans; ///< parallel to Manifest::gemms
};

/// Loads cuBLASLt (if needed) and makes the handle, the workspace and one
/// plan per gemm of `m`. Nothing to do when `m` has no gemm line. The
/// context must be current. On failure `out` holds what was made; release
/// it with releaseGemmResources. Errors: NO_LIBRARY, OUT_OF_MEMORY, CUDA
/// (messages "<api>: <manifest>:<line>: ...").
Status createGemmResources(const char *api, const Manifest &m,
                           GemmResources &out);

/// Enqueues gemm `index` of `m` on `stream` over the buffers at `address`
/// (parallel to m.buffers). It writes the bias pointer into the plan's
/// descriptor, so runs of one program must not overlap (ProgramRun.cpp
/// serializes them). Errors: INVALID_ARGUMENT (an operand address that is
/// not kGemmOperandAlignment-aligned), OUT_OF_MEMORY, CUDA; the caller adds
/// the step and its line to the message.
Status runGemm(const char *api, const Manifest &m, size_t index,
               const GemmResources &resources,
               const std::vector<CUdeviceptr> &address, CUstream stream);

/// Frees everything in `resources` (also after a partial create). Returns
/// the first failure but keeps releasing the rest.
Status releaseGemmResources(const char *api, GemmResources &resources);

} // namespace sparseopt

#endif // SPARSEOPT_RUNTIME_CUBLASLT_H
