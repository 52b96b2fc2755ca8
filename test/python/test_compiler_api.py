"""The compiler's C API through sparse_opt.compiler (no GPU needed)."""
import json

import pytest

from conftest import EXAMPLE, run_python
from sparse_opt.compiler import CompileError, Diagnostic, compile_mlir, parse_diagnostics, version

ADD = """func.func @f(%a: i32) -> i32 {
  %b = arith.addi %a, %a : i32
  return %b : i32
}
"""

# A 16 x 32 weight with two nonzeros in every group of four (2:4).
_ROW = "[" + ", ".join(["1.0, 0.0, -2.0, 0.0"] * 8) + "]"
LINEAR = """func.func @forward(%x: tensor<8x32xf16>) -> tensor<8x16xf16> {
  %w = arith.constant dense<[""" + ", ".join([_ROW] * 16) + """]> : tensor<16x32xf16, #sgpu.nm<2:4>>
  %zero = arith.constant 0.0 : f16
  %e = tensor.empty() : tensor<8x16xf16>
  %acc = linalg.fill ins(%zero : f16) outs(%e : tensor<8x16xf16>) -> tensor<8x16xf16>
  %y = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
      ins(%x, %w : tensor<8x32xf16>, tensor<16x32xf16, #sgpu.nm<2:4>>) outs(%acc : tensor<8x16xf16>) -> tensor<8x16xf16>
  %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%y : tensor<8x16xf16>) outs(%e : tensor<8x16xf16>) {
  ^bb0(%a: f16, %o: f16):
    %m = arith.maximumf %a, %zero : f16
    linalg.yield %m : f16
  } -> tensor<8x16xf16>
  return %r : tensor<8x16xf16>
}
"""


def test_version(build_dir):
    assert version().startswith("sparse-opt 0.1 (MLIR ")


def test_parse_print_round_trip(compiler):
    m = compiler.parse(ADD)
    text = str(m)
    assert "arith.addi %arg0, %arg0 : i32" in text
    assert str(compiler.parse(text)) == text
    generic = m.print(generic=True)
    assert '"func.func"' in generic and '"arith.addi"' in generic
    assert str(compiler.parse(generic)) == text
    m.verify()


def test_pipeline_changes_the_ir(compiler):
    m = compiler.parse(LINEAR, "linear.mlir")
    assert "linalg.matmul" in str(m)
    m.run("sgpu-slide-sparse,canonicalize")
    text = str(m)
    assert "sgpu.spmm" in text and "linalg.matmul" not in text
    # Anchored and nested pipelines are accepted too.
    m.run("builtin.module(canonicalize)").run("func.func(cse)")


def test_bad_pipelines_are_diagnostics(compiler, capfd):
    m = compiler.parse(ADD)
    with pytest.raises(CompileError) as e:
        m.run("canonicalize,no-such-pass")
    d = e.value.errors[0]
    assert d.file == "<pipeline>"
    assert "'no-such-pass' does not refer to a registered pass" in d.message
    with pytest.raises(CompileError) as e:
        m.run("builtin.module(canonicalize")
    assert (e.value.errors[0].line, e.value.errors[0].col) == (1, 16)
    with pytest.raises(CompileError) as e:
        m.run("canonicalize{max-iterations=abc}")
    assert "'abc' value invalid" in e.value.errors[0].message
    assert str(m) == str(compiler.parse(ADD))  # untouched
    # Nothing reached the process's stdout or stderr.
    assert capfd.readouterr() == ("", "")


def test_syntax_error_has_its_location(compiler):
    bad = "func.func @f() {\n  %x = arith.constant 1 : i32\n  %y = arith.addi %x, %z : i32\n  return\n}\n"
    with pytest.raises(CompileError) as e:
        compiler.parse(bad, "bad.mlir")
    d = e.value.errors[0]
    assert (d.file, d.line, d.col, d.severity) == ("bad.mlir", 3, 23, "error")
    assert "undeclared SSA value name" in d.message
    assert "bad.mlir:3:23: error: " in str(e.value)


def test_verifier_error_has_its_location(compiler):
    bad = """func.func @spmm_k(%x: tensor<4x48xf16>, %c: !sgpu.compressed<16x32xf16, #sgpu.nm<2:4>>) {
  %y = sgpu.spmm %x, %c : tensor<4x48xf16>, !sgpu.compressed<16x32xf16, #sgpu.nm<2:4>> -> tensor<4x16xf16>
  return
}
"""
    with pytest.raises(CompileError) as e:
        compiler.parse(bad, "k.mlir")
    d = e.value.errors[0]
    assert (d.file, d.line, d.col) == ("k.mlir", 2, 8)
    assert "reduction sizes differ: input has K = 48, weight has K = 32" in d.message


