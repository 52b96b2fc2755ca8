//===- Cudnn.cpp - dlopen cuDNN and run a program's attention lines -------===//

#include "Cudnn.h"
#include "Cublaslt.h"
#include "EntryPoints.h"
#include "Library.h"

#include <algorithm>
#include <iterator>
#include <type_traits>

namespace sparseopt {
namespace {

// The entry-point table lists no macro (EntryPoints.h).
SPARSEOPT_CUDNN_ENTRY_POINTS(SPARSEOPT_CHECK_NOT_A_MACRO)
SPARSEOPT_CUDNN_OPTIONAL_ENTRY_POINTS(SPARSEOPT_CHECK_NOT_A_MACRO)
#undef SPARSEOPT_CHECK_NOT_A_MACRO

// The run passes the driver's stream where cuDNN takes the runtime's.
static_assert(std::is_same_v<CUstream, cudaStream_t>,
              "CUstream and cudaStream_t must be the same handle type");

bool resolveTable(void *library, CudnnApi &table, std::string &reason) {
  const char *why = "not cuDNN 9";
  SPARSEOPT_CUDNN_ENTRY_POINTS(SPARSEOPT_RESOLVE_REQUIRED)
  SPARSEOPT_CUDNN_OPTIONAL_ENTRY_POINTS(SPARSEOPT_RESOLVE_OPTIONAL)
  size_t version = table.cudnnGetVersion();
  if (version < kMinCudnnVersion) {
    reason = "cuDNN " + std::to_string(version) + " is older than " +
             std::to_string(kMinCudnnVersion);
    return false;
  }
  return true;
}

LoadedLibrary<CudnnApi> &library() {
  static LoadedLibrary<CudnnApi> instance(
      kCudnnLibraryEnvVar,
      std::vector<const char *>(std::begin(kDefaultCudnnLibraries),
                                std::end(kDefaultCudnnLibraries)),
      resolveTable, "the program's attention lines need cuDNN 9",
      "install cuDNN 9 (e.g. the nvidia-cudnn-cu13 wheel)");
  return instance;
}

} // namespace

Status loadCudnn(const std::string &context) noexcept {
  return library().load(context);
}

const CudnnApi &cudnn() noexcept { return library().table(); }

Status cudnnFail(cudnnStatus_t result, const char *api,
                 const std::string &call) {
  std::string text = call + " failed: ";
  const CudnnApi &dnn = cudnn();
  const char *name = dnn.cudnnGetErrorString(result);
  text += name != nullptr ? name : "cuDNN status " + std::to_string(result);
  if (dnn.cudnnGetLastErrorString != nullptr) {
    char last[512] = {};
    dnn.cudnnGetLastErrorString(last, sizeof(last));
    if (last[0] != '\0')
      text += std::string(" (") + last + ")";
  }
  Status status = result == CUDNN_STATUS_ALLOC_FAILED
                      ? SPARSEOPT_ERROR_OUT_OF_MEMORY
                      : SPARSEOPT_ERROR_CUDA;
  return fail(status, api, text);
}

Status createAttentionResources(const char *api, const Manifest &m,
                                AttentionResources &out) {
  if (m.attentions.empty())
    return SPARSEOPT_OK;
  const std::string first = m.where(m.attentions.front().line);
  if (Status s = loadCudnn(std::string(api) + ": " + first))
    return s;
  cudnnStatus_t result = cudnn().cudnnCreate(&out.handle);
  if (result != CUDNN_STATUS_SUCCESS) {
    out.handle = nullptr;
    return cudnnFail(result, api, first + ": cudnnCreate");
  }
  // Sized first, so that a failure part way leaves every plan releasable.
  out.plans.assign(m.attentions.size(), AttentionPlan());
  int64_t workspace = 0;
  for (size_t i = 0; i < m.attentions.size(); ++i) {
    const AttentionDecl &a = m.attentions[i];
    if (Status s = buildAttentionPlan(api, m.where(a.line), out.handle, a,
                                      out.plans[i]))
      return s;
    workspace = std::max(workspace, out.plans[i].workspaceBytes);
  }
  if (workspace > 0) {
    CUresult allocated = driver().cuMemAlloc_v2(&out.workspace, workspace);
    if (allocated != CUDA_SUCCESS) {
      out.workspace = 0;
      return cudaFail(allocated, api,
                      first + ": cuMemAlloc(" + std::to_string(workspace) +
                          " bytes of cuDNN workspace)");
    }
  }
  return SPARSEOPT_OK;
}

Status runAttention(const char *api, const Manifest &m, size_t index,
                    const AttentionResources &resources,
                    const std::vector<CUdeviceptr> &address, CUstream stream) {
  const AttentionDecl &a = m.attentions[index];
  const AttentionPlan &plan = resources.plans[index];
  const CudnnApi &dnn = cudnn();
  if (Status s = checkOperandAlignment(
          api, m, "attention", "cuDNN's plan",
          {{"q", &a.q}, {"k", &a.k}, {"v", &a.v}, {"o", &a.o}}, address))
    return s;
  cudnnStatus_t result = dnn.cudnnSetStream(resources.handle, stream);
  if (result != CUDNN_STATUS_SUCCESS)
    return cudnnFail(result, api, "cudnnSetStream");
  // The variant pack names every non-virtual tensor of the graph by its
  // unique id (CudnnAttentionGraph.cpp); the by-value scalars by a host
  // pointer, read when the plan is enqueued.
  int64_t uids[] = {kAttentionQ,     kAttentionK,     kAttentionV,
                    kAttentionO,     kAttentionScale, kAttentionMaskFill};
  void *pointers[] = {reinterpret_cast<void *>(address[a.q.buffer]),
                      reinterpret_cast<void *>(address[a.k.buffer]),
                      reinterpret_cast<void *>(address[a.v.buffer]),
                      reinterpret_cast<void *>(address[a.o.buffer]),
                      const_cast<float *>(&plan.scale),
                      const_cast<float *>(&plan.maskFill)};
  int64_t count = a.causal ? 6 : 5;
  void *workspace = reinterpret_cast<void *>(resources.workspace);
  cudnnBackendDescriptor_t pack = nullptr;
  result = dnn.cudnnBackendCreateDescriptor(
      CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &pack);
  if (result != CUDNN_STATUS_SUCCESS)
    return cudnnFail(result, api, "creating the variant pack");
  const char *call = "cudnnBackendSetAttribute(VARIANT_PACK_DATA_POINTERS)";
  result = dnn.cudnnBackendSetAttribute(
      pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, count,
      pointers);
  if (result == CUDNN_STATUS_SUCCESS) {
    call = "cudnnBackendSetAttribute(VARIANT_PACK_UNIQUE_IDS)";
    result = dnn.cudnnBackendSetAttribute(
        pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, count,
        uids);
  }
  if (result == CUDNN_STATUS_SUCCESS) {
    call = "cudnnBackendSetAttribute(VARIANT_PACK_WORKSPACE)";
    result = dnn.cudnnBackendSetAttribute(
        pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1,
        &workspace);
  }
  if (result == CUDNN_STATUS_SUCCESS) {
    call = "cudnnBackendFinalize(variant pack)";
    result = dnn.cudnnBackendFinalize(pack);
  }
  if (result == CUDNN_STATUS_SUCCESS) {
    call = "cudnnBackendExecute";
    result = dnn.cudnnBackendExecute(resources.handle, plan.plan, pack);
  }
  Status status = result == CUDNN_STATUS_SUCCESS
                      ? SPARSEOPT_OK
                      : cudnnFail(result, api,
                                  std::string(call) + " ('" +
                                      describeAttention(a) + "')");
  dnn.cudnnBackendDestroyDescriptor(pack);
  return status;
}

Status releaseAttentionResources(const char *api,
                                 AttentionResources &resources) {
  // Everything below exists only if cuDNN was loaded.
  Status first = SPARSEOPT_OK;
  for (AttentionPlan &plan : resources.plans) {
    // The plan first, then the graph's descriptors it refers to.
    if (plan.plan != nullptr)
      cudnn().cudnnBackendDestroyDescriptor(plan.plan);
    plan.plan = nullptr;
    for (cudnnBackendDescriptor_t d : plan.descriptors)
      cudnn().cudnnBackendDestroyDescriptor(d);
    plan.descriptors.clear();
  }
  resources.plans.clear();
  if (resources.workspace != 0) {
    CUresult result = driver().cuMemFree_v2(resources.workspace);
    if (result != CUDA_SUCCESS)
      first = cudaFail(result, api, "freeing the cuDNN workspace");
    resources.workspace = 0;
  }
  if (resources.handle != nullptr) {
    cudnnStatus_t result = cudnn().cudnnDestroy(resources.handle);
    if (result != CUDNN_STATUS_SUCCESS && first == SPARSEOPT_OK)
      first = cudnnFail(result, api, "cudnnDestroy");
  }
  resources.handle = nullptr;
  return first;
}

} // namespace sparseopt
