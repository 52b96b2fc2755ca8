"""bench/gpu_tests.py: the GPU integration tests split into a compile half
(here) and a check half (on the GPU machine)."""
import json
import pathlib
import shutil
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
import gpu_tests  # noqa: E402


def test_run_lines_joins_continuations(tmp_path):
    f = tmp_path / "t.mlir"
    f.write_text("// RUN: sparse-opt %s \\\n// RUN:   --flag | FileCheck %s\n// not a run line\n"
                 "// RUN: %python %S/check.py %t\n")
    assert gpu_tests.run_lines(f) == ["sparse-opt %s    --flag | FileCheck %s",
                                      "%python %S/check.py %t"]


def test_prepare_compiles_and_keeps_the_checks(build_dir):
    # Under the repository root (the check lines are relative to it), in
    # the ignored .carry/; removed afterwards.
    out = ROOT / ".carry" / "gpu-tests-pytest"
    try:
        _check_prepared(out)
    finally:
        shutil.rmtree(out, ignore_errors=True)


def _check_prepared(out):
    checks, left = gpu_tests.prepare(out, only=("example-linear-relu.mlir",))
    # One checker (FileCheck left out: the checker's exit code decides),
    # with paths relative to the repository root and the runtime from the
    # environment of the GPU machine.
    assert [c["test"] for c in checks] == ["example-linear-relu.mlir"]
    command = checks[0]["command"]
    assert command.startswith("python3 test/Integration/GPU/check_linear_relu.py .carry/gpu-tests-pytest/")
    assert "$SPARSEOPT_LIB_DIR" in command and "%" not in command and "FileCheck" not in command
    # The compile line ran: the artifacts the check reads are there.
    assert (out / "example-linear-relu" / "program.txt").exists()
    # sparse-opt-run needs the CLI on the GPU machine: left for lit, and said.
    assert any("sparse-opt-run" in line for line in left)
    assert json.loads((out / "checks.json").read_text()) == checks


def test_check_counts_failures(tmp_path, capsys):
    (tmp_path / "checks.json").write_text(json.dumps([
        {"test": "a.mlir", "command": "true"},
        {"test": "b.mlir", "command": "echo mismatch; false"}]))
    assert gpu_tests.check(tmp_path) == 1
    out = capsys.readouterr().out
    assert "FAIL b.mlir: mismatch" in out and "1 passed, 1 failed" in out


def test_prepare_keeps_an_env_prefix(build_dir):
    # rmsnorm-mlp-block.mlir runs its checker again under `env NAME=VALUE`
    # (the runtime's gemm autotuning off, its log on): the prefix stays.
    out = ROOT / ".carry" / "gpu-tests-pytest-env"
    try:
        checks, _ = gpu_tests.prepare(out, only=("rmsnorm-mlp-block.mlir",))
        commands = [c["command"] for c in checks]
        assert any(c.startswith("env SPARSEOPT_GEMM_AUTOTUNE=0 SPARSEOPT_GEMM_AUTOTUNE_LOG=1 python3 "
                                "test/Integration/GPU/check_block.py ") for c in commands)
        assert any(c.startswith("env SPARSEOPT_GEMM_AUTOTUNE_LOG=1 python3 ") for c in commands)
        assert all("%" not in c and "FileCheck" not in c for c in commands)
    finally:
        shutil.rmtree(out, ignore_errors=True)
