#!/usr/bin/env bash
# The GPU machine's half of the fused-lift measurements (6:8 with the lift
# inside the TMA kernel's operand loads, against the separate gather
# kernel). Built on the compiler's machine into .carry/:
#   corr/        make_cases.py --set correctness --out .carry/corr
#   wt/          test/python/test_gpu_weights.py --compile .carry/wt
#   lift_<l>/    make_cases.py --set lift --lift <l> --out .carry/lift_<l>,
#                for l in auto fused separate
# and build/lib (runtime and formats libraries). Results go to $OUT.
source "$(dirname "$0")/../device_env.sh" /tmp/lift-out

step "SASS of the fused 6:8 kernel (bf16, 4096 x 14336 x 4096)"
case="$carry/lift_fused/slide6to8_bf16_m4096_n14336_k4096"
ptxas -arch=sm_90a -O3 "$case/kernels.ptx" -o /tmp/fused.cubin 2>&1 | tail -3
cuobjdump --dump-sass /tmp/fused.cubin > /tmp/fused.sass
grep -c "HGMMA.SP" /tmp/fused.sass
grep -oE "HGMMA\.SP\.[0-9x]+\.F32[.A-Z0-9]*" /tmp/fused.sass | sort | uniq -c
grep -E "HGMMA|UTMALDG|STS.128|LDS.128|SYNCS" /tmp/fused.sass | head -60 > "$out/sass_fused_excerpt.txt"

step "weights as arguments (prepare kernels, tiled 6:8 order), GPU"
SPARSEOPT_BUILD_DIR="$root/build" SPARSEOPT_GPU_WEIGHT_ARTIFACTS="$carry/wt" \
  timeout 200 python3 -m pytest -q test/python/test_gpu_weights.py 2>&1 | tail -3

step "correctness, 2:4 and 6:8"
timeout 240 python3 bench/spmm/run_spmm.py --set correctness --no-cusparselt --variants 2:4,6:8 \
  --artifacts "$carry/corr" --commit "$commit" --out "$out/spmm_lift_correctness_h200.json" 2>&1 | tail -4

for l in auto fused separate; do
  step "timing: lift=$l"
  timeout 240 python3 bench/spmm/run_spmm.py --set lift --no-cusparselt --artifacts "$carry/lift_$l" \
    --commit "$commit" --options "lift=$l" \
    --command "python3 bench/spmm/run_spmm.py --set lift --no-cusparselt --artifacts .carry/lift_$l --options lift=$l" \
    --out "$out/spmm_lift_${l}_h200.json" 2>&1 | cut -c1-200 | tail -32
done
