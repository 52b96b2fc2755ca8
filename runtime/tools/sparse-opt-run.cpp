//===- sparse-opt-run.cpp - Run and time a compiled SparseOpt program -----===//
//
// Usage: sparse-opt-run <artifact-dir> [--iters N] [--warmup N] [--seed S]
//                       [--device D] [--dtype f16|bf16|f32] [--help]
//
// Loads the program in <artifact-dir>, fills every input and param with
// deterministic pseudo-random values (params that a check line guards are
// pruned to its n:m pattern), binds the params, runs it once to compute
// output checksums, then runs warm-up and timed iterations measured with
// CUDA events. For each output it
// prints the byte size and a checksum (the sum of its elements decoded as
// --dtype), then the program's stats after that first run (name, value and
// the fraction of its total), then the median time per run in
// microseconds.
//
// Input values are drawn from {-0.5, -0.25, 0, 0.25, 0.5}, which are exact in
// f16, bf16 and f32, so checksums of simple programs are reproducible.
// Each input, param and output has the element type that the artifact's
// signature.json gives it; integer inputs (token ids, positions) are zero.
// Without a signature.json all are arrays of --dtype elements. Trailing
// bytes that do not form a whole element are zero-filled and not summed.
//
//===----------------------------------------------------------------------===//

#include "sparseopt/runtime.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

const char *const kUsage =
    "usage: sparse-opt-run <artifact-dir> [options]\n"
    "\n"
    "Runs the compiled program in <artifact-dir> (its program.txt manifest)\n"
    "on a CUDA GPU and reports output checksums and the median run time.\n"
    "Inputs and params (weights) get deterministic values; params are bound\n"
    "once, before the runs. A program with all-reduces runs on a\n"
    "communicator made from the torchrun-style environment (RANK,\n"
    "WORLD_SIZE; one rank when unset).\n"
    "\n"
    "options:\n"
    "  --iters N     timed runs (default 10, at least 1)\n"
    "  --warmup N    untimed runs before timing (default 3)\n"
    "  --seed S      seed of the pseudo-random inputs (default 0)\n"
    "  --device D    CUDA device ordinal (default 0)\n"
    "  --dtype T     element type of inputs/params/outputs when the artifact\n"
    "                has no signature.json: f16 (default), bf16, f32 (with\n"
    "                one, each tensor has its own type; integer inputs such\n"
    "                as token ids are zero)\n"
    "  --help        print this help\n";

/// Thrown (and caught in main) to report a failure and exit with status 1.
struct Failure {
  std::string message;
};

[[noreturn]] void failWith(const std::string &message) { throw Failure{message}; }

/// Throws a Failure carrying the runtime's last error when `status` is not OK.
void check(sparseopt_status status) {
  if (status != SPARSEOPT_OK) {
    std::string message = sparseopt_last_error();
    if (message.empty())
      message = sparseopt_status_string(status);
    failWith(message);
  }
}

/// --dtype's choices, and what a signature can add: integers (Int: token ids,
/// positions), other types (Raw: read and written as bytes).
enum class DType { F16, BF16, F32, Int, Raw };

struct Options {
  std::string artifactDir;
  long iters = 10;
  long warmup = 3;
  unsigned long long seed = 0;
  long device = 0;
  DType dtype = DType::F16;
  bool help = false;
};

/// Parses a decimal integer option value in [min, max].
long long parseInteger(const std::string &option, const std::string &text,
                       long long min, long long max) {
  errno = 0;
  char *end = nullptr;
  long long value = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno != 0 || value < min || value > max)
    failWith("invalid value '" + text + "' for " + option + " (expected an "
             "integer from " + std::to_string(min) + " to " +
             std::to_string(max) + ")");
  return value;
}

