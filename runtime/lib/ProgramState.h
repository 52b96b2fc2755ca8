//===- ProgramState.h - The program handle, shared by its files -*- C++ -*-===//
//
// The state behind a sparseopt_program handle and the internal functions
// the files that implement it share: Program.cpp (parse, load, queries,
// destroy), ProgramResources.cpp (the GPU resources a load creates),
// ProgramRun.cpp (runs, the steps of a stage) and ProgramBind.cpp (binding
// params, the prepare stage, shared prepared buffers).
//
//===----------------------------------------------------------------------===//
#ifndef SPARSEOPT_RUNTIME_PROGRAMSTATE_H
#define SPARSEOPT_RUNTIME_PROGRAMSTATE_H

#include "Comm.h"
#include "Cublaslt.h"
#include "Cudnn.h"
#include "Manifest.h"
#include "Module.h"

#include <array>
#include <mutex>
#include <string>
#include <vector>

namespace sparseopt {

static_assert(sizeof(CUtensorMap) == 128, "a CUtensorMap is 128 bytes");
static_assert(alignof(CUtensorMap) >= 64,
              "cuTensorMapEncodeTiled needs 64-byte-aligned storage");

/// The encoded map of one `tmap:` launch argument, passed by value to the
/// kernel (cuLaunchKernel copies the 128 bytes at the launch).
struct EncodedTensorMap {
  CUtensorMap map; ///< 64-byte aligned (the type's own alignment)
  /// The device address `map` was encoded for; 0 until the first encode.
  CUdeviceptr address = 0;
};

} // namespace sparseopt

/// The public sparseopt_program handle.
struct sparseopt_program_s {
  sparseopt::Manifest manifest;
  /// What sparseopt_program_step returns, parallel to manifest.steps.
  std::vector<std::string> stepText;
  /// What sparseopt_program_check returns, parallel to manifest.checks.
  std::vector<std::string> checkText;
  /// True once the GPU resources below exist (sparseopt_program_load).
  bool loaded = false;
  sparseopt_module module = nullptr;
  /// The kernel of each launch, parallel to manifest.launches.
  std::vector<sparseopt_function> kernels;
  /// Per launch, its grid on this device (a persistent grid resolved when
  /// the program loaded).
  std::vector<std::array<unsigned, 3>> grids;
  /// Per launch: launched programmatically (its line says `pdl` and, when
  /// the program loaded, programmaticLaunchEnabled() held).
  std::vector<bool> programmatic;
  /// Device memory owned by the program, parallel to manifest.buffers
  /// (0 for input/output buffers and empty buffers).
  std::vector<CUdeviceptr> memory;
  /// The arena that temps with an arena offset share (owned here; their
  /// `memory` entries point into it and are not freed on their own).
  CUdeviceptr arena = 0;
  /// Parallel to `memory`: buffers that are a donor program's prepared
  /// buffers (sparseopt_program_bind_shared), not owned here.
  std::vector<bool> borrowed;
  /// One encoded map per `tmap:` argument, indexed by TensorMapDecl::slot.
  /// A map is re-encoded only when its buffer's address changes.
  std::vector<sparseopt::EncodedTensorMap> tensorMaps;
  /// The cuBLASLt handle, workspace and plans of the gemm lines.
  sparseopt::GemmResources gemms;
  /// The cuDNN handle, workspace and plans of the attention lines.
  sparseopt::AttentionResources attentions;
  /// Per allreduce line: the event the run's stream records before it (the
  /// communication stream waits for it) and the one the communication
  /// stream records after it (its wait line waits for that one).
  std::vector<CUevent> readyEvents, doneEvents;
  /// The communicator of the allreduce lines (sparseopt_program_set_comm).
  sparseopt_comm comm = nullptr;
  /// The param pointers of the last successful sparseopt_program_bind,
  /// parallel to manifest.params; `bound` says whether there was one since
  /// load (a failed bind clears it). A program without params is bound from
  /// its load on.
  std::vector<CUdeviceptr> params;
  bool bound = false;
  /// Whether the manifest has prepare steps (then a bind can change
  /// `bound` even without params).
  bool hasPrepareSteps = false;
  /// Serializes runs and binds that write or read program state:
  /// `tensorMaps`, so that a map cannot change between its encoding and the
  /// launch that copies it, the bias pointers in the gemm descriptors,
  /// likewise, and `params`/`bound`.
  std::mutex runMutex;
};

namespace sparseopt {

/// OK when the program was loaded; else INVALID_ARGUMENT: "program <dir>
/// was only parsed: load it with sparseopt_program_load <purpose>".
Status requireLoaded(const char *api, const sparseopt_program_s &p,
                     const char *purpose);

/// Creates the GPU resources of a parsed program (ProgramResources.cpp);
/// on failure the caller releases what was created.
Status acquireResources(const char *api, sparseopt_program_s &p);

/// Frees whatever GPU resources `p` holds. Returns the first failure but
/// keeps releasing the rest.
Status releaseResources(const char *api, sparseopt_program_s &p);

/// Allocates (and for constants, uploads) buffer `index` of the program.
Status createBuffer(const char *api, sparseopt_program_s &p, size_t index);

/// Checks the caller's pointers for the program's slots.
Status checkPointers(const char *api, const Manifest &m,
                     const std::vector<size_t> &slots,
                     const sparseopt_deviceptr *pointers, const char *kind);

/// Enqueues the steps of stage `stage` of a loaded program, in manifest
/// order, over the buffers at `address` (parallel to the manifest's
/// buffers). The caller holds the run mutex when the program has state.
Status runSteps(const char *api, sparseopt_program_s &p, StepStage stage,
                std::vector<CUdeviceptr> &address, CUstream stream);

/// Binds `params` (parallel to the manifest's params) to a loaded program:
/// ProgramBind.cpp. A program without params is bound at its load.
Status bindProgram(const char *api, sparseopt_program_s &p,
                   const sparseopt_deviceptr *params, CUstream stream);

} // namespace sparseopt

#endif // SPARSEOPT_RUNTIME_PROGRAMSTATE_H
