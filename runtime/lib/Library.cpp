//===- Library.cpp - Opening a CUDA library at run time -------------------===//

#include "Library.h"

#include <dlfcn.h>

#include <cstdlib>

namespace sparseopt {

void *openFirstLibrary(const char *envVar, const std::vector<const char *> &names,
                       const std::function<bool(void *, std::string &)> &accept,
                       std::string &tried, bool &fromEnv) {
  const char *override = std::getenv(envVar);
  fromEnv = override != nullptr && *override != '\0';
  std::vector<const char *> candidates =
      fromEnv ? std::vector<const char *>{override} : names;
  tried.clear();
  for (const char *name : candidates) {
    std::string reason;
    void *library = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (library == nullptr) {
      const char *why = dlerror();
      reason = why != nullptr ? why : "dlopen failed";
    } else if (accept(library, reason)) {
      return library;
    } else {
      dlclose(library);
    }
    tried += std::string(tried.empty() ? "" : "; ") + name + " (" + reason +
             ")";
  }
  return nullptr;
}

bool resolveSymbol(void *library, const char *symbol, void *&slot) {
  slot = dlsym(library, symbol);
  return slot != nullptr;
}

} // namespace sparseopt
