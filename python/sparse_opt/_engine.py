"""Where the compiler's C library runs for a Compiler: in this process
(LocalEngine) or in a child process (WorkerEngine, the default), so that a
crash of the compiler (a signal, an abort) becomes a CompileError naming
the signal and the input instead of taking the caller's interpreter with
it.

Both engines answer the same calls, each returning `(status, value,
diagnostics)`: status 0 on success, `value` the call's result (a module id
for parses, text for print), `diagnostics` the compiler's diagnostic text
for that call. Modules are small integer ids valid within one engine.

The worker is `python -m sparse_opt._engine`: pickled `(call, args)`
requests on its stdin, pickled answers on its stdout, its stderr kept in a
temporary file whose end is quoted when it dies.
"""
import ctypes
import os
import pickle
import signal
import struct
import subprocess
import sys
import tempfile

from . import _compiler_lib as compiler_lib


class EngineCrash(Exception):
    """The compiler's process died during a call."""


class LocalEngine:
    """The C library in this process."""

    def __init__(self):
        self.lib = compiler_lib.load()
        handle = ctypes.c_void_p()
        if self.lib.sparseopt_compiler_create(ctypes.byref(handle)) != 0:
            raise compiler_lib.CompileError("cannot create a SparseOpt compiler")
        self.handle = handle
        self.modules = {}
        self.next_id = 1

    def _diagnostics(self):
        return compiler_lib.take_string(self.lib, self.lib.sparseopt_compiler_take_diagnostics(self.handle)) or ""

    def _adopt(self, status, handle):
        if status != 0:
            return None
        mid, self.next_id = self.next_id, self.next_id + 1
        self.modules[mid] = handle
        return mid

    def call(self, name, *args, what=None):
        """One call (`what` says what it does, for the worker's crash
        message; a crash here is this process's)."""
        lib, value = self.lib, None
        if name == "parse":
            data, filename = args
            h = ctypes.c_void_p()
            status = lib.sparseopt_ir_parse(self.handle, data, len(data), filename.encode(), ctypes.byref(h))
            value = self._adopt(status, h)
        elif name == "parse_file":
            h = ctypes.c_void_p()
            status = lib.sparseopt_ir_parse_file(self.handle, args[0].encode(), ctypes.byref(h))
            value = self._adopt(status, h)
        elif name == "run":
            status = lib.sparseopt_ir_run_pipeline(self.modules[args[0]], args[1].encode())
        elif name == "verify":
            status = lib.sparseopt_ir_verify(self.modules[args[0]])
        elif name == "print":
            value = compiler_lib.take_string(lib, lib.sparseopt_ir_print(self.modules[args[0]], 1 if args[1] else 0))
            status = 0 if value is not None else 1
        elif name == "compile":
            mid, chip, features, output_dir = args
            status = lib.sparseopt_ir_compile(self.modules[mid], chip.encode() if chip else None,
                                              features.encode() if features else None, output_dir.encode())
        elif name == "destroy":
            lib.sparseopt_ir_destroy(self.modules.pop(args[0]))
            status = 0
        else:
            raise ValueError("unknown compiler call %r" % (name,))
        return status, value, self._diagnostics()

    def close(self):
        for h in self.modules.values():
            self.lib.sparseopt_ir_destroy(h)
        self.modules.clear()
        if self.handle:
            self.lib.sparseopt_compiler_destroy(self.handle)
            self.handle = None


def _write(stream, obj):
    data = pickle.dumps(obj, protocol=4)
    stream.write(struct.pack("<Q", len(data)) + data)
    stream.flush()


def _read(stream):
    head = stream.read(8)
    if len(head) < 8:
        return None
    (n,) = struct.unpack("<Q", head)
    data = stream.read(n)
    if len(data) < n:
        return None
    return pickle.loads(data)


def _signal_name(returncode):
    if returncode is not None and returncode < 0:
        try:
            return signal.Signals(-returncode).name
        except ValueError:
            return "signal %d" % -returncode
    return "exit status %s" % returncode


class WorkerEngine:
    """The C library in a child process, started here and restarted after
    a crash (the modules of a crashed worker are gone)."""

    def __init__(self):
        self.proc = None
        self._start()

    def _start(self):
        self.stderr = tempfile.TemporaryFile()
        env = dict(os.environ)
        here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        env["PYTHONPATH"] = here + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        self.proc = subprocess.Popen([sys.executable, "-m", "sparse_opt._engine"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self.stderr, env=env)
        answer = _read(self.proc.stdout)
        if answer is None or answer[0] != "ready":
            self._died("starting")  # raises
        if answer[1] is not None:  # the library did not load there: the same error here
            self.close()
            raise answer[1]

    def _tail(self, lines=12):
        try:
            self.stderr.seek(0)
            text = self.stderr.read().decode("utf-8", "replace")
        except (OSError, ValueError):
            return ""
        return "\n".join(text.strip().splitlines()[-lines:])

    def _died(self, what):
        proc, self.proc = self.proc, None
        code = proc.wait() if proc else None
        tail = self._tail()
        raise EngineCrash("the compiler process died (%s) while %s; this process is unaffected%s"
                          % (_signal_name(code), what, ":\n" + tail if tail else ""))

    def call(self, name, *args, what=None):
        if self.proc is None:
            self._start()
        try:
            _write(self.proc.stdin, (name, args))
            answer = _read(self.proc.stdout)
        except (BrokenPipeError, OSError):
            answer = None
        if answer is None:
            self._died(what or name)
        if answer[0] == "raise":
            raise answer[1]
        return answer[1]

    def close(self):
        proc, self.proc = self.proc, None
        if proc is None:
            return
        try:
            proc.stdin.close()
            proc.wait(timeout=10)
        except Exception:
            proc.kill()


def _serve():
    """The worker's loop: one LocalEngine, calls until stdin closes."""
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # anything the library prints goes to stderr, not the answers
    inp = sys.stdin.buffer
    try:
        engine = LocalEngine()
    except Exception as e:  # the library cannot load: said once, then exit
        try:
            _write(out, ("ready", e))
        except Exception:
            _write(out, ("ready", RuntimeError("%s: %s" % (type(e).__name__, e))))
        return 1
    _write(out, ("ready", None))
    while True:
        request = _read(inp)
        if request is None:
            engine.close()
            return 0
        name, args = request
        try:
            _write(out, ("ok", engine.call(name, *args)))
        except Exception as e:
            _write(out, ("raise", e))


if __name__ == "__main__":
    sys.exit(_serve())
