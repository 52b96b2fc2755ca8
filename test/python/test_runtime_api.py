"""sparse_opt.runtime without a GPU: imports on the runtime library alone,
reports a missing driver, checks arguments against the signature, splits
params from inputs, matches params to a module's tensors by name."""
import json
import pathlib
import re
import shutil

import pytest

from conftest import run_python
from sparse_opt import runtime
from sparse_opt.artifact import ArtifactError, Signature, TensorSpec, element_bytes


class FakeCudaArray:
    """Exposes __cuda_array_interface__ (the pointer is never dereferenced)."""

    def __init__(self, shape, typestr="<f2", strides=None, ptr=0x10000):
        self.__cuda_array_interface__ = {"shape": tuple(shape), "typestr": typestr,
                                         "data": (ptr, False), "strides": strides,
                                         "version": 3}


@pytest.fixture
def runtime_only_dir(build_dir, tmp_path):
    """A folder holding only libsparseopt_runtime.so (a GPU machine)."""
    lib = tmp_path / "lib"
    lib.mkdir()
    shutil.copy(build_dir / "lib" / "libsparseopt_runtime.so", lib)
    return lib


def test_imports_with_only_the_runtime_library(runtime_only_dir, example_artifact, tmp_path):
    # torch "is not installed": importing it fails.
    blocked = tmp_path / "blocked"
    blocked.mkdir()
    (blocked / "torch.py").write_text("raise ImportError('torch is not installed here')\n")
    r = run_python(
        "import sys\n"
        "sys.path.insert(0, %r)\n"
        "import sparse_opt, sparse_opt.runtime as rt\n"
        "p = rt.parse(%r)\n"
        "print(p.input_bytes, p.output_bytes, p.kernels)\n"
        "maps = open('/proc/self/maps').read()\n"
        "assert 'libsparseopt_runtime' in maps\n"
        "assert 'libsparseopt_compiler' not in maps and 'libMLIR' not in maps, maps\n"
        "assert 'torch' not in sys.modules\n"
        "print('ok')\n" % (str(blocked), str(example_artifact.directory)),
        SPARSEOPT_LIB_DIR=str(runtime_only_dir))
    assert r.returncode == 0, r.stderr
    assert r.stdout.split("\n")[:2] == ["[65536] [131072] ['sgpu_spmm_0']", "ok"]


def test_load_without_a_driver_names_it(runtime_only_dir, example_artifact):
    r = run_python(
        "import sparse_opt.runtime as rt\n"
        "try:\n"
        "    rt.load(%r)\n"
        "except rt.NoDriverError as e:\n"
        "    assert isinstance(e, RuntimeError)\n"
        "    print(e.status_name)\n"
        "    print(e.message)\n" % str(example_artifact.directory),
        SPARSEOPT_LIB_DIR=str(runtime_only_dir),
        SPARSEOPT_CUDA_LIBRARY="/nonexistent/libcuda.so.1")
    assert r.returncode == 0, r.stderr
    name, message = r.stdout.split("\n")[:2]
    assert name == "SPARSEOPT_ERROR_NO_DRIVER"
    assert "CUDA driver library /nonexistent/libcuda.so.1 not found" in message


def test_program_cut_short_is_refused(example_artifact, tmp_path):
    """A compiled program.txt cut before its last line (an interrupted copy)
    is a ProgramFileError that says so, not a shorter program."""
    import shutil
    cut = tmp_path / "cut"
    shutil.copytree(example_artifact.directory, cut)
    lines = (cut / "program.txt").read_text().splitlines(keepends=True)
    assert lines[-1] == "end\n"
    (cut / "program.txt").write_text("".join(lines[:-1]))
    with pytest.raises(runtime.ProgramFileError) as e:
        runtime.parse(cut)
    assert "no 'end' line: the file is cut short" in str(e.value)


def test_corrupt_program_is_a_parse_error_before_the_driver(runtime_only_dir, example_artifact, tmp_path):
    """A corrupt program.txt is reported as what it is, also on a machine
    without a driver (the program is parsed before the GPU is looked for)."""
    import shutil
    bad = tmp_path / "bad"
    shutil.copytree(example_artifact.directory, bad)
    text = (bad / "program.txt").read_text().replace("launch ", "launch 9", 1)
    (bad / "program.txt").write_text(text)
    r = run_python(
        "import sparse_opt.runtime as rt\n"
        "try:\n"
        "    rt.load(%r)\n"
        "except rt.ProgramFileError as e:\n"
        "    print(e.status_name)\n"
        "    print(e.message)\n" % str(bad),
        SPARSEOPT_LIB_DIR=str(runtime_only_dir),
        SPARSEOPT_CUDA_LIBRARY="/nonexistent/libcuda.so.1")
    assert r.returncode == 0, r.stderr
    name, message = r.stdout.split("\n")[:2]
    assert name == "SPARSEOPT_ERROR_PARSE"
    assert "is not a PTX identifier" in message