@pytest.mark.parametrize("chip,features,message", [
    ("sm_75", "+ptx85", "needs sparse tensor cores"),
    ("sm_90a", "+ptx80", "needs PTX ISA 8.5"),
])
def test_unusable_target_is_a_pass_error(compiler, tmp_path, chip, features, message):
    m = compiler.parse_file(EXAMPLE)
    with pytest.raises(CompileError) as e:
        m.compile(tmp_path / "art", chip=chip, features=features)
    d = e.value.errors[0]
    assert d.file == str(EXAMPLE) and d.line == 14 and d.col > 0
    assert message in d.message
    # The compiler is still usable afterwards.
    assert "func.func @f" in str(compiler.parse(ADD))


def test_compile_the_example(example_artifact):
    out = example_artifact.directory
    ptx = (out / "kernels.ptx").read_text()
    # sm_90a: the warpgroup kernel, its operands loaded through tensor maps.
    assert ".target sm_90a" in ptx and "wgmma.mma_async.sp" in ptx
    program = (out / "program.txt").read_text().splitlines()
    assert any(" tmap:b0:f16:128x256:" in line for line in program)
    assert program[0] == "sparseopt-program 4"
    assert "buffer 0 input 0 65536" in program
    assert any(line.startswith("launch sgpu_spmm_0 grid") for line in program)
    signature = json.loads((out / "signature.json").read_text())
    memory = signature.pop("memory")
    assert signature == {
        "function": "forward",
        "inputs": [{"shape": [128, 256], "dtype": "f16"}],
        "outputs": [{"shape": [128, 512], "dtype": "f16"}],
    }
    # The device bytes by role: X and Y, the compressed weight (constants).
    assert memory["inputs"] == 65536 and memory["outputs"] == 131072 and memory["params"] == 0
    assert memory["peak"] == sum(memory[k] for k in ("params", "inputs", "outputs", "constants",
                                                     "temps", "arena"))
    assert example_artifact.memory == memory
    assert memory["temps_unpacked"] >= memory["temps"] + memory["arena"]
    assert example_artifact.sparse_mma_counts() == {"sgpu_spmm_0": 8}
    assert str(example_artifact.signature) == "forward(f16[128, 256]) -> (f16[128, 512])"
    assert "gpu.binary @sgpu_kernels" in (out / "compiled.mlir").read_text()


def test_compile_mlir_from_text(build_dir, tmp_path):
    art = compile_mlir(LINEAR, tmp_path / "art", chip="sm_80", features="+ptx85")
    assert ".target sm_80" in art.ptx
    assert art.signature.inputs[0].shape == (8, 32)
    assert art.signature.outputs[0].nbytes == 8 * 16 * 2


def test_option_values_are_checked(compiler, tmp_path):
    m = compiler.parse(LINEAR)
    with pytest.raises(CompileError) as e:
        m.compile(tmp_path / "a b")
    assert "without spaces" in e.value.errors[0].message


def test_missing_file_is_a_diagnostic(compiler, tmp_path):
    missing = tmp_path / "none.mlir"
    with pytest.raises(CompileError) as e:
        compiler.parse_file(missing)
    assert e.value.errors[0].file == str(missing)
    assert "cannot read" in e.value.errors[0].message


def test_closing_the_compiler_frees_its_modules(build_dir):
    from sparse_opt.compiler import Compiler
    c = Compiler()
    m = c.parse(ADD)
    c.close()
    with pytest.raises(ValueError):
        str(m)
    with pytest.raises(ValueError):
        c.parse(ADD)


def test_diagnostic_text_parsing():
    text = ("a.mlir:3:5: error: first line\n"
            "    second line\n"
            "  a.mlir:1:1: note: see here\n"
            "<unknown>:0:0: warning: no location\n")
    d = parse_diagnostics(text)
    assert d == [Diagnostic("a.mlir", 3, 5, "error", "first line\nsecond line",
                            [Diagnostic("a.mlir", 1, 1, "note", "see here", [])]),
                 Diagnostic("<unknown>", 0, 0, "warning", "no location", [])]
    assert "\n".join(map(str, d)) + "\n" == text


