#!/usr/bin/env bash
# The GPU machine's half of the tensor-core TwELL consumer
# (twell-consumer=tensor-cores). Built on the compiler's machine into .carry/:
#   tcchk/<name>/  the test FFNs of test/Target/Inputs compiled with
#                  twell-consumer=tensor-cores (the RUN lines of
#                  test/Integration/GPU/twell-ffn.mlir)
#   twtc/          make_ffn.py --out .carry/twtc --d D --ffn F --tokens 16384 --tensor-cores
#                  for (D, F) in (2048, 5632) (2048, 14336) (4096, 5632) (4096, 14336)
#   twtc2/         make_ffn.py --out .carry/twtc2 --tokens 2048,65536 --tensor-cores
# and build/lib. Checks every FFN against numpy, reads the SASS of the two
# gathered GEMMs, then times the FFNs (records "twell-tensor-cores" beside
# the CUDA-core TwELL program, our dense program and torch). Results go to
# $OUT.
source "$(dirname "$0")/../device_env.sh" /tmp/twell-tc-out

step "tensor-core consumer against numpy"
for dir in "$carry"/tcchk/*/; do
  name=$(basename "$dir"); tile=256; [ "$name" = bias ] && tile=64
  python3 test/Integration/GPU/check_twell.py "$dir" build/lib --tile $tile --block-form 2>&1 | tail -2
done

step "SASS of the gathered GEMMs (d = 2048, F = 5632, M = 16384)"
ptx="$carry/twtc/gated_bf16_m16384_d2048_f5632/tensor_cores/kernels.ptx"
ptxas -arch=sm_90a -O3 -v "$ptx" -o /tmp/tc.cubin 2>&1 | grep -E "Compiling|registers|spill" | paste - - - | cut -c1-200
cuobjdump --dump-sass /tmp/tc.cubin > /tmp/tc.sass
grep -oE "HGMMA\.[0-9x]+\.F32[.A-Z0-9]*|UTMALDG\.2D[.A-Z]*|LDGSTS[.A-Z0-9]*|ARRIVES[.A-Z0-9]*" /tmp/tc.sass \
  | sort | uniq -c | tee "$out/sass_twell_tensor_cores_summary.txt"

step "timings (CUDA-core TwELL, tensor-core TwELL, our dense, torch)"
timeout 300 python3 bench/twell/run_ffn.py --artifacts "$carry/twtc" --reps 10 \
  --out "$out/twell_tensor_cores_h200.json" 2>&1 | tail -40
timeout 200 python3 bench/twell/run_ffn.py --artifacts "$carry/twtc2" --reps 5 \
  --out "$out/twell_tensor_cores_b_h200.json" 2>&1 | tail -20
