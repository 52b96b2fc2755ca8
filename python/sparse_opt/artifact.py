"""An artifact directory as sgpu-compile writes it.

    kernels.ptx      the generated kernels
    program.txt      the runtime program (buffers and launches)
    signature.json   the host function's arguments ("inputs") and outputs
                     (shape, dtype; an argument the importer named with
                     sgpu.param also has its "name"), which arguments are
                     program params ("params": argument positions,
                     optional), and the device bytes by role ("memory":
                     params, inputs, outputs, constants, temps, arena,
                     temps_unpacked, peak)
    summary.txt      each kernel and its count of sparse MMA instructions,
                     and the peak device memory
    const<N>.bin     constant buffers

Used by the compiler (what Module.compile returns) and by the runtime (what
``sparse_opt.runtime.load`` reads); needs neither library.
"""
import json
import pathlib
import re
from collections import namedtuple

__all__ = ["Artifact", "ArtifactError", "Kernel", "Signature", "TensorSpec",
           "element_bytes"]


class ArtifactError(ValueError):
    """An artifact file is missing or malformed."""


def element_bytes(dtype):
    """Bytes per element of an MLIR element type name ("f16" -> 2,
    "i1" -> 1, "index" -> 8), as the compiler sizes buffers."""
    if dtype == "index":
        return 8
    m = re.match(r"^(?:[su]?i|bf|tf|f)(\d+)", dtype)
    if not m:
        raise ArtifactError("unsupported element type %r" % dtype)
    return (int(m.group(1)) + 7) // 8


class TensorSpec(namedtuple("TensorSpec", "shape dtype name", defaults=(None,))):
    """One input or output: its static shape (a tuple), MLIR element type and,
    for a weight the importer made a param, its qualified name (the
    parameter or initializer it binds to; None otherwise)."""
    __slots__ = ()

    @classmethod
    def from_json(cls, obj, what):
        name = obj.get("name")
        if name is not None and not isinstance(name, str):
            raise ArtifactError("malformed signature: the name of %s must be a string, got %r" % (what, name))
        shape = obj["shape"]
        if not isinstance(shape, list) or not all(
                isinstance(d, int) and not isinstance(d, bool) and d > 0 for d in shape):
            raise ArtifactError("malformed signature: %s has shape %r: every dimension must be "
                                "a positive integer" % (what, shape))
        dtype = str(obj["dtype"])
        element_bytes(dtype)  # an unknown element type is an ArtifactError
        return cls(tuple(shape), dtype, name)

    @property
    def numel(self):
        n = 1
        for d in self.shape:
            n *= d
        return n

    @property
    def nbytes(self):
        return self.numel * element_bytes(self.dtype)

    def __str__(self):
        text = "%s[%s]" % (self.dtype, ", ".join(str(d) for d in self.shape))
        return text if self.name is None else "%s %s" % (self.name, text)


def _param_positions(value, count):
    """The "params" of signature.json: sorted, unique argument positions in
    0..count-1 (absent or None: none)."""
    if value is None:
        return ()
    if not isinstance(value, list):
        raise ArtifactError("malformed signature: params must be a list of argument "
                            "positions, got %r" % (value,))
    for p in value:
        if not isinstance(p, int) or isinstance(p, bool):
            raise ArtifactError("malformed signature: params must be argument positions "
                                "(integers), got %r" % (p,))
        if not 0 <= p < count:
            raise ArtifactError("malformed signature: param position %d is out of range "
                                "(the function has %d argument%s)"
                                % (p, count, "" if count == 1 else "s"))
    if len(set(value)) != len(value):
        raise ArtifactError("malformed signature: params %r repeat a position" % (value,))
    if value != sorted(value):
        raise ArtifactError("malformed signature: params %r are not sorted" % (value,))
    return tuple(value)


