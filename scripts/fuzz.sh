#!/usr/bin/env bash
# The fuzz targets of test/Fuzz (libFuzzer, clang-22):
#   program-parser-fuzzer  the runtime's program parser (ASan, UBSan)
#   compiler-fuzzer        parse -> verify -> sgpu-compile (C API)
#
#   scripts/fuzz.sh              CI: fixed seed, a bounded number of runs per
#                                target over the seed corpus and the kept
#                                reproducers; fails on any crash or hang
#   scripts/fuzz.sh --long [S]   fresh seeds for S seconds per target
#                                (default 600); new crashes are written to
#                                build-fuzz/crashes/<target>/
# Seeds: the lit inputs (split at `// -----`) and the compiled examples'
# program.txt. Reproducers that were found are kept in
# test/Fuzz/regressions/<target>/ and run every time.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${SPARSEOPT_BUILD_DIR:-$root/build}"
fz="$root/build-fuzz"
mode="${1:-ci}"
seconds="${2:-600}"
cd "$root"

"$root/scripts/setup.sh" >/dev/null
[ -f "$build/lib/libsparseopt_compiler.so" ] || "$root/scripts/build.sh"

cmake -S test/Fuzz -B "$fz" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_COMPILER=clang++-22 \
  -DSPARSEOPT_COMPILER_LIB="$build/lib/libsparseopt_compiler.so" >/dev/null
ninja -C "$fz" program-parser-fuzzer compiler-fuzzer >/dev/null

# Seed corpora, rebuilt each time (cheap).
seeds="$fz/seeds"
rm -rf "$seeds" && mkdir -p "$seeds/compiler-fuzzer" "$seeds/program-parser-fuzzer"
/usr/bin/python3 - "$seeds/compiler-fuzzer" <<'PY'
import pathlib, sys
out = pathlib.Path(sys.argv[1])
root = pathlib.Path.cwd()
n = 0
for d in ("test/Dialect", "test/Conversion", "test/Transforms", "test/Target", "examples"):
    for f in sorted((root / d).rglob("*.mlir")):
        for chunk in f.read_text().split("// -----"):
            if chunk.strip() and len(chunk) < 20000:
                (out / ("%04d.mlir" % n)).write_text(chunk)
                n += 1
PY
for ex in examples/*.mlir; do
  tmp="$(mktemp -d)"
  if "$build/bin/sparse-opt" "$ex" --sgpu-compile="output-dir=$tmp" -o /dev/null 2>/dev/null; then
    cp "$tmp/program.txt" "$seeds/program-parser-fuzzer/$(basename "$ex" .mlir).txt"
  fi
  rm -rf "$tmp"
done

export ASAN_OPTIONS="detect_leaks=0:allocator_may_return_null=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
status=0
for target in program-parser-fuzzer compiler-fuzzer; do
  regressions="test/Fuzz/regressions/$target"
  work="$fz/corpus/$target"; rm -rf "$work"; mkdir -p "$work" "$fz/crashes/$target"
  cp "$seeds/$target"/* "$work"/ 2>/dev/null || true
  # The kept reproducers, once each.
  if compgen -G "$regressions/*" >/dev/null; then
    "$fz/$target" -timeout=20 -rss_limit_mb=6144 "$regressions"/* >"$fz/$target.regressions.log" 2>&1 ||
      { echo "fuzz: $target fails on a kept reproducer (see $fz/$target.regressions.log)"; status=1; }
  fi
  if [ "$mode" = "--long" ]; then
    args=(-max_total_time="$seconds")
  else
    # Fixed seed and run count: the same inputs every CI run.
    case "$target" in
      program-parser-fuzzer) args=(-seed=1 -runs=200000) ;;
      compiler-fuzzer) args=(-seed=1 -runs=4000) ;;
    esac
  fi
  if "$fz/$target" "${args[@]}" -timeout=20 -rss_limit_mb=6144 -max_len=16384 \
       -artifact_prefix="$fz/crashes/$target/" "$work" >"$fz/$target.log" 2>&1; then
    echo "fuzz: $target clean ($(grep -Eo '#[0-9]+' "$fz/$target.log" | tail -1 | tr -d '#') inputs)"
  else
    echo "fuzz: $target FOUND A CRASH (log $fz/$target.log, input in $fz/crashes/$target/)"
    grep -E "ERROR|SUMMARY|deadly signal" "$fz/$target.log" | head -5
    status=1
  fi
done
exit $status