def test_signature_checks(example_artifact):
    specs = example_artifact.signature.inputs
    ok = runtime.describe(FakeCudaArray((128, 256)))
    runtime.check_arguments(specs, [ok], "input", 0)

    def rejects(args, message, role="input"):
        with pytest.raises(runtime.SignatureError) as e:
            runtime.check_arguments(specs, args, role, 0)
        assert message in str(e.value)

    rejects([runtime.describe(FakeCudaArray((128, 255)))],
            "input 0 has shape [128, 255], expected [128, 256]")
    rejects([runtime.describe(FakeCudaArray((128, 256), "<f4"))],
            "input 0 has element type f32, expected f16")
    rejects([], "the program takes 1 input, got 0")
    rejects([ok, ok], "the program takes 1 input, got 2")
    rejects([ok._replace(device="cpu")], "input 0 is on cpu; the program runs on cuda:0")
    rejects([ok._replace(device="cuda:1")], "input 0 is on cuda:1")
    rejects([runtime.describe(FakeCudaArray((128, 256), strides=(2, 256)))],
            "input 0 is not contiguous")
    # A torch input may be non-contiguous (it is copied), an output may not.
    runtime.check_arguments(specs, [ok._replace(contiguous=False, is_torch=True)], "input", 0)
    rejects([ok._replace(contiguous=False, is_torch=True)], "output 0 is not contiguous", "output")
    # Buffers must be 16-byte aligned (16-byte vector accesses): a misaligned
    # array is not usable as it is; a torch input would be copied.
    assert runtime.describe(FakeCudaArray((128, 256), ptr=0x10000)).contiguous
    assert not runtime.describe(FakeCudaArray((128, 256), ptr=0x10008)).contiguous
    rejects([runtime.describe(FakeCudaArray((128, 256), ptr=0x10008))],
            "input 0 is not contiguous and 16-byte aligned")
    with pytest.raises(runtime.SignatureError):
        runtime.describe(object())


def test_calls_are_checked_before_running(example_artifact):
    prog = runtime.parse(example_artifact.directory)
    assert prog.signature.outputs == (TensorSpec((128, 512), "f16"),)
    with pytest.raises(runtime.SignatureError):
        prog(FakeCudaArray((128, 256), "<f4"), outputs=FakeCudaArray((128, 512)))
    with pytest.raises(runtime.SignatureError):
        prog(FakeCudaArray((128, 256)), outputs=FakeCudaArray((128, 511)))
    # Valid arguments reach the runtime, which refuses a program only parsed.
    with pytest.raises(runtime.InvalidArgumentError) as e:
        prog(FakeCudaArray((128, 256)), outputs=FakeCudaArray((128, 512)))
    assert e.value.status_name == "SPARSEOPT_ERROR_INVALID_ARGUMENT"
    assert "only parsed" in e.value.message
    prog.close()


def test_signature_must_match_the_program(example_artifact, tmp_path):
    art = tmp_path / "art"
    shutil.copytree(example_artifact.directory, art)
    sig = json.loads((art / "signature.json").read_text())
    sig["inputs"][0]["shape"] = [128, 128]
    (art / "signature.json").write_text(json.dumps(sig))
    with pytest.raises(runtime.ProgramFileError,
                       match=r"signature.json: input 0 is f16\[128, 128\] \(32768 bytes\) but "
                             r"program.txt line \d+ gives it 65536 bytes"):
        runtime.parse(art)
    # Negative dimensions whose product matches are refused too (here by
    # Python's reading of the signature, before the runtime's own check).
    sig["inputs"][0]["shape"] = [-128, -256]
    (art / "signature.json").write_text(json.dumps(sig))
    with pytest.raises(ArtifactError, match="input 0 has shape .-128, -256.: every dimension"):
        runtime.parse(art)
    (art / "signature.json").unlink()
    with pytest.raises(ArtifactError, match="signature.json"):
        runtime.parse(art)