class Signature(namedtuple("Signature", "function inputs outputs params", defaults=((),))):
    """The host function: its name, tuples of TensorSpec for all its
    arguments (`inputs`, in order) and its outputs, and `params`, the sorted
    positions of the arguments that are program params (weights bound once
    with Program.bind); the other arguments are the program's inputs."""
    __slots__ = ()

    @classmethod
    def from_json(cls, obj):
        def specs(key):
            return tuple(TensorSpec.from_json(t, "%s %d" % (key[:-1], i)) for i, t in enumerate(obj[key]))
        try:
            inputs = specs("inputs")
            sig = cls(str(obj["function"]), inputs, specs("outputs"))
            params = obj.get("params")
        except ArtifactError:
            raise
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise ArtifactError("malformed signature: %r" % (e,)) from e
        return sig._replace(params=_param_positions(params, len(inputs)))

    @property
    def param_specs(self):
        """The TensorSpecs of the params, in param order (program param i is
        argument params[i])."""
        return tuple(self.inputs[p] for p in self.params)

    @property
    def input_positions(self):
        """The positions of the arguments that are program inputs, in order."""
        params = set(self.params)
        return tuple(i for i in range(len(self.inputs)) if i not in params)

    @property
    def param_names(self):
        """The qualified names of the params in param order (None for a param
        signature.json does not name)."""
        return tuple(s.name for s in self.param_specs)

    @property
    def input_specs(self):
        """The TensorSpecs of the program's inputs: the arguments that are
        not params, in order."""
        return tuple(self.inputs[i] for i in self.input_positions)

    def __str__(self):
        params = set(self.params)
        args = [("param " if i in params else "") + str(t) for i, t in enumerate(self.inputs)]
        return "%s(%s) -> (%s)" % (self.function, ", ".join(args),
                                   ", ".join(map(str, self.outputs)))


Kernel = namedtuple("Kernel", "name sparse_mma")
Kernel.__doc__ = "A generated kernel and its number of sparse MMA instructions."

_SUMMARY = re.compile(r"^kernel (\S+): (\d+) sparse MMA instructions$")


class Artifact:
    """A compiled artifact directory."""

    def __init__(self, directory):
        self.directory = pathlib.Path(directory)
        if not self.directory.is_dir():
            raise ArtifactError("%s is not an artifact directory" % self.directory)
        self._signature = None

    def path(self, name):
        return self.directory / name

    def _read(self, name):
        try:
            return self.path(name).read_text()
        except OSError as e:
            raise ArtifactError("cannot read %s: %s" % (self.path(name), e.strerror)) from e

    @property
    def signature(self):
        """The Signature from signature.json (read once)."""
        if self._signature is None:
            try:
                obj = json.loads(self._read("signature.json"))
            except ValueError as e:
                raise ArtifactError("%s: %s" % (self.path("signature.json"), e)) from e
            self._signature = Signature.from_json(obj)
        return self._signature

    @property
    def memory(self):
        """The device bytes of the program by role, signature.json's
        "memory": {"params", "inputs", "outputs" (the caller's tensors),
        "constants", "temps" (temporaries with their own allocation),
        "arena" (the temporaries sharing one allocation by liveness),
        "temps_unpacked" (what all the temporaries would take unshared),
        "peak" (params + inputs + outputs + constants + temps + arena)};
        {} for an artifact written without it."""
        try:
            obj = json.loads(self._read("signature.json"))
        except ValueError as e:
            raise ArtifactError("%s: %s" % (self.path("signature.json"), e)) from e
        memory = obj.get("memory") if isinstance(obj, dict) else None
        if memory is None:
            return {}
        if not isinstance(memory, dict) or not all(isinstance(v, int) and not isinstance(v, bool)
                                                   for v in memory.values()):
            raise ArtifactError("malformed signature: memory must map roles to byte counts, got %r" % (memory,))
        return dict(memory)

    @property
    def kernels(self):
        """The kernels listed in summary.txt, in order, as Kernel tuples."""
        out = []
        for line in self._read("summary.txt").splitlines():
            m = _SUMMARY.match(line.strip())
            if m:
                out.append(Kernel(m.group(1), int(m.group(2))))
        return out

    def sparse_mma_counts(self):
        """{kernel name: number of sparse MMA instructions}."""
        return {k.name: k.sparse_mma for k in self.kernels}

    @property
    def ptx(self):
        return self._read("kernels.ptx")

    @property
    def program(self):
        return self._read("program.txt")

    def __repr__(self):
        return "Artifact(%r)" % str(self.directory)
