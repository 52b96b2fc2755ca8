//===- Pipelines.h - SparseOpt registered pipelines -------------*- C++ -*-===//

#ifndef SPARSEOPT_PIPELINES_PIPELINES_H
#define SPARSEOPT_PIPELINES_PIPELINES_H

namespace mlir {
class DialectRegistry;
namespace sgpu {

/// Registers `sgpu-compile` (input IR -> PTX + runtime program) and
/// `sgpu-reference` (input IR -> CPU reference loops lowered to LLVM).
void registerSparseOptPipelines();

/// Registers the dialects and interfaces the pipelines need.
void registerSparseOptDialects(DialectRegistry &registry);

} // namespace sgpu
} // namespace mlir

#endif // SPARSEOPT_PIPELINES_PIPELINES_H
