"""Finds SparseOpt's shared libraries.

Search order, first match wins:
  1. the folder in the environment variable SPARSEOPT_LIB_DIR (only there,
     when it is set);
  2. ``<repo>/build/lib`` when the package runs from a source checkout;
  3. next to the package in an installed layout (``sparse_opt/lib`` or the
     package folder itself).

Nothing is loaded at import time: each library is opened on first use, so
the runtime works on a machine that has only ``libsparseopt_runtime.so``.
"""
import ctypes
import os
import pathlib
import threading

_PACKAGE = pathlib.Path(__file__).resolve().parent

COMPILER = "libsparseopt_compiler.so"
RUNTIME = "libsparseopt_runtime.so"
FORMATS = "libsparseopt_formats.so"


class LibraryNotFoundError(OSError):
    """A SparseOpt shared library is missing from every searched folder."""


def search_dirs():
    """The folders searched for the libraries, in order."""
    env = os.environ.get("SPARSEOPT_LIB_DIR")
    if env:
        return [pathlib.Path(env)]
    return [_PACKAGE.parents[1] / "build" / "lib", _PACKAGE / "lib", _PACKAGE]


def find(name):
    """The path of the library file `name`, or LibraryNotFoundError."""
    dirs = search_dirs()
    for d in dirs:
        path = d / name
        if path.is_file():
            return path
    hint = ("build it (scripts/build.sh) or point SPARSEOPT_LIB_DIR at the "
            "folder that holds it")
    raise LibraryNotFoundError(
        "%s not found in %s; %s" % (name, ", ".join(str(d) for d in dirs), hint))


_loaded = {}
_lock = threading.Lock()


def load(name, configure=None):
    """Opens the library once per process; `configure(lib)` declares its
    argument and result types the first time."""
    with _lock:
        lib = _loaded.get(name)
        if lib is None:
            path = find(name)
            try:
                lib = ctypes.CDLL(str(path))
            except OSError as e:
                raise LibraryNotFoundError("cannot load %s: %s" % (path, e)) from e
            if configure is not None:
                configure(lib)
            _loaded[name] = lib
        return lib
