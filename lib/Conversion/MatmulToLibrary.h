//===- MatmulToLibrary.h - dense GEMMs as library calls ---------*- C++ -*-===//

#ifndef SPARSEOPT_LIB_CONVERSION_MATMULTOLIBRARY_H
#define SPARSEOPT_LIB_CONVERSION_MATMULTOLIBRARY_H

#include "mlir/Transforms/DialectConversion.h"

namespace mlir {
namespace sgpu {

/// The pattern replacing sgpu.matmul by sgpu.gemm_call on buffers: the
/// runtime program runs it with cuBLASLt, in order with the kernel
/// launches. (A matmul that a fused TwELL producer replaces is the TwELL
/// patterns' to erase: the conversion target keeps it legal here.)
void populateMatmulToLibraryPatterns(RewritePatternSet &patterns);

} // namespace sgpu
} // namespace mlir

#endif // SPARSEOPT_LIB_CONVERSION_MATMULTOLIBRARY_H
