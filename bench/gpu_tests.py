#!/usr/bin/env python3
"""The GPU integration tests (test/Integration/GPU/*.mlir) split in two
halves, for a GPU machine that has the runtime but not the compiler:

  python3 bench/gpu_tests.py prepare --out .carry/gpu-tests   # here: compiles
  python3 bench/gpu_tests.py check --dir .carry/gpu-tests     # there: runs

`prepare` runs each test's compile lines (sparse-opt with its %t under
--out) and writes the check lines (the %python checkers, FileCheck left
out: every checker exits non-zero on a mismatch; an `env NAME=VALUE`
prefix stays) to checks.json. A line
that needs the compiler at run time (check_lift.py --compile) or the
sparse-opt-run binary stays for lit on a machine with both; `prepare`
lists those. `check` runs every check line from the repository root with
the runtime of $SPARSEOPT_LIB_DIR, prints one line per check and exits 1
when any fails.
"""
import argparse
import json
import os
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
TESTS = ROOT / "test" / "Integration" / "GPU"


def run_lines(path):
    """The RUN lines of a test, continuations joined."""
    lines, current = [], ""
    for line in path.read_text().splitlines():
        m = re.match(r"\s*//\s*RUN:\s?(.*)$", line)
        if not m:
            continue
        part = m.group(1).rstrip()
        if part.endswith("\\"):
            current += part[:-1] + " "
            continue
        lines.append(current + part)
        current = ""
    return lines


def substitute(line, tmp):
    return (line.replace("%sparse_opt_src", str(ROOT)).replace("%S", str(TESTS))
            .replace("%t", str(tmp)).replace("%python", sys.executable))


def prepare(out, only=()):
    """Compiles every test's artifacts under `out` (or only the tests named
    in `only`); returns the check lines and the lines left for lit."""
    out = out.resolve()
    checks, left = [], []
    for test in sorted(TESTS.glob("*.mlir")):
        if only and test.name not in only:
            continue
        tmp = out / test.stem
        for line in run_lines(test):
            for command in (c.strip() for c in line.split("&&")):
                command = command.split("| FileCheck")[0].strip()
                # A checker, maybe after `env NAME=VALUE ...` (kept: the shell runs it).
                if re.match(r"(env (\S+=\S+ )+)?%python", command) and "--compile" not in command:
                    rel = command.replace("%t", str(tmp.relative_to(ROOT))).replace(
                        "%S", str(TESTS.relative_to(ROOT))).replace("%python", "python3")
                    checks.append({"test": test.name, "command": rel.replace(
                        "%sparse_opt_lib", "$SPARSEOPT_LIB_DIR")})
                elif command.startswith("sparse-opt "):
                    full = substitute(command, tmp).replace(
                        "sparse-opt ", str(ROOT / "build" / "bin" / "sparse-opt") + " ", 1)
                    subprocess.run(full, shell=True, check=True, cwd=ROOT,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                elif command.startswith(("rm ", "mkdir ")):
                    subprocess.run(substitute(command, tmp), shell=True, check=True, cwd=ROOT)
                else:
                    left.append("%s: %s" % (test.name, command))
    out.mkdir(parents=True, exist_ok=True)
    (out / "checks.json").write_text(json.dumps(checks, indent=1) + "\n")
    print("%d checks prepared in %s" % (len(checks), out))
    for line in left:
        print("left for lit (needs the compiler or sparse-opt-run there): " + line)
    return checks, left


def check(directory):
    checks = json.loads((directory / "checks.json").read_text())
    failed = 0
    for c in checks:
        r = subprocess.run(c["command"], shell=True, cwd=ROOT, capture_output=True, text=True,
                           env=dict(os.environ))
        tail = (r.stdout + r.stderr).strip().splitlines()[-1:] or [""]
        print("%-4s %s: %s" % ("ok" if r.returncode == 0 else "FAIL", c["test"], tail[0][:150]))
        failed += r.returncode != 0
    print("%d passed, %d failed" % (len(checks) - failed, failed))
    return 1 if failed else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("--out", type=pathlib.Path, required=True)
    p.add_argument("--only", nargs="*", default=(), help="test file names (all when omitted)")
    c = sub.add_parser("check")
    c.add_argument("--dir", type=pathlib.Path, required=True)
    args = ap.parse_args()
    if args.cmd == "prepare":
        prepare(args.out, args.only)
        return 0
    return check(args.dir)


if __name__ == "__main__":
    sys.exit(main())
