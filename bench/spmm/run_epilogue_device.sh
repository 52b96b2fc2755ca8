#!/usr/bin/env bash
# The GPU machine's half of the TMA-store epilogue measurements
# (epilogue=auto|tma|registers) and of the vectorized lift kernel. Built on
# the compiler's machine into .carry/:
#   large_tma/    make_cases.py --set large --out .carry/large_tma
#   large_regs/   make_cases.py --set large --options epilogue=registers --out .carry/large_regs
#   lift68/       make_cases.py --set lift --out .carry/lift68
#   issue/        make_cases.py --set issue --out .carry/issue
#   liftcheck/    test/Integration/GPU/check_lift.py build/lib .carry/liftcheck --compile build/bin/sparse-opt --no-run
#   small_auto/   make_cases.py --set small --policy auto --out .carry/small_auto
#   epicheck/     test/Integration/GPU/check_spmm_epilogue.py build/lib .carry/epicheck --compile build/bin/sparse-opt --no-run
# and build/lib (runtime and formats libraries). `$1` picks the part:
# "ab" (lift check, SASS, the epilogue A/B, the 6:8 lift set, 4:6 and
# 8:10 over the benchmark grid) or "issue" (2:4 and 6:8 over the
# benchmark grid, then the compiler's sparse-or-dense choice at M <= 128)
# or "checks" (the bit-exact lift check and the epilogue check against
# numpy, bias included).
# Results go to $OUT.
part="${1:-ab}"
source "$(dirname "$0")/../device_env.sh" /tmp/epilogue-out

source "$(dirname "$0")/run_set.sh"

if [ "$part" = checks ]; then
  step "lift kernel, bit for bit against the formats library"
  python3 test/Integration/GPU/check_lift.py build/lib "$carry/liftcheck" | tail -2
  step "spmm epilogues (TMA store and registers) against numpy"
  python3 test/Integration/GPU/check_spmm_epilogue.py build/lib "$carry/epicheck"
elif [ "$part" = ab ]; then
  step "lift kernel, bit for bit against the formats library"
  python3 test/Integration/GPU/check_lift.py build/lib "$carry/liftcheck" | tail -2

  step "SASS of the TMA-store 2:4 kernel (bf16, 4096 x 14336 x 4096)"
  ptxas -arch=sm_90a -O3 -v "$carry/large_tma/spmm_bf16_m4096_n14336_k4096/kernels.ptx" -o /tmp/t.cubin 2>&1 | grep -E "registers|spill"
  cuobjdump --dump-sass /tmp/t.cubin > /tmp/t.sass
  grep -oE "HGMMA\.SP\.[0-9x]+\.F32[.A-Z0-9]*|UTMALDG\.2D[.A-Z]*|UTMASTG\.2D[.A-Z]*|STSM[.A-Z0-9]*|UTMACMDFLUSH|DEPBAR[.A-Z]*|SYNCS\.[A-Z.]*" /tmp/t.sass \
    | sort | uniq -c | tee "$out/sass_spmm_tma_store_summary.txt"

  for v in tma regs; do
    step "2:4 at M >= 4096, epilogue=$v"
    opts=""; [ $v = regs ] && opts="epilogue=registers"
    run large "large_$v" "spmm_epilogue_${v}_h200.json" --options "$opts"
  done

  step "6:8 over the benchmark grid (new lift kernel, TMA store)"
  TAILN=32 run lift lift68 spmm_lift_auto_h200.json --no-cusparselt

  step "4:6 and 8:10 over the benchmark grid"
  TAILN=4 run issue issue spmm_issue_b_h200.json --variants 4:6,8:10
else
  step "2:4 and 6:8 over the benchmark grid"
  TAILN=4 run issue issue spmm_issue_a_h200.json --variants 2:4,6:8
  step "the compiler's choice at M <= 128 (sparse-policy=auto)"
  TAILN=4 run small small_auto spmm_small_auto_h200.json --no-cusparselt
fi
