"""The sparse matmul cases measured on the GPU machine: Y[M, N] = X[M, K] . W[N, K]^T.
Shared by make_cases.py (compiles them here) and run_spmm.py (runs them there).

Variants: "2:4" (sparse tensor cores directly) and "6:8" (sliding windows:
the activation lifted by a gather kernel, the weight decomposed into 2:4
windows over K' = 1.5 K)."""

# Correctness on shapes off every tile (64 tokens, 16 features, 32 K),
# odd K included; then the first timings on LLM-sized layers.
CORRECTNESS = [(1, 64, 64), (70, 20, 40), (5, 48, 37), (100, 1000, 200), (333, 777, 130)]
TIMING = [(16, 4096, 4096), (128, 4096, 4096), (512, 4096, 4096), (4096, 4096, 4096),
          (4096, 14336, 4096), (4096, 4096, 14336), (16384, 4096, 4096)]
TIMING_6TO8 = [(128, 4096, 4096), (4096, 4096, 4096), (4096, 14336, 4096)]
DTYPES = ["f16", "bf16"]
VARIANTS = ["2:4", "6:8"]


def family(variant):
    """N of the (2N-2):2N family."""
    return int(variant.split(":")[1]) // 2


def cases():
    for variant in VARIANTS:
        for dtype in DTYPES:
            timing = TIMING if variant == "2:4" else TIMING_6TO8
            for kind, shapes in (("correctness", CORRECTNESS), ("timing", timing)):
                for m, n, k in shapes:
                    yield variant, dtype, kind, m, n, k


def name(variant, dtype, m, n, k):
    tag = "spmm" if variant == "2:4" else "slide%s" % variant.replace(":", "to")
    return "%s_%s_m%d_n%d_k%d" % (tag, dtype, m, n, k)


def lifted_k(k, variant):
    fam = family(variant)
    groups = (k + 2 * fam - 1) // (2 * fam)
    return k if fam == 2 else groups * 4 * (fam - 1)
