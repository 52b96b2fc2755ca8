//===- CompilerFuzzer.cpp - fuzz parse -> verify -> sgpu-compile -----------===//
//
// Each input is MLIR text: parsed and verified through the compiler's C API
// and, when that succeeds, compiled with sgpu-compile (no artifact
// written). Every outcome but a crash, a hang or a sanitizer report is
// fine: bad input must be refused with a diagnostic.
//
//===----------------------------------------------------------------------===//

#include "sparse-opt-c/Compiler.h"

#include <cstdint>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static sparseopt_compiler compiler = [] {
    sparseopt_compiler c = nullptr;
    if (sparseopt_compiler_create(&c) != 0)
      abort();
    return c;
  }();
  sparseopt_ir ir = nullptr;
  if (sparseopt_ir_parse(compiler, reinterpret_cast<const char *>(data), size,
                         "fuzz.mlir", &ir) == 0) {
    if (sparseopt_ir_verify(ir) == 0)
      (void)sparseopt_ir_run_pipeline(ir, "sgpu-compile");
    sparseopt_ir_destroy(ir);
  }
  sparseopt_string_free(sparseopt_compiler_take_diagnostics(compiler));
  return 0;
}
