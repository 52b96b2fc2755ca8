#!/usr/bin/env bash
# Runs every SparseOpt test: the lit suite (IR, PTX, CPU numerics, GPU tests
# where a GPU is present), the GoogleTest unit tests (through lit), the
# Python tests (pytest), the fuzz targets with fixed seeds (scripts/fuzz.sh)
# and the runtime's and format library's unit tests under ASan and UBSan
# (scripts/sanitize.sh). Ends with one line "N passed, N failed"; exits
# non-zero when anything failed or nothing ran.
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${SPARSEOPT_BUILD_DIR:-$root/build}"
cd "$root"

"$root/scripts/setup.sh" || exit 1
"$root/scripts/build.sh" || { echo "0 passed, 1 failed (build)"; exit 1; }

log="$build/test-results"
mkdir -p "$log"

# lit: the main suite and the unit-test suite in one run.
/usr/lib/llvm-22/bin/lit -v "$build/test" "$build/test/Unit" 2>&1 | tee "$log/lit.txt"
lit_rc=${PIPESTATUS[0]}

# pytest through Debian's interpreter (the one with numpy/pytest).
SPARSEOPT_BUILD_DIR="$build" /usr/bin/python3 -m pytest -q "$root/test/python" 2>&1 | tee "$log/pytest.txt"
py_rc=${PIPESTATUS[0]}

# The fuzz targets (fixed seeds, bounded runs) and the sanitized runtime and
# format-library unit tests: one result line each.
"$root/scripts/fuzz.sh" 2>&1 | tee "$log/fuzz.txt"
fuzz_rc=${PIPESTATUS[0]}
"$root/scripts/sanitize.sh" 2>&1 | tee "$log/sanitize.txt"
san_rc=${PIPESTATUS[0]}
fuzz_pass=$(grep -c ' clean (' "$log/fuzz.txt")
fuzz_fail=$(grep -c 'FOUND A CRASH\|fails on a kept reproducer' "$log/fuzz.txt")
san_pass=$(sed -nE 's/^sanitize: ([0-9]+) passed.*/\1/p' "$log/sanitize.txt" | tail -1)
san_fail=$(sed -nE 's/^sanitize: [0-9]+ passed, ([0-9]+) failed.*/\1/p' "$log/sanitize.txt" | tail -1)
extra_pass=$(( fuzz_pass + ${san_pass:-0} ))
extra_fail=$(( fuzz_fail + ${san_fail:-0} ))
# A script that failed without saying which part did (setup, build) counts.
if [ "$fuzz_rc" -ne 0 ] && [ "$fuzz_fail" -eq 0 ]; then extra_fail=$((extra_fail + 1)); fi
if [ "$san_rc" -ne 0 ] && [ "${san_fail:-0}" -eq 0 ]; then extra_fail=$((extra_fail + 1)); fi

# Sum the numbers that precede a label in a log ("Passed: 3" from lit,
# "3 passed" from pytest).
lit_count() { sed -nE "s/^ *$2 *: *([0-9]+).*/\1/p" "$1" | awk '{s += $1} END {print s + 0}'; }
py_count() { grep -oE "[0-9]+ $2" "$1" | awk '{s += $1} END {print s + 0}'; }
lit_pass=$(( $(lit_count "$log/lit.txt" 'Passed') + $(lit_count "$log/lit.txt" 'Expectedly Failed') ))
lit_fail=$(( $(lit_count "$log/lit.txt" 'Failed') + $(lit_count "$log/lit.txt" 'Unexpectedly Passed') + $(lit_count "$log/lit.txt" 'Unresolved') + $(lit_count "$log/lit.txt" 'Timed Out') ))
lit_unsup=$(( $(lit_count "$log/lit.txt" 'Unsupported') + $(lit_count "$log/lit.txt" 'Skipped') ))
py_pass=$(py_count "$log/pytest.txt" 'passed')
py_fail=$(( $(py_count "$log/pytest.txt" 'failed') + $(py_count "$log/pytest.txt" 'errors?') ))

passed=$((lit_pass + py_pass + extra_pass))
failed=$((lit_fail + py_fail + extra_fail))
# A tool that failed without reporting counts (crash, nothing collected: pytest exits 5).
if [ "$lit_rc" -ne 0 ] && [ "$lit_fail" -eq 0 ]; then failed=$((failed + 1)); fi
if [ "$py_rc" -ne 0 ] && [ "$py_fail" -eq 0 ]; then failed=$((failed + 1)); fi

echo "lit: $lit_pass passed, $lit_fail failed, $lit_unsup unsupported or skipped (no GPU); pytest: $py_pass passed, $py_fail failed; fuzz and sanitized unit tests: $extra_pass passed, $extra_fail failed"
echo "$passed passed, $failed failed"
if [ "$failed" -ne 0 ] || [ "$passed" -eq 0 ] || [ "$py_pass" -eq 0 ]; then
  exit 1
fi
