//===- Stream.cpp - Streams and timing events -----------------------------===//
//
// The public stream and event handles are the driver's CUstream / CUevent
// values, so handles created by other CUDA libraries in the process (such as
// PyTorch's streams) can be passed in directly.
//
//===----------------------------------------------------------------------===//

#include "Context.h"

using namespace sparseopt;

extern "C" {

sparseopt_status sparseopt_stream_create(sparseopt_stream *out) {
  const char *api = "sparseopt_stream_create";
  return guarded(api, [&]() -> Status {
    if (out == nullptr)
      return nullArgument(api, "out");
    if (Status status = requireContext(api); status != SPARSEOPT_OK)
      return status;
    CUstream stream = nullptr;
    CUresult result = driver().cuStreamCreate(&stream, CU_STREAM_DEFAULT);
    if (result != CUDA_SUCCESS)
      return cudaFail(result, api, "cuStreamCreate");
    *out = reinterpret_cast<sparseopt_stream>(stream);
    return SPARSEOPT_OK;
  });
}

sparseopt_status sparseopt_stream_destroy(sparseopt_stream s) {
  const char *api = "sparseopt_stream_destroy";
  return guarded(api, [&]() -> Status {
    if (s == nullptr)
      return fail(SPARSEOPT_ERROR_INVALID_ARGUMENT, api,
                  "s must not be NULL (the default stream cannot be destroyed)");
    if (Status status = requireContext(api); status != SPARSEOPT_OK)
      return status;
    CUresult result = driver().cuStreamDestroy_v2(toCUstream(s));
    if (result != CUDA_SUCCESS)
      return cudaFail(result, api, "cuStreamDestroy");
    return SPARSEOPT_OK;
  });
}

sparseopt_status sparseopt_stream_synchronize(sparseopt_stream s) {
  const char *api = "sparseopt_stream_synchronize";
  return guarded(api, [&]() -> Status {
    if (Status status = requireContext(api); status != SPARSEOPT_OK)
      return status;
    CUresult result = driver().cuStreamSynchronize(toCUstream(s));
    if (result != CUDA_SUCCESS)
      return cudaFail(result, api, "cuStreamSynchronize");
    return SPARSEOPT_OK;
  });
}

sparseopt_status sparseopt_event_create(sparseopt_event *out) {
  const char *api = "sparseopt_event_create";
  return guarded(api, [&]() -> Status {
    if (out == nullptr)
      return nullArgument(api, "out");
    if (Status status = requireContext(api); status != SPARSEOPT_OK)
      return status;
    CUevent event = nullptr;
    CUresult result = driver().cuEventCreate(&event, CU_EVENT_DEFAULT);
    if (result != CUDA_SUCCESS)
      return cudaFail(result, api, "cuEventCreate");
    *out = reinterpret_cast<sparseopt_event>(event);
    return SPARSEOPT_OK;
  });
}

sparseopt_status sparseopt_event_destroy(sparseopt_event e) {
  const char *api = "sparseopt_event_destroy";
  return guarded(api, [&]() -> Status {
    if (e == nullptr)
      return nullArgument(api, "e");
    if (Status status = requireContext(api); status != SPARSEOPT_OK)
      return status;
    CUresult result = driver().cuEventDestroy_v2(toCUevent(e));
    if (result != CUDA_SUCCESS)
      return cudaFail(result, api, "cuEventDestroy");
    return SPARSEOPT_OK;
  });
}

sparseopt_status sparseopt_event_record(sparseopt_event e, sparseopt_stream s) {
  const char *api = "sparseopt_event_record";
  return guarded(api, [&]() -> Status {
    if (e == nullptr)
      return nullArgument(api, "e");
    if (Status status = requireContext(api); status != SPARSEOPT_OK)
      return status;
    CUresult result = driver().cuEventRecord(toCUevent(e), toCUstream(s));
    if (result != CUDA_SUCCESS)
      return cudaFail(result, api, "cuEventRecord");
    return SPARSEOPT_OK;
  });
}

sparseopt_status sparseopt_event_synchronize(sparseopt_event e) {
  const char *api = "sparseopt_event_synchronize";
  return guarded(api, [&]() -> Status {
    if (e == nullptr)
      return nullArgument(api, "e");
    if (Status status = requireContext(api); status != SPARSEOPT_OK)
      return status;
    CUresult result = driver().cuEventSynchronize(toCUevent(e));
    if (result != CUDA_SUCCESS)
      return cudaFail(result, api, "cuEventSynchronize");
    return SPARSEOPT_OK;
  });
}

sparseopt_status sparseopt_event_elapsed_ms(sparseopt_event start,
                                            sparseopt_event end, float *ms) {
  const char *api = "sparseopt_event_elapsed_ms";
  return guarded(api, [&]() -> Status {
    if (start == nullptr)
      return nullArgument(api, "start");
    if (end == nullptr)
      return nullArgument(api, "end");
    if (ms == nullptr)
      return nullArgument(api, "ms");
    if (Status status = requireContext(api); status != SPARSEOPT_OK)
      return status;
    CUresult result = driver().cuEventElapsedTime_v2(ms, toCUevent(start),
                                                     toCUevent(end));
    if (result != CUDA_SUCCESS)
      return cudaFail(result, api, "cuEventElapsedTime");
    return SPARSEOPT_OK;
  });
}

} // extern "C"
