//===- Nccl.cpp - dlopen NCCL ---------------------------------------------===//

#include "Nccl.h"
#include "EntryPoints.h"
#include "Library.h"

#include <iterator>
#include <vector>

namespace sparseopt {
namespace {

SPARSEOPT_NCCL_ENTRY_POINTS(SPARSEOPT_CHECK_NOT_A_MACRO)
SPARSEOPT_NCCL_OPTIONAL_ENTRY_POINTS(SPARSEOPT_CHECK_NOT_A_MACRO)
#undef SPARSEOPT_CHECK_NOT_A_MACRO

bool resolveTable(void *library, NcclApi &table, std::string &reason) {
  const char *why = "not NCCL, or older than 2.14";
  SPARSEOPT_NCCL_ENTRY_POINTS(SPARSEOPT_RESOLVE_REQUIRED)
  SPARSEOPT_NCCL_OPTIONAL_ENTRY_POINTS(SPARSEOPT_RESOLVE_OPTIONAL)
  return true;
}

LoadedLibrary<NcclApi> &library() {
  static LoadedLibrary<NcclApi> instance(
      kNcclLibraryEnvVar,
      std::vector<const char *>(std::begin(kDefaultNcclLibraries),
                                std::end(kDefaultNcclLibraries)),
      resolveTable, "collectives need NCCL",
      "install NCCL (e.g. the nvidia-nccl-cu13 wheel or libnccl2)");
  return instance;
}

} // namespace

Status loadNccl(const std::string &context) noexcept {
  return library().load(context);
}

const NcclApi &nccl() noexcept { return library().table(); }

std::string ncclResultText(ncclResult_t result, ncclComm_t comm) {
  const char *name = nullptr;
  switch (result) {
  case ncclSuccess: name = "ncclSuccess"; break;
  case ncclUnhandledCudaError: name = "ncclUnhandledCudaError"; break;
  case ncclSystemError: name = "ncclSystemError"; break;
  case ncclInternalError: name = "ncclInternalError"; break;
  case ncclInvalidArgument: name = "ncclInvalidArgument"; break;
  case ncclInvalidUsage: name = "ncclInvalidUsage"; break;
  case ncclRemoteError: name = "ncclRemoteError"; break;
  case ncclInProgress: name = "ncclInProgress"; break;
  default: break;
  }
  std::string text = name != nullptr ? name : "ncclResult " + std::to_string(int(result));
  if (library().isLoaded()) {
    text += std::string(" (") + nccl().ncclGetErrorString(result) + ")";
    if (comm != nullptr && nccl().ncclGetLastError != nullptr) {
      const char *last = nccl().ncclGetLastError(comm);
      if (last != nullptr && *last != '\0')
        text += ": " + std::string(last);
    }
  }
  return text;
}

ncclDataType_t ncclType(GemmDType dtype) {
  switch (dtype) {
  case GemmDType::F16:
    return ncclFloat16;
  case GemmDType::BF16:
    return ncclBfloat16;
  case GemmDType::F32:
    return ncclFloat32;
  }
  return ncclFloat32;
}

ncclRedOp_t ncclOp(ReduceOp op) {
  switch (op) {
  case ReduceOp::Sum:
    return ncclSum;
  case ReduceOp::Prod:
    return ncclProd;
  case ReduceOp::Max:
    return ncclMax;
  case ReduceOp::Min:
    return ncclMin;
  case ReduceOp::Avg:
    return ncclAvg;
  }
  return ncclSum;
}

} // namespace sparseopt
