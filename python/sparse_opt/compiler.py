"""The SparseOpt compiler from Python, over its C API (libsparseopt_compiler.so,
include/sparse-opt-c/Compiler.h).

    from sparse_opt.compiler import Compiler
    with Compiler() as c:
        m = c.parse_file("examples/linear_relu_24.mlir")
        m.run("sgpu-slide-sparse,canonicalize")
        print(m)
        artifact = m.compile("out")          # kernels.ptx, program.txt, ...

Failures raise CompileError, which carries the compiler's diagnostics.
"""
import os
import re
import weakref
from collections import namedtuple

from ._compiler_lib import CompileError, version
from ._handle import Handle
from .artifact import Artifact

__all__ = ["Compiler", "Module", "CompileError", "Diagnostic", "compile_mlir",
           "parse_diagnostics", "version"]

# ---------------------------------------------------------------------------
# Diagnostics
# ---------------------------------------------------------------------------

class Diagnostic(namedtuple("Diagnostic", "file line col severity message notes")):
    """One compiler diagnostic; `notes` is a list of Diagnostic (severity
    "note"). Printed like a compiler prints it."""
    __slots__ = ()

    def __str__(self):
        lines = ["%s:%d:%d: %s: %s" % (self.file, self.line, self.col, self.severity,
                                       self.message.replace("\n", "\n    "))]
        lines += ["  " + str(n) for n in self.notes]
        return "\n".join(lines)


_LINE = re.compile(r"^(?P<file>.*?):(?P<line>\d+):(?P<col>\d+): "
                   r"(?P<severity>error|warning|remark|note): (?P<message>.*)$")


def _fields(line, severity):
    """The fields of one diagnostic line (a line that does not parse is kept
    whole as the message)."""
    m = _LINE.match(line)
    if not m:
        return dict(file="<unknown>", line=0, col=0, severity=severity, message=line)
    return dict(file=m.group("file"), line=int(m.group("line")), col=int(m.group("col")),
                severity=m.group("severity"), message=m.group("message"))


def parse_diagnostics(text):
    """Parses the C API's diagnostic text (one diagnostic a line, notes
    indented by two spaces, message continuations by four) into Diagnostics."""
    entries = []    # (fields, [note fields]) per diagnostic
    current = None  # the fields a continuation line extends
    for raw in (text or "").splitlines():
        if not raw.strip():
            continue
        if raw.startswith("    ") and current is not None:
            current["message"] += "\n" + raw[4:]
            continue
        if raw.startswith("  ") and entries:
            current = _fields(raw.strip(), "note")
            entries[-1][1].append(current)
        else:
            current = _fields(raw.strip(), "error")
            entries.append((current, []))
    return [Diagnostic(notes=[Diagnostic(notes=[], **n) for n in notes], **f)
            for f, notes in entries]


# ---------------------------------------------------------------------------
# Compiler and modules
# ---------------------------------------------------------------------------

def _doing(name, args):
    """What an engine call does, for the message of a compiler crash."""
    if name in ("parse", "parse_file"):
        return "parsing %s" % args[-1]  # the filename or path
    if name == "run":
        return "running the pass pipeline '%s'" % args[1]
    if name == "compile":
        return "compiling for %s" % args[1]
    return name


