# The SparseOpt lit suite: IR (Dialect, Transforms, Conversion), PTX text and
# assembly (Target), CPU numerics through mlir-runner (Integration/CPU), GPU
# runs (Integration/GPU, need a GPU) and the C++ unit tests (Unit/).
import os
import shutil
import subprocess

import lit.formats
from lit.llvm import llvm_config

config.name = "SparseOpt"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir"]
# Fuzz: the fuzz targets and their reproducers (scripts/fuzz.sh runs them).
config.excludes = ["Unit", "Inputs", "fixtures", "Fuzz", "lit.cfg.py", "lit.site.cfg.py"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.sparseopt_obj_root, "test")

llvm_config.use_default_substitutions()
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)

tools_dir = os.path.join(config.sparseopt_obj_root, "bin")
config.substitutions.append(("%sparse_opt_bin", tools_dir))
config.substitutions.append(("%sparse_opt_lib", os.path.join(config.sparseopt_obj_root, "lib")))
config.substitutions.append(("%sparse_opt_src", config.sparseopt_src_root))
config.substitutions.append(("%sparse_opt_obj", config.sparseopt_obj_root))
config.substitutions.append(
    ("%mlir_runner_utils", os.path.join(config.mlir_lib_dir, "libmlir_runner_utils.so")))
config.substitutions.append(
    ("%mlir_c_runner_utils", os.path.join(config.mlir_lib_dir, "libmlir_c_runner_utils.so")))
llvm_config.add_tool_substitutions(
    ["sparse-opt", "sparse-opt-run"], [tools_dir])
# Debian's interpreter: the one with numpy (and torch/onnx later).
config.substitutions.append(("%python", "/usr/bin/python3"))
# The sparse_opt package and the shared test models import from the tree.
config.environment["PYTHONPATH"] = os.pathsep.join(
    [os.path.join(config.sparseopt_src_root, "python"),
     os.path.join(config.sparseopt_src_root, "test", "python")])
config.environment["SPARSEOPT_BUILD_DIR"] = config.sparseopt_obj_root
llvm_config.add_tool_substitutions(
    ["mlir-runner", "FileCheck", "not", "count"], [config.llvm_tools_dir])
# scripts/sanitize-compiler.sh: a sanitized build whose libraries are loaded
# by uninstrumented interpreters needs the sanitizer runtime loaded first.
if "SPARSEOPT_ASAN_PRELOAD" in os.environ:
    config.environment["LD_PRELOAD"] = os.environ["SPARSEOPT_ASAN_PRELOAD"]
    for var in ("ASAN_OPTIONS", "UBSAN_OPTIONS"):
        if var in os.environ:
            config.environment[var] = os.environ[var]

# ptxas assembles the generated PTX where the CUDA toolkit is installed.
ptxas = shutil.which("ptxas") or (
    "/usr/local/cuda/bin/ptxas" if os.path.exists("/usr/local/cuda/bin/ptxas") else None)
if ptxas:
    config.available_features.add("ptxas")
    config.substitutions.append(("%ptxas", ptxas))

# gpu-module-to-binary links libdevice (the math ops of generated kernels)
# from the CUDA toolkit it finds through these variables or a ptxas on PATH;
# lit passes neither through, so name the toolkit of the ptxas found above.
for var in ("CUDA_ROOT", "CUDA_PATH", "CUDA_HOME"):
    if var in os.environ:
        config.environment[var] = os.environ[var]
if ptxas and not any(v in config.environment for v in ("CUDA_ROOT", "CUDA_PATH", "CUDA_HOME")):
    config.environment["CUDA_ROOT"] = os.path.dirname(os.path.dirname(os.path.realpath(ptxas)))

# A usable NVIDIA GPU (driver + device) enables Integration/GPU.
def has_gpu():
    smi = shutil.which("nvidia-smi")
    if not smi:
        return False
    try:
        out = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=30)
        return out.returncode == 0 and "GPU" in out.stdout
    except Exception:
        return False

if has_gpu():
    config.available_features.add("gpu")
