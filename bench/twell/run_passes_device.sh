#!/usr/bin/env bash
# The GPU machine's half of the CUDA-core TwELL consumer in several passes
# over the neurons (twell-passes). Built on the compiler's machine into
# .carry/:
#   pchk/p<P>-<name>/  the test FFNs of test/Target/Inputs compiled with
#                      twell-passes=P (P = 2, 3; the RUN lines of
#                      test/Integration/GPU/twell-ffn.mlir), the shared-pack
#                      FFN (twell-ffn-gated-bf16-shared.mlir) among them
#   shared-<consumer>/ that FFN with twell-consumer=cuda-cores, tensor-cores
#   twp/               make_ffn.py --out .carry/twp --d D --ffn F --tokens 16384
#                      --passes 1,2,3,4,6 --fractions 0.005,0.02, for (D, F) in
#                      (2048, 5632) (2048, 14336) (4096, 5632) (4096, 14336),
#                      and --d 2048 --ffn 14336 --tokens 65536
# Checks every FFN against numpy, profiles the consumer per pass count, then
# times the default programs (twell-passes=0, auto) against our dense
# program and torch. Results go to $OUT.
source "$(dirname "$0")/../device_env.sh" /tmp/twell-passes-out

step "passes and shared packs against numpy"
for dir in "$carry"/pchk/*/ "$carry"/shared-*/; do
  name=$(basename "$dir"); tile=256; extra=
  case $name in *bias) tile=64;; shared-tensor-cores) extra=--block-form;; esac
  echo "$name: $(python3 test/Integration/GPU/check_twell.py "$dir" build/lib --tile $tile $extra 2>&1 | tail -1)"
done | tee "$out/twell_passes_checks.txt"

step "kernel times per pass count (0.5% and 2% active)"
for a in "$carry"/twp/*m16384*/; do
  for p in 1 2 3 4 6; do
    echo "passes $p"
    python3 bench/twell/profile_ffn.py --artifact "$a" --program passes$p --fractions 0.005,0.02 --reps 5 2>&1 | grep "^ours"
  done
done | tee "$out/twell_passes_profile_h200.txt"

step "timings of the default programs"
timeout 400 python3 bench/twell/run_ffn.py --artifacts "$carry/twp" --reps 10 --fractions 0.005,0.02 \
  --out "$out/twell_passes_h200.json" 2>&1 | grep "^M="
