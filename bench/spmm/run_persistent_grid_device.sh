#!/usr/bin/env bash
# The GPU machine's half of the checks of grids sized at load time (the TMA
# kernels stride by their launch's grid; a persistent launch is written
# `grid persistent:<units>:<cluster>:<reserved>` and sized by the runtime
# on the device). Built on the compiler's machine into .carry/:
#   lib/            libsparseopt_runtime.so, libsparseopt_formats.so
#   ab_before/      the spmm issue grid compiled before the change
#                   (make_cases.py --set issue on the old commit)
#   ab_after/       the same with this commit
#   corr_pcie/      make_cases.py --set correctness --options device=h100-pcie
#   corr_reserve/   make_cases.py --set correctness --options "reserve-sms=12 cluster=2"
#   large_pcie/     make_cases.py --set large --options device=h100-pcie
#                   (tiled for 114 multiprocessors, sized for the H200's 132)
#   twp/<name>/     the fused TwELL producer's test inputs
#                   (bench/twell/run_producer_device.sh lists them)
#   decode__small__{dense,24}/, small__{24,68}/
#                   the small decoder's decode and prefill checks
#                   (bench/model/run_device.sh lists the commands)
# Fails when any check fails or the A/B finds a case more than 2% slower.
source "$(dirname "$0")/../device_env.sh" /tmp/persistent-grid-out
export SPARSEOPT_LIB_DIR="$carry/lib"
status=0

step "A/B: the issue grid before and after, one process, interleaved"
timeout 400 python3 bench/spmm/ab_spmm.py --set issue --a "$carry/ab_before" --b "$carry/ab_after" \
  --a-label constant-stride --b-label grid-stride --max-slowdown 1.02 --commit "$commit" \
  --command "python3 bench/spmm/ab_spmm.py --set issue --a .carry/ab_before --b .carry/ab_after --max-slowdown 1.02" \
  --out "$out/spmm_persistent_grid_ab_h200.json" > "$out/ab.log" 2>&1 || status=1
tail -4 "$out/ab.log"

for c in corr_pcie corr_reserve; do
  opts="device=h100-pcie"; [ "$c" = corr_reserve ] && opts="reserve-sms=12 cluster=2"
  step "correctness, compiled with $opts"
  timeout 200 python3 bench/spmm/run_spmm.py --set correctness --no-cusparselt --artifacts "$carry/$c" \
    --commit "$commit" --options "$opts" --out "$out/spmm_${c}_h200.json" > "$out/$c.log" 2>&1 || status=1
  tail -1 "$out/$c.log"
done
step "M >= 4096, tiled for an H100 PCIe, run on the H200"
timeout 300 python3 bench/spmm/run_spmm.py --set large --no-cusparselt --artifacts "$carry/large_pcie" \
  --commit "$commit" --options "device=h100-pcie" --out "$out/spmm_large_pcie_h200.json" \
  > "$out/large_pcie.log" 2>&1 || status=1
tail -13 "$out/large_pcie.log" | cut -c1-160

step "the fused TwELL producer against numpy"
for d in "$carry"/twp/*/; do
  n="$(basename "$d")"; tile=256; [ "$n" = bias64 ] && tile=64
  echo "--- $n"
  timeout 60 python3 test/Integration/GPU/check_twell.py "$d" "$carry/lib" --tile $tile > "$out/twp_$n.log" 2>&1 \
    || { status=1; tail -5 "$out/twp_$n.log"; }
  tail -1 "$out/twp_$n.log"
done

export SPARSEOPT_COMMIT="$commit" NCCL_NVLS_ENABLE=0
nccl_lib="$(python3 -c 'import nvidia.nccl as n, os; print(os.path.join(list(n.__path__)[0], "lib"))')"
export LD_LIBRARY_PATH="$carry/lib:$nccl_lib:${LD_LIBRARY_PATH:-}"
for v in dense 24; do
  step "decode check: small $v"
  timeout 300 python3 -u bench/model/run_decode.py check --dir "$carry/decode__small__$v" \
    --json "$out/model_decode__small__${v}_h200.json" > "$out/decode_$v.log" 2>&1 || status=1
  tail -3 "$out/decode_$v.log"
done
for v in 24 68; do
  variant="2:4"; [ "$v" = 68 ] && variant="6:8"
  step "prefill check: small $variant"
  timeout 300 python3 -u bench/model/run_prefill.py run --config small --variant "$variant" \
    --dir "$carry/small__$v" --json "$out/model_small__${v}_h200.json" > "$out/prefill_$v.log" 2>&1 || status=1
  tail -3 "$out/prefill_$v.log"
done
exit $status
