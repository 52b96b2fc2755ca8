#!/usr/bin/env bash
# The GPU machine's half of the split-lift measurements (6:8: a small kernel
# copies only the shared windows into W1 [M, K'/3] and the TMA kernel loads
# each k32 step from X or W1, against the gather kernel that writes the
# whole lifted X). Built on the compiler's machine into .carry/:
#   corr_split/    make_cases.py --set correctness --lift split --out .carry/corr_split
#   wt/            test/python/test_gpu_weights.py --compile .carry/wt
#   lift_split/    make_cases.py --set lift --lift split --out .carry/lift_split
#   lift_sep/      make_cases.py --set lift --lift separate --out .carry/lift_sep
# and build/lib (runtime and formats libraries). Results go to $OUT.
source "$(dirname "$0")/../device_env.sh" /tmp/split-out
source "$(dirname "$0")/run_set.sh"

step "SASS of the split-lift 6:8 kernel (bf16, 16384 x 4096 x 14336)"
case="$carry/lift_split/slide6to8_bf16_m16384_n4096_k14336"
ptxas -arch=sm_90a -O3 -v "$case/kernels.ptx" -o /tmp/split.cubin 2>&1 | grep -A2 "sgpu_spmm_0'" | tail -2
cuobjdump --dump-sass /tmp/split.cubin > /tmp/split.sass
grep -oE "HGMMA\.SP\.[0-9x]+\.F32[.A-Z0-9]*|UTMALDG\.2D[.A-Z]*|STS\.128|LDS\.128" /tmp/split.sass \
  | sort | uniq -c | tee "$out/sass_spmm_split_lift_summary.txt"

step "weights as arguments (prepare kernels, tiled 6:8 order), GPU"
SPARSEOPT_BUILD_DIR="$root/build" SPARSEOPT_GPU_WEIGHT_ARTIFACTS="$carry/wt" \
  timeout 200 python3 -m pytest -q test/python/test_gpu_weights.py 2>&1 | tail -3

step "correctness with lift=split (6:8)"
timeout 240 python3 bench/spmm/run_spmm.py --set correctness --no-cusparselt --variants 6:8 \
  --artifacts "$carry/corr_split" --commit "$commit" --options "lift=split" \
  --out "$out/spmm_split_correctness_h200.json" 2>&1 | tail -4

TAILN=32
step "timing: lift=split"
run lift lift_split spmm_lift_split_h200.json --no-cusparselt --options lift=split
step "timing: lift=separate"
run lift lift_sep spmm_lift_separate3_h200.json --no-cusparselt --options lift=separate
