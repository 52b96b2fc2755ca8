"""Shared fixtures: where the build put the libraries and tools."""
import ctypes
import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
BUILD = pathlib.Path(os.environ.get("SPARSEOPT_BUILD_DIR", ROOT / "build"))
EXAMPLE = ROOT / "examples" / "linear_relu_24.mlir"

# The sparse_opt package from this checkout, on the libraries of the build
# under test.
sys.path.insert(0, str(ROOT / "python"))
os.environ["SPARSEOPT_LIB_DIR"] = str(BUILD / "lib")


def run_python(code, **env):
    """Runs `code` in a fresh Debian python3 with this checkout's package on
    the path and `env` added to the environment; returns the CompletedProcess."""
    full = dict(os.environ, PYTHONPATH=str(ROOT / "python"), **env)
    return subprocess.run(["/usr/bin/python3", "-c", code], capture_output=True, text=True,
                          env=full, timeout=120)


@pytest.fixture(scope="session")
def build_dir():
    if not (BUILD / "bin" / "sparse-opt").exists():
        pytest.fail(f"no build at {BUILD}: run scripts/build.sh first")
    return BUILD


@pytest.fixture(scope="session")
def formats_lib(build_dir):
    lib = ctypes.CDLL(str(build_dir / "lib" / "libsparseopt_formats.so"))
    i64, p = ctypes.c_int64, ctypes.c_void_p
    lib.sparseopt_sparse24_sizes.argtypes = [i64, i64, ctypes.POINTER(i64), ctypes.POINTER(i64)]
    lib.sparseopt_sparse24_compress.argtypes = [p, i64, i64, p, p, ctypes.POINTER(i64), ctypes.POINTER(i64)]
    lib.sparseopt_sparse24_decompress.argtypes = [p, p, i64, i64, p]
    lib.sparseopt_sparse24_prune.argtypes = [p, i64, i64, ctypes.c_int]
    return lib


@pytest.fixture(scope="session")
def runtime_lib(build_dir):
    lib = ctypes.CDLL(str(build_dir / "lib" / "libsparseopt_runtime.so"))
    lib.sparseopt_last_error.restype = ctypes.c_char_p
    lib.sparseopt_program_parse.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p)]
    lib.sparseopt_program_num_inputs.argtypes = [ctypes.c_void_p]
    lib.sparseopt_program_num_outputs.argtypes = [ctypes.c_void_p]
    lib.sparseopt_program_input_bytes.argtypes = [ctypes.c_void_p, ctypes.c_int]
    lib.sparseopt_program_input_bytes.restype = ctypes.c_size_t
    lib.sparseopt_program_output_bytes.argtypes = [ctypes.c_void_p, ctypes.c_int]
    lib.sparseopt_program_output_bytes.restype = ctypes.c_size_t
    lib.sparseopt_program_num_launches.argtypes = [ctypes.c_void_p]
    lib.sparseopt_program_launch_kernel.argtypes = [ctypes.c_void_p, ctypes.c_int]
    lib.sparseopt_program_launch_kernel.restype = ctypes.c_char_p
    lib.sparseopt_program_destroy.argtypes = [ctypes.c_void_p]
    return lib


@pytest.fixture
def compiler(build_dir):
    """A sparse_opt.compiler.Compiler, closed after the test."""
    from sparse_opt.compiler import Compiler
    with Compiler() as c:
        yield c


@pytest.fixture(scope="session")
def example_artifact(build_dir, tmp_path_factory):
    """examples/linear_relu_24.mlir compiled (sm_90a) through the C API."""
    from sparse_opt.compiler import compile_mlir
    return compile_mlir(EXAMPLE, tmp_path_factory.mktemp("linear_relu_24"))


@pytest.fixture(scope="module")
def cuda_torch():
    """torch on the GPU the runtime uses, or a skip. Asks the runtime first,
    so that torch is not imported where there is no driver."""
    from sparse_opt import runtime
    try:
        runtime.init(0)
    except (runtime.NoDriverError, runtime.NoDeviceError) as e:
        pytest.skip("no CUDA GPU: %s" % e.message)
    try:
        import torch
    except ImportError:
        pytest.skip("needs torch")
    if not torch.cuda.is_available():
        pytest.skip("needs torch with CUDA")
    return torch
