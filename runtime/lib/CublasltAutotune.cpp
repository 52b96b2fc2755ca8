//===- CublasltAutotune.cpp - time cuBLASLt's candidates at load ----------===//

#include "CublasltAutotune.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <tuple>

namespace sparseopt {
namespace {

/// Timed runs per candidate after kWarmupRuns untimed ones.
constexpr int kWarmupRuns = 2;
constexpr int kTimedRuns = 5;
/// Bytes written before each timed run so that no operand is left in L2
/// (more than any Hopper or Blackwell L2): in a model the weights stream
/// from memory, and a candidate timed on an L2-resident weight can win by
/// a margin it never shows there.
constexpr uint64_t kFlushBytes = uint64_t(256) << 20;

/// What makes two gemm lines the same problem for cuBLASLt (not their
/// buffers).
using ShapeKey = std::tuple<uint64_t, uint64_t, uint64_t, int, int, bool, int,
                            bool>;

ShapeKey shapeKey(const GemmDecl &g) {
  return {g.m,       g.n,           g.k,           int(g.in), int(g.out),
          g.hasBias, int(g.biasType), g.relu};
}

/// Scratch operands of one gemm shape, freed on destruction.
struct Scratch {
  CUdeviceptr x = 0, w = 0, y = 0, bias = 0;
  bool ok = true;

