#!/usr/bin/env bash
# The GPU machine's half of the pack fused into the CUDA-core consumer
# (twell-pack=consumer). Built on the compiler's machine into .carry/:
#   pcchk/<name>/  the test FFNs of test/Target/Inputs compiled with
#                  twell-pack=consumer (the RUN lines of
#                  test/Integration/GPU/twell-ffn.mlir)
#   twpc/          make_ffn.py --out .carry/twpc --d D --ffn F --tokens 16384
#                  --fractions 0.005,0.02 --pack-consumer for (D, F) in
#                  (2048, 5632) (2048, 14336) (4096, 5632) (4096, 14336)
#   twpc2/         the same FFNs with their pack_consumer/ program as the
#                  main one (and dense/, choice.json, model.mlir copied)
# Checks every FFN against numpy, profiles both forms, then times both
# against our dense program and torch. Results go to $OUT.
source "$(dirname "$0")/../device_env.sh" /tmp/twell-pack-consumer-out

step "the pack in the consumer against numpy"
for dir in "$carry"/pcchk/*/; do
  name=$(basename "$dir"); tile=256; [ "$name" = bias ] && tile=64
  echo "$name: $(python3 test/Integration/GPU/check_twell.py "$dir" build/lib --tile $tile --no-capacity 2>&1 | tail -1)"
done | tee "$out/twell_pack_consumer_checks.txt"

step "kernel times, pack kernel and pack in the consumer"
for a in "$carry"/twpc/*/; do
  python3 bench/twell/profile_ffn.py --artifact "$a" --fractions 0.005,0.02 --reps 5 2>&1 | grep "^ours"
  python3 bench/twell/profile_ffn.py --artifact "$a" --program pack_consumer --fractions 0.005,0.02 --reps 5 2>&1 | grep "^ours"
done | tee "$out/twell_pack_consumer_profile_h200.txt"

step "timings: pack kernel, then pack in the consumer"
timeout 200 python3 bench/twell/run_ffn.py --artifacts "$carry/twpc" --reps 10 --fractions 0.005,0.02 \
  --out "$out/twell_pack_kernel_h200.json" 2>&1 | grep "^M="
timeout 200 python3 bench/twell/run_ffn.py --artifacts "$carry/twpc2" --reps 10 --fractions 0.005,0.02 \
  --out "$out/twell_pack_consumer_h200.json" 2>&1 | grep "^M="
