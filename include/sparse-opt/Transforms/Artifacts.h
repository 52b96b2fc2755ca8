//===- Artifacts.h - a compiled module's files for the runtime --*- C++ -*-===//
//
// The translation from a compiled module (host function of buffers, kernel
// launches, library calls and collectives, plus the gpu.binary of PTX) to
// the files the runtime loads: kernels.ptx, program.txt (the format of
// sparseopt/program_format.h), const<N>.bin, signature.json and
// summary.txt. The C API's compile calls it after the pipeline; the
// sgpu-emit-artifacts pass (sgpu-compile's output-dir) is its spelling on
// the command line.
//
//===----------------------------------------------------------------------===//

#ifndef SPARSEOPT_TRANSFORMS_ARTIFACTS_H
#define SPARSEOPT_TRANSFORMS_ARTIFACTS_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"

namespace mlir {
namespace sgpu {

/// Writes the artifacts of `module` into `outputDir` (created if needed)
/// for its public host function, or the one named `entry`. Every problem is
/// a diagnostic at the op that causes it, and a failure.
LogicalResult writeArtifacts(ModuleOp module, StringRef outputDir,
                             StringRef entry = "");

} // namespace sgpu
} // namespace mlir

#endif // SPARSEOPT_TRANSFORMS_ARTIFACTS_H