class Compiler(Handle):
    """An MLIR context with everything sparse-opt registers. Use it as a
    context manager or call close(); closing frees its modules too.

    By default the compiler runs in a child process: a crash of the
    compiler (a signal, an abort) is a CompileError naming the signal and
    the input, the caller's process lives on, and the next call starts a
    new child (the crashed one's modules are gone). `in_process=True` (or
    the environment variable SPARSEOPT_COMPILE_IN_PROCESS=1) calls the
    library in this process instead: no process start, nothing between a
    debugger and the compiler.

    `last_diagnostics` holds the diagnostics of the last call (warnings and
    remarks of calls that succeeded included)."""

    def __init__(self, in_process=None):
        from ._engine import LocalEngine, WorkerEngine
        if in_process is None:
            in_process = os.environ.get("SPARSEOPT_COMPILE_IN_PROCESS", "") not in ("", "0")
        self._engine = LocalEngine() if in_process else WorkerEngine()
        self._handle = True
        self._modules = weakref.WeakSet()  # live modules, freed with the compiler
        self.last_diagnostics = []

    @property
    def in_process(self):
        from ._engine import LocalEngine
        return isinstance(self._engine, LocalEngine)

    # -- lifetime --
    def _release(self, handle):
        for m in list(self._modules):
            m._handle = None  # freed with the compiler
        self._modules.clear()
        self._engine.close()

    def _h(self):
        if not self._handle:
            raise ValueError("the compiler is closed")
        return self._engine

    # -- calls --
    def _call(self, what, name, *args):
        """One engine call; raises CompileError (with the call's
        diagnostics) when it fails or the compiler process dies."""
        from ._engine import EngineCrash
        engine = self._h()
        try:
            status, value, text = engine.call(name, *args, what=_doing(name, args))
        except EngineCrash as e:
            self.last_diagnostics = []
            for m in list(self._modules):  # they lived in the dead process
                m._handle = None
            self._modules.clear()
            raise CompileError(str(e))
        diagnostics = parse_diagnostics(text)
        if name != "print":  # printing keeps the diagnostics of the call before
            self.last_diagnostics = diagnostics
        if status != 0:
            raise CompileError(what, diagnostics)
        return value

    # -- parsing --
    def parse(self, text, filename="<string>"):
        """Parses and verifies MLIR text (str or bytes) into a Module;
        `filename` names it in diagnostics and locations."""
        if isinstance(text, str):
            data = text.encode()
        elif isinstance(text, (bytes, bytearray, memoryview)):
            data = bytes(text)
        else:
            raise TypeError("parse takes MLIR text (str or bytes), got %s" % type(text).__name__)
        return self._adopt(self._call("cannot parse %s" % filename, "parse", data, str(filename)))

    def parse_file(self, path):
        """Reads, parses and verifies an .mlir file into a Module."""
        path = os.fspath(path)
        return self._adopt(self._call("cannot parse %s" % path, "parse_file", path))

    def _adopt(self, mid):
        m = Module(self, mid)
        self._modules.add(m)
        return m


