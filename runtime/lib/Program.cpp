//===- Program.cpp - Parsing, loading and querying programs ---------------===//
//
// The program handle's life and queries: sparseopt_program_parse (the
// manifest and the text of its steps and checks), sparseopt_program_load
// (the GPU resources, ProgramResources.cpp, and for a program without
// params its bind), the queries of its inputs, outputs, params, steps,
// checks, stats and launches, and sparseopt_program_destroy. Runs are
// ProgramRun.cpp, binding params (the prepare stage) ProgramBind.cpp; the
// handle's state is ProgramState.h.
//
//===----------------------------------------------------------------------===//

#include "ProgramState.h"
#include "sparseopt/program_format.h"

#include <climits>

using namespace sparseopt;

Status sparseopt::requireLoaded(const char *api, const sparseopt_program_s &p,
                                const char *purpose) {
  if (p.loaded)
    return SPARSEOPT_OK;
  return fail(SPARSEOPT_ERROR_INVALID_ARGUMENT, api,
              "program " + p.manifest.dir +
                  " was only parsed: load it with sparseopt_program_load " +
                  purpose);
}

namespace {

/// Parses `dir` into a new program (no GPU work). Messages are the
/// parser's own ("<manifest>:<line>: ...") without an API prefix.
Status parseProgram(const char *dir,
                    std::unique_ptr<sparseopt_program_s> &out) {
  auto program = std::make_unique<sparseopt_program_s>();
  if (Status s = parseManifest(dir, program->manifest))
    return s;
  const Manifest &m = program->manifest;
  for (const StepDecl &step : m.steps) {
    switch (step.kind) {
    case StepKind::Launch:
      program->stepText.push_back(
          "launch " + m.launches[step.index].kernel +
          (m.launches[step.index].programmatic ? " " SPARSEOPT_LAUNCH_PDL_KEY
                                               : ""));
      break;
    case StepKind::Gemm:
      program->stepText.push_back(describeGemm(m.gemms[step.index]));
      break;
    case StepKind::Attention:
      program->stepText.push_back(
          describeAttention(m.attentions[step.index]));
      break;
    case StepKind::AllReduce:
      program->stepText.push_back(describeAllReduce(m.allReduces[step.index]));
      break;
    case StepKind::Wait:
      program->stepText.push_back(
          "wait slot=" + std::to_string(m.allReduces[step.index].slot));
      break;
    }
  }
  for (const CheckDecl &check : m.checks)
    program->checkText.push_back(describeCheck(check));
  for (const StepDecl &step : m.steps)
    program->hasPrepareSteps |= step.stage == StepStage::Prepare;
  out = std::move(program);
  return SPARSEOPT_OK;
}

/// Reports a NULL program for the query `api`.
bool validProgram(const char *api, sparseopt_program p) {
  if (p != nullptr)
    return true;
  nullArgument(api, "p");
  return false;
}

/// Reports a NULL program or an out-of-range index for the query `api`.
bool validIndex(const char *api, sparseopt_program p, int index, size_t count) {
  if (!validProgram(api, p))
    return false;
  if (index < 0 || size_t(index) >= count) {
    fail(SPARSEOPT_ERROR_INVALID_ARGUMENT, api,
         "index " + std::to_string(index) + " out of range (the program has " +
             std::to_string(count) + ")");
    return false;
  }
  return true;
}

int countOf(size_t n) { return n > size_t(INT_MAX) ? INT_MAX : int(n); }

/// The argument checks and manifest parsing shared by parse and load.
Status parseArguments(const char *api, const char *artifactDir,
                      sparseopt_program *out,
                      std::unique_ptr<sparseopt_program_s> &program) {
  if (artifactDir == nullptr)
    return nullArgument(api, "artifact_dir");
  if (out == nullptr)
    return nullArgument(api, "out");
  return parseProgram(artifactDir, program);
}

} // namespace

