// A measurement probe, not product code: how fast can a CUDA-core TwELL
// consumer stream the weight rows of the active neurons when they come into
// shared memory by 1-D bulk copies (cp.async.bulk, completing on mbarriers)
// instead of through registers? It answers whether the generated consumer
// (sgpu_twell_ffn_<i>, register loads, one block per row) is bound by L2
// or by the latency of its chain of dependent loads, and whether passes over
// ranges of the neurons (so that a pass's weight rows stay in L2) pay.
//
// The computation is the gated TwELL FFN's consumer on a CSR-like list of
// active neurons per row (cols, h values):
//   y[m] = sum_e h[m,e] * (x[m] . Wu[col[m,e]]) * WdT[col[m,e]]
// One warp per row at a time (persistent warps); each warp owns a ring of
// S slots of (Wu row, WdT row) and lane 0 issues the copies S-1 entries
// ahead, across row boundaries. d = 2048 (lane l owns features
// 8(l + 32i) .. +7, i < 8). Printed: one pass over a sweep of warps per
// block, blocks per multiprocessor and slots; then P = 1.. passes over
// column ranges (f32 partial sums in global memory between passes), with
// and without an L2 evict_last policy on the weight copies.
//
// With a third argument "overlap" it measures instead whether the gate GEMM
// (cuBLAS, H = X . Wg^T, M x F x d) and this consumer can share the GPU:
// each alone, the GEMM limited to 132 - k multiprocessors
// (cublasSetSmCountTarget) and the consumer's persistent grid to k, and
// both at once on two streams.
//
//   nvcc -O3 -arch=sm_90a -o probe bench/twell/probe_bulk_rows.cu -lcublas
//   ./probe [active fraction, 0.005] [F, 5632] [overlap]
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

constexpr int D = 2048;
constexpr int CHUNKS = D / 8 / 32; // 16-byte chunks per lane: 8
constexpr int ROW_BYTES = D * 2;

#define CK(x)                                                                  \
  do {                                                                         \
    cudaError_t e = (x);                                                       \
    if (e != cudaSuccess) {                                                    \
      printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e));         \
      exit(1);                                                                 \
    }                                                                          \
  } while (0)

__device__ __forceinline__ unsigned smem32(const void *p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void bar_init(unsigned bar) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(bar));
}
__device__ __forceinline__ void bar_expect(unsigned bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar),
               "r"(bytes));
}
template <bool HINT>
__device__ __forceinline__ void bulk(unsigned dst, const void *src,
                                     unsigned bytes, unsigned bar,
                                     unsigned long long policy) {
  if (HINT)
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::"
                 "bytes.L2::cache_hint [%0], [%1], %2, [%3], %4;" ::"r"(dst),
                 "l"(src), "r"(bytes), "r"(bar), "l"(policy)
                 : "memory");
  else
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::"
                 "bytes [%0], [%1], %2, [%3];" ::"r"(dst),
                 "l"(src), "r"(bytes), "r"(bar)
                 : "memory");
}
__device__ __forceinline__ void bar_wait(unsigned bar, unsigned parity) {
  asm volatile("{\n.reg .pred p;\nW: mbarrier.try_wait.parity.shared::cta.b64 "
               "p, [%0], %1;\n@!p bra W;\n}" ::"r"(bar),
               "r"(parity)
               : "memory");
}

__device__ __forceinline__ void fma8(float *acc, uint4 w, float c) {
  const __nv_bfloat162 *p = reinterpret_cast<const __nv_bfloat162 *>(&w);
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    float2 f = __bfloat1622float2(p[k]);
    acc[2 * k] = fmaf(c, f.x, acc[2 * k]);
    acc[2 * k + 1] = fmaf(c, f.y, acc[2 * k + 1]);
  }
}
__device__ __forceinline__ float dot8(uint4 a, uint4 w) {
  const __nv_bfloat162 *p = reinterpret_cast<const __nv_bfloat162 *>(&a);
  const __nv_bfloat162 *q = reinterpret_cast<const __nv_bfloat162 *>(&w);
  float s = 0.f;
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    float2 f = __bfloat1622float2(p[k]), g = __bfloat1622float2(q[k]);
    s = fmaf(f.x, g.x, s);
    s = fmaf(f.y, g.y, s);
  }
  return s;
}