def test_program_file_errors_carry_the_runtime_status(example_artifact, tmp_path):
    art = tmp_path / "art"
    shutil.copytree(example_artifact.directory, art)
    (art / "program.txt").write_text("sparseopt-program 2\nmodule kernels.ptx\nbogus\n")
    with pytest.raises(runtime.ProgramFileError) as e:
        runtime.parse(art)
    assert e.value.status_name == "SPARSEOPT_ERROR_PARSE"
    assert "program.txt:3:" in e.value.message


def test_element_types():
    assert [element_bytes(t) for t in ("f16", "bf16", "f32", "i8", "i1", "i64", "index")] == \
        [2, 2, 4, 1, 1, 8, 8]
    assert runtime._compatible("i8", "ui8") and not runtime._compatible("f16", "bf16")


# ---------------------------------------------------------------------------
# Params: signature.json's "params", Program's split, binding, error classes
# ---------------------------------------------------------------------------

def _sig(params=None, n=3, **extra):
    obj = {"function": "f", "inputs": [{"shape": [2, 4 * (i + 1)], "dtype": "f16"}
                                       for i in range(n)],
           "outputs": [{"shape": [2], "dtype": "f32"}]}
    if params is not None:
        obj["params"] = params
    obj.update(extra)
    return obj


def test_signature_params():
    sig = Signature.from_json(_sig([0, 2]))
    assert sig.params == (0, 2)
    assert sig.param_specs == (TensorSpec((2, 4), "f16"), TensorSpec((2, 12), "f16"))
    assert sig.input_positions == (1,)
    assert sig.input_specs == (TensorSpec((2, 8), "f16"),)
    assert len(sig.inputs) == 3  # inputs stay all the function's arguments
    assert str(sig) == "f(param f16[2, 4], f16[2, 8], param f16[2, 12]) -> (f32[2])"
    for none in (None, [], "null"):
        obj = _sig() if none is None else _sig([] if none == [] else None)
        if none == "null":
            obj["params"] = None
        sig = Signature.from_json(obj)
        assert sig.params == () and sig.param_specs == ()
        assert sig.input_specs == sig.inputs and sig.input_positions == (0, 1, 2)
        assert str(sig) == "f(f16[2, 4], f16[2, 8], f16[2, 12]) -> (f32[2])"
    # A Signature made without params has none.
    assert Signature("g", (), ()).params == ()


@pytest.mark.parametrize("params,message", [
    (1, "params must be a list of argument positions, got 1"),
    ({"w": 1}, "params must be a list"),
    (["1"], "params must be argument positions (integers), got '1'"),
    ([1.0], "(integers), got 1.0"),
    ([True], "(integers), got True"),
    ([3], "param position 3 is out of range (the function has 3 arguments)"),
    ([-1], "param position -1 is out of range"),
    ([1, 1], "params [1, 1] repeat a position"),
    ([2, 0], "params [2, 0] are not sorted"),
])
def test_signature_rejects_bad_params(params, message):
    with pytest.raises(ArtifactError) as e:
        Signature.from_json(_sig(params))
    assert "malformed signature: " in str(e.value)
    assert message in str(e.value)


# x0 [4, 16] f16 (input 0), W [16, 16] f16 (param 0), x1 [2, 16] f16
# (input 1), V [8, 16] f16 (param 1) -> y [4, 16] f32, z [2, 8] f32. The
# prepare stage makes T from W, the run reads T and V.
_PARAM_PROGRAM = """\
sparseopt-program 2
buffer 0 input 0 128
buffer 1 param 0 512
buffer 2 input 1 64
buffer 3 param 1 256
buffer 4 constant eye.bin 512
buffer 5 temp 512
buffer 6 temp 4
buffer 7 output 0 256
buffer 8 output 1 64
stage prepare
gemm m=16 n=16 k=16 in=f16 out=f16 x=b1 w=b4 y=b5
check b6 param 0 pattern 2:4 groups 4
stage run
gemm m=4 n=16 k=16 in=f16 out=f32 x=b0 w=b5 y=b7
gemm m=2 n=8 k=16 in=f16 out=f32 x=b2 w=b3 y=b8
"""


