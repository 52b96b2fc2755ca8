"""The sparse matmul cases measured on the GPU machine: Y[M, N] = X[M, K] . W[N, K]^T.
Shared by make_cases.py (compiles them here) and run_spmm.py (runs them there).

Variants: "2:4" (sparse tensor cores directly) and "4:6", "6:8", "8:10"
(sliding windows: the weight decomposed into 2:4 windows over
K' = 2(N-1)/N K; the activation lifted by a gather kernel, or for 6:8 with
lift "auto" inside the GEMM's operand loads, the windows then in the tiled
order of tile_groups 8)."""

# Correctness on shapes off every tile (tokens, features, K), odd K
# included; then timings.
CORRECTNESS = [(1, 64, 64), (70, 20, 40), (5, 48, 37), (100, 1000, 200), (333, 777, 130),
               (300, 200, 264),
               # split-K: 4 ranges of 9 k-tiles, the last past K (odd k32
               # step count); 4 even ranges of 16
               (40, 300, 2056), (16, 4096, 4096)]
# The benchmark layers of the sliding-window kernels: (N_out, K) of
# Llama-3-8B's MLP (up/gate, down) and Qwen2-7B's up/gate, at decode to
# prefill token counts.
ISSUE_LAYERS = [(14336, 4096), (4096, 14336), (18944, 3584)]
ISSUE_TOKENS = [16, 128, 512, 4096, 16384]
QUICK = [(128, 4096, 4096), (4096, 4096, 4096), (16384, 14336, 4096)]
DTYPES = ["f16", "bf16"]
VARIANTS = ["2:4", "4:6", "6:8", "8:10"]
# Tile and stage sweeps: 2:4 f16 on the first benchmark layer and its
# transpose, from decode to prefill.
SWEEP = [(16, 14336, 4096), (128, 14336, 4096), (512, 14336, 4096), (4096, 14336, 4096),
         (16384, 14336, 4096), (4096, 4096, 14336)]
# Row-pitch alignment of the activations: the lifted K' of 4:6 (5464) and
# 8:10 (6560) for K = 4096 are not multiples of 64 elements (128 B); 2:4 at
# those K and at their neighbours that are.
KALIGN = [(4096, 14336, k) for k in (5440, 5464, 5504, 6528, 6560, 6592)]
# The decode end of the benchmark grid, where the compiler may keep a layer dense
# (sgpu-slide-sparse policy=auto): compiled with --policy auto.
SMALL_TOKENS = [16, 128]
# Split-K sweeps (--options split-k=S): 2:4 f16 at decode token counts on
# the three benchmark layers (32, 112 and 148 blocks of 128 weight rows).
SPLITK = [(m, n, k) for n, k in ISSUE_LAYERS for m in SMALL_TOKENS]
SETS = ("issue", "quick", "correctness", "sweep", "kalign", "small", "splitk", "large", "lift",
        "mid", "large68", "bars")


def family(variant):
    """N of the (2N-2):2N family."""
    return int(variant.split(":")[1]) // 2


def cases(which="issue"):
    """(variant, dtype, kind, M, N, K) of a case set: "issue" (correctness
    for every variant and dtype, then the benchmark timing grid), "quick"
    (correctness, then a few 2:4 and 6:8 timings), "correctness",
    "sweep" (2:4 f16 timings only, for tile/stage sweeps) or "small" (the
    benchmark grid's M <= 128 timings, for the sparse-or-dense choice)."""
    assert which in SETS, which
    if which == "bars":
        # The cases of the large-M target bars, 2:4 and 6:8 from 4096 tokens
        # (artifacts as in "issue"; run_spmm.py --interleaved re-times them).
        for variant in ("2:4", "6:8"):
            for dtype in DTYPES:
                for n, k in ISSUE_LAYERS:
                    for m in (4096, 16384):
                        yield variant, dtype, "timing", m, n, k
        return
    if which in ("large", "large68"):
        # The prefill end of the benchmark grid, 2:4 ("large") or 6:8
        # ("large68") only (schedule A/B runs).
        variant = "2:4" if which == "large" else "6:8"
        for dtype in DTYPES:
            for n, k in ISSUE_LAYERS:
                for m in (4096, 16384):
                    yield variant, dtype, "timing", m, n, k
        return
    if which == "mid":
        # 2:4 at 512 tokens on the benchmark layers (tile sweeps where
        # cuSPARSELt is closest).
        for dtype in DTYPES:
            for n, k in ISSUE_LAYERS:
                yield "2:4", dtype, "timing", 512, n, k
        return
    if which == "lift":
        # The fused lift against the gather kernel (make_cases.py --lift):
        # 6:8 over the benchmark grid.
        for dtype in DTYPES:
            for n, k in ISSUE_LAYERS:
                for m in ISSUE_TOKENS:
                    yield "6:8", dtype, "timing", m, n, k
        return
    if which == "small":
        for variant in VARIANTS:
            for dtype in DTYPES:
                for n, k in ISSUE_LAYERS:
                    for m in SMALL_TOKENS:
                        yield variant, dtype, "timing", m, n, k
        return
    if which in ("sweep", "kalign", "splitk"):
        for m, n, k in {"sweep": SWEEP, "kalign": KALIGN, "splitk": SPLITK}[which]:
            yield "2:4", "f16", "timing", m, n, k
        return
    for variant in VARIANTS:
        for dtype in DTYPES:
            for m, n, k in CORRECTNESS:
                yield variant, dtype, "correctness", m, n, k
            if which == "issue":
                for n, k in ISSUE_LAYERS:
                    for m in ISSUE_TOKENS:
                        yield variant, dtype, "timing", m, n, k
            elif which == "quick" and variant in ("2:4", "6:8"):
                for m, n, k in QUICK:
                    yield variant, dtype, "timing", m, n, k


def name(variant, dtype, m, n, k):
    tag = "spmm" if variant == "2:4" else "slide%s" % variant.replace(":", "to")
    return "%s_%s_m%d_n%d_k%d" % (tag, dtype, m, n, k)


def lifted_k(k, variant, tile_groups=0):
    """K' of the sliding-window weight; with tile_groups > 0 (the tiled
    window order) the group count is rounded up to a multiple of it."""
    fam = family(variant)
    groups = (k + 2 * fam - 1) // (2 * fam)
    if tile_groups:
        groups = (groups + tile_groups - 1) // tile_groups * tile_groups
    return k if fam == 2 else groups * 4 * (fam - 1)


# The window orders of the sm_90a 6:8 lifts (sgpu-slide-sparse's choice):
# tile_groups 8 for the lift inside the kernel's operand loads (lift=auto up
# to FUSED_MAX_TOKENS tokens, or fused), 16 for the split lift (auto above,
# or split); separate keeps the plain order.
FUSED_TILE_GROUPS, SPLIT_TILE_GROUPS, FUSED_MAX_TOKENS = 8, 16, 16


def tile_groups(variant, lift="auto", m=1):
    if variant != "6:8" or lift == "separate":
        return 0
    if lift == "fused" or (lift == "auto" and m <= FUSED_MAX_TOKENS):
        return FUSED_TILE_GROUPS
    return SPLIT_TILE_GROUPS
