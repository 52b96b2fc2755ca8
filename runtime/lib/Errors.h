//===- Errors.h - Status codes and the thread-local last error -*- C++ -*-===//
//
// Every public entry point returns a sparseopt_status and, on failure, leaves
// a description in a thread-local string. This header provides the helpers
// that record such failures and the guards that keep C++ exceptions (e.g.
// std::bad_alloc from string building) from crossing the C boundary.
//
//===----------------------------------------------------------------------===//
#ifndef SPARSEOPT_RUNTIME_ERRORS_H
#define SPARSEOPT_RUNTIME_ERRORS_H

#include "sparseopt/runtime.h"

#include <exception>
#include <new>
#include <string>

namespace sparseopt {

using Status = sparseopt_status;

/// Records `message` as the calling thread's last error and returns `status`.
/// Never throws: if the message cannot be stored, a fixed text is kept.
Status fail(Status status, const std::string &message) noexcept;

/// Convenience for "<api>: <what>" messages.
Status fail(Status status, const char *api, const std::string &what) noexcept;

/// Records "<api>: <argument> must not be NULL" as INVALID_ARGUMENT.
Status nullArgument(const char *api, const char *argument) noexcept;

/// Adds "<context>: " to the last error, giving context to a failure reported
/// by a lower layer (e.g. the manifest line of a failing launch). It goes
/// right after a leading "<api>: " when the message has one, else in front.
void addErrorContext(const char *api, const std::string &context) noexcept;

/// Runs `body` (a callable returning Status) and turns any exception that
/// escapes it into a status with a message naming `api`.
template <typename Body>
Status guarded(const char *api, Body &&body) noexcept {
  try {
    return body();
  } catch (const std::bad_alloc &) {
    return fail(SPARSEOPT_ERROR_OUT_OF_MEMORY, api, "out of host memory");
  } catch (const std::exception &e) {
    return fail(SPARSEOPT_ERROR_INVALID_ARGUMENT, api,
                std::string("internal error: ") + e.what());
  } catch (...) {
    return fail(SPARSEOPT_ERROR_INVALID_ARGUMENT, api,
                "internal error: unknown exception");
  }
}

/// Like guarded() for entry points that return a plain value: on an
/// exception the error is recorded and `onError` is returned.
template <typename T, typename Body>
T guardedValue(const char *api, T onError, Body &&body) noexcept {
  try {
    return body();
  } catch (const std::bad_alloc &) {
    fail(SPARSEOPT_ERROR_OUT_OF_MEMORY, api, "out of host memory");
  } catch (...) {
    fail(SPARSEOPT_ERROR_INVALID_ARGUMENT, api, "internal error");
  }
  return onError;
}

} // namespace sparseopt

#endif // SPARSEOPT_RUNTIME_ERRORS_H