// Row metadata of one row, one entry per lane (rows of up to 32 entries per
// round; longer rows take several rounds of 32).
struct RowRegs {
  int row, count;
};

// Pass `pass` of `passes` over the neurons: row m's entries
// [starts[m(P+1)+pass], starts[m(P+1)+pass+1]) (a range of columns, so that
// a pass's weight rows are 1/P of the weights and can stay in L2); passes
// after the first add to the f32 partial sums `part`, the last one writes y.
// ONE: a single pass, row m's entries [0, counts[m]) and no partial sums
// (the same work with one count load per row and no pass logic).
template <int S, bool GATED, bool HINT, bool ONE>
__global__ void __launch_bounds__(384)
    consumer(const __nv_bfloat16 *__restrict__ x,
             const __nv_bfloat16 *__restrict__ wu,
             const __nv_bfloat16 *__restrict__ wdT,
             const int *__restrict__ cols, const float *__restrict__ vals,
             const int *__restrict__ starts, const int *__restrict__ counts,
             int pass, int passes, int kmax,
             int M, float *__restrict__ part,
             __nv_bfloat16 *__restrict__ y) {
  unsigned long long policy = 0;
  if (HINT)
    asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;"
                 : "=l"(policy));
  extern __shared__ __align__(128) unsigned char smem[];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int nwarps = blockDim.x / 32;
  constexpr int SLOT = (GATED ? 2 : 1) * ROW_BYTES;
  unsigned char *ring = smem + warp * S * SLOT;
  unsigned long long *bars = reinterpret_cast<unsigned long long *>(
      smem + nwarps * S * SLOT) + warp * S;
  if (lane == 0)
    for (int s = 0; s < S; ++s)
      bar_init(smem32(&bars[s]));
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  __syncwarp();

  const int gw = blockIdx.x * nwarps + warp, stride = gridDim.x * nwarps;
  // Producer cursor (lane 0's view; all lanes track it uniformly).
  auto lo = [&](int r) {
    return ONE ? 0 : starts[(size_t)r * (passes + 1) + pass];
  };
  auto hi = [&](int r) {
    return ONE ? counts[r] : starts[(size_t)r * (passes + 1) + pass + 1];
  };
  int pRow = gw, issued = 0, consumed = 0;
  int pE = pRow < M ? lo(pRow) : 0, pCount = pRow < M ? hi(pRow) : 0;
  auto issue = [&]() {
    // Skip empty rows; stop past the end.
    while (pRow < M && pE >= pCount) {
      pRow += stride;
      pE = pRow < M ? lo(pRow) : 0;
      pCount = pRow < M ? hi(pRow) : 0;
    }
    if (pRow >= M)
      return false;
    int slot = issued % S;
    if (lane == 0) {
      int j = cols[(size_t)pRow * kmax + pE];
      unsigned bar = smem32(&bars[slot]);
      bar_expect(bar, SLOT);
      unsigned dst = smem32(ring + slot * SLOT);
      if (GATED) {
        bulk<HINT>(dst, wu + (size_t)j * D, ROW_BYTES, bar, policy);
        bulk<HINT>(dst + ROW_BYTES, wdT + (size_t)j * D, ROW_BYTES, bar, policy);
      } else {
        bulk<HINT>(dst, wdT + (size_t)j * D, ROW_BYTES, bar, policy);
      }
    }
    ++pE;
    ++issued;
    return true;
  };
  for (int s = 0; s < S - 1; ++s)
    if (!issue())
      break;

  for (int row = gw; row < M; row += stride) {
    int first = lo(row), count = hi(row) - first;
    uint4 xr[CHUNKS];
    if (GATED)
#pragma unroll
      for (int i = 0; i < CHUNKS; ++i)
        xr[i] = reinterpret_cast<const uint4 *>(x + (size_t)row * D)[lane + 32 * i];
    float acc[CHUNKS * 8];
#pragma unroll
    for (int i = 0; i < CHUNKS; ++i) {
      float4 a = make_float4(0.f, 0.f, 0.f, 0.f), b = a;
      if (!ONE && pass > 0) {
        const float4 *pp = reinterpret_cast<const float4 *>(part + (size_t)row * D) + 2 * (lane + 32 * i);
        a = pp[0];
        b = pp[1];
      }
      acc[8 * i] = a.x; acc[8 * i + 1] = a.y; acc[8 * i + 2] = a.z; acc[8 * i + 3] = a.w;
      acc[8 * i + 4] = b.x; acc[8 * i + 5] = b.y; acc[8 * i + 6] = b.z; acc[8 * i + 7] = b.w;
    }
    for (int e0 = 0; e0 < count; e0 += 32) {
      float hv = e0 + lane < count ? vals[(size_t)row * kmax + first + e0 + lane] : 0.f;
      int n = min(32, count - e0);
      for (int e = 0; e < n; ++e) {
        issue();
        int slot = consumed % S;
        bar_wait(smem32(&bars[slot]), (consumed / S) & 1);
        const uint4 *wslot = reinterpret_cast<const uint4 *>(ring + slot * SLOT);
        float c = __shfl_sync(0xffffffffu, hv, e);
        if (GATED) {
          float s = 0.f;
#pragma unroll
          for (int i = 0; i < CHUNKS; ++i)
            s += dot8(xr[i], wslot[lane + 32 * i]);
#pragma unroll
          for (int o = 16; o; o /= 2)
            s += __shfl_xor_sync(0xffffffffu, s, o);
          c *= s;
          wslot += ROW_BYTES / 16;
        }
#pragma unroll
        for (int i = 0; i < CHUNKS; ++i)
          fma8(acc + 8 * i, wslot[lane + 32 * i], c);
        __syncwarp();
        ++consumed;
      }
    }
    if (!ONE && pass + 1 < passes) {
#pragma unroll
      for (int i = 0; i < CHUNKS; ++i) {
        float4 *pp = reinterpret_cast<float4 *>(part + (size_t)row * D) + 2 * (lane + 32 * i);
        pp[0] = make_float4(acc[8 * i], acc[8 * i + 1], acc[8 * i + 2], acc[8 * i + 3]);
        pp[1] = make_float4(acc[8 * i + 4], acc[8 * i + 5], acc[8 * i + 6], acc[8 * i + 7]);
      }
      continue;
    }
#pragma unroll
    for (int i = 0; i < CHUNKS; ++i) {
      __nv_bfloat162 o[4];
#pragma unroll
      for (int k = 0; k < 4; ++k)
        o[k] = __floats2bfloat162_rn(acc[8 * i + 2 * k], acc[8 * i + 2 * k + 1]);
      reinterpret_cast<uint4 *>(y + (size_t)row * D)[lane + 32 * i] =
          *reinterpret_cast<uint4 *>(o);
    }
  }
}

