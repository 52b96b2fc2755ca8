"""SparseOpt from Python: compile MLIR with the compiler's C API
(``sparse_opt.compiler``) and run the artifacts with the runtime's C API
(``sparse_opt.runtime``). Pure Python over ctypes.

The submodules load lazily: ``import sparse_opt.runtime`` on a GPU machine
that has only ``libsparseopt_runtime.so`` never touches the compiler library
(or MLIR), and torch is imported only when tensors are involved. Libraries
are found through ``SPARSEOPT_LIB_DIR`` (see ``sparse_opt._libs``).
"""
import importlib

__version__ = "0.1"

# Public name -> submodule that defines it; imported on first access.
_EXPORTS = {
    "Compiler": "compiler",
    "Module": "compiler",
    "CompileError": "compiler",
    "Diagnostic": "compiler",
    "compile_mlir": "compiler",
    "load": "runtime",
    "Program": "runtime",
    "SignatureError": "runtime",
    "SparseOptRuntimeError": "runtime",
    "Communicator": "runtime",
    "CollectiveError": "runtime",
    "Artifact": "artifact",
    "ArtifactError": "artifact",
    "LibraryNotFoundError": "_libs",
}

__all__ = sorted(_EXPORTS) + ["__version__"]


def __getattr__(name):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError("module 'sparse_opt' has no attribute %r" % name)
    value = getattr(importlib.import_module("." + module, __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
