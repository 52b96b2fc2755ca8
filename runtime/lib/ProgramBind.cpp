//===- ProgramBind.cpp - Binding params to a program ----------------------===//
//
// sparseopt_program_bind and _bind_shared: the caller's param pointers,
// the temporaries zeroed, the prepare steps (weights compressed into the
// program's buffers) and the check lines; or, with a donor program whose
// prepare stage is the same (SharedPrepare.h), the donor's prepared
// buffers in place of the program's own.
//
//===----------------------------------------------------------------------===//

#include "Files.h"
#include "ProgramState.h"
#include "SharedPrepare.h"

#include <cstdint>

using namespace sparseopt;

namespace {

/// The message of a check that found a group breaking its pattern: `value`
/// is 2147483647 - (row * groups + group).
std::string weightMessage(const CheckDecl &check, int32_t value) {
  int64_t flat = int64_t(INT32_MAX) - int64_t(value);
  uint64_t groups = check.groups;
  uint64_t row = uint64_t(flat) / groups, group = uint64_t(flat) % groups;
  uint64_t first = group * check.m;
  return "param " + std::to_string(check.param) + " breaks its declared " +
         std::to_string(check.n) + ":" + std::to_string(check.m) +
         " sparsity: row " + std::to_string(row) + ", group " +
         std::to_string(group) + " (columns " + std::to_string(first) + ".." +
         std::to_string(first + check.m - 1) + ") has more than " +
         std::to_string(check.n) + " nonzeros";
}

/// Zeroes every temp buffer of `p` on `stream`, as a bind does, except the
/// ones borrowed from a donor (they hold its prepared weights).
Status zeroTemps(const char *api, sparseopt_program_s &p, CUstream stream) {
  const Manifest &m = p.manifest;
  for (size_t i = 0; i < m.buffers.size(); ++i) {
    const BufferDecl &buffer = m.buffers[i];
    if (buffer.kind != BufferKind::Temp || p.memory[i] == 0 || p.borrowed[i])
      continue;
    CUresult result =
        driver().cuMemsetD8Async(p.memory[i], 0, size_t(buffer.bytes), stream);
    if (result != CUDA_SUCCESS)
      return cudaFail(result, api,
                      m.where(buffer.line) + ": zeroing temp buffer " +
                          std::to_string(buffer.id) + " (cuMemsetD8Async)");
  }
  return SPARSEOPT_OK;
}

} // namespace

/// Binds `params` (parallel to the manifest's params; may be NULL when
/// there are none) to a loaded program: zeroes every temp buffer and runs
/// the prepare steps on `stream`, waits for that stream, then evaluates the
/// check lines in file order. The program is bound only when all of that
/// succeeds.
Status sparseopt::bindProgram(const char *api, sparseopt_program_s &p,
                              const sparseopt_deviceptr *params,
                              CUstream stream) {
  const Manifest &m = p.manifest;
  std::lock_guard<std::mutex> lock(p.runMutex);
  p.bound = false;
  // Buffers a shared bind borrowed from a donor get memory of their own
  // again: this bind's prepare steps write them.
  for (size_t i = 0; i < p.borrowed.size(); ++i) {
    if (!p.borrowed[i])
      continue;
    p.memory[i] = 0;
    p.borrowed[i] = false;
    if (Status s = createBuffer(api, p, i))
      return s;
  }
  // Prepare kernels may accumulate (with atomics) into zeroed temps; the
  // memsets are ordered before them on the same stream.
  if (Status s = zeroTemps(api, p, stream))
    return s;
  std::vector<CUdeviceptr> address(p.memory);
  for (size_t i = 0; i < m.params.size(); ++i)
    address[m.params[i]] = CUdeviceptr(params[i]);
  if (Status s = runSteps(api, p, StepStage::Prepare, address, stream))
    return s;
  CUresult result = driver().cuStreamSynchronize(stream);
  if (result != CUDA_SUCCESS)
    return cudaFail(result, api,
                    "waiting for the prepare steps (cuStreamSynchronize)");
  for (const CheckDecl &check : m.checks) {
    int32_t value = 0;
    result =
        driver().cuMemcpyDtoH_v2(&value, p.memory[check.buffer], sizeof(value));
    if (result != CUDA_SUCCESS)
      return cudaFail(result, api,
                      m.where(check.line) + ": reading the result of " +
                          describeCheck(check) + " (cuMemcpyDtoH)");
    if (value != 0)
      return fail(SPARSEOPT_ERROR_WEIGHT, api, weightMessage(check, value));
  }
  p.params.clear();
  for (size_t i = 0; i < m.params.size(); ++i)
    p.params.push_back(CUdeviceptr(params[i]));
  p.bound = true;
  return SPARSEOPT_OK;
}

