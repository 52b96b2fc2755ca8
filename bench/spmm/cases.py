"""The 2:4 sparse matmul cases measured on the GPU machine: Y[M, N] = X[M, K] . W[N, K]^T.
Shared by make_cases.py (compiles them here) and run_spmm.py (runs them there)."""

# Correctness on shapes off every tile (64 tokens, 16 features, 32 K),
# odd K included; then the first timings on LLM-sized layers.
CORRECTNESS = [(1, 64, 64), (70, 20, 40), (5, 48, 37), (100, 1000, 200), (333, 777, 130)]
TIMING = [(16, 4096, 4096), (128, 4096, 4096), (512, 4096, 4096), (4096, 4096, 4096),
          (4096, 14336, 4096), (4096, 4096, 14336), (16384, 4096, 4096)]
DTYPES = ["f16", "bf16"]


def cases():
    for dtype in DTYPES:
        for kind, shapes in (("correctness", CORRECTNESS), ("timing", TIMING)):
            for m, n, k in shapes:
                yield dtype, kind, m, n, k


def name(dtype, m, n, k):
    return "spmm_%s_m%d_n%d_k%d" % (dtype, m, n, k)
