#!/usr/bin/env bash
# compute-sanitizer over one program of each generated kernel family, on
# the GPU machine. Built on the compiler's machine into .carry/:
#   lib/libsparseopt_runtime.so, bin/sparse-opt-run
#   sanitize/<name>/     python3 bench/sanitizer/compile.py --out .carry/sanitize
#   sanitize_decoder/    python3 bench/model/run_decode.py compile --config small \
#                          --out .carry/sanitize_decoder
# Every program runs once (sparse-opt-run --iters 1 --warmup 0) under each
# tool: memcheck, racecheck, synccheck, initcheck; the decoder (embedding,
# RoPE, cache update, prefill and split-KV decode attention) runs its check
# under memcheck and initcheck. The summary goes to $OUT/sanitizer_h200.txt,
# one line per (program, tool) with compute-sanitizer's error count, then
# the reports of every run that found something. Exit 1 when any did.
source "$(dirname "$0")/../device_env.sh" /tmp/sanitizer-out
export SPARSEOPT_LIB_DIR="$carry/lib" LD_LIBRARY_PATH="$carry/lib:${LD_LIBRARY_PATH:-}"
sanitizer="$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)"
summary="$out/sanitizer_h200.txt"
tools="${SANITIZER_TOOLS:-memcheck racecheck synccheck initcheck}"
limit="${STEP_TIMEOUT:-120}"
status=0
{
  echo "# compute-sanitizer $("$sanitizer" --version | tail -1) on $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)"
  echo "# commit ${SPARSEOPT_COMMIT:-$commit}; program, tool, result"
} > "$summary"
record() {  # name tool log rc
  local errors
  errors="$(grep -Eo 'ERROR SUMMARY: [0-9]+' "$3" | tail -1 | grep -Eo '[0-9]+$' || true)"
  if [ "$4" = 124 ]; then
    echo "$1 $2 TIMEOUT" >> "$summary"; status=1
  elif [ -z "$errors" ] || [ "$4" != 0 ]; then
    echo "$1 $2 FAILED (exit $4, ${errors:-no} errors)" >> "$summary"; status=1
    cp "$3" "$out/"
  elif [ "$errors" != 0 ]; then
    echo "$1 $2 $errors errors" >> "$summary"; status=1
    cp "$3" "$out/"
  else
    echo "$1 $2 clean" >> "$summary"
  fi
}
for dir in "$carry"/sanitize/*/; do
  name="$(basename "$dir")"
  dtype=f16; case "$name" in *bf16*) dtype=bf16;; esac
  grep -q bf16 "$dir/signature.json" && dtype=bf16
  for tool in $tools; do
    log="$out/$name.$tool.log"
    timeout "$limit" "$sanitizer" --tool "$tool" --error-exitcode 99 \
      "$carry/bin/sparse-opt-run" "$dir" --iters 1 --warmup 0 --dtype "$dtype" > "$log" 2>&1
    record "$name" "$tool" "$log" "$?"
  done
  step "$name: $(grep "^$name " "$summary" | cut -d' ' -f2- | tr '\n' ';')"
done
if [ -f "$carry/sanitize_decoder/decoder.json" ]; then
  for tool in memcheck initcheck; do
    log="$out/decoder.$tool.log"
    timeout "$((limit * 3))" "$sanitizer" --tool "$tool" --error-exitcode 99 \
      python3 bench/model/run_decode.py check --dir "$carry/sanitize_decoder" > "$log" 2>&1
    record decoder "$tool" "$log" "$?"
  done
  step "decoder: $(grep '^decoder ' "$summary" | cut -d' ' -f2- | tr '\n' ';')"
fi
cat "$summary"
exit $status
