//===- CublasltAutotune.h - time cuBLASLt's candidates at load -*- C++ -*-===//
//
// cuBLASLt's heuristic ranks its algorithms by a model, and its first pick
// is not always the fastest on the device: at decode sizes (a handful of
// rows against a large weight) it often takes a split-K algorithm whose
// reduction is a second kernel. So at load, for each distinct gemm shape
// of a program, the heuristic's candidates (at most
// kGemmAutotuneCandidates) run on scratch operands of that shape, each
// timed run after 256 MiB are written (so the weight streams from memory
// as in a model, not from L2), and the fastest is kept for every gemm line
// of the shape.
//
// Autotuning never fails a load: where scratch memory or a candidate
// fails, the heuristic's first algorithm stays. It is on unless
// SPARSEOPT_GEMM_AUTOTUNE=0; SPARSEOPT_GEMM_AUTOTUNE_LOG=1 prints one line
// per shape to stderr (the first candidate's time, the chosen one's, and
// its rank), an A/B of the two choices in one process.
//
//===----------------------------------------------------------------------===//
#ifndef SPARSEOPT_RUNTIME_CUBLASLTAUTOTUNE_H
#define SPARSEOPT_RUNTIME_CUBLASLTAUTOTUNE_H

#include "Cublaslt.h"

#include <vector>

namespace sparseopt {

/// Whether load-time autotuning is on (SPARSEOPT_GEMM_AUTOTUNE is not "0").
bool gemmAutotuneEnabled() noexcept;

/// Times `candidates[i]` (parallel to m.gemms; the heuristic's working
/// algorithms, first first) for each distinct shape and sets the plans'
/// algorithm to the fastest. The context must be current and nothing of
/// the program may be in flight (it synchronizes the context).
void autotuneGemms(const Manifest &m, GemmResources &resources,
                   const std::vector<std::vector<cublasLtMatmulAlgo_t>>
                       &candidates) noexcept;

} // namespace sparseopt

#endif // SPARSEOPT_RUNTIME_CUBLASLTAUTOTUNE_H