def test_missing_compiler_library_is_a_clear_error(build_dir, tmp_path):
    r = run_python(
        "import sparse_opt\n"
        "from sparse_opt.compiler import Compiler\n"
        "try:\n"
        "    Compiler()\n"
        "except sparse_opt.LibraryNotFoundError as e:\n"
        "    print(e)\n",
        SPARSEOPT_LIB_DIR=str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert "libsparseopt_compiler.so not found in %s" % tmp_path in r.stdout


# A decode-sized 8:10 layer of the measured size (4096 x 8192 weights) on a
# weight argument: the cost model keeps it dense unless told otherwise.
DECODE_810 = """func.func @layer(%x: tensor<16x8192xf16>, %w: tensor<4096x8192xf16, #sgpu.nm<8:10>>) -> tensor<16x4096xf16> {
  %z = arith.constant 0.0 : f16
  %e = tensor.empty() : tensor<16x4096xf16>
  %acc = linalg.fill ins(%z : f16) outs(%e : tensor<16x4096xf16>) -> tensor<16x4096xf16>
  %y = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
      ins(%x, %w : tensor<16x8192xf16>, tensor<4096x8192xf16, #sgpu.nm<8:10>>) outs(%acc : tensor<16x4096xf16>) -> tensor<16x4096xf16>
  return %y : tensor<16x4096xf16>
}
"""


def test_sparse_policy(build_dir, tmp_path):
    from sparse_opt.compiler import Compiler
    with Compiler() as c:
        art = c.parse(DECODE_810).compile(tmp_path / "auto")
        # Kept dense, said in a remark: one cuBLASLt step, the weight an input.
        assert any(d.severity == "remark" and "kept dense (library GEMM)" in d.message
                   for d in c.last_diagnostics), c.last_diagnostics
    lines = art.program.splitlines()
    assert [l.split()[0] for l in lines if l.split()[0] in ("launch", "gemm")] == ["gemm"]
    assert "buffer 1 input 1 67108864" in lines
    art = compile_mlir(DECODE_810, tmp_path / "sparse", sparse_policy="sparse")
    assert "stage prepare" in art.program and "buffer 1 param 0 67108864" in art.program
    assert "launch sgpu_spmm_0" in art.program and "gemm" not in art.program
    with pytest.raises(ValueError):
        compile_mlir(DECODE_810, tmp_path / "bad", sparse_policy="dense")


def test_compiler_crash_leaves_the_caller_alive(build_dir):
    """The compiler's process dying during a call (here killed, as a crash
    would end it) is a CompileError naming the signal and the input; this
    process lives on and the same Compiler parses the next input in a new
    child process. Modules of the dead one are gone, with a clear error."""
    import signal
    from sparse_opt.compiler import Compiler, CompileError
    with Compiler() as c:
        assert not c.in_process
        before = c.parse("func.func @f() { return }")
        c._engine.proc.send_signal(signal.SIGSEGV)
        c._engine.proc.wait()
        with pytest.raises(CompileError, match=r"the compiler process died \(SIGSEGV\) while parsing "
                                               r"next\.mlir; this process is unaffected"):
            c.parse("func.func @g() { return }", filename="next.mlir")
        with pytest.raises(ValueError, match="compiler process died"):
            before.print()
        assert "func.func @g" in str(c.parse("func.func @g() { return }"))


def test_deep_nesting_is_an_error(build_dir):
    """MLIR's parser recurses per bracket level and overflows its stack on
    input nested ~10,000 deep: more than 1,000 levels is refused before
    parsing, in process too."""
    from sparse_opt.compiler import Compiler, CompileError
    deep = '"builtin.module"() ({' * 20000 + "})" * 20000
    for in_process in (True, False):
        with Compiler(in_process=in_process) as c:
            with pytest.raises(CompileError, match="brackets nested more than 1000 levels deep"):
                c.parse(deep, filename="deep.mlir")
            assert "func.func @g" in str(c.parse('func.func @g() { return } // ((((( "{{{"'))


def test_in_process_compiler(build_dir, monkeypatch):
    """in_process=True (or SPARSEOPT_COMPILE_IN_PROCESS=1) calls the library
    in this process, with the same API."""
    from sparse_opt.compiler import Compiler, CompileError
    with Compiler(in_process=True) as c:
        assert c.in_process
        assert "func.func @f" in str(c.parse("func.func @f() { return }").verify())
        with pytest.raises(CompileError, match="cannot parse bad.mlir"):
            c.parse("func.func @f(", filename="bad.mlir")
    monkeypatch.setenv("SPARSEOPT_COMPILE_IN_PROCESS", "1")
    with Compiler() as c:
        assert c.in_process


def test_parse_takes_text_only(build_dir):
    """Not text (an int would otherwise become that many NUL bytes) is a
    TypeError."""
    from sparse_opt.compiler import Compiler
    with Compiler() as c:
        for bad in (12345, None, ["func.func @f() { return }"]):
            with pytest.raises(TypeError, match="parse takes MLIR text"):
                c.parse(bad)
        assert "func.func @f" in str(c.parse(b"func.func @f() { return }"))


def test_name_only_locations_are_kept(build_dir):
    """A diagnostic at a name-only location (the importers name ops by
    module path) keeps the name, as sparse-opt prints it."""
    from sparse_opt.compiler import Compiler, CompileError
    text = ('func.func @f(%x: tensor<8x64xf16>, %w: tensor<64xf16>) -> tensor<8x64xf16> {\n'
            '  %y = sgpu.rms_norm %x, %w {epsilon = -1.0 : f32} : tensor<8x64xf16>, tensor<64xf16> '
            '-> tensor<8x64xf16> loc("layers.0.norm")\n'
            '  return %y : tensor<8x64xf16>\n}\n')
    with Compiler() as c:
        with pytest.raises(CompileError) as e:
            c.parse(text)
    assert e.value.errors[0].message.startswith('loc("layers.0.norm"): \'sgpu.rms_norm\' op expects')


# 16 x 8 = 128 output tiles of 256 tokens x 128 features: more than an
# H100 PCIe's 114 multiprocessors, fewer than an H200's 132.
WIDE_24 = """func.func @forward(%x: tensor<4096x256xf16>) -> tensor<4096x1024xf16> {
  %w = arith.constant dense<0.0> : tensor<1024x256xf16, #sgpu.nm<2:4>>
  %z = arith.constant 0.0 : f16
  %e = tensor.empty() : tensor<4096x1024xf16>
  %acc = linalg.fill ins(%z : f16) outs(%e : tensor<4096x1024xf16>) -> tensor<4096x1024xf16>
  %y = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>,
                                      affine_map<(m, n, k) -> (n, k)>,
                                      affine_map<(m, n, k) -> (m, n)>]
      ins(%x, %w : tensor<4096x256xf16>, tensor<1024x256xf16, #sgpu.nm<2:4>>)
      outs(%acc : tensor<4096x1024xf16>) -> tensor<4096x1024xf16>
  return %y : tensor<4096x1024xf16>
}
"""


def test_device_sizes_the_persistent_grid(compiler, tmp_path):
    """One chip name (sm_90a) covers parts with 132 and 114
    multiprocessors; `device` (the H200 by default) picks the tiling. Where
    the tiles outnumber the blocks a persistent grid runs, the launch is
    written `persistent:<units>:<cluster>:<reserved>` and the runtime sizes
    it on the device the program loads on (runtime/lib/Manifest.h,
    persistentGridX, pinned by its unit test): one block per
    multiprocessor, whole clusters, no more blocks than units. Fewer tiles
    than multiprocessors: one block per tile, a fixed grid."""
    def grid(device, name):
        art = compiler.parse(WIDE_24).compile(tmp_path / name, device=device)
        launch = next(l for l in (tmp_path / name / "program.txt").read_text().splitlines()
                      if l.startswith("launch sgpu_spmm_0 "))
        assert art.signature.outputs[0].shape == (4096, 1024)
        token = launch.split()[3]
        if not token.startswith("persistent:"):
            return int(token)
        return tuple(int(f) for f in token[len("persistent:"):].split(":"))

    def blocks(grid, multiprocessors):
        units, cluster, reserved = grid
        return cluster * max(1, min(units, (multiprocessors - reserved) // cluster))
    # 128 tiles of 128 x 256 on the H200's tiling: one block each.
    assert grid("", "default") == 128
    assert grid("h200", "h200") == 128
    # Tiled for the H100 PCIe: 256 smaller tiles in clusters of two, more
    # than its 114 multiprocessors: a persistent grid, 114 blocks there and
    # 132 on an H200.
    assert grid("h100-pcie", "pcie") == (128, 2, 0)
    assert blocks((128, 2, 0), 114) == 114
    assert blocks((128, 2, 0), 132) == 132
    with pytest.raises(CompileError) as e:
        compiler.parse(WIDE_24).compile(tmp_path / "bad", device="h300")
    assert "unknown device 'h300' (known: h200, h100-sxm, h100-pcie, a100)" in str(e.value)
    with pytest.raises(CompileError) as e:
        compiler.parse(WIDE_24).compile(tmp_path / "bad2", device="a b")
    assert "without spaces" in str(e.value)