class Module(Handle):
    """A parsed MLIR module, owned by its Compiler. Passes change it in place."""

    def __init__(self, compiler, handle):
        self.compiler = compiler
        self._handle = handle

    def _h(self):
        if not self._handle:
            raise ValueError("the module is closed (or its compiler is, or the compiler process died)")
        return self._handle

    def _release(self, handle):
        """Frees the module (close() does it now; otherwise when it is
        garbage or its compiler closes)."""
        self.compiler._modules.discard(self)
        if self.compiler._handle:
            self.compiler._engine.call("destroy", handle)

    def run(self, pipeline):
        """Runs a textual pass pipeline ("sgpu-slide-sparse,canonicalize",
        "func.func(cse)", "builtin.module(...)"); returns self. On failure
        (CompileError) the module may be partially transformed."""
        self.compiler._call("pass pipeline '%s' failed" % pipeline, "run", self._h(), pipeline)
        return self

    def verify(self):
        """Runs the verifier; raises CompileError when the IR is invalid."""
        self.compiler._call("the module does not verify", "verify", self._h())
        return self

    def print(self, generic=False):
        """The module as MLIR text (generic operation form if `generic`)."""
        return self.compiler._call("cannot print the module", "print", self._h(), bool(generic))

    def __str__(self):
        return self.print()

    def compile(self, output_dir, chip="sm_90a", features="+ptx85", sparse_policy="auto",
                ladder=False, twell=False, twell_producer="auto", twell_consumer="auto",
                twell_passes=0, twell_pack="auto", lift="auto", device="",
                attention_library=True, programmatic_launch=True, sliced_tma_store=False):
        """Runs sgpu-compile on this module (which becomes the compiled IR),
        writes the artifacts and compiled.mlir to output_dir and returns the
        Artifact. `sparse_policy`: "auto" keeps a sparse-annotated layer
        dense where the sparse kernel measured slower (a remark in
        `compiler.last_diagnostics` says so), "sparse" always uses the
        declared sparsity. `ladder`: True (every layer) or a number K (the
        last K layers) first rewrites the tensor-parallel residual chain
        into ladder form (sgpu-ladder-residual), which CHANGES what the
        model computes: only for checkpoints trained or adapted that way.
        `twell`: True rewrites every ReLU FFN into TwELL packing and a
        sparse consumer (sgpu-sparsify-ffn; tile and compression from the
        module's sgpu.twell attribute); a calibration, either the path of a
        profile that Program.write_twell_profile wrote or a list of densities
        (one per FFN, in the order of the program's twell<i> stats), rewrites
        only the FFNs the cost model predicts faster than dense (a remark in
        `compiler.last_diagnostics` names each one kept dense).
        `twell_producer`: how a TwELL pack's ReLU GEMM runs: "library"
        (cuBLASLt, then the pack kernel), "fused" (sm_90a: a generated
        wgmma GEMM whose epilogue packs; where it cannot apply a remark
        says why and the library path stays) or "auto" (library: the fused
        producer measured a tie with it on the H200). `twell_consumer`: what
        runs a TwELL FFN: "cuda-cores" (one block per row over its active
        neurons), "tensor-cores" (sm_90a: wgmma over blocks of 64 rows and
        the union of their active neurons; where it cannot apply a remark
        says why and the CUDA cores stay) or "auto" (the choice recorded on
        the pack, else the CUDA cores). `twell_passes`: passes of the
        CUDA-core consumer over the neurons, 1..64 (each reads the weight
        rows of a range of the tiles, so they can stay in L2), or 0 (auto:
        one, or enough that each reads at most 40 MiB when the rows are at
        most 4 KiB and the weights exceed 64 MiB). `twell_pack`: "consumer"
        fuses each pack into its one CUDA-core consumer, which finds the
        active neurons in H itself (no pack kernel; where it cannot apply a
        remark says why), "kernel" keeps the pack kernel, "auto" (default)
        fuses wherever it applies (measured 2-3% faster). `lift`: how the
        activations of a 6:8 layer reach the sm_90a kernel: "fused" (inside
        its operand loads), "split" (a small kernel copies only the shared
        windows, a third of the lifted bytes, and the GEMM reads X itself
        for the rest), "separate" (a gather kernel writes the whole lifted
        X) or "auto" (fused up to 16 tokens, split above: the fastest on the
        H200). `device`: the GPU part the grids and pipeline depths are
        sized for ("h200", "h100-sxm", "h100-pcie", "a100"; empty: the
        chip's reference part, the H200 for sm_90a): one chip name covers
        parts with different multiprocessor counts. `attention_library`:
        True (default) runs a prefill attention as cuDNN's fused attention
        where it applies (an `attention` line; the runtime opens cuDNN 9),
        False keeps every attention on the generated kernels.
        `programmatic_launch`: True (default; sm_90 and newer) has every
        generated kernel wait for the kernel before it itself, and writes its
        launch as `pdl`, so the runtime may launch it while that kernel ends
        (sgpu-programmatic-launch; False: plain launches; SPARSEOPT_PDL=0
        when the program loads runs it with plain launches).
        `sliced_tma_store`: True has a sparse GEMM whose result is read only
        as column slices (sibling GEMMs fused by sgpu-fuse-sibling-spmm) store
        each slice by TMA into its own buffer, where False (default) stores
        the whole result and copies the slices out of it."""
        if sparse_policy not in ("auto", "sparse"):
            raise ValueError("sparse_policy must be 'auto' or 'sparse', got %r" % (sparse_policy,))
        if twell_producer not in ("auto", "library", "fused"):
            raise ValueError("twell_producer must be 'auto', 'library' or 'fused', got %r"
                             % (twell_producer,))
        if twell_consumer not in ("auto", "cuda-cores", "tensor-cores"):
            raise ValueError("twell_consumer must be 'auto', 'cuda-cores' or 'tensor-cores', "
                             "got %r" % (twell_consumer,))
        if twell_pack not in ("auto", "kernel", "consumer"):
            raise ValueError("twell_pack must be 'auto', 'kernel' or 'consumer', got %r"
                             % (twell_pack,))
        if lift not in ("auto", "fused", "split", "separate"):
            raise ValueError("lift must be 'auto', 'fused', 'split' or 'separate', got %r"
                             % (lift,))
        if (isinstance(twell_passes, bool) or not isinstance(twell_passes, int)
                or not 0 <= twell_passes <= 64):
            raise ValueError("twell_passes must be an integer in 0..64 (0: automatic), got %r"
                             % (twell_passes,))
        if not isinstance(attention_library, bool):
            raise ValueError("attention_library must be True or False, got %r" % (attention_library,))
        if not isinstance(programmatic_launch, bool):
            raise ValueError("programmatic_launch must be True or False, got %r" % (programmatic_launch,))
        if not isinstance(sliced_tma_store, bool):
            raise ValueError("sliced_tma_store must be True or False, got %r" % (sliced_tma_store,))
        if ladder is not False:
            layers = 0 if ladder is True else ladder
            if isinstance(layers, bool) or not isinstance(layers, int) or layers < 1 and ladder is not True:
                raise ValueError("ladder must be False, True or a number of layers >= 1, got %r"
                                 % (ladder,))
            self.run("sgpu-ladder-residual{layers=%d}" % layers)
        twell_pass = _twell_pass(twell)
        twell_notes = []
        if twell_pass:
            self.run(twell_pass)
            twell_notes = list(self.compiler.last_diagnostics)
        output_dir = os.path.abspath(os.fspath(output_dir))
        if (sparse_policy == "auto" and twell_producer == "auto" and twell_consumer == "auto"
                and twell_passes == 0 and twell_pack == "auto" and lift == "auto" and not device
                and attention_library and programmatic_launch and not sliced_tma_store):
            self.compiler._call("compilation for %s (%s) failed" % (chip, features), "compile",
                                self._h(), chip, features, output_dir)
        else:
            for name, value in (("chip", chip), ("features", features), ("output directory", output_dir),
                                ("device", device or "-")):
                if not value or any(c in value for c in " \t'\"{}"):
                    raise CompileError("%s %r must be non-empty, without spaces, quotes or braces"
                                       % (name, value))
            self.run("sgpu-compile{chip=%s features=%s sparse-policy=%s twell-producer=%s "
                     "twell-consumer=%s twell-passes=%d twell-pack=%s lift=%s%s "
                     "attention-library=%s programmatic-launch=%s sliced-tma-store=%s output-dir=%s}"
                     % (chip, features, sparse_policy, twell_producer, twell_consumer,
                        twell_passes, twell_pack, lift, " device=%s" % device if device else "",
                        "true" if attention_library else "false",
                        "true" if programmatic_launch else "false",
                        "true" if sliced_tma_store else "false", output_dir))
        # The TwELL choices stay visible after compilation's own diagnostics.
        self.compiler.last_diagnostics = twell_notes + list(self.compiler.last_diagnostics)
        with open(os.path.join(output_dir, "compiled.mlir"), "w") as f:
            f.write(self.print() + "\n")
        return Artifact(output_dir)


