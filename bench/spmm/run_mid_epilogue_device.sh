#!/usr/bin/env bash
# The GPU machine's half of the 512-token A/B of the spmm epilogue: TMA
# store or registers, 8 or 7 stages, on 128-token tiles (the store x stages
# table of docs/performance.md), then the correctness set at the defaults.
# Built on the compiler's machine into .carry/:
#   mid_t128/     make_cases.py --set mid --options "tile-n=128" --out .carry/mid_t128
#   mid_s7/       ... --options "tile-n=128 stages=7"
#   mid_regs/     ... --options "tile-n=128 epilogue=registers"
#   mid_regs_s7/  ... --options "tile-n=128 epilogue=registers stages=7"
#   corr/         make_cases.py --set correctness --out .carry/corr
# and build/lib. Results go to $OUT.
source "$(dirname "$0")/../device_env.sh" /tmp/mid-out
declare -A opts=([t128]="tile-n=128" [s7]="tile-n=128 stages=7"
                 [regs]="tile-n=128 epilogue=registers"
                 [regs_s7]="tile-n=128 epilogue=registers stages=7")
for v in t128 s7 regs regs_s7; do
  step "2:4 at 512 tokens: ${opts[$v]}"
  timeout 100 python3 bench/spmm/run_spmm.py --set mid --artifacts "$carry/mid_$v" --commit "$commit" \
    --options "${opts[$v]}" --command "python3 bench/spmm/run_spmm.py --set mid --artifacts .carry/mid_$v" \
    --out "$out/spmm_mid_epi_${v}_h200.json" 2>&1 | cut -c1-200 | tail -7
done
step "correctness"
timeout 150 python3 bench/spmm/run_spmm.py --set correctness --no-cusparselt --artifacts "$carry/corr" --commit "$commit" \
  --command "python3 bench/spmm/run_spmm.py --set correctness --no-cusparselt --artifacts .carry/corr" \
  --out "$out/spmm_correctness_h200.json" 2>&1 | tail -2
