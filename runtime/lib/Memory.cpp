//===- Memory.cpp - Device allocation, copies and memset ------------------===//

#include "Context.h"

using namespace sparseopt;

namespace {

std::string bytesText(size_t bytes) { return std::to_string(bytes) + " bytes"; }

} // namespace

extern "C" {

sparseopt_status sparseopt_malloc(size_t bytes, sparseopt_deviceptr *out) {
  const char *api = "sparseopt_malloc";
  return guarded(api, [&]() -> Status {
    if (out == nullptr)
      return nullArgument(api, "out");
    if (Status status = requireContext(api); status != SPARSEOPT_OK)
      return status;
    *out = 0;
    if (bytes == 0)
      return SPARSEOPT_OK;
    CUdeviceptr ptr = 0;
    CUresult result = driver().cuMemAlloc_v2(&ptr, bytes);
    if (result != CUDA_SUCCESS)
      return cudaFail(result, api, "cuMemAlloc(" + bytesText(bytes) + ")");
    *out = ptr;
    return SPARSEOPT_OK;
  });
}

sparseopt_status sparseopt_free(sparseopt_deviceptr p) {
  const char *api = "sparseopt_free";
  return guarded(api, [&]() -> Status {
    if (p == 0)
      return SPARSEOPT_OK;
    if (Status status = requireContext(api); status != SPARSEOPT_OK)
      return status;
    CUresult result = driver().cuMemFree_v2(CUdeviceptr(p));
    if (result != CUDA_SUCCESS)
      return cudaFail(result, api, "cuMemFree");
    return SPARSEOPT_OK;
  });
}

sparseopt_status sparseopt_memcpy_htod(sparseopt_deviceptr dst,
                                       const void *src, size_t bytes) {
  const char *api = "sparseopt_memcpy_htod";
  return guarded(api, [&]() -> Status {
    if (dst == 0)
      return nullArgument(api, "dst");
    if (src == nullptr)
      return nullArgument(api, "src");
    if (Status status = requireContext(api); status != SPARSEOPT_OK)
      return status;
    if (bytes == 0)
      return SPARSEOPT_OK;
    CUresult result = driver().cuMemcpyHtoD_v2(CUdeviceptr(dst), src, bytes);
    if (result != CUDA_SUCCESS)
      return cudaFail(result, api, "cuMemcpyHtoD(" + bytesText(bytes) + ")");
    return SPARSEOPT_OK;
  });
}

sparseopt_status sparseopt_memcpy_dtoh(void *dst, sparseopt_deviceptr src,
                                       size_t bytes) {
  const char *api = "sparseopt_memcpy_dtoh";
  return guarded(api, [&]() -> Status {
    if (dst == nullptr)
      return nullArgument(api, "dst");
    if (src == 0)
      return nullArgument(api, "src");
    if (Status status = requireContext(api); status != SPARSEOPT_OK)
      return status;
    if (bytes == 0)
      return SPARSEOPT_OK;
    CUresult result = driver().cuMemcpyDtoH_v2(dst, CUdeviceptr(src), bytes);
    if (result != CUDA_SUCCESS)
      return cudaFail(result, api, "cuMemcpyDtoH(" + bytesText(bytes) + ")");
    return SPARSEOPT_OK;
  });
}

sparseopt_status sparseopt_memset_d8(sparseopt_deviceptr dst,
                                     unsigned char value, size_t bytes) {
  const char *api = "sparseopt_memset_d8";
  return guarded(api, [&]() -> Status {
    if (dst == 0)
      return nullArgument(api, "dst");
    if (Status status = requireContext(api); status != SPARSEOPT_OK)
      return status;
    if (bytes == 0)
      return SPARSEOPT_OK;
    CUresult result = driver().cuMemsetD8_v2(CUdeviceptr(dst), value, bytes);
    if (result != CUDA_SUCCESS)
      return cudaFail(result, api, "cuMemsetD8(" + bytesText(bytes) + ")");
    return SPARSEOPT_OK;
  });
}

} // extern "C"
