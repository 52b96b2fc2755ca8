//===- Cublaslt.cpp - dlopen cuBLASLt and run a program's gemm lines ------===//

#include "Cublaslt.h"
#include "CublasltAutotune.h"
#include "EntryPoints.h"
#include "Library.h"

#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <type_traits>

namespace sparseopt {
namespace {

// The entry-point table lists no macro (EntryPoints.h).
SPARSEOPT_CUBLASLT_ENTRY_POINTS(SPARSEOPT_CHECK_NOT_A_MACRO)
SPARSEOPT_CUBLASLT_OPTIONAL_ENTRY_POINTS(SPARSEOPT_CHECK_NOT_A_MACRO)
#undef SPARSEOPT_CHECK_NOT_A_MACRO

// The run passes the driver's stream where cuBLASLt takes the runtime's;
// both name the same handle type.
static_assert(std::is_same_v<CUstream, cudaStream_t>,
              "CUstream and cudaStream_t must be the same handle type");

bool resolveTable(void *library, CublasLtApi &table, std::string &reason) {
  const char *why = "not cuBLASLt, or a version older than CUDA 10.1";
  SPARSEOPT_CUBLASLT_ENTRY_POINTS(SPARSEOPT_RESOLVE_REQUIRED)
  SPARSEOPT_CUBLASLT_OPTIONAL_ENTRY_POINTS(SPARSEOPT_RESOLVE_OPTIONAL)
  return true;
}

LoadedLibrary<CublasLtApi> &library() {
  static LoadedLibrary<CublasLtApi> instance(
      kCublasLtLibraryEnvVar,
      std::vector<const char *>(std::begin(kDefaultCublasLtLibraries),
                                std::end(kDefaultCublasLtLibraries)),
      resolveTable, "the program's gemm lines need cuBLASLt",
      "install the CUDA toolkit's cuBLAS");
  return instance;
}

/// The name of a cuBLAS status for libraries without cublasLtGetStatusName.
const char *fallbackStatusName(cublasStatus_t status) {
  switch (status) {
  case CUBLAS_STATUS_SUCCESS:
    return "CUBLAS_STATUS_SUCCESS";
  case CUBLAS_STATUS_NOT_INITIALIZED:
    return "CUBLAS_STATUS_NOT_INITIALIZED";
  case CUBLAS_STATUS_ALLOC_FAILED:
    return "CUBLAS_STATUS_ALLOC_FAILED";
  case CUBLAS_STATUS_INVALID_VALUE:
    return "CUBLAS_STATUS_INVALID_VALUE";
  case CUBLAS_STATUS_ARCH_MISMATCH:
    return "CUBLAS_STATUS_ARCH_MISMATCH";
  case CUBLAS_STATUS_MAPPING_ERROR:
    return "CUBLAS_STATUS_MAPPING_ERROR";
  case CUBLAS_STATUS_EXECUTION_FAILED:
    return "CUBLAS_STATUS_EXECUTION_FAILED";
  case CUBLAS_STATUS_INTERNAL_ERROR:
    return "CUBLAS_STATUS_INTERNAL_ERROR";
  case CUBLAS_STATUS_NOT_SUPPORTED:
    return "CUBLAS_STATUS_NOT_SUPPORTED";
  case CUBLAS_STATUS_LICENSE_ERROR:
    return "CUBLAS_STATUS_LICENSE_ERROR";
  }
  return nullptr;
}

/// Records "<api>: <call> failed: <cuBLAS status>" with the matching status.
Status cublasFail(cublasStatus_t result, const char *api,
                  const std::string &call) {
  Status status = result == CUBLAS_STATUS_ALLOC_FAILED
                      ? SPARSEOPT_ERROR_OUT_OF_MEMORY
                      : SPARSEOPT_ERROR_CUDA;
  return fail(status, api, call + " failed: " + cublasStatusText(result));
}

cudaDataType_t cudaType(GemmDType dtype) {
  switch (dtype) {
  case GemmDType::F16:
    return CUDA_R_16F;
  case GemmDType::BF16:
    return CUDA_R_16BF;
  case GemmDType::F32:
    return CUDA_R_32F;
  }
  return CUDA_R_32F;
}

/// The epilogue of `gemm`: bias and ReLU are fused into the matmul.
cublasLtEpilogue_t epilogue(const GemmDecl &gemm) {
  if (gemm.hasBias)
    return gemm.relu ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_BIAS;
  return gemm.relu ? CUBLASLT_EPILOGUE_RELU : CUBLASLT_EPILOGUE_DEFAULT;
}

/// Sets one attribute of a matmul descriptor; `call` names it for messages.
template <typename T>
Status setDescAttribute(const char *api, const std::string &where,
                        cublasLtMatmulDesc_t desc,
                        cublasLtMatmulDescAttributes_t attribute, T value,
                        const char *name) {
  cublasStatus_t result = cublasLt().cublasLtMatmulDescSetAttribute(
      desc, attribute, &value, sizeof(value));
  if (result != CUBLAS_STATUS_SUCCESS)
    return cublasFail(result, api,
                      where + ": cublasLtMatmulDescSetAttribute(" + name + ")");
  return SPARSEOPT_OK;
}

/// Makes the descriptor and the layouts of `gemm` in `plan`. Row-major
/// Y = X * W^T is column-major Y^T = W * X^T: A = W read transposed
/// (K x N, ld K), B = X (K x M, ld K), C = D = Y (N x M, ld N), so cuBLASLt's
/// m, n, k are N, M, K.
Status describePlan(const char *api, const std::string &where,
                    const GemmDecl &gemm, CUdeviceptr workspace,
                    GemmPlan &plan) {
  const CublasLtApi &lt = cublasLt();
  cublasStatus_t result =
      lt.cublasLtMatmulDescCreate(&plan.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F);
  if (result != CUBLAS_STATUS_SUCCESS) {
    plan.desc = nullptr;
    return cublasFail(result, api, where + ": cublasLtMatmulDescCreate");
  }
  if (Status s = setDescAttribute(api, where, plan.desc,
                                  CUBLASLT_MATMUL_DESC_TRANSA,
                                  int32_t(CUBLAS_OP_T), "TRANSA"))
    return s;
  if (Status s = setDescAttribute(api, where, plan.desc,
                                  CUBLASLT_MATMUL_DESC_TRANSB,
                                  int32_t(CUBLAS_OP_N), "TRANSB"))
    return s;
  if (Status s = setDescAttribute(api, where, plan.desc,
                                  CUBLASLT_MATMUL_DESC_EPILOGUE,
                                  uint32_t(epilogue(gemm)), "EPILOGUE"))
    return s;
  if (gemm.hasBias) {
    if (Status s = setDescAttribute(api, where, plan.desc,
                                    CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE,
                                    int32_t(cudaType(gemm.biasType)),
                                    "BIAS_DATA_TYPE"))
      return s;
    // The heuristic reads the bias pointer's alignment (without
    // dereferencing it). Runs only promise kGemmOperandAlignment, so show
    // it an address aligned to exactly that; each run sets the real one.
    const void *placeholder =
        reinterpret_cast<const void *>(workspace + kGemmOperandAlignment);
    if (Status s = setDescAttribute(api, where, plan.desc,
                                    CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                    placeholder, "BIAS_POINTER"))
      return s;
  }

  struct Layout {
    cublasLtMatrixLayout_t *out;
    GemmDType dtype;
    uint64_t rows, cols;
    const char *name;
  } layouts[] = {{&plan.a, gemm.in, gemm.k, gemm.n, "W"},
                 {&plan.b, gemm.in, gemm.k, gemm.m, "X"},
                 {&plan.d, gemm.out, gemm.n, gemm.m, "Y"}};
  for (const Layout &l : layouts) {
    result = lt.cublasLtMatrixLayoutCreate(l.out, cudaType(l.dtype), l.rows,
                                           l.cols, int64_t(l.rows));
    if (result != CUBLAS_STATUS_SUCCESS) {
      *l.out = nullptr;
      return cublasFail(result, api,
                        where + ": cublasLtMatrixLayoutCreate(" + l.name + ")");
    }
  }
  return SPARSEOPT_OK;
}

/// A heuristic search preference: at most the program's workspace, and only
/// algorithms that work on kGemmOperandAlignment-aligned operands.
Status makePreference(const char *api, const std::string &where,
                      cublasLtMatmulPreference_t &pref) {
  const CublasLtApi &lt = cublasLt();
  cublasStatus_t result = lt.cublasLtMatmulPreferenceCreate(&pref);
  if (result != CUBLAS_STATUS_SUCCESS) {
    pref = nullptr;
    return cublasFail(result, api, where + ": cublasLtMatmulPreferenceCreate");
  }
  uint64_t workspace = kGemmWorkspaceBytes;
  result = lt.cublasLtMatmulPreferenceSetAttribute(
      pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace,
      sizeof(workspace));
  uint32_t alignment = kGemmOperandAlignment;
  for (cublasLtMatmulPreferenceAttributes_t attribute :
       {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES})
    if (result == CUBLAS_STATUS_SUCCESS)
      result = lt.cublasLtMatmulPreferenceSetAttribute(
          pref, attribute, &alignment, sizeof(alignment));
  if (result != CUBLAS_STATUS_SUCCESS)
    return cublasFail(result, api,
                      where + ": cublasLtMatmulPreferenceSetAttribute");
  return SPARSEOPT_OK;
}

/// Makes the plan of `gemm`: its descriptor, layouts and the heuristic's
/// first algorithm; `candidates` gets every working algorithm the heuristic
/// returned (at most kGemmAutotuneCandidates, the first one first) for
/// autotuneGemms.
Status createPlan(const char *api, const Manifest &m, const GemmDecl &gemm,
                  const GemmResources &resources, GemmPlan &plan,
                  std::vector<cublasLtMatmulAlgo_t> &candidates) {
  const std::string where = m.where(gemm.line);
  if (Status s = describePlan(api, where, gemm, resources.workspace, plan))
    return s;
  cublasLtMatmulPreference_t pref = nullptr;
  Status status = makePreference(api, where, pref);
  cublasLtMatmulHeuristicResult_t results[kGemmAutotuneCandidates] = {};
  int found = 0;
  cublasStatus_t result = CUBLAS_STATUS_SUCCESS;
  if (status == SPARSEOPT_OK)
    result = cublasLt().cublasLtMatmulAlgoGetHeuristic(
        resources.handle, plan.desc, plan.a, plan.b, plan.d, plan.d, pref,
        int(kGemmAutotuneCandidates), results, &found);
  if (pref != nullptr)
    cublasLt().cublasLtMatmulPreferenceDestroy(pref);
  if (status != SPARSEOPT_OK)
    return status;
  const cublasLtMatmulHeuristicResult_t &best = results[0];
  if (result != CUBLAS_STATUS_SUCCESS || found < 1 ||
      best.state != CUBLAS_STATUS_SUCCESS) {
    std::string why = result != CUBLAS_STATUS_SUCCESS
                          ? cublasStatusText(result)
                          : found < 1 ? std::string("no algorithm returned")
                                      : cublasStatusText(best.state);
    return fail(SPARSEOPT_ERROR_CUDA, api,
                where + ": cuBLASLt " +
                    std::to_string(cublasLt().cublasLtGetVersion()) +
                    " has no algorithm for '" + describeGemm(gemm) +
                    "' (f32 accumulation, at most " +
                    std::to_string(kGemmWorkspaceBytes >> 20) +
                    " MiB of workspace, " +
                    std::to_string(kGemmOperandAlignment) +
                    "-byte aligned operands): "
                    "cublasLtMatmulAlgoGetHeuristic: " +
                    why);
  }
  plan.algo = best.algo;
  candidates.clear();
  for (int i = 0; i < found; ++i)
    if (results[i].state == CUBLAS_STATUS_SUCCESS)
      candidates.push_back(results[i].algo);
  return SPARSEOPT_OK;
}

/// "0x7f0000001000" for messages.
std::string hexAddress(CUdeviceptr address) {
  char text[2 + 16 + 1];
  std::snprintf(text, sizeof(text), "0x%llx",
                static_cast<unsigned long long>(address));
  return text;
}

/// Checks that every operand of `gemm` is aligned as the plan assumes.
Status checkAlignment(const char *api, const Manifest &m, const GemmDecl &gemm,
                      const std::vector<CUdeviceptr> &address) {
  std::vector<std::pair<const char *, const GemmOperand *>> operands = {
      {"x", &gemm.x}, {"w", &gemm.w}, {"y", &gemm.y}};
  if (gemm.hasBias)
    operands.push_back({"bias", &gemm.bias});
  return checkOperandAlignment(api, m, "gemm", "cuBLASLt's algorithm",
                               operands, address);
}

} // namespace

Status loadCublasLt(const std::string &context) noexcept {
  return library().load(context);
}

Status checkOperandAlignment(
    const char *api, const Manifest &m, const char *step, const char *needs,
    const std::vector<std::pair<const char *, const GemmOperand *>> &operands,
    const std::vector<CUdeviceptr> &address) {
  for (const auto &[name, operand] : operands) {
    CUdeviceptr at = address[operand->buffer];
    if (at % kGemmOperandAlignment == 0)
      continue;
    const BufferDecl &buffer = m.buffers[operand->buffer];
    return fail(SPARSEOPT_ERROR_INVALID_ARGUMENT, api,
                std::string(step) + " operand " + name + " (buffer " +
                    std::to_string(buffer.id) + ", " + bufferRole(buffer) +
                    "): device pointer " + hexAddress(at) + " is not " +
                    std::to_string(kGemmOperandAlignment) +
                    "-byte aligned, as " + needs + " needs");
  }
  return SPARSEOPT_OK;
}

const CublasLtApi &cublasLt() noexcept { return library().table(); }

std::string cublasStatusText(cublasStatus_t status) {
  const char *name = nullptr;
  const char *description = nullptr;
  if (library().isLoaded()) {
    const CublasLtApi &lt = cublasLt();
    if (lt.cublasLtGetStatusName != nullptr)
      name = lt.cublasLtGetStatusName(status);
    if (lt.cublasLtGetStatusString != nullptr)
      description = lt.cublasLtGetStatusString(status);
  }
  if (name == nullptr)
    name = fallbackStatusName(status);
  std::string text = name != nullptr
                         ? std::string(name)
                         : "cuBLAS status " + std::to_string(int(status));
  if (description != nullptr && *description != '\0')
    text += std::string(" (") + description + ")";
  return text;
}

Status createGemmResources(const char *api, const Manifest &m,
                           GemmResources &out) {
  if (m.gemms.empty())
    return SPARSEOPT_OK;
  const std::string first = m.where(m.gemms.front().line);
  if (Status s = loadCublasLt(std::string(api) + ": " + first))
    return s;

  cublasStatus_t result = cublasLt().cublasLtCreate(&out.handle);
  if (result != CUBLAS_STATUS_SUCCESS) {
    out.handle = nullptr;
    return cublasFail(result, api, first + ": cublasLtCreate");
  }
  CUresult allocated = driver().cuMemAlloc_v2(&out.workspace,
                                              kGemmWorkspaceBytes);
  if (allocated != CUDA_SUCCESS) {
    out.workspace = 0;
    return cudaFail(allocated, api,
                    first + ": cuMemAlloc(" +
                        std::to_string(kGemmWorkspaceBytes) +
                        " bytes of cuBLASLt workspace)");
  }
  // Sized first, so that a failure part way leaves every plan releasable.
  out.plans.assign(m.gemms.size(), GemmPlan());
  std::vector<std::vector<cublasLtMatmulAlgo_t>> candidates(m.gemms.size());
  for (size_t i = 0; i < m.gemms.size(); ++i)
    if (Status s =
            createPlan(api, m, m.gemms[i], out, out.plans[i], candidates[i]))
      return s;
  if (gemmAutotuneEnabled())
    autotuneGemms(m, out, candidates);
  return SPARSEOPT_OK;
}

Status runGemm(const char *api, const Manifest &m, size_t index,
               const GemmResources &resources,
               const std::vector<CUdeviceptr> &address, CUstream stream) {
  const GemmDecl &gemm = m.gemms[index];
  const GemmPlan &plan = resources.plans[index];
  const CublasLtApi &lt = cublasLt();
  if (Status s = checkAlignment(api, m, gemm, address))
    return s;
  if (gemm.hasBias) {
    // Inputs and outputs are the caller's pointers, so the bias can move
    // between runs; the descriptor only holds the pointer (runs of one
    // program are serialized by the caller).
    const void *bias = reinterpret_cast<const void *>(address[gemm.bias.buffer]);
    cublasStatus_t result = lt.cublasLtMatmulDescSetAttribute(
        plan.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias));
    if (result != CUBLAS_STATUS_SUCCESS)
      return cublasFail(result, api,
                        "cublasLtMatmulDescSetAttribute(BIAS_POINTER)");
  }
  // Host scalars in the default pointer mode: read during the call, so
  // locals are fine, also while a graph is being captured.
  const float alpha = 1.0f, beta = 0.0f;
  const void *x = reinterpret_cast<const void *>(address[gemm.x.buffer]);
  const void *w = reinterpret_cast<const void *>(address[gemm.w.buffer]);
  void *y = reinterpret_cast<void *>(address[gemm.y.buffer]);
  cublasStatus_t result = lt.cublasLtMatmul(
      resources.handle, plan.desc, &alpha, w, plan.a, x, plan.b, &beta, y,
      plan.d, y, plan.d, &plan.algo,
      reinterpret_cast<void *>(resources.workspace), kGemmWorkspaceBytes,
      stream);
  if (result != CUBLAS_STATUS_SUCCESS)
    return cublasFail(result, api, "cublasLtMatmul('" + describeGemm(gemm) +
                                       "')");
  return SPARSEOPT_OK;
}

