//===- Passes.h - SparseOpt graph rewrites ----------------------*- C++ -*-===//

#ifndef SPARSEOPT_TRANSFORMS_PASSES_H
#define SPARSEOPT_TRANSFORMS_PASSES_H

#include "mlir/Pass/Pass.h"

namespace mlir {
namespace arith { class ArithDialect; }
namespace tensor { class TensorDialect; }
namespace linalg { class LinalgDialect; }
namespace math { class MathDialect; }
namespace LLVM { class LLVMDialect; }
namespace NVVM { class NVVMDialect; }
namespace sgpu {
class SGPUDialect;

#define GEN_PASS_DECL
#include "sparse-opt/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "sparse-opt/Transforms/Passes.h.inc"

} // namespace sgpu
} // namespace mlir

#endif // SPARSEOPT_TRANSFORMS_PASSES_H
