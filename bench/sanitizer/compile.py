#!/usr/bin/env python3
"""Compiles one program of each generated kernel family for the
compute-sanitizer run on the GPU machine (bench/sanitizer/run_device.sh):
every `sparse-opt ... --sgpu-compile=...` line of the kernel-family tests in
test/Target and test/Integration/GPU (spmm modes and lifts, TwELL packs and
consumers, norms, element-wise, attention), compiled the way the test
compiles it, into
OUT/<test>_<n>/. Programs whose inputs are token ids or positions (the
decoders' embedding, RoPE, cache and decode-attention kernels) are checked
through the decoder instead (run_device.sh, with the small decoder that
`bench/model/run_decode.py compile --config small` writes).

  python3 bench/sanitizer/compile.py --out .carry/sanitize
"""
import argparse
import pathlib
import re
import shlex
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]


def compile_lines(test):
    """(passes before it, options, input path) of each sgpu-compile RUN
    line of `test`."""
    for line in test.read_text().splitlines():
        m = re.match(r"// RUN: (?:rm -rf %t && )?sparse-opt (\S+) ((?:--[\w-]+=\"[^\"]*\" )*)"
                     r"--sgpu-compile=\"([^\"]*)\"", line)
        if not m:
            continue
        src = m.group(1).replace("%sparse_opt_src", str(ROOT)).replace("%S", str(test.parent)).replace(
            "%s", str(test))
        options = re.sub(r"\s*output-dir=\S+", "", m.group(3)).strip()
        yield tuple(shlex.split(m.group(2))), options, pathlib.Path(src)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--sparse-opt", default=str(ROOT / "build" / "bin" / "sparse-opt"))
    ap.add_argument("--max-per-test", type=int, default=4,
                    help="programs compiled from one test at most (the first ones)")
    args = ap.parse_args()
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    seen, failed = set(), 0
    tests = sorted((ROOT / "test" / "Target").glob("*.mlir")) + sorted(
        (ROOT / "test" / "Integration" / "GPU").glob("*.mlir"))
    for test in tests:
        for n, (before, options, src) in enumerate(compile_lines(test)):
            if (before, options, src) in seen or n >= args.max_per_test:
                continue
            seen.add((before, options, src))
            name = "%s_%d" % (test.stem, n)
            opts = (options + " " if options else "") + "output-dir=%s" % (out / name)
            cmd = [args.sparse_opt, str(src), *before, "--sgpu-compile=%s" % opts, "-o", "/dev/null"]
            r = subprocess.run(cmd, capture_output=True, text=True)
            print("%-40s %s" % (name, "ok" if r.returncode == 0 else "FAILED: " + shlex.join(cmd)))
            if r.returncode != 0:
                print(r.stderr[-2000:])
                failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