Status releaseGemmResources(const char *api, GemmResources &resources) {
  // Everything below exists only if cuBLASLt was loaded.
  Status first = SPARSEOPT_OK;
  auto check = [&](cublasStatus_t result, const char *call) {
    if (result != CUBLAS_STATUS_SUCCESS && first == SPARSEOPT_OK)
      first = cublasFail(result, api, call);
  };
  for (GemmPlan &plan : resources.plans) {
    for (cublasLtMatrixLayout_t *layout : {&plan.a, &plan.b, &plan.d}) {
      if (*layout != nullptr)
        check(cublasLt().cublasLtMatrixLayoutDestroy(*layout),
              "cublasLtMatrixLayoutDestroy");
      *layout = nullptr;
    }
    if (plan.desc != nullptr)
      check(cublasLt().cublasLtMatmulDescDestroy(plan.desc),
            "cublasLtMatmulDescDestroy");
    plan.desc = nullptr;
  }
  resources.plans.clear();
  if (resources.workspace != 0) {
    CUresult result = driver().cuMemFree_v2(resources.workspace);
    if (result != CUDA_SUCCESS && first == SPARSEOPT_OK)
      first = cudaFail(result, api, "freeing the cuBLASLt workspace");
    resources.workspace = 0;
  }
  if (resources.handle != nullptr)
    check(cublasLt().cublasLtDestroy(resources.handle), "cublasLtDestroy");
  resources.handle = nullptr;
  return first;
}

} // namespace sparseopt