  explicit Scratch(const GemmDecl &g) {
    alloc(x, g.m * g.k * gemmDTypeBytes(g.in));
    alloc(w, g.n * g.k * gemmDTypeBytes(g.in));
    alloc(y, g.m * g.n * gemmDTypeBytes(g.out));
    if (g.hasBias)
      alloc(bias, g.n * gemmDTypeBytes(g.biasType));
  }
  ~Scratch() {
    for (CUdeviceptr p : {x, w, y, bias})
      if (p != 0)
        driver().cuMemFree_v2(p);
  }
  void alloc(CUdeviceptr &p, uint64_t bytes) {
    if (!ok || driver().cuMemAlloc_v2(&p, bytes) != CUDA_SUCCESS ||
        driver().cuMemsetD8_v2(p, 0, bytes) != CUDA_SUCCESS)
      ok = false;
  }
};

/// Events for timing, destroyed with the object.
struct Timer {
  CUevent start = nullptr, stop = nullptr;
  bool ok = false;
  Timer() {
    ok = driver().cuEventCreate(&start, CU_EVENT_DEFAULT) == CUDA_SUCCESS &&
         driver().cuEventCreate(&stop, CU_EVENT_DEFAULT) == CUDA_SUCCESS;
  }
  ~Timer() {
    for (CUevent e : {start, stop})
      if (e != nullptr)
        driver().cuEventDestroy_v2(e);
  }
};

/// Microseconds per run of `algo` on the scratch operands, each timed run
/// after `flush` is overwritten (cold L2), or a negative value when a run
/// fails.
double timeAlgo(const GemmResources &resources, const GemmPlan &plan,
                const cublasLtMatmulAlgo_t &algo, const Scratch &s,
                CUdeviceptr flush, Timer &timer) {
  const float alpha = 1.0f, beta = 0.0f;
  auto run = [&] {
    return cublasLt().cublasLtMatmul(
        resources.handle, plan.desc, &alpha,
        reinterpret_cast<const void *>(s.w), plan.a,
        reinterpret_cast<const void *>(s.x), plan.b, &beta,
        reinterpret_cast<void *>(s.y), plan.d, reinterpret_cast<void *>(s.y),
        plan.d, &algo, reinterpret_cast<void *>(resources.workspace),
        kGemmWorkspaceBytes, /*stream=*/nullptr) == CUBLAS_STATUS_SUCCESS;
  };
  for (int i = 0; i < kWarmupRuns; ++i)
    if (!run())
      return -1;
  double total = 0;
  for (int i = 0; i < kTimedRuns; ++i) {
    float ms = 0;
    if (driver().cuMemsetD8Async(flush, static_cast<unsigned char>(i),
                                 kFlushBytes, nullptr) != CUDA_SUCCESS ||
        driver().cuEventRecord(timer.start, nullptr) != CUDA_SUCCESS ||
        !run() || driver().cuEventRecord(timer.stop, nullptr) != CUDA_SUCCESS ||
        driver().cuEventSynchronize(timer.stop) != CUDA_SUCCESS ||
        driver().cuEventElapsedTime_v2(&ms, timer.start, timer.stop) !=
            CUDA_SUCCESS)
      return -1;
    total += ms;
  }
  return 1e3 * total / kTimedRuns;
}

/// The L2 flush buffer, freed on destruction (0 when it could not be had).
struct FlushBuffer {
  CUdeviceptr ptr = 0;
  FlushBuffer() {
    if (driver().cuMemAlloc_v2(&ptr, kFlushBytes) != CUDA_SUCCESS)
      ptr = 0;
  }
  ~FlushBuffer() {
    if (ptr != 0)
      driver().cuMemFree_v2(ptr);
  }
};

bool logEnabled() {
  const char *v = std::getenv("SPARSEOPT_GEMM_AUTOTUNE_LOG");
  return v != nullptr && *v != '\0' && std::strcmp(v, "0") != 0;
}

} // namespace

bool gemmAutotuneEnabled() noexcept {
  const char *v = std::getenv("SPARSEOPT_GEMM_AUTOTUNE");
  return v == nullptr || std::strcmp(v, "0") != 0;
}

void autotuneGemms(const Manifest &m, GemmResources &resources,
                   const std::vector<std::vector<cublasLtMatmulAlgo_t>>
                       &candidates) noexcept {
  // The first line of each shape is timed; its choice goes to the others.
  std::map<ShapeKey, size_t> first;
  for (size_t i = 0; i < m.gemms.size(); ++i)
    first.emplace(shapeKey(m.gemms[i]), i);
  Timer timer;
  FlushBuffer flush;
  if (!timer.ok || flush.ptr == 0 ||
      driver().cuCtxSynchronize() != CUDA_SUCCESS)
    return;
  std::map<ShapeKey, cublasLtMatmulAlgo_t> chosen;
  for (const auto &[key, i] : first) {
    const GemmDecl &g = m.gemms[i];
    const std::vector<cublasLtMatmulAlgo_t> &algos = candidates[i];
    if (algos.size() < 2)
      continue;
    Scratch scratch(g);
    if (!scratch.ok)
      continue;
    GemmPlan &plan = resources.plans[i];
    if (g.hasBias) {
      const void *bias = reinterpret_cast<const void *>(scratch.bias);
      if (cublasLt().cublasLtMatmulDescSetAttribute(
              plan.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias,
              sizeof(bias)) != CUBLAS_STATUS_SUCCESS)
        continue;
    }
    double firstUs = -1, bestUs = -1;
    size_t best = 0;
    for (size_t a = 0; a < algos.size(); ++a) {
      double us =
          timeAlgo(resources, plan, algos[a], scratch, flush.ptr, timer);
      if (a == 0)
        firstUs = us;
      if (us >= 0 && (bestUs < 0 || us < bestUs)) {
        bestUs = us;
        best = a;
      }
    }
    // A failed run may leave an error behind: only a clean context keeps
    // the measured choice.
    if (driver().cuCtxSynchronize() != CUDA_SUCCESS || bestUs < 0)
      continue;
    chosen[key] = algos[best];
    if (logEnabled())
      std::fprintf(stderr,
                   "sparse-opt runtime: gemm m=%llu n=%llu k=%llu: the "
                   "heuristic's first %.1f us, chosen candidate %zu of %zu "
                   "%.1f us\n",
                   (unsigned long long)g.m, (unsigned long long)g.n,
                   (unsigned long long)g.k, firstUs, best + 1, algos.size(),
                   bestUs);
  }
  for (size_t i = 0; i < m.gemms.size(); ++i) {
    auto it = chosen.find(shapeKey(m.gemms[i]));
    if (it != chosen.end())
      resources.plans[i].algo = it->second;
  }
}

} // namespace sparseopt
