//===- Library.h - Opening a CUDA library at run time ----------*- C++ -*-===//
//
// The runtime links no CUDA library: cuBLASLt and NCCL are dlopen()ed the
// first time a program or a communicator needs them, from a list of file
// names that an environment variable can replace, and each library's entry
// points are resolved into a table whose pointer types come from its
// header. LoadedLibrary<Table> is that once-per-process load, shared by
// both; each library lists its entry points and resolves them with
// SPARSEOPT_RESOLVE_TABLE.
//
//===----------------------------------------------------------------------===//

#ifndef SPARSEOPT_RUNTIME_LIBRARY_H
#define SPARSEOPT_RUNTIME_LIBRARY_H

#include "Errors.h"

#include <atomic>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

namespace sparseopt {

/// Opens the first of `names` (or only the file in environment variable
/// `envVar` when it is set and non-empty) for which `accept(handle,
/// reason)` returns true; `accept` resolves the entry points and otherwise
/// sets `reason`. A rejected handle is closed. Returns the accepted handle
/// (kept open for the life of the process), or null with `tried` listing
/// each file and why it failed, and `fromEnv` telling whether the variable
/// chose the file.
void *openFirstLibrary(const char *envVar, const std::vector<const char *> &names,
                       const std::function<bool(void *, std::string &)> &accept,
                       std::string &tried, bool &fromEnv);

/// dlsym(library, symbol) into `slot`; false when the symbol is missing.
bool resolveSymbol(void *library, const char *symbol, void *&slot);

template <typename Fn>
bool resolveEntryPoint(void *library, const char *symbol, Fn &slot) {
  void *address = nullptr;
  bool found = resolveSymbol(library, symbol, address);
  slot = reinterpret_cast<Fn>(address);
  return found;
}

/// X-macro bodies for a `bool resolveTable(void *library, Table &table,
/// std::string &reason)` that declares `const char *why`: a required entry
/// point that is missing fails with "does not export <name>: <why>"; an
/// optional one is left null.
#define SPARSEOPT_RESOLVE_REQUIRED(sym)                                        \
  if (!::sparseopt::resolveEntryPoint(library, #sym, table.sym)) {             \
    reason = std::string("does not export " #sym ": ") + why;                  \
    return false;                                                              \
  }
#define SPARSEOPT_RESOLVE_OPTIONAL(sym)                                        \
  ::sparseopt::resolveEntryPoint(library, #sym, table.sym);

/// A library loaded on first use, its entry points in a `Table`.
template <typename Table> class LoadedLibrary {
public:
  using Resolver = bool (*)(void *library, Table &table, std::string &reason);

  /// `need` starts the failure message ("collectives need NCCL"), `install`
  /// says how to get the library ("install NCCL (libnccl2)").
  LoadedLibrary(const char *envVar, std::vector<const char *> names,
                Resolver resolver, const char *need, const char *install)
      : envVar(envVar), names(std::move(names)), resolver(resolver),
        need(need), install(install) {}

  /// Opens the library and resolves the table, once. Thread-safe; a
  /// success is permanent, a failure is not cached. Errors: NO_LIBRARY,
  /// "<context>: <need>, which could not be opened: tried <each file (why)>
  /// <hint>".
  Status load(const std::string &context) noexcept {
    if (loaded.load(std::memory_order_acquire))
      return SPARSEOPT_OK;
    try {
      std::lock_guard<std::mutex> lock(mutex);
      if (loaded.load(std::memory_order_relaxed))
        return SPARSEOPT_OK;
      Table resolved;
      std::string tried;
      bool fromEnv = false;
      void *library = openFirstLibrary(
          envVar, names,
          [&](void *handle, std::string &reason) {
            return resolver(handle, resolved, reason);
          },
          tried, fromEnv);
      if (library != nullptr) {
        entryPoints = resolved;
        loaded.store(true, std::memory_order_release);
        return SPARSEOPT_OK;
      }
      std::string hint = fromEnv ? std::string(" (from ") + envVar + ")"
                                 : std::string("; ") + install + " or set " +
                                       envVar + " to the library's path";
      return fail(SPARSEOPT_ERROR_NO_LIBRARY,
                  context + ": " + need + ", which could not be opened: " +
                      "tried " + tried + hint);
    } catch (...) {
      return fail(SPARSEOPT_ERROR_OUT_OF_MEMORY,
                  context + ": out of host memory while opening a library");
    }
  }

  bool isLoaded() const noexcept {
    return loaded.load(std::memory_order_acquire);
  }

  /// The entry points; only valid after load() returned OK.
  const Table &table() const noexcept { return entryPoints; }

private:
  const char *envVar;
  std::vector<const char *> names;
  Resolver resolver;
  const char *need, *install;
  Table entryPoints;
  std::mutex mutex;
  std::atomic<bool> loaded{false};
};

} // namespace sparseopt

#endif // SPARSEOPT_RUNTIME_LIBRARY_H
