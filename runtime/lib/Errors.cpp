//===- Errors.cpp - Status strings and the thread-local last error --------===//

#include "Errors.h"

#include <cstring>

namespace sparseopt {
namespace {

/// The calling thread's last failure message.
thread_local std::string lastErrorMessage;

} // namespace

Status fail(Status status, const std::string &message) noexcept {
  try {
    lastErrorMessage = message;
  } catch (...) {
    // No memory for the message: leave it empty rather than throw.
    lastErrorMessage.clear();
  }
  return status;
}

Status fail(Status status, const char *api, const std::string &what) noexcept {
  try {
    return fail(status, std::string(api) + ": " + what);
  } catch (...) {
    return fail(status, std::string());
  }
}

Status nullArgument(const char *api, const char *argument) noexcept {
  try {
    return fail(SPARSEOPT_ERROR_INVALID_ARGUMENT, api,
                std::string(argument) + " must not be NULL");
  } catch (...) {
    return fail(SPARSEOPT_ERROR_INVALID_ARGUMENT, std::string());
  }
}

void addErrorContext(const char *api, const std::string &context) noexcept {
  try {
    std::string prefix = std::string(api) + ": ";
    size_t at = lastErrorMessage.compare(0, prefix.size(), prefix) == 0
                    ? prefix.size()
                    : 0;
    lastErrorMessage.insert(at, context + ": ");
  } catch (...) {
    // Keep the original message if the longer one cannot be built.
  }
}

} // namespace sparseopt

extern "C" {

const char *sparseopt_status_string(sparseopt_status s) {
  // C and ctypes callers may pass any int; read it as one, since loading an
  // out-of-range value as the C++ enum type is undefined.
  int value = 0;
  static_assert(sizeof(value) == sizeof(s), "enum must be int-sized");
  std::memcpy(&value, &s, sizeof(value));
  switch (value) {
  case SPARSEOPT_OK:
    return "SPARSEOPT_OK";
  case SPARSEOPT_ERROR_INVALID_ARGUMENT:
    return "SPARSEOPT_ERROR_INVALID_ARGUMENT";
  case SPARSEOPT_ERROR_NO_DRIVER:
    return "SPARSEOPT_ERROR_NO_DRIVER";
  case SPARSEOPT_ERROR_NO_DEVICE:
    return "SPARSEOPT_ERROR_NO_DEVICE";
  case SPARSEOPT_ERROR_CUDA:
    return "SPARSEOPT_ERROR_CUDA";
  case SPARSEOPT_ERROR_OUT_OF_MEMORY:
    return "SPARSEOPT_ERROR_OUT_OF_MEMORY";
  case SPARSEOPT_ERROR_IO:
    return "SPARSEOPT_ERROR_IO";
  case SPARSEOPT_ERROR_PARSE:
    return "SPARSEOPT_ERROR_PARSE";
  case SPARSEOPT_ERROR_NOT_FOUND:
    return "SPARSEOPT_ERROR_NOT_FOUND";
  case SPARSEOPT_ERROR_NOT_INITIALIZED:
    return "SPARSEOPT_ERROR_NOT_INITIALIZED";
  case SPARSEOPT_ERROR_NO_LIBRARY:
    return "SPARSEOPT_ERROR_NO_LIBRARY";
  case SPARSEOPT_ERROR_WEIGHT:
    return "SPARSEOPT_ERROR_WEIGHT";
  case SPARSEOPT_ERROR_COLLECTIVE:
    return "SPARSEOPT_ERROR_COLLECTIVE";
  }
  return "SPARSEOPT_UNKNOWN_STATUS";
}

const char *sparseopt_last_error(void) {
  return sparseopt::lastErrorMessage.c_str();
}

} // extern "C"
