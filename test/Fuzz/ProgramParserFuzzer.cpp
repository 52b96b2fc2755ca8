//===- ProgramParserFuzzer.cpp - fuzz the runtime's program parser ---------===//
//
// Each input is a program.txt: written into a scratch artifact directory
// (with the module and constant files a program may name) and parsed with
// sparseopt_program_parse, then every query of the parsed program is asked.
// Any crash, hang or sanitizer report is a bug; an input the parser refuses
// is fine (it must say why).
//
//===----------------------------------------------------------------------===//

#include "sparseopt/runtime.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <unistd.h>

namespace {

std::string scratchDir() {
  static std::string dir = [] {
    char pattern[] = "/tmp/sparseopt-fuzz-XXXXXX";
    const char *made = mkdtemp(pattern);
    if (!made)
      abort();
    std::string d = made;
    // Files a program may name: a module and a few constant files.
    for (const char *name : {"kernels.ptx", "const0.bin", "const1.bin"}) {
      FILE *f = fopen((d + "/" + name).c_str(), "wb");
      if (!f)
        abort();
      static const unsigned char bytes[64] = {0};
      fwrite(bytes, 1, sizeof(bytes), f);
      fclose(f);
    }
    return d;
  }();
  return dir;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string dir = scratchDir();
  FILE *f = fopen((dir + "/program.txt").c_str(), "wb");
  if (!f)
    abort();
  fwrite(data, 1, size, f);
  fclose(f);
  sparseopt_program p = nullptr;
  if (sparseopt_program_parse(dir.c_str(), &p) != SPARSEOPT_OK) {
    if (sparseopt_last_error()[0] == '\0')
      abort(); // a refusal must say why
    return 0;
  }
  int n = sparseopt_program_num_inputs(p) + sparseopt_program_num_outputs(p) +
          sparseopt_program_num_params(p) + sparseopt_program_num_launches(p) +
          sparseopt_program_num_steps(p) + sparseopt_program_num_checks(p) +
          sparseopt_program_num_stats(p);
  (void)n;
  for (int i = 0; i < sparseopt_program_num_inputs(p); ++i)
    (void)sparseopt_program_input_bytes(p, i);
  for (int i = 0; i < sparseopt_program_num_outputs(p); ++i)
    (void)sparseopt_program_output_bytes(p, i);
  for (int i = 0; i < sparseopt_program_num_launches(p); ++i)
    (void)sparseopt_program_launch_kernel(p, i);
  sparseopt_program_destroy(p);
  return 0;
}
