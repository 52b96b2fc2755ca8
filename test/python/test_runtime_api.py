"""sparse_opt.runtime without a GPU: imports on the runtime library alone,
reports a missing driver, checks arguments against the signature."""
import json
import shutil

import pytest

from conftest import run_python
from sparse_opt import runtime
from sparse_opt.artifact import ArtifactError, TensorSpec, element_bytes


class FakeCudaArray:
    """Exposes __cuda_array_interface__ (the pointer is never dereferenced)."""

    def __init__(self, shape, typestr="<f2", strides=None):
        self.__cuda_array_interface__ = {"shape": tuple(shape), "typestr": typestr,
                                         "data": (0x10000, False), "strides": strides,
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
    with pytest.raises(ArtifactError, match="does not match program.txt"):
        runtime.parse(art)
    (art / "signature.json").unlink()
    with pytest.raises(ArtifactError, match="signature.json"):
        runtime.parse(art)


def test_program_file_errors_carry_the_runtime_status(example_artifact, tmp_path):
    art = tmp_path / "art"
    shutil.copytree(example_artifact.directory, art)
    (art / "program.txt").write_text("sparseopt-program 1\nmodule kernels.ptx\nbogus\n")
    with pytest.raises(runtime.ProgramFileError) as e:
        runtime.parse(art)
    assert e.value.status_name == "SPARSEOPT_ERROR_PARSE"
    assert "program.txt:3:" in e.value.message


def test_element_types():
    assert [element_bytes(t) for t in ("f16", "bf16", "f32", "i8", "i1", "i64", "index")] == \
        [2, 2, 4, 1, 1, 8, 8]
    assert runtime._compatible("i8", "ui8") and not runtime._compatible("f16", "bf16")