namespace {

/// The module text of `p` (its PTX), read from the artifact, or "" when
/// it cannot be read.
std::string moduleText(const sparseopt_program_s &p) {
  std::string text, reason;
  if (!readFile(p.manifest.modulePath, text, reason))
    return "";
  return text;
}

/// Binds `params` to `p` sharing the prepared buffers of `donor` (bound,
/// loaded) where p's prepare stage is the donor's with the same param
/// tensors (matchPrepareStages): p's own copies of those buffers are freed,
/// its prepare steps and checks skipped, its other temps zeroed as a bind
/// zeroes them. Otherwise a plain bind. `*shared` says which happened.
Status bindShared(const char *api, sparseopt_program_s &p,
                  const sparseopt_deviceptr *params, sparseopt_program_s &donor,
                  CUstream stream, int *shared) {
  *shared = 0;
  PrepareMatch match;
  {
    std::lock_guard<std::mutex> lock(donor.runMutex);
    if (donor.bound)
      match = matchPrepareStages(
          p.manifest, moduleText(p), donor.manifest, moduleText(donor),
          [&](int mine, int theirs) {
            return size_t(theirs) < donor.params.size() &&
                   CUdeviceptr(params[mine]) == donor.params[theirs];
          });
    if (match.matches) {
      std::lock_guard<std::mutex> own(p.runMutex);
      p.bound = false;
      for (auto [mine, theirs] : match.temps) {
        if (!p.borrowed[mine] && p.memory[mine] != 0) {
          CUresult result = driver().cuMemFree_v2(p.memory[mine]);
          if (result != CUDA_SUCCESS)
            return cudaFail(result, api, "freeing a buffer a donor shares");
        }
        p.memory[mine] = donor.memory[theirs];
        p.borrowed[mine] = true;
      }
    }
  }
  if (!match.matches)
    return bindProgram(api, p, params, stream);
  const Manifest &m = p.manifest;
  std::lock_guard<std::mutex> lock(p.runMutex);
  if (Status s = zeroTemps(api, p, stream))
    return s;
  CUresult result = driver().cuStreamSynchronize(stream);
  if (result != CUDA_SUCCESS)
    return cudaFail(result, api,
                    "waiting for the zeroed temps "
                    "(cuStreamSynchronize)");
  p.params.clear();
  for (size_t i = 0; i < m.params.size(); ++i)
    p.params.push_back(CUdeviceptr(params[i]));
  p.bound = true;
  *shared = 1;
  return SPARSEOPT_OK;
}

/// The checks every bind makes of its params: their count, then each
/// pointer (checkPointers).
Status checkParams(const char *api, const Manifest &m,
                   const sparseopt_deviceptr *params, size_t num_params) {
  if (num_params != m.params.size())
    return fail(SPARSEOPT_ERROR_INVALID_ARGUMENT, api,
                "the program has " + std::to_string(m.params.size()) +
                    " param(s), got " + std::to_string(num_params));
  return checkPointers(api, m, m.params, params, "param");
}

} // namespace

sparseopt_status sparseopt_program_bind(sparseopt_program p,
                                        const sparseopt_deviceptr *params,
                                        size_t num_params, sparseopt_stream s) {
  const char *api = "sparseopt_program_bind";
  return guarded(api, [&]() -> Status {
    if (p == nullptr)
      return nullArgument(api, "p");
    const Manifest &m = p->manifest;
    if (Status st = checkParams(api, m, params, num_params))
      return st;
    if (Status st = requireLoaded(api, *p, "to bind it"))
      return st;
    if (Status st = requireContext(api))
      return st;
    return bindProgram(api, *p, params, toCUstream(s));
  });
}

sparseopt_status sparseopt_program_bind_shared(
    sparseopt_program p, const sparseopt_deviceptr *params, size_t num_params,
    sparseopt_program donor, sparseopt_stream s, int *shared) {
  const char *api = "sparseopt_program_bind_shared";
  return guarded(api, [&]() -> Status {
    if (p == nullptr)
      return nullArgument(api, "p");
    if (donor == nullptr)
      return nullArgument(api, "donor");
    if (shared == nullptr)
      return nullArgument(api, "shared");
    if (donor == p)
      return fail(SPARSEOPT_ERROR_INVALID_ARGUMENT, api,
                  "a program cannot be its own donor");
    if (Status st = checkParams(api, p->manifest, params, num_params))
      return st;
    if (!p->loaded || !donor->loaded)
      return fail(SPARSEOPT_ERROR_INVALID_ARGUMENT, api,
                  "the program and its donor must be loaded "
                  "(sparseopt_program_load) to bind");
    if (Status st = requireContext(api))
      return st;
    return bindShared(api, *p, params, *donor, toCUstream(s), shared);
  });
}

int sparseopt_program_prepare_shareable(sparseopt_program p,
                                        sparseopt_program donor) {
  const char *api = "sparseopt_program_prepare_shareable";
  return guardedValue(api, -1, [&]() -> int {
    if (p == nullptr || donor == nullptr) {
      nullArgument(api, p == nullptr ? "p" : "donor");
      return -1;
    }
    // Without bound pointers, a param is the same when it has the same
    // index (programs imported from one model list them alike).
    PrepareMatch match = matchPrepareStages(
        p->manifest, moduleText(*p), donor->manifest, moduleText(*donor),
        [](int mine, int theirs) { return mine == theirs; });
    if (!match.matches) {
      fail(SPARSEOPT_ERROR_INVALID_ARGUMENT, api, match.why);
      return 0;
    }
    return 1;
  });
}