def _twell_pass(twell):
    """The sgpu-sparsify-ffn invocation for Module.compile's `twell`, or
    None when it is False/None."""
    if twell is None or twell is False:
        return None
    if twell is True:
        return "sgpu-sparsify-ffn"
    if isinstance(twell, (str, os.PathLike)):
        path = os.path.abspath(os.fspath(twell))
        if not os.path.isfile(path):
            raise ValueError("twell profile %s does not exist" % path)
        if any(c in path for c in " \t'\"{}"):
            raise ValueError("twell profile path %r must be without spaces, quotes or braces" % path)
        return "sgpu-sparsify-ffn{profile=%s}" % path
    try:
        values = [float(v) for v in twell]
    except (TypeError, ValueError):
        raise ValueError("twell must be False, True, a profile path or a list of densities, got %r"
                         % (twell,)) from None
    if not values or any(not 0.0 <= v <= 1.0 for v in values):
        raise ValueError("twell densities must be a non-empty list of fractions in [0, 1], got %r"
                         % (twell,))
    return "sgpu-sparsify-ffn{densities=%s}" % ",".join(repr(v) for v in values)


def _is_path(source):
    if isinstance(source, os.PathLike):
        return True
    return isinstance(source, str) and "\n" not in source and os.path.isfile(source)


def compile_mlir(source, output_dir, chip="sm_90a", features="+ptx85", sparse_policy="auto"):
    """Compiles MLIR text or an .mlir file to an artifact directory with
    sgpu-compile; returns the Artifact. Raises CompileError. See
    Module.compile for `sparse_policy`."""
    with Compiler() as c:
        m = c.parse_file(source) if _is_path(source) else c.parse(source)
        return m.compile(output_dir, chip=chip, features=features, sparse_policy=sparse_policy)
