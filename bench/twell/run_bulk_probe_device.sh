#!/usr/bin/env bash
# The GPU machine's half of the bulk-copy probe (bench/twell/probe_bulk_rows.cu):
# the gated CUDA-core consumer's work with the weight rows brought into
# shared memory by cp.async.bulk, in one pass and in passes over ranges of
# the neurons, at d = 2048 and F = 5632 (0.5%, 2% active), 1408 and 14336
# (0.5%); whether the gate GEMM (cuBLAS) and the consumer gain by running
# at once on disjoint multiprocessors; then the generated consumer at the
# first two points in the same session. Built on the compiler's machine into .carry/:
#   tw/   make_ffn.py --out .carry/tw --tokens 16384 --fractions 0.005,0.02
# and build/lib. Results go to $OUT.
source "$(dirname "$0")/../device_env.sh" /tmp/twell-probe-out

step "bulk-copy probe"
nvcc -O3 -arch=sm_90a -o /tmp/probe bench/twell/probe_bulk_rows.cu -lcublas
for a in "0.005 5632" "0.02 5632" "0.005 1408" "0.005 14336"; do
  /tmp/probe $a
done | tee "$out/twell_probe_bulk_rows_h200.txt"

step "the gate GEMM and the consumer at once (F = 5632, 0.5%)"
/tmp/probe 0.005 5632 overlap | tee "$out/twell_probe_overlap_h200.txt"

step "the generated consumer in the same session (d = 2048, F = 5632, M = 16384)"
python3 bench/twell/profile_ffn.py --artifact "$carry/tw/gated_bf16_m16384_d2048_f5632" \
  --fractions 0.005,0.02 2>&1 | grep "^ours" | tee -a "$out/twell_probe_bulk_rows_h200.txt"
