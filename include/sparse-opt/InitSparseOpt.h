//===- InitSparseOpt.h - everything the SparseOpt compiler registers -*- C++ -*-===//
//
// One place that lists the dialects, extensions, translations, passes and
// pipelines the compiler uses, shared by the sparse-opt driver and the C API
// so that both accept exactly the same IR and pipelines.
//
//===----------------------------------------------------------------------===//

#ifndef SPARSEOPT_INITSPARSEOPT_H
#define SPARSEOPT_INITSPARSEOPT_H

namespace mlir {
class DialectRegistry;
namespace sgpu {

/// Adds every upstream dialect and extension, the LLVM IR translations and
/// the sgpu dialect to `registry`.
void registerSparseOptDialectsAndExtensions(DialectRegistry &registry);

/// Registers the upstream passes, SparseOpt's passes and its pipelines
/// (sgpu-compile, sgpu-reference) in the process-wide registries. Safe to call
/// any number of times from any thread: the work is done once.
void registerSparseOptPassesAndPipelines();

} // namespace sgpu
} // namespace mlir

#endif // SPARSEOPT_INITSPARSEOPT_H
