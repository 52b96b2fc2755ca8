#!/usr/bin/env bash
# The GPU machine's half of the fused TwELL producer measurements
# (twell-producer=fused: the gate GEMM a generated wgmma kernel whose
# epilogue packs, against cuBLASLt + the pack kernel). Built on the
# compiler's machine into .carry/:
#   twp/<name>/   the GPU test inputs with the fused producer:
#                 for n in twell-ffn-{ungated,gated}-{f16,bf16} twell-ffn-gated-bf16-odd; do
#                   build/bin/sparse-opt test/Target/Inputs/$n.mlir \
#                     --sgpu-sparsify-ffn="tile=256 compression=4" \
#                     --sgpu-compile="twell-producer=fused output-dir=.carry/twp/$n" -o /dev/null; done
#                 and the bias input with tile 64 (checked with --tile 64):
#                   build/bin/sparse-opt test/Target/Inputs/twell-ffn-ungated-bf16-bias.mlir \
#                     --sgpu-sparsify-ffn="tile=64 compression=4" \
#                     --sgpu-compile="twell-producer=fused output-dir=.carry/twp/bias64" -o /dev/null
#                 and the odd shape in clusters of two:
#                   build/bin/sparse-opt test/Target/Inputs/twell-ffn-gated-bf16-odd.mlir \
#                     --sgpu-sparsify-ffn="tile=256 compression=4" \
#                     --sgpu-compile="twell-producer=fused cluster=2 output-dir=.carry/twp/odd-c2" -o /dev/null
#   twf/          python3 bench/twell/make_ffn.py --out .carry/twf --fused --fused-cluster
#                 (d = 2048, F = 5632, M = 2048 and 16384)
# and build/lib (the runtime library). Results go to $OUT.
source "$(dirname "$0")/../device_env.sh" /tmp/twell-producer-out

step "SASS of the fused producer (d = 2048, F = 5632, M = 16384)"
case="$carry/twf/gated_bf16_m16384_d2048_f5632/fused"
ptxas -arch=sm_90a -O3 -v "$case/kernels.ptx" -o /tmp/twp.cubin 2>&1 | grep -A2 producer | tail -3
cuobjdump --dump-sass /tmp/twp.cubin > /tmp/twp.sass
grep -oE "HGMMA\.[0-9x]+\.F32[.A-Z0-9]*|UTMALDG\.2D|POPC|SHFL\.IDX|USETMAXREG[.A-Z]*" /tmp/twp.sass \
  | sort | uniq -c | tee "$out/sass_twell_producer_summary.txt"

step "correctness against numpy (rows from 0.5% to 100% active, overflow included)"
for d in "$carry"/twp/*/; do
  n="$(basename "$d")"
  echo "--- $n"
  tile=256; [ "$n" = bias64 ] && tile=64
  timeout 30 python3 test/Integration/GPU/check_twell.py "$d" "$root/build/lib" --tile $tile 2>&1 | tail -3
done

step "timing: TwELL with the library producer, with the fused producer, our dense, torch"
timeout 400 python3 bench/twell/run_ffn.py --artifacts "$carry/twf" --reps 10 \
  --out "$out/twell_producer_h200.json" 2>&1 | tail -24
