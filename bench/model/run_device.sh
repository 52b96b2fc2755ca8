#!/usr/bin/env bash
# The GPU machine's half of the whole-model checks and timings. Everything
# it needs was built on the compiler's machine into .carry/:
#   lib/            libsparseopt_runtime.so
#   attn/           python3 bench/model/check_attention.py compile --out .carry/attn
#   fixtures/       python3 bench/model/check_fixtures.py compile --out .carry/fixtures
#   added_cache/    python3 bench/model/check_added_cache.py compile --out .carry/added_cache
#   <config>__<variant>/
#                   python3 bench/model/run_prefill.py compile --config <config> \
#                     --variant <variant> --out .carry/<config>__<variant>
#   decode__<config>__<variant>/
#                   python3 bench/model/run_decode.py compile --config <config> \
#                     --variant <variant> --out .carry/decode__<config>__<variant>
#                   (teacher-forced decode check and the ragged batch)
#   decode_time__<config>/
#                   python3 bench/model/run_decode.py compile --config <config> \
#                     --max-batch 64 --capacity 4096 --prefill 1x16 \
#                     --decode-batches 1,8,64 [--attention-config lanes_per_key=16,unroll=2] \
#                     --out .carry/decode_time__<config>[_<suffix>]
#                   (timed with a per-kernel profile of each side)
#   ab/<config>[__<variant>]/
#                   the same model compiled another way (e.g. run_decode.py
#                   compile ... --attention-config kernel=decode), timed
#                   beside decode_time__<config>[__<variant>] in one process
# Runs every case it finds and fails (exit 1) when any check fails; results
# (JSON records and logs) go to $OUT (default /tmp/model-out).
source "$(dirname "$0")/../device_env.sh" /tmp/model-out
# The commit the artifacts were built from: pass SPARSEOPT_COMMIT when the
# machine's copy of the repository does not carry it.
export SPARSEOPT_LIB_DIR="$carry/lib" SPARSEOPT_COMMIT="${SPARSEOPT_COMMIT:-$commit}"
# NCCL (the combo variant's all-reduces at TP 1) comes from torch's wheel;
# never NVLink multicast on shared hosts.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
nccl_lib="$(python3 -c 'import nvidia.nccl as n, os; print(os.path.join(list(n.__path__)[0], "lib"))')"
export LD_LIBRARY_PATH="$carry/lib:$nccl_lib:${LD_LIBRARY_PATH:-}"
# Records are named by the GPU they ran on (h200, or h100 where only an
# H100 could be had).
gpu="$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | grep -q H100 && echo h100 || echo h200)"
status=0
# Each step is bounded, so one that hangs fails its step instead of using up
# the machine's time (exit 124 counts as a failure).
limit="${STEP_TIMEOUT:-420}"
run() { timeout "$limit" python3 -u "$@"; }

if [ -d "$carry/modelops" ]; then
  step "library attention, fused residual norm and RoPE against numpy"
  (cd test/Integration/GPU && timeout "$limit" python3 -u check_model_ops.py "$carry/lib" "$carry/modelops") || status=1
fi
if [ -d "$carry/attn" ]; then
  step "attention kernels against torch"
  run bench/model/check_attention.py run --dir "$carry/attn" --json "$out/attention_${gpu}.json" || status=1
fi
if [ -d "$carry/fixtures" ]; then
  step "the importers' export fixtures against torch"
  run bench/model/check_fixtures.py run --dir "$carry/fixtures" --json "$out/fixtures_${gpu}.json" || status=1
fi
if [ -d "$carry/added_cache" ]; then
  step "a KV cache added to a cache-less decoder"
  run bench/model/check_added_cache.py run --dir "$carry/added_cache" --json "$out/added_cache_${gpu}.json" || status=1
fi
for dir in "$carry"/decode__*/; do
  [ -f "$dir/decoder.json" ] || continue
  name="$(basename "$dir")"
  step "decode check: ${name#decode__}"
  run bench/model/run_decode.py check --dir "$dir" --json "$out/model_${name}_${gpu}.json" || status=1
done
# A decode set for batches above 8 (a KV cache of 64 x 4096 positions, on
# top of torch's copy of the model) needs an H200's memory: on an H100 it is
# reported as not run, and the set built with --max-batch 8 runs instead.
gpu_gib="$(nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits | head -1)"
gpu_gib=$((gpu_gib / 1024))
for dir in "$carry"/decode_time__*/; do
  [ -f "$dir/decoder.json" ] || continue
  name="$(basename "$dir")"
  max_batch="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["max_batch"])' "$dir/decoder.json")"
  if [ "$max_batch" -gt 8 ] && [ "$gpu_gib" -lt 100 ]; then
    echo "=== decode timing: ${name#decode_time__}: NOT RUN (max batch $max_batch needs more than ${gpu_gib} GiB)"
    continue
  fi
  step "decode timing: ${name#decode_time__}"
  # torch.compile beside the dense program only (the sparse variants' bars
  # are ratios to our dense); DECODE_AB_ENV=NAME=VALUE also times each
  # program loaded under that setting, in the same process.
  extra=()
  case "$name" in
    *__24|*__68) extra=(--no-torch-compile) ;;
  esac
  [ -n "${DECODE_AB_ENV:-}" ] && extra+=(--ab-env "$DECODE_AB_ENV")
  # ab/<config>[__<variant>]/: the same model compiled another way, timed
  # beside this set in the same process (run_decode.py --ab-dir).
  ab_dir="$carry/ab/${name#decode_time__}"
  [ -f "$ab_dir/decoder.json" ] && extra+=(--ab-dir "$ab_dir")
  run bench/model/run_decode.py time --dir "$dir" --context 2048 --profile \
    ${extra[@]+"${extra[@]}"} --json "$out/model_${name}_${gpu}.json" || status=1
done
for dir in "$carry"/*__*/; do
  name="$(basename "$dir")"
  [ -f "$dir/program.txt" ] || continue
  config="${name%%__*}"; variant="${name#*__}"
  case "$variant" in 24) variant="2:4";; 68) variant="6:8";; esac
  step "prefill: $config $variant"
  # torch.compile only beside the dense program: the sparse variants' bars
  # are ratios to our dense prefill, and compiling costs minutes a form.
  compiled=(); [ "$variant" = dense ] || compiled=(--no-torch-compile)
  run bench/model/run_prefill.py run --config "$config" --variant "$variant" --dir "$dir" \
    --profile ${compiled[@]+"${compiled[@]}"} --json "$out/model_${name}_${gpu}.json" || status=1
done
exit $status
