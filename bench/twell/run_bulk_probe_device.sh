#!/usr/bin/env bash
# The GPU machine's half of two checks:
#  * the tensor-core TwELL consumer against numpy (.carry/tcchk/<name>, as in
#    run_tensor_cores_device.sh) and two gated consumers of one pack
#    (.carry/shared-{tensor-cores,cuda-cores}: test/Target/Inputs/
#    twell-ffn-gated-bf16-shared.mlir compiled with each consumer);
#  * the bulk-copy probe (bench/twell/probe_bulk_rows.cu): the gated CUDA-core
#    consumer's work at d = 2048, F = 5632, M = 16384 with the weight rows
#    brought into shared memory by cp.async.bulk, at 0.5% and 2% active.
source "$(dirname "$0")/../device_env.sh" /tmp/twell-probe-out

step "tensor-core consumer against numpy"
for dir in "$carry"/tcchk/*/; do
  name=$(basename "$dir"); tile=256; [ "$name" = bias ] && tile=64
  python3 test/Integration/GPU/check_twell.py "$dir" build/lib --tile $tile --block-form 2>&1 | tail -1
done
step "two gated consumers of one pack"
python3 test/Integration/GPU/check_twell.py "$carry/shared-tensor-cores" build/lib --block-form 2>&1 | tail -2
python3 test/Integration/GPU/check_twell.py "$carry/shared-cuda-cores" build/lib 2>&1 | tail -2

step "bulk-copy probe"
nvcc -O3 -arch=sm_90a -o /tmp/probe bench/twell/probe_bulk_rows.cu
for a in "0.005 5632" "0.02 5632" "0.005 1408" "0.005 14336"; do /tmp/probe $a | tee -a "$out/probe_bulk_rows.txt"; done

step "the generated consumer in the same session (d = 2048, F = 5632, M = 16384)"
python3 bench/twell/profile_ffn.py --artifact "$carry/tw/gated_bf16_m16384_d2048_f5632" --fractions 0.005,0.02 2>&1 | tail -12