Options parseOptions(int argc, char **argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      options.help = true;
      return options;
    }
    if (arg.rfind("--", 0) != 0) {
      if (!options.artifactDir.empty())
        failWith("unexpected argument '" + arg +
                 "' (only one artifact directory may be given)");
      options.artifactDir = arg;
      continue;
    }
    // "--name value" or "--name=value".
    std::string name = arg, value;
    size_t equals = arg.find('=');
    if (equals != std::string::npos) {
      name = arg.substr(0, equals);
      value = arg.substr(equals + 1);
    } else if (name == "--iters" || name == "--warmup" || name == "--seed" ||
               name == "--device" || name == "--dtype") {
      if (i + 1 >= argc)
        failWith("missing value for " + name);
      value = argv[++i];
    }
    if (name == "--iters")
      options.iters = long(parseInteger(name, value, 1, 1000000));
    else if (name == "--warmup")
      options.warmup = long(parseInteger(name, value, 0, 1000000));
    else if (name == "--seed")
      options.seed =
          (unsigned long long)parseInteger(name, value, 0, 0x7fffffffffffffffLL);
    else if (name == "--device")
      options.device = long(parseInteger(name, value, 0, 1024));
    else if (name == "--dtype") {
      if (value == "f16")
        options.dtype = DType::F16;
      else if (value == "bf16")
        options.dtype = DType::BF16;
      else if (value == "f32")
        options.dtype = DType::F32;
      else
        failWith("invalid value '" + value + "' for --dtype (expected f16, "
                 "bf16 or f32)");
    } else
      failWith("unknown option '" + arg + "' (see --help)");
  }
  if (options.artifactDir.empty())
    failWith("missing <artifact-dir> (see --help)");
  return options;
}

/// The element type of one input, param or output.
struct Element {
  DType type = DType::F16;
  size_t bytes = 2;
  std::string name = "f16";
};

Element elementOf(DType dtype) {
  switch (dtype) {
  case DType::F16:
    return {DType::F16, 2, "f16"};
  case DType::BF16:
    return {DType::BF16, 2, "bf16"};
  case DType::F32:
    return {DType::F32, 4, "f32"};
  default:
    return {DType::Raw, 1, "bytes"};
  }
}

/// The element type that the signature text of a tensor names ("bf16[2,
/// 4]"), or --dtype's when the artifact has no signature.json.
Element elementOf(const char *signatureText, DType fallback) {
  std::string text = signatureText != nullptr ? signatureText : "";
  if (text.empty())
    return elementOf(fallback);
  std::string name = text.substr(0, text.find('['));
  if (name == "f16")
    return elementOf(DType::F16);
  if (name == "bf16")
    return elementOf(DType::BF16);
  if (name == "f32")
    return elementOf(DType::F32);
  for (const char *prefix : {"i", "si", "ui"}) {
    std::string digits = name.substr(std::strlen(prefix));
    if (name.rfind(prefix, 0) == 0 && !digits.empty() &&
        digits.find_first_not_of("0123456789") == std::string::npos) {
      unsigned long bits = std::strtoul(digits.c_str(), nullptr, 10);
      if (bits == 1 || bits == 8 || bits == 16 || bits == 32 || bits == 64)
        return {DType::Int, bits == 1 ? 1 : size_t(bits / 8), name};
    }
  }
  return {DType::Raw, 1, name};
}

