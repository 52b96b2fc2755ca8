# Sourced by the GPU machine's halves of the benchmarks (bench/*/run_*device.sh)
# with the default results folder as $1: the repository root as the working
# directory, $carry (the artifacts built on the compiler's machine), $out
# ($OUT, else the default; created), the runtime and Python paths, $commit,
# and `step` to title each phase of the log.
set -u
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
carry="$root/.carry"
out="${OUT:-$1}"
mkdir -p "$out"
export SPARSEOPT_LIB_DIR="$root/build/lib" PYTHONPATH="$root/python"
# The commit the artifacts were built from: SPARSEOPT_COMMIT when given (the
# GPU machine's copy of the repository may not be the one that built them).
commit="${SPARSEOPT_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}"
step() { echo "=== $*"; }
