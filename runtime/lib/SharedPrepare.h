//===- SharedPrepare.h - prepared weights shared between programs -*- C++
//-*-===//
//
// Programs compiled from one model (a decoder's prefill and decode steps)
// compress the same sparse weights in their prepare stages, with the same
// kernels into the same layouts. matchPrepareStages tells whether program
// p's prepare stage computes exactly what a donor's does, and which of p's
// temp buffers hold what which of the donor's hold, so that p can use the
// donor's prepared buffers instead of preparing (and storing) its own.
//
//===----------------------------------------------------------------------===//
#ifndef SPARSEOPT_RUNTIME_SHAREDPREPARE_H
#define SPARSEOPT_RUNTIME_SHAREDPREPARE_H

#include "Manifest.h"

#include <cstddef>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace sparseopt {

/// The definition of kernel `name` in PTX text `ptx` from its parameter
/// list to the end of its body (the name itself left out, so that the same
/// kernel under two names compares equal), or "" when `ptx` defines no
/// such kernel (a cubin, another name).
std::string ptxKernelDefinition(const std::string &ptx,
                                const std::string &name);

struct PrepareMatch {
  bool matches = false;
  std::string why; ///< when it does not match: the first difference
  /// (index of a buffer of p, index of the donor's buffer it equals) for
  /// every temp buffer the prepare steps use.
  std::vector<std::pair<size_t, size_t>> temps;
};

/// Whether `p`'s prepare stage is `donor`'s: the same number of steps, all
/// launches, pairwise of kernels with the same PTX definition (`pPtx`,
/// `donorPtx`: each program's module text) on the same grid, block and
/// shared bytes, with the same immediate arguments, params that
/// `sameParam(p's param index, donor's param index)` says hold the same
/// tensor, and temp buffers of the same size that correspond one to one
/// (none of them in an arena). Tensor-map and constant arguments are not
/// compared: a stage that has them does not match.
PrepareMatch matchPrepareStages(const Manifest &p, const std::string &pPtx,
                                const Manifest &donor,
                                const std::string &donorPtx,
                                const std::function<bool(int, int)> &sameParam);

} // namespace sparseopt

#endif // SPARSEOPT_RUNTIME_SHAREDPREPARE_H
