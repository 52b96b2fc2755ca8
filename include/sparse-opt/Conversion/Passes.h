//===- Passes.h - SparseOpt lowerings ---------------------------*- C++ -*-===//

#ifndef SPARSEOPT_CONVERSION_PASSES_H
#define SPARSEOPT_CONVERSION_PASSES_H

#include "mlir/Pass/Pass.h"

namespace mlir {
namespace arith { class ArithDialect; }
namespace bufferization { class BufferizationDialect; }
namespace gpu { class GPUDialect; }
namespace LLVM { class LLVMDialect; }
namespace NVVM { class NVVMDialect; }
namespace math { class MathDialect; }
namespace memref { class MemRefDialect; }
namespace scf { class SCFDialect; }
namespace vector { class VectorDialect; }
namespace sgpu {

#define GEN_PASS_DECL
#include "sparse-opt/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "sparse-opt/Conversion/Passes.h.inc"

} // namespace sgpu
} // namespace mlir

#endif // SPARSEOPT_CONVERSION_PASSES_H