template <int S, bool GATED, bool HINT, bool ONE = false>
float run(int warps, int blocksPerSM, int sms, const __nv_bfloat16 *x,
          const __nv_bfloat16 *wu, const __nv_bfloat16 *wdT, const int *cols,
          const float *vals, const int *starts, const int *counts, int passes,
          int kmax, int M,
          float *part, __nv_bfloat16 *y, int reps) {
  constexpr int SLOT = (GATED ? 2 : 1) * ROW_BYTES;
  size_t smem = (size_t)warps * S * (SLOT + 8);
  auto k = consumer<S, GATED, HINT, ONE>;
  if (cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize,
                           (int)smem) != cudaSuccess) {
    cudaGetLastError();
    return -1;
  }
  int grid = sms * blocksPerSM;
  auto all = [&] {
    for (int p = 0; p < passes; ++p)
      k<<<grid, warps * 32, smem>>>(x, wu, wdT, cols, vals, starts, counts, p,
                                    passes, kmax, M, part, y);
  };
  all();
  if (cudaGetLastError() != cudaSuccess || cudaDeviceSynchronize() != cudaSuccess) {
    cudaGetLastError();
    return -1;
  }
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  std::vector<float> ts;
  for (int r = 0; r < reps; ++r) {
    cudaEventRecord(a);
    all();
    cudaEventRecord(b);
    cudaEventSynchronize(b);
    float ms;
    cudaEventElapsedTime(&ms, a, b);
    ts.push_back(ms * 1000.f);
  }
  std::sort(ts.begin(), ts.end());
  return ts[ts.size() / 2];
}