def write_param_artifact(directory, params=(1, 3), extra="", names=(None, None)):
    """The program above; `names`: the sgpu.param names of W and V."""
    directory.mkdir()
    (directory / "program.txt").write_text(_PARAM_PROGRAM + extra + "end\n")
    (directory / "eye.bin").write_bytes(bytes(512))

    def spec(shape, t="f16", name=None):
        return dict({"shape": shape, "dtype": t}, **({"name": name} if name is not None else {}))
    (directory / "signature.json").write_text(json.dumps({
        "function": "two_layers",
        "inputs": [spec([4, 16]), spec([16, 16], name=names[0]), spec([2, 16]), spec([8, 16], name=names[1])],
        "outputs": [spec([4, 16], "f32"), spec([2, 8], "f32")],
        "params": list(params)}))
    return directory


class RecordingLib:
    """Stands in for the runtime library: records binds and runs (with the
    pointers as the runtime receives them) and answers `bind_status`."""

    def __init__(self, real):
        self.real, self.calls, self.bind_status = real, [], 0

    def sparseopt_program_bind(self, handle, params, count, stream):
        self.calls.append(("bind", [params[i] for i in range(count)], stream))
        return self.bind_status

    def sparseopt_program_run(self, handle, inputs, outputs, stream):
        self.calls.append(("run", [inputs[i] for i in range(2)],
                           [outputs[i] for i in range(2)], stream))
        return 0

    def __getattr__(self, name):
        return getattr(self.real, name)


def test_program_reads_params(tmp_path):
    prog = runtime.parse(write_param_artifact(tmp_path / "art"))
    with prog:
        assert prog.input_bytes == [128, 64]
        assert prog.param_bytes == [512, 256]
        assert prog.output_bytes == [256, 64]
        assert prog.steps == [
            ("prepare", "gemm m=16 n=16 k=16 in=f16 out=f16 x=b1 w=b4 y=b5"),
            ("run", "gemm m=4 n=16 k=16 in=f16 out=f32 x=b0 w=b5 y=b7"),
            ("run", "gemm m=2 n=8 k=16 in=f16 out=f32 x=b2 w=b3 y=b8")]
        assert prog.checks == ["check b6 param 0 pattern 2:4 groups 4"]
        assert prog.signature.params == (1, 3)
        assert not prog.bound


def test_program_lists_stats(tmp_path):
    # Stat lines: their names and totals are known once parsed; reading
    # them needs a loaded program.
    prog = runtime.parse(write_param_artifact(
        tmp_path / "art", extra="buffer 9 temp 8\nstat twell0.active_neurons b9 u64 of 64\n"
                                "stat twell0.fallback_rows b6 u32\n"))
    with prog:
        assert prog.stat_totals == {"twell0.active_neurons": 64, "twell0.fallback_rows": 0}
        with pytest.raises(ValueError, match="stats need a loaded, open program"):
            prog.stats()
        with pytest.raises(ValueError, match="stats need a loaded, open program"):
            prog.densities()
    assert runtime.parse(write_param_artifact(tmp_path / "none")).stat_totals == {}


