//===- EntryPoints.h - checks for dlopen()ed entry-point tables -*- C++ -*-===//
//
// The runtime resolves each library it opens (the driver, cuBLASLt) into a
// table of function pointers typed with decltype(&::name) from the
// library's header. A listed name must not be a macro of that header:
// dlsym would look up the name as written while the pointer type came from
// the declaration the macro expands to (cuda.h renames many functions to
// versioned symbols). SPARSEOPT_CHECK_NOT_A_MACRO(name) fails the build then.
//
//===----------------------------------------------------------------------===//
#ifndef SPARSEOPT_RUNTIME_ENTRYPOINTS_H
#define SPARSEOPT_RUNTIME_ENTRYPOINTS_H

namespace sparseopt {

/// Compile-time string equality.
constexpr bool sameString(const char *a, const char *b) {
  while (*a != '\0' && *a == *b) {
    ++a;
    ++b;
  }
  return *a == *b;
}

} // namespace sparseopt

#define SPARSEOPT_STRINGIFY_EXPANDED(x) SPARSEOPT_STRINGIFY(x)
#define SPARSEOPT_STRINGIFY(x) #x
#define SPARSEOPT_CHECK_NOT_A_MACRO(name)                                      \
  static_assert(::sparseopt::sameString(SPARSEOPT_STRINGIFY_EXPANDED(name),    \
                                        #name),                                \
                #name " is a macro of the library's header: list the symbol "  \
                      "it expands to");

#endif // SPARSEOPT_RUNTIME_ENTRYPOINTS_H
