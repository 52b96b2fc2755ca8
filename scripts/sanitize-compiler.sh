#!/usr/bin/env bash
# The compiler's lit suite under AddressSanitizer and UBSan: builds the whole
# project with clang-22 and -fsanitize=address,undefined into
# build-asan-compiler/ (the LLVM/MLIR libraries are Debian's and are not
# instrumented), then runs lit over it. Too slow for CI on 2 cores (a full
# second build); run it by hand after changing the compiler:
#
#   scripts/sanitize-compiler.sh [lit arguments, e.g. -j1 or a test path]
#
# Python-driven tests load the sanitized compiler library into an
# uninstrumented interpreter, so the script preloads the ASan runtime for
# them (lit.cfg.py, SPARSEOPT_ASAN_PRELOAD). Leak checking is off: MLIR's global registries live until exit.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="${SPARSEOPT_ASAN_BUILD_DIR:-$root/build-asan-compiler}"
"$root/scripts/setup.sh" >/dev/null
san="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-sanitize=vptr -fno-omit-frame-pointer"
# One shared sanitizer runtime for the tools, the libraries and the
# interpreters that load them (a static copy per binary would clash).
rt="$(clang++-22 -print-file-name=libclang_rt.asan-x86_64.so)"
link="-fsanitize=address,undefined -shared-libsan -Wl,-rpath,$(dirname "$rt")"
if [ ! -f "$out/build.ninja" ]; then
  cmake -G Ninja -S "$root" -B "$out" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_COMPILER=clang++-22 -DCMAKE_C_COMPILER=clang-22 \
    -DCMAKE_CXX_FLAGS="$san" -DCMAKE_C_FLAGS="$san" \
    -DCMAKE_EXE_LINKER_FLAGS="$link" -DCMAKE_SHARED_LINKER_FLAGS="$link" \
    -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
    -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit >/dev/null
fi
ninja -C "$out"
export ASAN_OPTIONS="detect_leaks=0:halt_on_error=1:abort_on_error=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
# The interpreters of the Python-driven tests are not instrumented: lit.cfg.py
# preloads the runtime into every test process when this is set.
export SPARSEOPT_ASAN_PRELOAD="$rt"
/usr/lib/llvm-22/bin/lit -sv "$out/test" "$@"
