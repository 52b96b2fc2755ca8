//===- Context.h - The device's primary context ----------------*- C++ -*-===//
//
// sparseopt_init() retains the primary context of one device. Every entry
// point that touches the GPU first calls requireContext(), which fails with
// NOT_INITIALIZED before initialization and otherwise makes that context
// current on the calling thread (CUDA contexts are current per thread).
//
//===----------------------------------------------------------------------===//
#ifndef SPARSEOPT_RUNTIME_CONTEXT_H
#define SPARSEOPT_RUNTIME_CONTEXT_H

#include "Driver.h"

namespace sparseopt {

/// OK when sparseopt_init() has succeeded and the primary context is current
/// on this thread (it is made current if needed); otherwise records an error
/// naming `api`.
Status requireContext(const char *api) noexcept;

/// The multiprocessors of the initialized device (requireContext first).
int deviceMultiprocessors() noexcept;

/// Public handles for streams and events are the driver handles themselves.
inline CUstream toCUstream(sparseopt_stream s) {
  return reinterpret_cast<CUstream>(s);
}
inline CUevent toCUevent(sparseopt_event e) {
  return reinterpret_cast<CUevent>(e);
}

} // namespace sparseopt

#endif // SPARSEOPT_RUNTIME_CONTEXT_H