static float bf2f(__nv_bfloat16 v) { return __bfloat162float(v); }

int main(int argc, char **argv) {
  // probe P [F]: active fraction P, hidden width F (5632).
  int M = 16384;
  double p = argc > 1 ? atof(argv[1]) : 0.005;
  int F = argc > 2 ? atoi(argv[2]) : 5632;
  int sms;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  std::mt19937 rng(1);
  std::normal_distribution<float> nd(0.f, 1.f);
  std::vector<__nv_bfloat16> hx((size_t)M * D), hu((size_t)F * D), hd((size_t)F * D);
  for (auto &v : hx) v = __float2bfloat16(nd(rng));
  for (auto &v : hu) v = __float2bfloat16(nd(rng) * 0.02f);
  for (auto &v : hd) v = __float2bfloat16(nd(rng) * 0.02f);
  std::binomial_distribution<int> bd(F, p);
  std::uniform_int_distribution<int> cd(0, F - 1);
  std::vector<int> cnt(M);
  int kmax = 1;
  for (int m = 0; m < M; ++m) kmax = std::max(kmax, cnt[m] = bd(rng));
  std::vector<int> hc((size_t)M * kmax, 0);
  std::vector<float> hv((size_t)M * kmax, 0.f);
  long total = 0;
  for (int m = 0; m < M; ++m) {
    std::vector<int> c;
    while ((int)c.size() < cnt[m]) {
      int j = cd(rng);
      if (std::find(c.begin(), c.end(), j) == c.end()) c.push_back(j);
    }
    std::sort(c.begin(), c.end());
    for (int e = 0; e < cnt[m]; ++e) {
      hc[(size_t)m * kmax + e] = c[e];
      hv[(size_t)m * kmax + e] = std::fabs(nd(rng));
    }
    total += cnt[m];
  }
  constexpr int MAXP = 8;
  __nv_bfloat16 *x, *wu, *wd, *y;
  int *cols, *counts, *starts[MAXP + 1];
  float *vals, *part;
  CK(cudaMalloc(&x, hx.size() * 2));
  CK(cudaMalloc(&wu, hu.size() * 2));
  CK(cudaMalloc(&wd, hd.size() * 2));
  CK(cudaMalloc(&y, (size_t)M * D * 2));
  CK(cudaMalloc(&part, (size_t)M * D * 4));
  CK(cudaMalloc(&cols, hc.size() * 4));
  CK(cudaMalloc(&counts, M * 4));
  CK(cudaMemcpy(counts, cnt.data(), M * 4, cudaMemcpyHostToDevice));
  CK(cudaMalloc(&vals, hv.size() * 4));
  // Per pass count P: row m's entry offsets at the column bounds k * F / P.
  for (int P = 1; P <= MAXP; ++P) {
    std::vector<int> st((size_t)M * (P + 1));
    for (int m = 0; m < M; ++m)
      for (int k = 0; k <= P; ++k) {
        long bound = (long)F * k / P;
        int e = 0;
        while (e < cnt[m] && hc[(size_t)m * kmax + e] < bound) ++e;
        st[(size_t)m * (P + 1) + k] = e;
      }
    CK(cudaMalloc(&starts[P], st.size() * 4));
    CK(cudaMemcpy(starts[P], st.data(), st.size() * 4, cudaMemcpyHostToDevice));
  }
  CK(cudaMemcpy(x, hx.data(), hx.size() * 2, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(wu, hu.data(), hu.size() * 2, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(wd, hd.data(), hd.size() * 2, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(cols, hc.data(), hc.size() * 4, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(vals, hv.data(), hv.size() * 4, cudaMemcpyHostToDevice));
  printf("M %d d %d F %d p %.4f entries %ld (%.1f per row) weight bytes %.2f GB (weights %.1f MB)\n",
         M, D, F, p, total, (double)total / M, total * 2.0 * ROW_BYTES / 1e9,
         2.0 * F * ROW_BYTES / 1e6);

  auto check = [&](const char *what) {
    std::vector<__nv_bfloat16> hy((size_t)M * D);
    CK(cudaMemcpy(hy.data(), y, hy.size() * 2, cudaMemcpyDeviceToHost));
    double maxerr = 0, maxref = 0;
    for (int m = 0; m < M; m += 997) {
      std::vector<double> ref(D, 0.0);
      for (int e = 0; e < cnt[m]; ++e) {
        int j = hc[(size_t)m * kmax + e];
        double dot = 0;
        for (int k = 0; k < D; ++k) dot += (double)bf2f(hx[(size_t)m * D + k]) * bf2f(hu[(size_t)j * D + k]);
        double c = hv[(size_t)m * kmax + e] * dot;
        for (int k = 0; k < D; ++k) ref[k] += c * bf2f(hd[(size_t)j * D + k]);
      }
      for (int k = 0; k < D; ++k) {
        maxerr = std::max(maxerr, std::fabs(ref[k] - bf2f(hy[(size_t)m * D + k])));
        maxref = std::max(maxref, std::fabs(ref[k]));
      }
    }
    printf("  check %s: max rel err %.2e %s\n", what, maxerr / maxref,
           maxerr / maxref < 1e-2 ? "(ok)" : "(FAIL)");
  };

  if (argc > 3 && std::string(argv[3]) == "overlap") {
    __nv_bfloat16 *wg, *h;
    CK(cudaMalloc(&wg, hu.size() * 2));
    CK(cudaMalloc(&h, (size_t)M * F * 2));
    CK(cudaMemcpy(wg, hu.data(), hu.size() * 2, cudaMemcpyHostToDevice));
    cublasHandle_t blas;
    cublasCreate(&blas);
    cudaStream_t s1, s2;
    CK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
    cublasSetStream(blas, s1);
    constexpr int S = 3, WARPS = 8;
    constexpr int SLOT = 2 * ROW_BYTES;
    size_t smem = (size_t)WARPS * S * (SLOT + 8);
    auto k = consumer<S, true, false, true>;
    CK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    float one = 1.f, zero = 0.f;
    auto gemm = [&](int smTarget) {
      cublasSetSmCountTarget(blas, smTarget);
      cublasGemmEx(blas, CUBLAS_OP_T, CUBLAS_OP_N, F, M, D, &one, wg, CUDA_R_16BF, D, x,
                   CUDA_R_16BF, D, &zero, h, CUDA_R_16BF, F, CUBLAS_COMPUTE_32F,
                   CUBLAS_GEMM_DEFAULT);
    };
    auto cons = [&](int grid) {
      k<<<grid, WARPS * 32, smem, s2>>>(x, wu, wd, cols, vals, starts[1], counts, 0, 1, kmax,
                                        M, part, y);
    };
    cudaEvent_t a, b1, b2;
    cudaEventCreate(&a);
    cudaEventCreate(&b1);
    cudaEventCreate(&b2);
    // Median wall time of `reps` runs of what(): from one event on s1 to
    // the end of both streams.
    auto timeIt = [&](auto what) {
      std::vector<float> ts;
      for (int r = 0; r < 12; ++r) {
        CK(cudaDeviceSynchronize());
        cudaEventRecord(a, s1);
        cudaStreamWaitEvent(s2, a);
        what();
        cudaEventRecord(b1, s1);
        cudaEventRecord(b2, s2);
        cudaStreamWaitEvent(s1, b2);
        cudaEventRecord(b1, s1);
        CK(cudaEventSynchronize(b1));
        float ms;
        cudaEventElapsedTime(&ms, a, b1);
        if (r >= 2) ts.push_back(ms * 1000.f);
      }
      std::sort(ts.begin(), ts.end());
      return ts[ts.size() / 2];
    };
    printf("overlap: GEMM %d x %d x %d (cuBLAS), consumer on k multiprocessors\n", M, F, D);
    printf("  GEMM alone, all SMs: %.1f us; consumer alone, %d SMs: %.1f us\n",
           timeIt([&] { gemm(0); }), sms, timeIt([&] { cons(sms); }));
    for (int kk : {16, 24, 32, 44, 66}) {
      float g = timeIt([&] { gemm(sms - kk); });
      float c = timeIt([&] { cons(kk); });
      float both = timeIt([&] { gemm(sms - kk); cons(kk); });
      printf("  k=%3d: GEMM on %d SMs %.1f us, consumer on %d SMs %.1f us, both at once %.1f us "
             "(sum %.1f)\n", kk, sms - kk, g, kk, c, both, g + c);
    }
    CK(cudaGetLastError());
    return 0;
  }

  const int reps = 20;
  auto report = [&](const char *name, int S, int warps, int bps, int P, float t) {
    if (t > 0)
      printf("gated %-9s S=%d warps=%d blocks/SM=%d passes=%d: %8.1f us  %.2f TB/s\n", name,
             S, warps, bps, P, t, total * 2.0 * ROW_BYTES / t / 1e6);
    else
      printf("gated %-9s S=%d warps=%d blocks/SM=%d passes=%d: does not fit\n", name, S,
             warps, bps, P);
  };
  // One pass without pass logic, over a sweep of warps, blocks and slots.
  struct V { int warps, bps; };
  for (V v : {V{4, 1}, V{4, 2}, V{8, 1}, V{2, 4}, V{12, 1}, V{6, 2}, V{4, 3}}) {
#define TRY(S)                                                                 \
  report("one-pass", S, v.warps, v.bps, 1,                                     \
         run<S, true, false, true>(v.warps, v.bps, sms, x, wu, wd, cols, vals, \
                                   starts[1], counts, 1, kmax, M, part, y,     \
                                   reps));
    TRY(2) TRY(3) TRY(4)
#undef TRY
  }
  check("one-pass");
  int maxP = std::min(MAXP, std::max(1, (int)(2.0 * F * ROW_BYTES / 11e6)));
  for (int P = 1; P <= maxP; ++P) {
    for (int hint = 0; hint < 2; ++hint) {
      float t = hint ? run<3, true, true>(8, 1, sms, x, wu, wd, cols, vals, starts[P], counts, P, kmax, M, part, y, reps)
                     : run<3, true, false>(8, 1, sms, x, wu, wd, cols, vals, starts[P], counts, P, kmax, M, part, y, reps);
      report(hint ? "evict_last" : "plain", 3, 8, 1, P, t);
      check(hint ? "evict_last" : "plain");
      t = hint ? run<3, true, true>(4, 2, sms, x, wu, wd, cols, vals, starts[P], counts, P, kmax, M, part, y, reps)
               : run<3, true, false>(4, 2, sms, x, wu, wd, cols, vals, starts[P], counts, P, kmax, M, part, y, reps);
      report(hint ? "evict_last" : "plain", 3, 4, 2, P, t);
    }
  }
  return 0;
}
