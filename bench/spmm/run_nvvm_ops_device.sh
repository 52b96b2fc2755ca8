#!/usr/bin/env bash
# The GPU machine's half of an A/B of two compilations of the TMA spmm
# kernel, made for the trial of NVVM ops instead of inline PTX (a: inline
# PTX, main; b: an NVVM-op form such as commit c17296f's, with or without
# 32-bit shared pointers; docs/design.md, "NVVM ops: what was measured").
# Pass SPARSEOPT_COMMIT=<b's commit> for the records. Built on the
# compiler's machine into .carry/:
#   lib/            libsparseopt_runtime.so, libsparseopt_formats.so
#   ab_before/      make_cases.py --set issue built from side a
#   ab_after/       the same built from side b
#   corr/           make_cases.py --set correctness (side b)
#   gpu-tests/      python3 bench/gpu_tests.py prepare --out .carry/gpu-tests
#                   (side b: the GPU integration tests, TwELL pack, fused
#                   producer, clusters, tensor-core consumer, the block)
#   decode__small__{dense,24}/, small__{24,68}/
#                   the small decoder's decode and prefill checks (side b;
#                   bench/model/run_device.sh lists the commands)
# `ab` runs the A/B of the issue grid, then the cases above 1.02 again with
# 200 rounds (fails when one of those is still above, or a case is out of
# tolerance); `checks` runs the correctness sets and reads the SASS of one
# kernel of each mode. Results go to $OUT.
source "$(dirname "$0")/../device_env.sh" /tmp/nvvm-ops-out
export SPARSEOPT_LIB_DIR="$carry/lib"
mode="${1:?usage: run_nvvm_ops_device.sh ab|checks [ab_spmm.py options]}"
shift
status=0

if [ "$mode" = ab ]; then
  step "A/B: the issue grid with inline PTX (a) and NVVM ops (b), one process, interleaved"
  timeout 420 python3 bench/spmm/ab_spmm.py --set issue --a "$carry/ab_before" --b "$carry/ab_after" \
    --a-label inline-ptx --b-label nvvm-ops --max-slowdown 1.02 --commit "$commit" \
    --command "python3 bench/spmm/ab_spmm.py --set issue --a .carry/ab_before --b .carry/ab_after --max-slowdown 1.02 $*" \
    --out "$out/spmm_nvvm_ops_ab_h200.json" "$@" > "$out/ab.log" 2>&1 || status=1
  tail -3 "$out/ab.log"
  # The cases above the bar again, with 200 rounds (60 rounds measure
  # +-2%): the bar applies to these.
  slow="$(python3 -c 'import json, sys; sys.path.insert(0, "bench/spmm"); import cases
r = [x for x in json.load(open(sys.argv[1])) if x.get("ratio", 0) > 1.02]
print(",".join(cases.name(x["variant"], x["dtype"], x["shape"]["M"], x["shape"]["N"], x["shape"]["K"]) for x in r))' \
    "$out/spmm_nvvm_ops_ab_h200.json")"
  if [ -n "$slow" ]; then
    step "the cases above 1.02, 200 rounds"
    status=0
    timeout 200 python3 bench/spmm/ab_spmm.py --set issue --a "$carry/ab_before" --b "$carry/ab_after" \
      --a-label inline-ptx --b-label nvvm-ops --max-slowdown 1.02 --commit "$commit" --only "$slow" --reps 200 \
      --command "python3 bench/spmm/ab_spmm.py --set issue --a .carry/ab_before --b .carry/ab_after --only <cases above 1.02> --reps 200 --max-slowdown 1.02" \
      --out "$out/spmm_nvvm_ops_ab_repeat_h200.json" > "$out/ab_repeat.log" 2>&1 || status=1
    tail -3 "$out/ab_repeat.log"
  fi
  exit $status
fi

step "spmm correctness set against torch"
timeout 200 python3 bench/spmm/run_spmm.py --set correctness --no-cusparselt --artifacts "$carry/corr" \
  --commit "$commit" --out "$out/spmm_correctness_nvvm_ops_h200.json" > "$out/corr.log" 2>&1 || status=1
tail -2 "$out/corr.log"

step "GPU integration tests"
timeout 240 python3 bench/gpu_tests.py check --dir "$carry/gpu-tests" > "$out/gpu_tests.log" 2>&1 || status=1
grep -v "^ok" "$out/gpu_tests.log" | tail -8

step "SASS: sparse HGMMA, TMA, barriers of one kernel per mode"
for c in slide2to4_bf16_m4096_n14336_k4096 slide6to8_bf16_m16_n14336_k4096 slide6to8_bf16_m4096_n14336_k4096; do
  [ -f "$carry/ab_after/$c/kernels.ptx" ] || { echo "missing $c"; status=1; continue; }
  ptxas -arch=sm_90a -O3 "$carry/ab_after/$c/kernels.ptx" -o /tmp/k.cubin || { status=1; continue; }
  echo "--- $c"
  cuobjdump --dump-sass /tmp/k.cubin | grep -oE "HGMMA\.[0-9x]+\.F32[.A-Z0-9]*|UTMALDG\.2D[.A-Z]*|UTMASTG\.2D[.A-Z]*|SYNCS\.[.A-Z0-9]*|USETMAXREG[.A-Z0-9]*|STSM[.A-Z0-9]*" \
    | sort | uniq -c | tee -a "$out/sass_nvvm_ops_summary.txt"
done

step "small decoder: decode and prefill checks"
STEP_TIMEOUT=200 OUT="$out/model" bash bench/model/run_device.sh > "$out/model.log" 2>&1 || status=1
grep -E "===|ok|FAIL|passed|failed|Error" "$out/model.log" | tail -20
exit $status
