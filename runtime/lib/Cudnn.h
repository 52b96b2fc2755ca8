//===- Cudnn.h - cuDNN, loaded at run time, for attention steps -*- C++ -*-===//
//
// The `attention` lines of a program run as cuDNN's fused flash attention.
// Like cuBLASLt, cuDNN is never linked: it is dlopen()ed the first time a
// program with an attention line is loaded, and each entry point is
// resolved into a table typed from cudnn_graph.h.
//
// A loaded program owns one AttentionResources: a cuDNN handle, one
// workspace (the largest any line needs) and, per attention line, the
// backend graph that describes it and the execution plan cuDNN's
// heuristics chose for it, all made once at load (CudnnAttentionGraph.cpp).
// A run makes a variant pack (the operand addresses) and enqueues the plan:
// no allocation on the device and no synchronization, so runs can be
// captured in a CUDA graph.
//
//===----------------------------------------------------------------------===//
#ifndef SPARSEOPT_RUNTIME_CUDNN_H
#define SPARSEOPT_RUNTIME_CUDNN_H

#include "Driver.h"
#include "Manifest.h"

#include <cudnn_graph.h>

#include <string>
#include <vector>

namespace sparseopt {

/// Every cuDNN entry point the runtime needs, by its exported symbol name
/// (all in cuDNN 9's graph library, which libcudnn.so.9 forwards to).
#define SPARSEOPT_CUDNN_ENTRY_POINTS(X)                                       \
  X(cudnnGetVersion)                                                           \
  X(cudnnGetErrorString)                                                       \
  X(cudnnCreate)                                                               \
  X(cudnnDestroy)                                                              \
  X(cudnnSetStream)                                                            \
  X(cudnnBackendCreateDescriptor)                                              \
  X(cudnnBackendDestroyDescriptor)                                             \
  X(cudnnBackendSetAttribute)                                                  \
  X(cudnnBackendGetAttribute)                                                  \
  X(cudnnBackendFinalize)                                                      \
  X(cudnnBackendExecute)

/// Entry points used only for messages, resolved when the library has them.
#define SPARSEOPT_CUDNN_OPTIONAL_ENTRY_POINTS(X) X(cudnnGetLastErrorString)

/// Function pointers into the loaded cuDNN, one member per entry point.
struct CudnnApi {
#define SPARSEOPT_DECLARE_ENTRY_POINT(name) decltype(&::name) name = nullptr;
  SPARSEOPT_CUDNN_ENTRY_POINTS(SPARSEOPT_DECLARE_ENTRY_POINT)
  SPARSEOPT_CUDNN_OPTIONAL_ENTRY_POINTS(SPARSEOPT_DECLARE_ENTRY_POINT)
#undef SPARSEOPT_DECLARE_ENTRY_POINT
};

/// Name of the environment variable that overrides the library.
inline constexpr const char *kCudnnLibraryEnvVar = "SPARSEOPT_CUDNN_LIBRARY";

/// The library files tried in order when the variable is unset or empty:
/// cuDNN 9's soname (dlopen returns a copy already loaded in the process,
/// e.g. PyTorch's), the development link and the toolkit's location.
inline constexpr const char *kDefaultCudnnLibraries[] = {
    "libcudnn.so.9", "libcudnn.so", "/usr/local/cuda/lib64/libcudnn.so.9"};

/// The oldest cuDNN whose fused attention the graph is written for: 9.0
/// (any sequence length, grouped-query heads).
inline constexpr size_t kMinCudnnVersion = 90000;

/// Opens cuDNN and resolves every entry point. Thread-safe; a success is
/// permanent. Errors: NO_LIBRARY ("<context>: ..." naming every file tried).
Status loadCudnn(const std::string &context) noexcept;

/// The entry-point table. Only valid after loadCudnn() returned OK.
const CudnnApi &cudnn() noexcept;

/// Records "<api>: <call> failed: <status name> (<cuDNN's last error>)".
Status cudnnFail(cudnnStatus_t result, const char *api,
                 const std::string &call);

/// The unique ids of the graph's non-virtual tensors, which the variant pack
/// names: the operands, the softmax scale and the masked score (by value).
enum : int64_t {
  kAttentionQ = 1,
  kAttentionK = 2,
  kAttentionV = 3,
  kAttentionO = 4,
  kAttentionScale = 5,
  kAttentionMaskFill = 6,
};

/// What one attention line needs at run time, made at load: every backend
/// descriptor of its graph (kept alive as long as the plan), the plan and
/// its workspace size, and the by-value scalars the variant pack points to.
struct AttentionPlan {
  std::vector<cudnnBackendDescriptor_t> descriptors;
  cudnnBackendDescriptor_t plan = nullptr;
  int64_t workspaceBytes = 0;
  float scale = 1.0f;
  float maskFill = 0.0f; ///< the score of a masked key: -inf (or -FLT_MAX)
};

/// The cuDNN state of one loaded program.
struct AttentionResources {
  cudnnHandle_t handle = nullptr;
  CUdeviceptr workspace = 0;        ///< the largest plan's workspace
  std::vector<AttentionPlan> plans; ///< parallel to Manifest::attentions
};

/// Builds the graph of attention line `a` (CudnnAttentionGraph.cpp) and
/// the first execution plan that cuDNN's heuristics offer and that
/// finalizes. Errors: CUDA ("<api>: <where>: ..."), with cuDNN's reason.
Status buildAttentionPlan(const char *api, const std::string &where,
                          cudnnHandle_t handle, const AttentionDecl &a,
                          AttentionPlan &plan);

/// Loads cuDNN (if needed) and makes the handle, the plans and the
/// workspace of every attention line of `m`. Nothing to do without one.
/// The context must be current. On failure `out` holds what was made;
/// release it with releaseAttentionResources. Errors: NO_LIBRARY,
/// OUT_OF_MEMORY, CUDA.
Status createAttentionResources(const char *api, const Manifest &m,
                                AttentionResources &out);

/// Enqueues attention `index` of `m` on `stream` over the buffers at
/// `address`. Errors: CUDA; the caller adds the step and its line.
Status runAttention(const char *api, const Manifest &m, size_t index,
                    const AttentionResources &resources,
                    const std::vector<CUdeviceptr> &address, CUstream stream);

/// Frees everything in `resources` (also after a partial create).
Status releaseAttentionResources(const char *api,
                                 AttentionResources &resources);

} // namespace sparseopt

#endif // SPARSEOPT_RUNTIME_CUDNN_H