def test_twell_profile_round_trip(tmp_path, build_dir):
    # Densities come from the packs' active-neuron stats in pack order; the
    # profile they make is what sgpu-sparsify-ffn's profile= option reads.
    import subprocess
    prog = runtime.parse(write_param_artifact(
        tmp_path / "art", extra="buffer 9 temp 8\nstat twell0.active_neurons b9 u64 of 1000\n"
                                "buffer 10 temp 8\nstat twell1.active_neurons b10 u64 of 1000\n"
                                "stat twell0.fallback_rows b6 u32 of 4\n"))
    readings = {"twell0.active_neurons": 5, "twell1.active_neurons": 20,
                "twell0.fallback_rows": 1}
    prog.stats = lambda stream=None: dict(readings)
    assert prog.densities() == {"twell0.active_neurons": 0.005, "twell1.active_neurons": 0.02,
                                "twell0.fallback_rows": 0.25}
    assert prog.twell_densities() == [0.005, 0.02]
    path = tmp_path / "profile.json"
    assert prog.write_twell_profile(path) == [0.005, 0.02]
    assert json.loads(path.read_text()) == {"densities": [0.005, 0.02]}
    model = pathlib.Path(__file__).resolve().parents[1] / "Transforms" / "sparsify-ffn-calibration.mlir"
    r = subprocess.run([str(build_dir / "bin" / "sparse-opt"), str(model),
                        "--sgpu-sparsify-ffn=profile=%s" % path],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("sgpu.twell_ffn") == 1
    assert "FFN kept dense (TwELL cost model): calibrated density 2.00%" in r.stderr
    assert prog.write_twell_profile(path, densities=[0.5]) == [0.5]
    assert json.loads(path.read_text()) == {"densities": [0.5]}


def test_twell_profile_with_block_unions(tmp_path, build_dir):
    # A tensor-core build also reports each pack's blocks' union
    # (twell<i>.block_neurons); the profile then carries "block_unions",
    # from which the compiler puts the first FFN on the tensor cores.
    import subprocess
    prog = runtime.parse(write_param_artifact(
        tmp_path / "art", extra="buffer 9 temp 8\nstat twell0.active_neurons b9 u64 of 1000\n"
                                "buffer 10 temp 8\nstat twell1.active_neurons b10 u64 of 1000\n"
                                "buffer 11 temp 8\nstat twell0.block_neurons b11 u64 of 100\n"
                                "buffer 12 temp 8\nstat twell1.block_neurons b12 u64 of 100\n"))
    readings = {"twell0.active_neurons": 5, "twell1.active_neurons": 20,
                "twell0.block_neurons": 14, "twell1.block_neurons": 90}
    prog.stats = lambda stream=None: dict(readings)
    assert prog.twell_block_unions() == [0.14, 0.9]
    path = tmp_path / "profile.json"
    assert prog.write_twell_profile(path) == [0.005, 0.02]
    assert json.loads(path.read_text()) == {"densities": [0.005, 0.02],
                                            "block_unions": [0.14, 0.9]}
    model = pathlib.Path(__file__).resolve().parents[1] / "Transforms" / "sparsify-ffn-calibration.mlir"
    r = subprocess.run([str(build_dir / "bin" / "sparse-opt"), str(model),
                        "--sgpu-sparsify-ffn=profile=%s" % path],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert 'sgpu.twell_consumer = "tensor-cores"' in r.stdout
    assert "TwELL on tensor cores (cost model): calibrated union 14.00%" in r.stderr
    # A CUDA-core build has no unions: the profile has densities only.
    assert prog.write_twell_profile(path, block_unions=[]) == [0.005, 0.02]
    assert json.loads(path.read_text()) == {"densities": [0.005, 0.02]}


def test_signature_params_must_match_the_program(tmp_path):
    # Without params in signature.json all four arguments would be inputs.
    with pytest.raises(runtime.ProgramFileError,
                       match="signature.json: it describes 4 input.s. but program.txt has 2"):
        runtime.parse(write_param_artifact(tmp_path / "none", params=()))
    # The wrong arguments as params: sizes differ.
    with pytest.raises(runtime.ProgramFileError,
                       match=r"signature.json: input 0 is f16\[16, 16\] \(512 bytes\) but "
                             r"program.txt line 2 gives it 128 bytes"):
        runtime.parse(write_param_artifact(tmp_path / "swapped", params=(0, 2)))
    # A malformed "params" fails before the runtime is asked.
    with pytest.raises(ArtifactError,
                       match=r"param position 4 is out of range \(the function has 4 arguments\)"):
        runtime.parse(write_param_artifact(tmp_path / "bad", params=(1, 4)))


def test_call_binds_params_and_runs_inputs(tmp_path):
    prog = runtime.parse(write_param_artifact(tmp_path / "art"))
    x0, w, x1, v = (FakeCudaArray((4, 16), ptr=0x1000), FakeCudaArray((16, 16), ptr=0x2000),
                    FakeCudaArray((2, 16), ptr=0x3000), FakeCudaArray((8, 16), ptr=0x4000))
    outs = [FakeCudaArray((4, 16), "<f4", ptr=0x5000), FakeCudaArray((2, 8), "<f4", ptr=0x6000)]

    # Through the real runtime: the call binds first, which a parsed program
    # refuses.
    with pytest.raises(runtime.InvalidArgumentError) as e:
        prog(x0, w, x1, v, outputs=outs)
    assert e.value.message.startswith("sparseopt_program_bind: program ")
    assert "only parsed" in e.value.message

    lib = RecordingLib(prog._lib)
    prog._lib = lib
    run = ("run", [0x1000, 0x3000], [0x5000, 0x6000], None)
    # All the function's arguments, in signature order: params go to bind
    # (param order), the others to run (input order).
    assert prog(x0, w, x1, v, outputs=outs) is not None
    assert lib.calls == [("bind", [0x2000, 0x4000], None), run]
    assert prog.bound
    # The same params: no new bind.
    lib.calls.clear()
    prog(x0, w, x1, v, outputs=outs, stream=0x77)
    assert lib.calls == [run[:3] + (0x77,)]
    # Another weight: bound again, on the call's stream.
    lib.calls.clear()
    w2 = FakeCudaArray((16, 16), ptr=0x7000)
    prog(x0, w2, x1, v, outputs=outs, stream=0x77)
    assert lib.calls == [("bind", [0x7000, 0x4000], 0x77), run[:3] + (0x77,)]
    # An explicit bind (a weight changed in place) counts as the last bind.
    lib.calls.clear()
    prog.bind([0x2000, 0x4000])
    prog(x0, w, x1, v, outputs=outs)
    assert lib.calls == [("bind", [0x2000, 0x4000], None), run]

    # A bind that fails raises the runtime's error class and leaves the
    # program unbound: the next call binds again.
    lib.calls.clear()
    lib.bind_status = 11
    with pytest.raises(runtime.WeightError) as e:
        prog(x0, w2, x1, v, outputs=outs)
    assert e.value.status == 11 and e.value.status_name == "SPARSEOPT_ERROR_WEIGHT"
    assert lib.calls == [("bind", [0x7000, 0x4000], None)]
    assert not prog.bound
    lib.bind_status = 0
    lib.calls.clear()
    prog(x0, w2, x1, v, outputs=outs)
    assert lib.calls == [("bind", [0x7000, 0x4000], None), run]

    # Arguments are checked against all of the function's arguments before
    # anything is bound or run.
    lib.calls.clear()
    with pytest.raises(runtime.SignatureError, match="the program takes 4 inputs, got 2"):
        prog(x0, x1, outputs=outs)
    with pytest.raises(runtime.SignatureError,
                       match=r"input 1 has shape \[2, 16\], expected \[16, 16\]"):
        prog(x0, x1, w, v, outputs=outs)
    with pytest.raises(runtime.SignatureError, match="input 3 is not contiguous"):
        prog(x0, w, x1, FakeCudaArray((8, 16), strides=(2, 16)), outputs=outs)
    assert lib.calls == []
    prog._lib = lib.real
    prog.close()


def test_program_without_params_never_binds(example_artifact):
    prog = runtime.parse(example_artifact.directory)
    assert prog.param_bytes == [] and prog.signature.params == ()
    lib = RecordingLib(prog._lib)
    lib.sparseopt_program_run = lambda h, i, o, s: lib.calls.append(("run", i[0], o[0])) or 0
    prog._lib = lib
    prog(FakeCudaArray((128, 256), ptr=0x1000), outputs=FakeCudaArray((128, 512), ptr=0x2000))
    assert lib.calls == [("run", 0x1000, 0x2000)]
    prog._lib = lib.real
    prog.close()


def test_error_classes():
    lib = runtime._lib()
    for status, name, cls in [(1, "SPARSEOPT_ERROR_INVALID_ARGUMENT", runtime.InvalidArgumentError),
                              (2, "SPARSEOPT_ERROR_NO_DRIVER", runtime.NoDriverError),
                              (7, "SPARSEOPT_ERROR_PARSE", runtime.ProgramFileError),
                              (10, "SPARSEOPT_ERROR_NO_LIBRARY", runtime.NoLibraryError),
                              (11, "SPARSEOPT_ERROR_WEIGHT", runtime.WeightError),
                              (12, "SPARSEOPT_ERROR_COLLECTIVE", runtime.CollectiveError)]:
        assert lib.sparseopt_status_string(status).decode() == name
        assert runtime._ERRORS[name] is cls
        assert issubclass(cls, runtime.SparseOptRuntimeError) and issubclass(cls, RuntimeError)
        with pytest.raises(cls) as e:
            runtime._check(status)
        assert e.value.status == status and e.value.status_name == name
    assert lib.sparseopt_status_string(13).decode() == "SPARSEOPT_UNKNOWN_STATUS"
    for name in ("WeightError", "NoLibraryError"):
        assert name in runtime.__all__


def test_communicator_api_without_a_gpu():
    # A key has 128 bytes; anything else is refused before the runtime.
    with pytest.raises(ValueError, match="a unique id has 128 bytes, got 3"):
        runtime.Communicator.create(0, 1, b"abc")
    # Making a key needs only NCCL; where it is missing the error says so.
    try:
        uid = runtime.unique_id()
    except runtime.NoLibraryError as e:
        assert "collectives need NCCL" in e.message
    else:
        assert isinstance(uid, bytes) and len(uid) == runtime.COMM_ID_BYTES
    assert issubclass(runtime.CollectiveError, runtime.SparseOptRuntimeError)
    import sparse_opt
    assert sparse_opt.Communicator is runtime.Communicator
    assert sparse_opt.CollectiveError is runtime.CollectiveError


def test_parsed_program_counts_its_all_reduces(tmp_path):
    (tmp_path / "program.txt").write_text(
        "sparseopt-program 2\n"
        "buffer 0 input 0 64\n"
        "buffer 1 output 0 64\n"
        "allreduce slot=0 send=b0 recv=b1 count=32 type=bf16 op=sum\n"
        "wait slot=0\n"
        "end\n")
    (tmp_path / "signature.json").write_text(
        '{"function": "f", "inputs": [{"shape": [32], "dtype": "bf16"}], '
        '"outputs": [{"shape": [32], "dtype": "bf16"}]}')
    prog = runtime.parse(tmp_path)
    assert prog.num_allreduces == 1
    assert prog.steps == [("run", "allreduce slot=0 send=b0 recv=b1 count=32 type=bf16 op=sum"),
                          ("run", "wait slot=0")]
    with pytest.raises(runtime.InvalidArgumentError, match="was only parsed"):
        prog.comm = None
    prog.close()


# ---------------------------------------------------------------------------
# Params by name: signature.json's "name", matching a module's state,
# calls with the inputs only once bound by name
# ---------------------------------------------------------------------------

def test_signature_param_names():
    obj = _sig([0, 2])
    obj["inputs"][0]["name"] = "layers.0.attn.q.weight"
    obj["inputs"][2]["name"] = "head.weight"
    sig = Signature.from_json(obj)
    assert sig.inputs[0] == TensorSpec((2, 4), "f16", "layers.0.attn.q.weight")
    assert sig.inputs[1].name is None and TensorSpec((2, 8), "f16") == sig.inputs[1]
    assert sig.param_names == ("layers.0.attn.q.weight", "head.weight")
    assert str(sig) == ("f(param layers.0.attn.q.weight f16[2, 4], f16[2, 8], param head.weight f16[2, 12]) "
                        "-> (f32[2])")
    for bad in (3, ["w"], {"n": 1}):
        obj["inputs"][1]["name"] = bad
        with pytest.raises(ArtifactError, match=r"^malformed signature: the name of input 1 must be a string, "
                                                r"got %s$" % re.escape(repr(bad))):
            Signature.from_json(obj)


def test_artifact_memory(tmp_path):
    from sparse_opt.artifact import Artifact
    obj = _sig()
    (tmp_path / "signature.json").write_text(json.dumps(obj))
    assert Artifact(tmp_path).memory == {}  # written before signature.json had it
    obj["memory"] = {"params": 8, "inputs": 16, "outputs": 4, "constants": 0, "temps": 0, "arena": 256,
                     "temps_unpacked": 512, "peak": 284}
    (tmp_path / "signature.json").write_text(json.dumps(obj))
    assert Artifact(tmp_path).memory == obj["memory"]
    obj["memory"] = {"peak": "1 GB"}
    (tmp_path / "signature.json").write_text(json.dumps(obj))
    with pytest.raises(ArtifactError, match=r"memory must map roles to byte counts, got \{'peak': '1 GB'\}"):
        Artifact(tmp_path).memory


def _named_sig():
    obj = _sig([0, 2])
    obj["inputs"][0]["name"] = "fc.weight"
    obj["inputs"][2]["name"] = "norm.scale"
    return Signature.from_json(obj)


def test_match_params_by_name():
    torch = pytest.importorskip("torch")
    sig = _named_sig()
    w, s = torch.randn(2, 4), torch.ones(2, 12, dtype=torch.float64)
    pairs = runtime.match_params(sig, {"norm.scale": s, "fc.weight": w, "unused": torch.zeros(1)})
    assert [spec.name for spec, _ in pairs] == ["fc.weight", "norm.scale"]  # param order
    assert pairs[0][1] is w and pairs[1][1] is s  # cast and moved later, on the GPU
    # A module's parameters and buffers, by qualified name.
    net = torch.nn.Sequential(torch.nn.Linear(4, 2, bias=False))
    net.register_buffer("scale", torch.ones(2, 12))
    state = runtime.module_state(net)
    assert set(state) == {"0.weight", "scale"} and state["0.weight"] is net[0].weight

    def rejects(state, message):
        with pytest.raises(runtime.SignatureError) as e:
            runtime.match_params(sig, state, "the parameters and buffers of the Net")
        assert message in str(e.value), str(e.value)
    rejects({"fc.weight": w, "norm.scal": s},
            "param 1 (argument 2, norm.scale f16[2, 12]): 'norm.scale' is not among the parameters and "
            "buffers of the Net; did you mean 'norm.scal'?")
    rejects({"fc.weight": w.t(), "norm.scale": s},
            "param 0 (argument 0, fc.weight f16[2, 4]): 'fc.weight' has shape [4, 2], the program declares [2, 4]")
    rejects({"fc.weight": w.long(), "norm.scale": s},
            "'fc.weight' is int64, which does not cast to the program's f16")
    rejects({"fc.weight": w.bool(), "norm.scale": s}, "'fc.weight' is bool, which does not cast")
    rejects({"fc.weight": w.to("meta"), "norm.scale": s},
            "'fc.weight' is on the meta device (it holds no data): load the weights before binding")
    unnamed = Signature.from_json(_sig([1]))
    with pytest.raises(runtime.SignatureError, match=r"param 0 \(argument 1, f16\[2, 8\]\) has no name in "
                                                     r"signature.json: bind it with bind\(\)"):
        runtime.match_params(unnamed, {})


class FakeDeviceTensor:
    def __init__(self, ptr):
        self.ptr = ptr

    def data_ptr(self):
        return self.ptr


def test_calls_take_the_inputs_only_once_bound_by_name(tmp_path):
    prog = runtime.parse(write_param_artifact(tmp_path / "art", names=("w", "v")))
    assert prog.signature.param_names == ("w", "v")
    x0, w, x1, v = (FakeCudaArray((4, 16), ptr=0x1000), FakeCudaArray((16, 16), ptr=0x2000),
                    FakeCudaArray((2, 16), ptr=0x3000), FakeCudaArray((8, 16), ptr=0x4000))
    outs = [FakeCudaArray((4, 16), "<f4", ptr=0x5000), FakeCudaArray((2, 8), "<f4", ptr=0x6000)]
    lib = RecordingLib(prog._lib)
    prog._lib = lib
    run = ("run", [0x1000, 0x3000], [0x5000, 0x6000], None)
    # Before a bind by name, the inputs alone are not a call.
    with pytest.raises(runtime.SignatureError, match=r"the program takes 4 inputs, got 2: its 2 params are not "
                                                     r"bound by name \(bind_module\(model\) or bind_state"):
        prog(x0, x1, outputs=outs)
    # What bind_state does once its tensors are on the GPU: bind them in
    # param order and keep them alive.
    tensors = (FakeDeviceTensor(0x7000), FakeDeviceTensor(0x8000))
    prog._bind_named(tensors, 0x99)
    assert lib.calls == [("bind", [0x7000, 0x8000], 0x99)]
    assert prog.bound and prog._bound_copies == tensors
    lib.calls.clear()
    prog(x0, x1, outputs=outs)
    prog(x0, x1, outputs=outs, stream=0x77)
    assert lib.calls == [run, run[:3] + (0x77,)]  # no new bind
    # The inputs are checked against the inputs' specs.
    with pytest.raises(runtime.SignatureError, match=r"input 1 has shape \[4, 16\], expected \[2, 16\]"):
        prog(x0, x0, outputs=outs)
    # All the arguments still work: the params given are bound instead ...
    lib.calls.clear()
    prog(x0, w, x1, v, outputs=outs)
    assert lib.calls == [("bind", [0x2000, 0x4000], None), run]
    # ... after which the inputs alone need a bind by name again.
    with pytest.raises(runtime.SignatureError, match="not bound by name"):
        prog(x0, x1, outputs=outs)
    # A failed bind by name leaves the program unbound.
    lib.bind_status = 11
    with pytest.raises(runtime.WeightError):
        prog._bind_named(tensors, None)
    assert not prog.bound and prog._bound_copies == ()
    with pytest.raises(runtime.SignatureError, match="not bound by name"):
        prog(x0, x1, outputs=outs)
    prog._lib = lib.real
    prog.close()
