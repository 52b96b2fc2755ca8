#!/usr/bin/env bash
# The runtime and the format library built with ASan and UBSan (clang-22,
# build-asan/) and their unit tests run; any sanitizer report fails the
# test that hit it. Prints "sanitize: N passed, N failed" (test binaries).
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="$root/build-asan"
cd "$root"
"$root/scripts/setup.sh" >/dev/null || exit 1
cmake -S test/Fuzz -B "$out" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_COMPILER=clang++-22 -DSPARSEOPT_FUZZ=OFF >/dev/null || exit 1
ninja -C "$out" >/dev/null || { echo "sanitize: 0 passed, 1 failed (build)"; exit 1; }
export ASAN_OPTIONS="detect_leaks=1:halt_on_error=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
passed=0 failed=0
for t in "$out"/tests/*Tests; do
  if "$t" --gtest_brief=1 >"$t.log" 2>&1; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    echo "sanitize: $(basename "$t") FAILED"; grep -E "ERROR|SUMMARY|FAILED" "$t.log" | head -8
  fi
done
echo "sanitize: $passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
