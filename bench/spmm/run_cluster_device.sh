#!/usr/bin/env bash
# The GPU machine's half of the cluster measurements (cluster=2: the TMA
# spmm kernel's blocks paired into clusters that share the X tile by TMA
# multicast, against single blocks). Built on the compiler's machine into
# .carry/:
#   corr_c2/      make_cases.py --set correctness --options cluster=2 --out .carry/corr_c2
#   large24/      make_cases.py --set large --out .carry/large24
#   large24_c2/   make_cases.py --set large --options cluster=2 --out .carry/large24_c2
#   lift_c2/      make_cases.py --set lift --options cluster=2 --out .carry/lift_c2
# and build/lib (runtime and formats libraries). Results go to $OUT.
source "$(dirname "$0")/../device_env.sh" /tmp/cluster-out

step "SASS of the clustered 2:4 kernel (bf16, 4096 x 14336 x 4096)"
case="$carry/large24_c2/spmm_bf16_m4096_n14336_k4096"
ptxas -arch=sm_90a -O3 "$case/kernels.ptx" -o /tmp/c2.cubin 2>&1 | tail -3
cuobjdump --dump-sass /tmp/c2.cubin > /tmp/c2.sass
grep -oE "HGMMA\.SP\.[0-9x]+\.F32[.A-Z0-9]*|UTMALDG\.2D[.A-Z]*|UCGABAR_[A-Z]*|SYNCS\.[A-Z.]*" /tmp/c2.sass \
  | sort | uniq -c | tee "$out/sass_spmm_cluster_summary.txt"

step "correctness with cluster=2 (2:4 and 6:8)"
timeout 240 python3 bench/spmm/run_spmm.py --set correctness --no-cusparselt --variants 2:4,6:8 \
  --artifacts "$carry/corr_c2" --commit "$commit" --options "cluster=2" \
  --out "$out/spmm_cluster_correctness_h200.json" 2>&1 | tail -4

for c in large24 large24_c2; do
  opts=""; [ "$c" = large24_c2 ] && opts="cluster=2"
  step "timing, 2:4 at M >= 4096: $c"
  timeout 240 python3 bench/spmm/run_spmm.py --set large --artifacts "$carry/$c" --commit "$commit" \
    --options "$opts" --command "python3 bench/spmm/run_spmm.py --set large --artifacts .carry/$c" \
    --out "$out/spmm_${c}_h200.json" 2>&1 | cut -c1-200 | tail -13
done

step "timing, 6:8 with cluster=2"
timeout 240 python3 bench/spmm/run_spmm.py --set lift --no-cusparselt --artifacts "$carry/lift_c2" \
  --commit "$commit" --options "cluster=2" \
  --command "python3 bench/spmm/run_spmm.py --set lift --no-cusparselt --artifacts .carry/lift_c2" \
  --out "$out/spmm_lift_c2_h200.json" 2>&1 | cut -c1-200 | tail -32