extern "C" {

sparseopt_status sparseopt_program_parse(const char *artifact_dir,
                                         sparseopt_program *out) {
  const char *api = "sparseopt_program_parse";
  return guarded(api, [&]() -> Status {
    std::unique_ptr<sparseopt_program_s> program;
    if (Status s = parseArguments(api, artifact_dir, out, program))
      return s;
    *out = program.release();
    return SPARSEOPT_OK;
  });
}

sparseopt_status sparseopt_program_load(const char *artifact_dir,
                                        sparseopt_program *out) {
  const char *api = "sparseopt_program_load";
  return guarded(api, [&]() -> Status {
    std::unique_ptr<sparseopt_program_s> program;
    if (Status s = parseArguments(api, artifact_dir, out, program))
      return s;
    // Like parse errors, a missing library is reported with and without a
    // GPU; programs without gemm (attention) lines never open cuBLASLt
    // (cuDNN).
    const Manifest &m = program->manifest;
    if (!m.gemms.empty())
      if (Status s = loadCublasLt(std::string(api) + ": " +
                                  m.where(m.gemms.front().line)))
        return s;
    if (!m.attentions.empty())
      if (Status s = loadCudnn(std::string(api) + ": " +
                               m.where(m.attentions.front().line)))
        return s;
    if (Status s = requireContext(api))
      return s;
    Status s = acquireResources(api, *program);
    // A program without params is bound at load: its prepare steps (if
    // any) run now, on the legacy default stream.
    if (s == SPARSEOPT_OK && m.params.empty()) {
      if (program->hasPrepareSteps)
        s = bindProgram(api, *program, nullptr, nullptr);
      else
        program->bound = true;
    }
    if (s != SPARSEOPT_OK) {
      std::string message = sparseopt_last_error();
      releaseResources(api, *program);
      fail(s, message); // keep the first error, not a cleanup one
      return s;
    }
    *out = program.release();
    return SPARSEOPT_OK;
  });
}

int sparseopt_program_num_inputs(sparseopt_program p) {
  const char *api = "sparseopt_program_num_inputs";
  return guardedValue(api, -1, [&]() {
    return validProgram(api, p) ? countOf(p->manifest.inputs.size()) : -1;
  });
}

int sparseopt_program_num_outputs(sparseopt_program p) {
  const char *api = "sparseopt_program_num_outputs";
  return guardedValue(api, -1, [&]() {
    return validProgram(api, p) ? countOf(p->manifest.outputs.size()) : -1;
  });
}

int sparseopt_program_num_params(sparseopt_program p) {
  const char *api = "sparseopt_program_num_params";
  return guardedValue(api, -1, [&]() {
    return validProgram(api, p) ? countOf(p->manifest.params.size()) : -1;
  });
}

size_t sparseopt_program_param_bytes(sparseopt_program p, int i) {
  const char *api = "sparseopt_program_param_bytes";
  return guardedValue(api, size_t(0), [&]() -> size_t {
    if (!validIndex(api, p, i, p ? p->manifest.params.size() : 0))
      return 0;
    return size_t(p->manifest.buffers[p->manifest.params[i]].bytes);
  });
}

int sparseopt_program_num_launches(sparseopt_program p) {
  const char *api = "sparseopt_program_num_launches";
  return guardedValue(api, -1, [&]() {
    return validProgram(api, p) ? countOf(p->manifest.launches.size()) : -1;
  });
}

size_t sparseopt_program_input_bytes(sparseopt_program p, int i) {
  const char *api = "sparseopt_program_input_bytes";
  return guardedValue(api, size_t(0), [&]() -> size_t {
    if (!validIndex(api, p, i, p ? p->manifest.inputs.size() : 0))
      return 0;
    return size_t(p->manifest.buffers[p->manifest.inputs[i]].bytes);
  });
}

size_t sparseopt_program_output_bytes(sparseopt_program p, int i) {
  const char *api = "sparseopt_program_output_bytes";
  return guardedValue(api, size_t(0), [&]() -> size_t {
    if (!validIndex(api, p, i, p ? p->manifest.outputs.size() : 0))
      return 0;
    return size_t(p->manifest.buffers[p->manifest.outputs[i]].bytes);
  });
}

/// The signature text of argument `argument` of a program with a
/// signature.json, or "".
static const char *signatureText(const sparseopt_program_s &p,
                                 const std::vector<size_t> &arguments,
                                 const std::vector<TensorSpecDecl> &specs,
                                 int i) {
  const SignatureDecl &sig = p.manifest.signature;
  if (!sig.present)
    return "";
  return specs[arguments[size_t(i)]].text.c_str();
}

const char *sparseopt_program_input_type(sparseopt_program p, int i) {
  const char *api = "sparseopt_program_input_type";
  return guardedValue(api, (const char *)nullptr, [&]() -> const char * {
    if (!validIndex(api, p, i, p ? p->manifest.inputs.size() : 0))
      return nullptr;
    return signatureText(*p, p->manifest.signature.inputArguments,
                         p->manifest.signature.arguments, i);
  });
}

const char *sparseopt_program_param_type(sparseopt_program p, int i) {
  const char *api = "sparseopt_program_param_type";
  return guardedValue(api, (const char *)nullptr, [&]() -> const char * {
    if (!validIndex(api, p, i, p ? p->manifest.params.size() : 0))
      return nullptr;
    return signatureText(*p, p->manifest.signature.paramArguments,
                         p->manifest.signature.arguments, i);
  });
}

const char *sparseopt_program_output_type(sparseopt_program p, int i) {
  const char *api = "sparseopt_program_output_type";
  return guardedValue(api, (const char *)nullptr, [&]() -> const char * {
    if (!validIndex(api, p, i, p ? p->manifest.outputs.size() : 0))
      return nullptr;
    const SignatureDecl &sig = p->manifest.signature;
    return sig.present ? sig.outputs[size_t(i)].text.c_str() : "";
  });
}

int sparseopt_program_num_steps(sparseopt_program p) {
  const char *api = "sparseopt_program_num_steps";
  return guardedValue(api, -1, [&]() {
    return validProgram(api, p) ? countOf(p->manifest.steps.size()) : -1;
  });
}

const char *sparseopt_program_step(sparseopt_program p, int i) {
  const char *api = "sparseopt_program_step";
  return guardedValue(api, static_cast<const char *>(nullptr),
                      [&]() -> const char * {
                        if (!validIndex(api, p, i, p ? p->stepText.size() : 0))
                          return nullptr;
                        return p->stepText[i].c_str();
                      });
}

const char *sparseopt_program_step_stage(sparseopt_program p, int i) {
  const char *api = "sparseopt_program_step_stage";
  return guardedValue(
      api, static_cast<const char *>(nullptr), [&]() -> const char * {
        if (!validIndex(api, p, i, p ? p->manifest.steps.size() : 0))
          return nullptr;
        return stepStageName(p->manifest.steps[i].stage);
      });
}

int sparseopt_program_num_checks(sparseopt_program p) {
  const char *api = "sparseopt_program_num_checks";
  return guardedValue(api, -1, [&]() {
    return validProgram(api, p) ? countOf(p->manifest.checks.size()) : -1;
  });
}

const char *sparseopt_program_check(sparseopt_program p, int i) {
  const char *api = "sparseopt_program_check";
  return guardedValue(api, static_cast<const char *>(nullptr),
                      [&]() -> const char * {
                        if (!validIndex(api, p, i, p ? p->checkText.size() : 0))
                          return nullptr;
                        return p->checkText[i].c_str();
                      });
}

int sparseopt_program_num_stats(sparseopt_program p) {
  const char *api = "sparseopt_program_num_stats";
  return guardedValue(api, -1, [&]() {
    return validProgram(api, p) ? countOf(p->manifest.stats.size()) : -1;
  });
}

const char *sparseopt_program_stat_name(sparseopt_program p, int i) {
  const char *api = "sparseopt_program_stat_name";
  return guardedValue(
      api, static_cast<const char *>(nullptr), [&]() -> const char * {
        if (!validIndex(api, p, i, p ? p->manifest.stats.size() : 0))
          return nullptr;
        return p->manifest.stats[i].name.c_str();
      });
}

uint64_t sparseopt_program_stat_total(sparseopt_program p, int i) {
  const char *api = "sparseopt_program_stat_total";
  return guardedValue(api, uint64_t(0), [&]() -> uint64_t {
    if (!validIndex(api, p, i, p ? p->manifest.stats.size() : 0))
      return 0;
    return p->manifest.stats[i].total;
  });
}

double sparseopt_program_stat_limit(sparseopt_program p, int i) {
  const char *api = "sparseopt_program_stat_limit";
  return guardedValue(api, -1.0, [&]() -> double {
    if (!validIndex(api, p, i, p ? p->manifest.stats.size() : 0))
      return -1.0;
    return p->manifest.stats[i].limit;
  });
}

sparseopt_status sparseopt_program_read_stat(sparseopt_program p, int i,
                                             sparseopt_stream s,
                                             uint64_t *value) {
  const char *api = "sparseopt_program_read_stat";
  return guarded(api, [&]() -> Status {
    if (p == nullptr)
      return nullArgument(api, "p");
    if (value == nullptr)
      return nullArgument(api, "value");
    const Manifest &m = p->manifest;
    if (i < 0 || size_t(i) >= m.stats.size())
      return fail(SPARSEOPT_ERROR_INVALID_ARGUMENT, api,
                  "stat index " + std::to_string(i) + " out of range (" +
                      std::to_string(m.stats.size()) + " stats)");
    if (Status st = requireLoaded(api, *p, "to read its stats"))
      return st;
    if (Status st = requireContext(api))
      return st;
    const StatDecl &stat = m.stats[i];
    CUresult result = driver().cuStreamSynchronize(toCUstream(s));
    if (result != CUDA_SUCCESS)
      return cudaFail(result, api, "waiting for the run (cuStreamSynchronize)");
    uint64_t bits = 0;
    result =
        driver().cuMemcpyDtoH_v2(&bits, p->memory[stat.buffer], stat.bits / 8);
    if (result != CUDA_SUCCESS)
      return cudaFail(result, api,
                      m.where(stat.line) + ": reading stat " + stat.name +
                          " (cuMemcpyDtoH)");
    // Little-endian: a u32 is the low half.
    *value = stat.bits == 32 ? (bits & 0xffffffffu) : bits;
    return SPARSEOPT_OK;
  });
}

const char *sparseopt_program_launch_kernel(sparseopt_program p, int i) {
  const char *api = "sparseopt_program_launch_kernel";
  return guardedValue(
      api, static_cast<const char *>(nullptr), [&]() -> const char * {
        if (!validIndex(api, p, i, p ? p->manifest.launches.size() : 0))
          return nullptr;
        return p->manifest.launches[i].kernel.c_str();
      });
}

int sparseopt_program_num_allreduces(sparseopt_program p) {
  const char *api = "sparseopt_program_num_allreduces";
  return guardedValue(api, -1, [&]() {
    return validProgram(api, p) ? countOf(p->manifest.allReduces.size()) : -1;
  });
}

sparseopt_status sparseopt_program_destroy(sparseopt_program p) {
  const char *api = "sparseopt_program_destroy";
  return guarded(api, [&]() -> Status {
    if (p == nullptr)
      return nullArgument(api, "p");
    std::unique_ptr<sparseopt_program_s> owned(p);
    if (!owned->loaded)
      return SPARSEOPT_OK;
    if (Status s = requireContext(api))
      return s;
    return releaseResources(api, *owned);
  });
}

} // extern "C"