/// splitmix64: a small, well-mixed deterministic generator.
struct Random {
  unsigned long long state;
  unsigned long long next() {
    unsigned long long z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
};

/// Fills `bytes` with elements drawn from {-0.5, -0.25, 0, 0.25, 0.5}; an
/// integer or other tensor (token ids, positions) with zeros, which are in
/// range for any embedding table or cache.
void fillInput(std::vector<unsigned char> &bytes, const Element &element,
               Random &rng) {
  DType dtype = element.type;
  // The five values, encoded for each element type.
  static const unsigned short kF16[5] = {0xB800, 0xB400, 0x0000, 0x3400,
                                         0x3800};
  static const unsigned short kBF16[5] = {0xBF00, 0xBE80, 0x0000, 0x3E80,
                                          0x3F00};
  static const float kF32[5] = {-0.5f, -0.25f, 0.0f, 0.25f, 0.5f};
  std::fill(bytes.begin(), bytes.end(), 0);
  if (dtype != DType::F16 && dtype != DType::BF16 && dtype != DType::F32)
    return;
  size_t size = element.bytes;
  for (size_t at = 0; at + size <= bytes.size(); at += size) {
    unsigned choice = unsigned(rng.next() % 5);
    const void *value = dtype == DType::F16    ? (const void *)&kF16[choice]
                        : dtype == DType::BF16 ? (const void *)&kBF16[choice]
                                               : (const void *)&kF32[choice];
    std::memcpy(&bytes[at], value, size);
  }
}

/// One `check` line of the program, as sparseopt_program_check prints it.
struct CheckPattern {
  int param = 0;
  unsigned n = 0, m = 0;
  unsigned long long groups = 0;
};

/// Reads "check b<id> param <index> pattern <n>:<m> groups <G>".
bool parseCheckText(const char *text, CheckPattern &out) {
  unsigned long long buffer = 0;
  int consumed = 0;
  return text != nullptr &&
         std::sscanf(text, "check b%llu param %d pattern %u:%u groups %llu%n",
                     &buffer, &out.param, &out.n, &out.m, &out.groups,
                     &consumed) == 5 &&
         text[consumed] == '\0' && out.m != 0 && out.groups != 0;
}

/// Zeroes, in every group of m consecutive elements of each row of
/// groups * m elements, all but the first n: the param then keeps the
/// pattern its check line declares.
void pruneToPattern(std::vector<unsigned char> &bytes, const Element &element,
                    const CheckPattern &pattern) {
  size_t size = element.bytes;
  unsigned long long row = pattern.groups * pattern.m;
  for (size_t at = 0, i = 0; at + size <= bytes.size(); at += size, ++i)
    if ((i % row) % pattern.m >= pattern.n)
      std::fill(bytes.begin() + at, bytes.begin() + at + size, 0);
}

float halfToFloat(unsigned short h) {
  unsigned sign = (h >> 15) & 1u, exponent = (h >> 10) & 0x1fu,
           mantissa = h & 0x3ffu;
  float magnitude;
  if (exponent == 0)
    magnitude = std::ldexp(float(mantissa), -24); // zero or subnormal
  else if (exponent == 31)
    magnitude = mantissa == 0 ? HUGE_VALF : NAN;
  else
    magnitude = std::ldexp(float(mantissa | 0x400u), int(exponent) - 25);
  return sign ? -magnitude : magnitude;
}

float bf16ToFloat(unsigned short b) {
  unsigned bits = unsigned(b) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

/// Sum of the buffer's elements decoded as `element` (integers as signed
/// little-endian values, other types as unsigned bytes).
double checksum(const std::vector<unsigned char> &bytes, const Element &element) {
  DType dtype = element.type;
  size_t size = element.bytes;
  double sum = 0;
  for (size_t at = 0; at + size <= bytes.size(); at += size) {
    if (dtype == DType::Int || dtype == DType::Raw) {
      long long value = 0;
      std::memcpy(&value, &bytes[at], size);
      if (dtype == DType::Int && size < 8 && (value >> (8 * size - 1)) & 1)
        value -= 1LL << (8 * size);
      sum += double(value);
    } else if (dtype == DType::F32) {
      float f;
      std::memcpy(&f, &bytes[at], sizeof(f));
      sum += f;
    } else {
      unsigned short bits;
      std::memcpy(&bits, &bytes[at], sizeof(bits));
      sum += dtype == DType::F16 ? halfToFloat(bits) : bf16ToFloat(bits);
    }
  }
  return sum;
}

/// Owns the GPU objects of one invocation and releases them in reverse.
struct Session {
  sparseopt_program program = nullptr;
  sparseopt_comm comm = nullptr;
  std::vector<sparseopt_deviceptr> inputs, params, outputs;
  sparseopt_stream stream = nullptr;
  sparseopt_event start = nullptr, end = nullptr;

  ~Session() {
    if (end)
      sparseopt_event_destroy(end);
    if (start)
      sparseopt_event_destroy(start);
    if (stream)
      sparseopt_stream_destroy(stream);
    for (sparseopt_deviceptr p : outputs)
      sparseopt_free(p);
    for (sparseopt_deviceptr p : params)
      sparseopt_free(p);
    for (sparseopt_deviceptr p : inputs)
      sparseopt_free(p);
    if (program)
      sparseopt_program_destroy(program);
    if (comm)
      sparseopt_comm_destroy(comm);
  }
};

void runProgram(const Options &options) {
  const char *dir = options.artifactDir.c_str();

  // Validate the artifact before touching the GPU: manifest errors are then
  // reported the same way with or without a GPU.
  sparseopt_program parsed = nullptr;
  check(sparseopt_program_parse(dir, &parsed));
  sparseopt_program_destroy(parsed);

  check(sparseopt_init(int(options.device)));
  char name[256];
  check(sparseopt_device_name(name, sizeof(name)));
  std::printf("device %ld: %s\n", options.device, name);

  Session session;
  check(sparseopt_program_load(dir, &session.program));
  sparseopt_program p = session.program;
  int numInputs = sparseopt_program_num_inputs(p);
  int numOutputs = sparseopt_program_num_outputs(p);
  int numParams = sparseopt_program_num_params(p);
  int numLaunches = sparseopt_program_num_launches(p);
  // Every step that is not a launch, an allreduce or a wait is a gemm; the
  // line keeps its old form for programs without them.
  int numAllReduces = sparseopt_program_num_allreduces(p);
  int numGemms =
      sparseopt_program_num_steps(p) - numLaunches - 2 * numAllReduces;
  std::printf("program %s: %d input(s), %d output(s), %d launch(es)", dir,
              numInputs, numOutputs, numLaunches);
  if (numGemms > 0)
    std::printf(", %d gemm(s)", numGemms);
  if (numParams > 0)
    std::printf(", %d param(s)", numParams);
  if (numAllReduces > 0)
    std::printf(", %d all-reduce(s)", numAllReduces);
  std::printf("\n");
  if (numAllReduces > 0) {
    check(sparseopt_comm_init_from_env(0, &session.comm));
    check(sparseopt_program_set_comm(p, session.comm));
    std::printf("communicator: rank %d of %d\n",
                sparseopt_comm_rank(session.comm),
                sparseopt_comm_size(session.comm));
  }

  Random rng{options.seed};
  std::vector<unsigned char> host;
  for (int i = 0; i < numInputs; ++i) {
    size_t bytes = sparseopt_program_input_bytes(p, i);
    session.inputs.push_back(0);
    check(sparseopt_malloc(bytes, &session.inputs.back()));
    host.assign(bytes, 0);
    fillInput(host, elementOf(sparseopt_program_input_type(p, i), options.dtype),
              rng);
    if (bytes != 0)
      check(sparseopt_memcpy_htod(session.inputs.back(), host.data(), bytes));
  }
  // Params after the inputs, so that the inputs of programs without params
  // keep their values.
  std::vector<CheckPattern> checks;
  for (int i = 0, n = sparseopt_program_num_checks(p); i < n; ++i) {
    CheckPattern pattern;
    const char *text = sparseopt_program_check(p, i);
    if (!parseCheckText(text, pattern))
      failWith(std::string("cannot read check line '") +
               (text ? text : "") + "'");
    checks.push_back(pattern);
  }
  for (int i = 0; i < numParams; ++i) {
    size_t bytes = sparseopt_program_param_bytes(p, i);
    session.params.push_back(0);
    check(sparseopt_malloc(bytes, &session.params.back()));
    host.assign(bytes, 0);
    Element element =
        elementOf(sparseopt_program_param_type(p, i), options.dtype);
    fillInput(host, element, rng);
    for (const CheckPattern &pattern : checks)
      if (pattern.param == i)
        pruneToPattern(host, element, pattern);
    if (bytes != 0)
      check(sparseopt_memcpy_htod(session.params.back(), host.data(), bytes));
  }
  for (int i = 0; i < numOutputs; ++i) {
    size_t bytes = sparseopt_program_output_bytes(p, i);
    session.outputs.push_back(0);
    check(sparseopt_malloc(bytes, &session.outputs.back()));
    if (bytes != 0)
      check(sparseopt_memset_d8(session.outputs.back(), 0, bytes));
  }
  check(sparseopt_stream_create(&session.stream));
  check(sparseopt_event_create(&session.start));
  check(sparseopt_event_create(&session.end));
  check(sparseopt_synchronize()); // inputs and zeroed outputs are in place
  // Once: the prepare steps and the checks (a weight that breaks its
  // declared sparsity fails here).
  if (numParams > 0)
    check(sparseopt_program_bind(p, session.params.data(),
                                 session.params.size(), session.stream));

  // One run on zeroed outputs gives the checksums.
  check(sparseopt_program_run(p, session.inputs.data(), session.outputs.data(),
                              session.stream));
  if (session.comm)
    check(sparseopt_comm_synchronize(session.comm, session.stream, 0));
  check(sparseopt_stream_synchronize(session.stream));
  for (int i = 0; i < numOutputs; ++i) {
    size_t bytes = sparseopt_program_output_bytes(p, i);
    host.assign(bytes, 0);
    if (bytes != 0)
      check(sparseopt_memcpy_dtoh(host.data(), session.outputs[i], bytes));
    Element element =
        elementOf(sparseopt_program_output_type(p, i), options.dtype);
    std::printf("output %d: %zu bytes, checksum %.9g (%s)\n", i, bytes,
                checksum(host, element), element.name.c_str());
  }
  // The program's stats after that run (e.g. a TwELL FFN's measured
  // density and fallback rows).
  for (int i = 0, n = sparseopt_program_num_stats(p); i < n; ++i) {
    uint64_t value = 0;
    check(sparseopt_program_read_stat(p, i, session.stream, &value));
    uint64_t total = sparseopt_program_stat_total(p, i);
    std::printf("stat %s: %llu", sparseopt_program_stat_name(p, i),
                static_cast<unsigned long long>(value));
    if (total != 0)
      std::printf(" of %llu (%.4g)", static_cast<unsigned long long>(total),
                  double(value) / double(total));
    std::printf("\n");
  }

  for (long i = 0; i < options.warmup; ++i)
    check(sparseopt_program_run(p, session.inputs.data(),
                                session.outputs.data(), session.stream));
  std::vector<double> micros;
  for (long i = 0; i < options.iters; ++i) {
    check(sparseopt_event_record(session.start, session.stream));
    check(sparseopt_program_run(p, session.inputs.data(),
                                session.outputs.data(), session.stream));
    check(sparseopt_event_record(session.end, session.stream));
    check(sparseopt_event_synchronize(session.end));
    float ms = 0;
    check(sparseopt_event_elapsed_ms(session.start, session.end, &ms));
    micros.push_back(double(ms) * 1000.0);
  }
  std::sort(micros.begin(), micros.end());
  size_t mid = micros.size() / 2;
  double median = micros.size() % 2 ? micros[mid]
                                     : (micros[mid - 1] + micros[mid]) / 2;
  std::printf("median time: %.3f us per run (%ld timed runs, %ld warm-up)\n",
              median, options.iters, options.warmup);
}

} // namespace

int main(int argc, char **argv) {
  try {
    Options options = parseOptions(argc, argv);
    if (options.help) {
      std::fputs(kUsage, stdout);
      return 0;
    }
    runProgram(options);
    return 0;
  } catch (const Failure &failure) {
    std::fflush(stdout);
    std::fprintf(stderr, "sparse-opt-run: error: %s\n",
                 failure.message.c_str());
  } catch (const std::exception &e) {
    std::fflush(stdout);
    std::fprintf(stderr, "sparse-opt-run: error: %s\n", e.what());
  }
  return 1;
}
