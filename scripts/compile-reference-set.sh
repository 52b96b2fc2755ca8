#!/usr/bin/env bash
# Compiles the reference set of artifacts into OUT with the current build:
# the spmm issue grid (every case sparse, and with the compiler's own
# sparse-or-dense choice), one program of each kernel family (the
# compute-sanitizer set), the TwELL benchmark FFNs with every consumer and
# producer mode, the ladder block stack, and the small decoders' prefill
# and decode programs. A refactoring that should not change the
# instruction stream must leave all of it byte-identical:
#
#   scripts/compile-reference-set.sh /tmp/before   # on the old commit
#   scripts/compile-reference-set.sh /tmp/after    # on the new one
#   diff -r /tmp/before /tmp/after
#
# Times are dropped from what is compared: bench.json's compile time and
# the PTX translation's time that compiled.mlir records.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="${1:?usage: scripts/compile-reference-set.sh OUT}"
rm -rf "$out" && mkdir -p "$out"
py=/usr/bin/python3
cd "$root"
$py bench/spmm/make_cases.py --set issue --out "$out/spmm-sparse" -j 2 >/dev/null
$py bench/spmm/make_cases.py --set issue --policy auto --out "$out/spmm-auto" -j 2 >/dev/null
$py bench/sanitizer/compile.py --out "$out/families" >/dev/null
$py bench/twell/make_ffn.py --out "$out/twell" --fused --fused-cluster --tensor-cores --tensor-cores-tma \
  --pack-consumer --passes 3 >/dev/null
$py bench/ladder/make_stack.py --out "$out/ladder" >/dev/null
for config in small small_gpt2; do
  $py bench/model/run_decode.py compile --config "$config" --out "$out/decoder-$config" >/dev/null
done
# What differs from run to run without meaning anything.
find "$out" -name bench.json -exec $py -c '
import json, sys
for p in sys.argv[1:]:
    d = json.load(open(p)); d.pop("seconds", None)
    open(p, "w").write(json.dumps(d, sort_keys=True) + "\n")' {} +
find "$out" -name compiled.mlir -exec sed -i -E 's/LLVMIRToISATimeInMs = [0-9]+/LLVMIRToISATimeInMs = 0/' {} +
find "$out" -type f | wc -l | sed "s|^|$out: |; s|$| files|"
