#!/usr/bin/env bash
# The main job: compile the shipped example model to PTX plus a runtime
# program, print what was generated, and run it where an NVIDIA GPU is present.
#   scripts/run-example.sh [example.mlir] [chip]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${SPARSEOPT_BUILD_DIR:-$root/build}"
example="${1:-$root/examples/linear_relu_24.mlir}"
chip="${2:-sm_90a}"
name="$(basename "$example" .mlir)"
out="$build/examples/$name"

"$root/scripts/setup.sh"
"$root/scripts/build.sh" sparse-opt sparse-opt-run

rm -rf "$out" && mkdir -p "$out"
"$build/bin/sparse-opt" "$example" --sgpu-compile="chip=$chip output-dir=$out" -o "$out/compiled.mlir"

echo "== compiled $example for $chip"
echo "artifacts:  $out"
echo "PTX:        $out/kernels.ptx ($(wc -l < "$out/kernels.ptx") lines)"
echo "program:    $out/program.txt"
echo "kernels generated (sparse MMA instructions in each):"
grep '^kernel ' "$out/summary.txt" | sed 's/^/  /'
grep -v '^kernel ' "$out/summary.txt" || true
echo "runtime program:"
grep -v '^#' "$out/program.txt" | sed 's/^/  /'

if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  echo "== running on $(nvidia-smi -L | head -1)"
  "$build/bin/sparse-opt-run" "$out" --iters 100 --warmup 10
else
  echo "== no NVIDIA GPU here: not run (on a GPU machine: $build/bin/sparse-opt-run $out)"
fi
