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
# under memcheck and initcheck, after two checks that say what initcheck
# can see (initcheck_control.py) and that every decoder output element is
# written (decoder_outputs.py). SANITIZER_PARTS="programs" or "decoder"
# runs one half (each fits one 10-minute device call); SANITIZER_TOOLS
# picks tools. The summary goes to $OUT/sanitizer_h200.txt:
# one line per (program, tool) with compute-sanitizer's error count and,
# under one that found errors, the kernels they are in; every log is in
# $OUT/sanitizer_logs.tar.gz. Exit 1 when any run found errors.
source "$(dirname "$0")/../device_env.sh" /tmp/sanitizer-out
export SPARSEOPT_LIB_DIR="$carry/lib" LD_LIBRARY_PATH="$carry/lib:${LD_LIBRARY_PATH:-}"
sanitizer="$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)"
summary="$out/sanitizer_h200.txt"
tools="${SANITIZER_TOOLS:-memcheck racecheck synccheck initcheck}"
parts="${SANITIZER_PARTS:-programs decoder}"  # either or both
# The runtime checks the status of every driver call itself, and expects
# some to fail (it probes cuFuncGetParamInfo one past a kernel's last
# parameter); compute-sanitizer would count those as errors.
common=(--report-api-errors no --error-exitcode 99 --print-limit 100000)
limit="${STEP_TIMEOUT:-120}"
status=0
{
  echo "# compute-sanitizer $("$sanitizer" --version | tail -1) on $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)"
  echo "# commit ${SPARSEOPT_COMMIT:-$commit}; program, tool, result"
} > "$summary"
logs="$out/logs"; mkdir -p "$logs"
record() {  # name tool log rc: one summary line, and where the errors are
  local errors
  errors="$(grep -Eo 'ERROR SUMMARY: [0-9]+' "$3" | tail -1 | grep -Eo '[0-9]+$' || true)"
  if [ "$4" = 124 ]; then
    echo "$1 $2 TIMEOUT" >> "$summary"; status=1
  elif [ "${errors:-0}" = 0 ] && [ "$4" = 0 ]; then
    echo "$1 $2 clean" >> "$summary"
  else
    echo "$1 $2 ${errors:-no} errors (exit $4)" >> "$summary"; status=1
    # by kernel: the first frame of each report
    grep -E '^=========     at ' "$3" | sed -E 's/^=========     at //; s/\+0x[0-9a-f]+$//' | cut -c1-100 |
      sort | uniq -c | sort -rn | head -8 | sed 's/^/    /' >> "$summary"
  fi
}
for dir in "$carry"/sanitize/*/; do
  case " $parts " in *" programs "*) ;; *) break;; esac
  name="$(basename "$dir")"
  dtype=f16; case "$name" in *bf16*) dtype=bf16;; esac
  grep -q bf16 "$dir/signature.json" && dtype=bf16
  for tool in $tools; do
    log="$logs/$name.$tool.log"
    timeout "$limit" "$sanitizer" --tool "$tool" "${common[@]}" \
      "$carry/bin/sparse-opt-run" "$dir" --iters 1 --warmup 0 --dtype "$dtype" > "$log" 2>&1
    record "$name" "$tool" "$log" "$?"
  done
  step "$name: $(grep "^$name " "$summary" | cut -d' ' -f2- | tr '\n' ';')"
done
if [ -f "$carry/sanitize_decoder/decoder.json" ] && [[ " $parts " == *" decoder "* ]]; then
  # initcheck does not see the stores of cuBLASLt's sm90 GEMMs: a tensor
  # that torch.matmul wrote reads as uninitialized (initcheck_control.py,
  # torch alone). The decoder's logits are written by such a GEMM (the LM
  # head), so torch reading them is reported. Its initcheck reports are
  # recorded as that false positive when the control reproduces it, none
  # is in a SparseOpt kernel, and decoder_outputs.py shows every element of
  # every output written (outputs filled with NaN first).
  log="$logs/control.initcheck.log"
  timeout "$limit" "$sanitizer" --tool initcheck "${common[@]}" python3 bench/sanitizer/initcheck_control.py \
    > "$log" 2>&1
  control_rc=$?
  control="$(grep -Eo 'ERROR SUMMARY: [0-9]+' "$log" | tail -1 | grep -Eo '[0-9]+$' || echo 0)"
  echo "control-cublas initcheck $control reports (torch alone: a fresh 512x128 bf16 tensor written by" \
       "torch.matmul, then read; exit $control_rc)" >> "$summary"
  grep -E '^kernel: ' <(python3 bench/sanitizer/initcheck_control.py --kernels 2>&1) | grep -v 'Activity\|Lazy\|cu[A-Z]\|cuda[A-Z]' |
    sed 's/^/    /' >> "$summary" || true
  log="$logs/decoder.outputs.log"
  timeout "$limit" python3 bench/sanitizer/decoder_outputs.py --dir "$carry/sanitize_decoder" > "$log" 2>&1
  outputs_rc=$?
  sed 's/^/decoder-outputs /' < <(grep -E 'written|GAP' "$log") >> "$summary"
  [ "$outputs_rc" = 0 ] || status=1
  for tool in memcheck initcheck; do
    log="$logs/decoder.$tool.log"
    timeout "$((limit * 3))" "$sanitizer" --tool "$tool" "${common[@]}" \
      python3 bench/model/run_decode.py check --dir "$carry/sanitize_decoder" > "$log" 2>&1
    rc=$?
    errors="$(grep -Eo 'ERROR SUMMARY: [0-9]+' "$log" | tail -1 | grep -Eo '[0-9]+$' || echo 0)"
    if [ "$tool" = initcheck ] && [ "$rc" = 99 ] && [ "$outputs_rc" = 0 ] && [ "$control" -gt 0 ] &&
       ! grep -qE '^=========     at .*sgpu_' "$log"; then
      echo "decoder initcheck false positive: $errors reads by torch kernels, none in a SparseOpt kernel," \
           "of outputs a cuBLASLt GEMM wrote (control-cublas; every element written: decoder-outputs)" >> "$summary"
      grep -E '^=========     at ' "$log" | sed -E 's/^=========     at //; s/\+0x[0-9a-f]+$//' | cut -c1-100 |
        sort | uniq -c | sort -rn | head -4 | sed 's/^/    /' >> "$summary"
    else
      record decoder "$tool" "$log" "$rc"
    fi
  done
  step "decoder: $(grep '^decoder' "$summary" | cut -d' ' -f2- | tr '\n' ';')"
fi
tar czf "$out/sanitizer_logs.tar.gz" -C "$out" logs && rm -rf "$logs"
cat "$summary"
exit $status
