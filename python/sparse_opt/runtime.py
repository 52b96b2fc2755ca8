"""Runs compiled artifacts on the GPU through the runtime's C API
(libsparseopt_runtime.so, runtime/include/sparseopt/runtime.h).

    import torch, sparse_opt.runtime as rt
    prog = rt.load("build/examples/linear_relu_24")      # reads signature.json
    y = prog(torch.randn(128, 256, dtype=torch.float16, device="cuda"))

Needs neither MLIR nor the compiler library, and imports torch only when it
is handed torch tensors or has to allocate outputs. Arguments are checked
against the artifact's signature (device, dtype, shape) before anything
runs; the program runs asynchronously on the given stream (default: torch's
current stream when torch is used, else the legacy default stream).

Weights that signature.json lists as "params" are bound once (the runtime
prepares them on the GPU and checks their declared sparsity, raising
WeightError). An imported model names each param after its parameter or
buffer, so the simplest is to bind the model's own tensors by name and then
pass the inputs only:

    prog.bind_module(model)        # or prog.bind_state({name: tensor})
    logits = prog(ids)

Otherwise a call takes all the function's arguments, params included, and
binds the params when their data pointers differ from the last bind, the
first call included. A weight changed in place keeps its pointer, so bind
it again explicitly: prog.bind([w.data_ptr() for w in weights]) or
bind_module/bind_state.
"""
import ctypes
import difflib
import json
import os
import sys
from collections import namedtuple

from . import _libs
from ._handle import Handle
from .artifact import Artifact

__all__ = ["load", "parse", "init", "Program", "SignatureError", "SparseOptRuntimeError",
           "InvalidArgumentError", "NoDriverError", "NoDeviceError", "CudaError",
           "OutOfMemoryError", "ProgramFileError", "NoLibraryError", "WeightError",
           "check_arguments", "describe", "match_params", "module_state"]

_p, _u64 = ctypes.c_void_p, ctypes.c_uint64


# ---------------------------------------------------------------------------
# Errors
# ---------------------------------------------------------------------------

class SparseOptRuntimeError(RuntimeError):
    """A runtime call failed: `status` (int), `status_name`
    ("SPARSEOPT_ERROR_NO_DRIVER", ...) and the runtime's `message`."""

    def __init__(self, status, status_name, message):
        super().__init__("%s: %s" % (status_name, message))
        self.status, self.status_name, self.message = status, status_name, message


class InvalidArgumentError(SparseOptRuntimeError):
    pass


class NoDriverError(SparseOptRuntimeError):
    """The CUDA driver library is missing (no GPU machine)."""


class NoDeviceError(SparseOptRuntimeError):
    pass


class CudaError(SparseOptRuntimeError):
    pass


class OutOfMemoryError(SparseOptRuntimeError):
    pass


class ProgramFileError(SparseOptRuntimeError):
    """An artifact file is missing, unreadable (IO) or malformed (PARSE)."""


class NoLibraryError(SparseOptRuntimeError):
    """A CUDA library a program needs (cuBLASLt, for gemm lines) is missing
    or unusable; the message lists every file tried."""


class WeightError(SparseOptRuntimeError):
    """A param (weight) breaks the n:m sparsity the program declares for it:
    the message names the param, the row and the group of columns."""


class CollectiveError(SparseOptRuntimeError):
    """A communicator failed: an NCCL error, a failed id exchange or a
    timeout. The communicator is aborted; make a new one."""


_ERRORS = {
    "SPARSEOPT_ERROR_INVALID_ARGUMENT": InvalidArgumentError,
    "SPARSEOPT_ERROR_NO_DRIVER": NoDriverError,
    "SPARSEOPT_ERROR_NO_DEVICE": NoDeviceError,
    "SPARSEOPT_ERROR_CUDA": CudaError,
    "SPARSEOPT_ERROR_OUT_OF_MEMORY": OutOfMemoryError,
    "SPARSEOPT_ERROR_IO": ProgramFileError,
    "SPARSEOPT_ERROR_PARSE": ProgramFileError,
    "SPARSEOPT_ERROR_NO_LIBRARY": NoLibraryError,
    "SPARSEOPT_ERROR_WEIGHT": WeightError,
    "SPARSEOPT_ERROR_COLLECTIVE": CollectiveError,
}


class SignatureError(ValueError):
    """Arguments that do not match the program's signature."""


# ---------------------------------------------------------------------------
# The library
# ---------------------------------------------------------------------------

def _configure(lib):
    lib.sparseopt_status_string.argtypes = [ctypes.c_int]
    lib.sparseopt_status_string.restype = ctypes.c_char_p
    lib.sparseopt_last_error.restype = ctypes.c_char_p
    lib.sparseopt_init.argtypes = [ctypes.c_int]
    lib.sparseopt_device_name.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
    lib.sparseopt_program_parse.argtypes = [ctypes.c_char_p, ctypes.POINTER(_p)]
    lib.sparseopt_program_load.argtypes = [ctypes.c_char_p, ctypes.POINTER(_p)]
    lib.sparseopt_program_run.argtypes = [_p, ctypes.POINTER(_u64), ctypes.POINTER(_u64), _p]
    lib.sparseopt_program_bind.argtypes = [_p, ctypes.POINTER(_u64), ctypes.c_size_t, _p]
    lib.sparseopt_program_bind_shared.argtypes = [_p, ctypes.POINTER(_u64), ctypes.c_size_t, _p, _p,
                                                  ctypes.POINTER(ctypes.c_int)]
    lib.sparseopt_program_prepare_shareable.argtypes = [_p, _p]
    lib.sparseopt_program_prepare_shareable.restype = ctypes.c_int
    lib.sparseopt_program_num_params.argtypes = [_p]
    lib.sparseopt_program_param_bytes.argtypes = [_p, ctypes.c_int]
    lib.sparseopt_program_param_bytes.restype = ctypes.c_size_t
    lib.sparseopt_program_num_steps.argtypes = [_p]
    lib.sparseopt_program_step.argtypes = [_p, ctypes.c_int]
    lib.sparseopt_program_step.restype = ctypes.c_char_p
    lib.sparseopt_program_step_stage.argtypes = [_p, ctypes.c_int]
    lib.sparseopt_program_step_stage.restype = ctypes.c_char_p
    lib.sparseopt_program_num_stats.argtypes = [_p]
    lib.sparseopt_program_stat_name.argtypes = [_p, ctypes.c_int]
    lib.sparseopt_program_stat_name.restype = ctypes.c_char_p
    lib.sparseopt_program_stat_total.argtypes = [_p, ctypes.c_int]
    lib.sparseopt_program_stat_total.restype = ctypes.c_uint64
    lib.sparseopt_program_stat_limit.argtypes = [_p, ctypes.c_int]
    lib.sparseopt_program_stat_limit.restype = ctypes.c_double
    lib.sparseopt_program_read_stat.argtypes = [_p, ctypes.c_int, _p,
                                                ctypes.POINTER(ctypes.c_uint64)]
    lib.sparseopt_program_num_checks.argtypes = [_p]
    lib.sparseopt_program_check.argtypes = [_p, ctypes.c_int]
    lib.sparseopt_program_check.restype = ctypes.c_char_p
    lib.sparseopt_program_destroy.argtypes = [_p]
    lib.sparseopt_program_num_inputs.argtypes = [_p]
    lib.sparseopt_program_num_outputs.argtypes = [_p]
    lib.sparseopt_program_input_bytes.argtypes = [_p, ctypes.c_int]
    lib.sparseopt_program_input_bytes.restype = ctypes.c_size_t
    lib.sparseopt_program_output_bytes.argtypes = [_p, ctypes.c_int]
    lib.sparseopt_program_output_bytes.restype = ctypes.c_size_t
    lib.sparseopt_program_num_launches.argtypes = [_p]
    lib.sparseopt_program_launch_kernel.argtypes = [_p, ctypes.c_int]
    lib.sparseopt_program_launch_kernel.restype = ctypes.c_char_p
    lib.sparseopt_program_num_allreduces.argtypes = [_p]
    lib.sparseopt_program_set_comm.argtypes = [_p, _p]
    lib.sparseopt_comm_unique_id.argtypes = [ctypes.c_char_p]
    lib.sparseopt_comm_init.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_char_p,
                                        ctypes.c_int, ctypes.POINTER(_p)]
    lib.sparseopt_comm_init_from_env.argtypes = [ctypes.c_int, ctypes.POINTER(_p)]
    lib.sparseopt_comm_adopt.argtypes = [_p, ctypes.POINTER(_p)]
    lib.sparseopt_comm_rank.argtypes = [_p]
    lib.sparseopt_comm_size.argtypes = [_p]
    lib.sparseopt_comm_stream.argtypes = [_p]
    lib.sparseopt_comm_stream.restype = _p
    lib.sparseopt_comm_synchronize.argtypes = [_p, _p, ctypes.c_int]
    lib.sparseopt_comm_destroy.argtypes = [_p]


def _lib():
    return _libs.load(_libs.RUNTIME, _configure)


def _check(status):
    if status != 0:
        lib = _lib()
        name = lib.sparseopt_status_string(status).decode()
        message = lib.sparseopt_last_error().decode("utf-8", "replace")
        raise _ERRORS.get(name, SparseOptRuntimeError)(status, name, message)


def init(device=0):
    """Loads the CUDA driver and selects `device` (one device per process)."""
    _check(_lib().sparseopt_init(device))


def device_name():
    buf = ctypes.create_string_buffer(256)
    _check(_lib().sparseopt_device_name(buf, len(buf)))
    return buf.value.decode()


# ---------------------------------------------------------------------------
# Arguments: description and checks (pure Python, testable without a GPU)
# ---------------------------------------------------------------------------

# Element types by torch dtype name and by __cuda_array_interface__ typestr.
_FROM_TORCH = {"torch.float16": "f16", "torch.bfloat16": "bf16", "torch.float32": "f32",
               "torch.float64": "f64", "torch.int8": "i8", "torch.int16": "i16",
               "torch.int32": "i32", "torch.int64": "i64", "torch.uint8": "ui8",
               "torch.bool": "i1"}
# The torch dtype name of each element type a signature can hold.
TORCH_DTYPES = {"f16": "float16", "bf16": "bfloat16", "f32": "float32", "f64": "float64",
                "i8": "int8", "si8": "int8", "i16": "int16", "si16": "int16", "i32": "int32",
                "si32": "int32", "i64": "int64", "si64": "int64", "ui8": "uint8", "i1": "bool"}
_FROM_TYPESTR = {"<f2": "f16", "<f4": "f32", "<f8": "f64", "|i1": "i8", "<i2": "i16",
                 "<i4": "i32", "<i8": "i64", "|u1": "ui8", "|b1": "i1"}

Arg = namedtuple("Arg", "obj ptr shape dtype device contiguous is_torch")
Arg.__doc__ = """One tensor argument: its device pointer, shape, MLIR element
type name, device ("cuda:0", "cpu"; None when unknown), whether it is
usable as it is (C-contiguous and 16-byte aligned, as the runtime requires:
the kernels use 16-byte vector accesses), and whether it is a torch tensor
(then it can be copied)."""

# The alignment the runtime requires of every buffer.
_ALIGNMENT = 16


def _c_strides(shape, itemsize):
    strides, step = [], itemsize
    for d in reversed(shape):
        strides.append(step)
        step *= d
    return tuple(reversed(strides))


def describe(x):
    """An Arg for a torch tensor, an object with __cuda_array_interface__, or
    (through torch.from_dlpack) one with __dlpack__."""
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(x, torch.Tensor):
        return Arg(x, x.data_ptr(), tuple(x.shape), _FROM_TORCH.get(str(x.dtype), str(x.dtype)),
                   str(x.device), x.is_contiguous() and x.data_ptr() % _ALIGNMENT == 0, True)
    cai = getattr(x, "__cuda_array_interface__", None)
    if cai is not None:
        shape = tuple(cai["shape"])
        typestr = cai["typestr"]
        strides = cai.get("strides")
        itemsize = int(typestr[2:]) if typestr[2:].isdigit() else 0
        contiguous = strides is None or tuple(strides) == _c_strides(shape, itemsize)
        ptr = int(cai["data"][0])
        return Arg(x, ptr, shape, _FROM_TYPESTR.get(typestr, typestr), None,
                   contiguous and ptr % _ALIGNMENT == 0, False)
    if hasattr(x, "__dlpack__"):
        return describe(_import_torch("DLPack arguments").from_dlpack(x))
    raise SignatureError("expected a CUDA tensor (torch, __cuda_array_interface__ or "
                         "__dlpack__), got %s" % type(x).__name__)


def _compatible(expected, actual):
    """A signless MLIR integer (i8) accepts signed and unsigned data."""
    if expected == actual:
        return True
    return expected.startswith("i") and actual in ("s" + expected, "u" + expected)


def check_arguments(specs, args, role, device):
    """Raises SignatureError unless `args` (Args) match `specs` (TensorSpecs)
    in number, device ("cuda:<device>"), element type and shape. Inputs (all
    the function's arguments, params included) may be non-contiguous torch
    tensors (they are copied), as may misaligned ones; everything else must be
    C-contiguous and 16-byte aligned."""
    if len(args) != len(specs):
        raise SignatureError("the program takes %d %s%s, got %d"
                             % (len(specs), role, "" if len(specs) == 1 else "s", len(args)))
    for i, (spec, a) in enumerate(zip(specs, args)):
        where = "%s %d" % (role, i)
        if a.device is not None and a.device != "cuda:%d" % device:
            raise SignatureError("%s is on %s; the program runs on cuda:%d" % (where, a.device, device))
        if not _compatible(spec.dtype, a.dtype):
            raise SignatureError("%s has element type %s, expected %s" % (where, a.dtype, spec.dtype))
        if tuple(a.shape) != tuple(spec.shape):
            raise SignatureError("%s has shape %s, expected %s"
                                 % (where, list(a.shape), list(spec.shape)))
        if not a.contiguous and not (role == "input" and a.is_torch):
            raise SignatureError("%s is not contiguous and 16-byte aligned" % where)


# ---------------------------------------------------------------------------
# Params by name (pure Python: needs torch, not a GPU)
# ---------------------------------------------------------------------------

def _kind(dtype_name):
    """"float", "bool" or "int" for an MLIR element type name."""
    if dtype_name == "i1":
        return "bool"
    return "float" if dtype_name.startswith(("f", "bf", "tf")) else "int"


def _tensor_kind(torch, t):
    if t.is_floating_point():
        return "float"
    if t.dtype == torch.bool:
        return "bool"
    return None if t.is_complex() else "int"


def module_state(module):
    """{qualified name: tensor} of a module's parameters and buffers under
    every name they are reachable by: a tensor shared under several names
    (tied weights, such as a GPT-2 LM head's weight that is the embedding's)
    is found under each of them, while named_parameters() and
    state-dict-like views built from it keep only the first (what
    bind_module binds from)."""
    state = {}
    for getter in (module.named_parameters, module.named_buffers):
        state.update(getter())
    for prefix, m in module.named_modules(remove_duplicate=False):
        for store in ("_parameters", "_buffers"):
            for key, t in m.__dict__.get(store, {}).items():
                if t is not None:
                    state.setdefault("%s.%s" % (prefix, key) if prefix else key, t)
    return state


def match_params(signature, state, source="the given tensors"):
    """The tensor of `state` ({name: tensor}, or a torch module: its
    module_state, where a tied tensor answers to each of its names) for
    each param of `signature`, in param order, checked: every param is
    named in signature.json and present, with the declared shape, and of
    an element type that casts to the declared one (float to float, integer
    to integer, bool to bool), with data (not on the meta device). Raises
    SignatureError naming the param and argument. Returns [(spec, tensor)]."""
    torch = _import_torch("binding params by name")
    if isinstance(state, torch.nn.Module):
        state = module_state(state)
    out = []
    for j, pos in enumerate(signature.params):
        spec = signature.inputs[pos]
        where = "param %d (argument %d, %s)" % (j, pos, spec)
        if spec.name is None:
            raise SignatureError("%s has no name in signature.json: bind it with bind() (device pointers in "
                                 "param order) or pass all the arguments to each call" % where)
        if spec.name not in state:
            close = difflib.get_close_matches(spec.name, [str(k) for k in state], n=1)
            raise SignatureError("%s: '%s' is not among %s%s" % (where, spec.name, source,
                                                                 "; did you mean '%s'?" % close[0] if close else ""))
        t = state[spec.name]
        if not isinstance(t, torch.Tensor):
            try:
                t = torch.as_tensor(t)
            except Exception as e:
                raise SignatureError("%s: '%s' is a %s, not a tensor" % (where, spec.name, type(t).__name__)) from e
        if tuple(t.shape) != tuple(spec.shape):
            raise SignatureError("%s: '%s' has shape %s, the program declares %s"
                                 % (where, spec.name, list(t.shape), list(spec.shape)))
        if _tensor_kind(torch, t) != _kind(spec.dtype) or spec.dtype not in TORCH_DTYPES:
            raise SignatureError("%s: '%s' is %s, which does not cast to the program's %s"
                                 % (where, spec.name, str(t.dtype).replace("torch.", ""), spec.dtype))
        if t.is_meta:
            raise SignatureError("%s: '%s' is on the meta device (it holds no data): load the weights "
                                 "before binding" % (where, spec.name))
        out.append((spec, t))
    return out


def _device_param(torch, t, spec, device):
    """`t` as the program binds it: the declared dtype, on cuda:<device>,
    C-contiguous and 16-byte aligned (the caller's tensor when it already is)."""
    t = t.detach().to(device="cuda:%d" % device, dtype=getattr(torch, TORCH_DTYPES[spec.dtype]))
    if not t.is_contiguous() or t.data_ptr() % _ALIGNMENT:
        t = _usable_copy(t)
    return t


def _usable_copy(t):
    """A C-contiguous copy of torch tensor `t` in a fresh (aligned)
    allocation: .contiguous() alone keeps a misaligned contiguous view."""
    return t.contiguous() if not t.is_contiguous() else t.clone()


def _import_torch(why):
    try:
        import torch
    except ImportError as e:
        raise ImportError("%s need torch, which is not installed" % why) from e
    return torch


def _raw_stream(stream):
    """A CUstream handle (int or None) from None, an int or a stream object
    (torch .cuda_stream, cupy .ptr)."""
    if stream is None or isinstance(stream, int):
        return stream
    for attr in ("cuda_stream", "ptr"):
        handle = getattr(stream, attr, None)
        if isinstance(handle, int):
            return handle
    raise TypeError("cannot get a CUDA stream handle from %s" % type(stream).__name__)


def _torch_stream(torch, stream, device):
    """The torch stream the call runs on (copies and outputs are made on it)."""
    if stream is None:
        return torch.cuda.current_stream(device)
    if isinstance(stream, torch.cuda.Stream):
        return stream
    return torch.cuda.ExternalStream(_raw_stream(stream), device=device)


# ---------------------------------------------------------------------------
# Communicators
# ---------------------------------------------------------------------------

COMM_ID_BYTES = 128


def unique_id():
    """A new NCCL unique id (bytes): make it on one rank, give it to all."""
    buf = ctypes.create_string_buffer(COMM_ID_BYTES)
    _check(_lib().sparseopt_comm_unique_id(buf))
    return buf.raw


class Communicator(Handle):
    """One rank of a tensor-parallel group: an NCCL communicator and the
    stream the programs' all-reduces run on. Every wait has a deadline
    (`timeout_ms`, 0: SPARSEOPT_COMM_TIMEOUT_MS or 600 s): a lost peer
    raises CollectiveError instead of hanging."""

    def __init__(self, handle):
        self._lib, self._handle = _lib(), handle
        self.rank = self._lib.sparseopt_comm_rank(handle)
        self.size = self._lib.sparseopt_comm_size(handle)

    @classmethod
    def create(cls, rank, world_size, uid, timeout_ms=0, device=0):
        """Joins rank `rank` of `world_size` ranks keyed by `uid` (the bytes
        of unique_id(), the same on every rank)."""
        if len(uid) != COMM_ID_BYTES:
            raise ValueError("a unique id has %d bytes, got %d" % (COMM_ID_BYTES, len(uid)))
        init(device)
        handle = _p()
        _check(_lib().sparseopt_comm_init(rank, world_size, bytes(uid), timeout_ms,
                                          ctypes.byref(handle)))
        return cls(handle)

    @classmethod
    def from_env(cls, timeout_ms=0, device=None):
        """Joins the group of a torchrun-style environment (RANK, WORLD_SIZE;
        rank 0's id travels through SPARSEOPT_COMM_ID_FILE or over TCP at
        MASTER_ADDR, port SPARSEOPT_COMM_PORT or MASTER_PORT + 1, to ranks
        that show the secret SPARSEOPT_COMM_TOKEN every rank shares). The
        device defaults to LOCAL_RANK."""
        if device is None:
            device = int(os.environ.get("LOCAL_RANK", "0") or 0)
        init(device)
        handle = _p()
        _check(_lib().sparseopt_comm_init_from_env(timeout_ms, ctypes.byref(handle)))
        return cls(handle)

    @classmethod
    def from_torch(cls, group=None, timeout_ms=0, device=None):
        """Joins a group with the ranks of an initialized torch.distributed
        process group: rank 0's id is broadcast through torch."""
        torch = _import_torch("Communicator.from_torch")
        dist = torch.distributed
        rank, world = dist.get_rank(group), dist.get_world_size(group)
        box = [unique_id() if rank == 0 else None]
        dist.broadcast_object_list(box, src=0, group=group)
        if device is None:
            device = torch.cuda.current_device()
        return cls.create(rank, world, box[0], timeout_ms, device)

    @property
    def stream(self):
        """The communication stream (a raw handle, int)."""
        return self._lib.sparseopt_comm_stream(self._handle) or 0

    def synchronize(self, stream=None, timeout_ms=0):
        """Waits for `stream` (a raw handle or a torch stream; None: the
        default stream) and the communication stream, polling NCCL for
        errors, at most timeout_ms."""
        _check(self._lib.sparseopt_comm_synchronize(self._handle, _raw_stream(stream),
                                                    timeout_ms))

    def _release(self, handle):
        self._lib.sparseopt_comm_destroy(handle)

    def __repr__(self):
        return "Communicator(rank=%d, size=%d)" % (self.rank, self.size)


# ---------------------------------------------------------------------------
# Programs
# ---------------------------------------------------------------------------

class Program(Handle):
    """A program from an artifact directory: `signature`, `artifact`, byte
    sizes (`input_bytes`, `param_bytes`, `output_bytes`, as the runtime sees
    them), kernels and steps. Call it on tensors (loaded programs only)."""

    def __init__(self, handle, artifact, device, loaded):
        self._lib, self._handle = _lib(), handle
        self.artifact, self.device, self.loaded = artifact, device, loaded
        # The key of the last successful bind (None: not bound), the tensors
        # it bound that the program keeps alive (copies, or everything a bind
        # by name made) and whether it bound by name (then calls take the
        # inputs only).
        self._bound_key, self._bound_copies, self._by_name = None, (), False
        # The program whose prepared buffers the last bind shares (kept
        # alive with it), or None.
        self.donor = None
        lib = self._lib
        self.input_bytes = [lib.sparseopt_program_input_bytes(handle, i)
                            for i in range(lib.sparseopt_program_num_inputs(handle))]
        self.param_bytes = [lib.sparseopt_program_param_bytes(handle, i)
                            for i in range(lib.sparseopt_program_num_params(handle))]
        self.output_bytes = [lib.sparseopt_program_output_bytes(handle, i)
                             for i in range(lib.sparseopt_program_num_outputs(handle))]
        self.kernels = [lib.sparseopt_program_launch_kernel(handle, i).decode()
                        for i in range(lib.sparseopt_program_num_launches(handle))]
        self.steps = [(lib.sparseopt_program_step_stage(handle, i).decode(),
                       lib.sparseopt_program_step(handle, i).decode())
                      for i in range(lib.sparseopt_program_num_steps(handle))]
        self.checks = [lib.sparseopt_program_check(handle, i).decode()
                       for i in range(lib.sparseopt_program_num_checks(handle))]
        self.num_allreduces = lib.sparseopt_program_num_allreduces(handle)
        # Stats: name -> what the counter counts out of (0: nothing given).
        self.stat_totals = {lib.sparseopt_program_stat_name(handle, i).decode():
                            lib.sparseopt_program_stat_total(handle, i)
                            for i in range(lib.sparseopt_program_num_stats(handle))}
        # name -> the fraction above which the program is expected to lose
        # (a TwELL layer's break-even density), for the stats that have one.
        limits = ((lib.sparseopt_program_stat_name(handle, i).decode(),
                   lib.sparseopt_program_stat_limit(handle, i))
                  for i in range(lib.sparseopt_program_num_stats(handle)))
        self.stat_limits = {name: limit for name, limit in limits if limit >= 0}
        self._comm = None
        # The runtime checked signature.json against the program when it
        # parsed it (shapes, types, each tensor's bytes against its buffer).
        self.signature = artifact.signature

    def _release(self, handle):
        self._lib.sparseopt_program_destroy(handle)
        self._bound_key, self._bound_copies, self._by_name = None, (), False

    @property
    def bound(self):
        """Whether the params are bound (always true without params once
        loaded: the runtime prepares such a program at load)."""
        if not self._handle:
            return False
        return self._bound_key is not None if self.param_bytes else self.loaded

    def bind(self, params, stream=None):
        """Binds the params, raw device pointers (ints) in param order, on a
        raw stream handle (None: the legacy default stream): the runtime
        zeroes its temporaries, runs the prepare steps, waits for the stream
        and checks each param's declared sparsity (WeightError). The pointers
        must stay valid while the program runs. Needed again after a weight
        changed in place (a call rebinds only when pointers change)."""
        self._bind(list(params), stream, tuple(params), ())

    def _bind(self, ptrs, stream, key, copies, by_name=False, donor=None):
        if not self._handle:
            raise ValueError("the program is closed")
        arr = (_u64 * len(ptrs))(*ptrs)
        # A failed bind leaves the runtime's program unbound.
        self._bound_key, self._bound_copies, self._by_name = None, (), False
        self.donor = None
        if donor is None:
            _check(self._lib.sparseopt_program_bind(self._handle, arr, len(ptrs),
                                                    _raw_stream(stream)))
        else:
            shared = ctypes.c_int(0)
            if not donor._handle:
                raise ValueError("the donor program is closed")
            _check(self._lib.sparseopt_program_bind_shared(self._handle, arr, len(ptrs), donor._handle,
                                                           _raw_stream(stream), ctypes.byref(shared)))
            self.donor = donor if shared.value else None
        self._bound_key, self._bound_copies, self._by_name = key, copies, by_name

    def prepare_shareable(self, donor):
        """(True, "") when this program's prepare stage is `donor`'s (the
        same kernels compress the same params into buffers of the same
        sizes), so that a bind with donor=... uses the donor's prepared
        buffers; else (False, what differs). Works on parsed programs."""
        if not self._handle or not donor._handle:
            raise ValueError("a closed program")
        r = self._lib.sparseopt_program_prepare_shareable(self._handle, donor._handle)
        return bool(r), "" if r else (self._lib.sparseopt_last_error() or b"").decode()

    def bind_module(self, module, stream=None):
        """Binds the params from a torch module's parameters and buffers by
        their qualified names (the names the importer gave the params):
        see bind_state. After it, calls take the inputs only."""
        self.bind_state(module_state(module), stream,
                        source="the parameters and buffers of the %s" % type(module).__name__)

    def bind_state(self, state, stream=None, source="the given tensors", donor=None):
        """Binds the params from `state` ({qualified name: tensor}, e.g. a
        state_dict): each param's tensor is cast to the declared dtype,
        moved to the program's GPU and made contiguous (a copy only where
        needed), kept alive by the program, and bound in param order on
        `stream` (a torch or raw stream; None: torch's current stream). A
        missing name, a shape that differs or an element type that does not
        cast raises SignatureError naming the param; a weight that breaks its
        declared sparsity raises WeightError. After it, calls take the
        inputs only (the arguments that are not params, in order).
        With `donor` (a bound program compiled from the same model) the
        bind uses the donor's prepared buffers where this program's prepare
        stage is the donor's (`self.donor` is then the donor: a sparse
        weight compressed once for both); otherwise it prepares its own."""
        torch = _import_torch("binding params by name")
        pairs = match_params(self.signature, state, source)
        ts = _torch_stream(torch, stream, self.device)
        with torch.cuda.device(self.device), torch.cuda.stream(ts):
            tensors = tuple(_device_param(torch, t, spec, self.device) for spec, t in pairs)
        self._bind_named(tensors, ts.cuda_stream, donor)

    def _bind_named(self, tensors, stream, donor=None):
        """Binds device tensors in param order, keeping them alive; calls then
        take the inputs only."""
        ptrs = [t.data_ptr() for t in tensors]
        self._bind(ptrs, stream, ("by name",) + tuple(ptrs), tuple(tensors), by_name=True, donor=donor)

    def stats(self, stream=None):
        """The program's stats after the last run on `stream` (a raw handle
        or torch stream; None: the legacy default stream), which this
        waits for: {name: count}. A TwELL FFN has "twell<i>.active_neurons"
        (nonzero activations, out of M*F: the measured density) and
        "twell<i>.fallback_rows" (rows that took the dense fallback, out of
        M); `stat_totals` gives what each counts out of, densities() the
        fractions."""
        if not self._handle or not self.loaded:
            raise ValueError("stats need a loaded, open program")
        out = {}
        for i, name in enumerate(self.stat_totals):
            value = ctypes.c_uint64()
            _check(self._lib.sparseopt_program_read_stat(self._handle, i, _raw_stream(stream),
                                                         ctypes.byref(value)))
            out[name] = value.value
        return out

    def densities(self, stream=None):
        """stats() divided by their totals, for the stats that have one."""
        return {name: value / self.stat_totals[name]
                for name, value in self.stats(stream).items() if self.stat_totals[name]}

    def twell_densities(self, stream=None):
        """The measured density of each TwELL pack after the last run, in
        pack order (twell0, twell1, ...): what sgpu-sparsify-ffn's
        `densities` option and calibration profile take."""
        return self._per_pack("active_neurons", stream)

    def _per_pack(self, stat, stream=None):
        """The fraction of stat twell<i>.<stat> for i = 0, 1, ... while it
        exists."""
        dens = self.densities(stream)
        out, i = [], 0
        while "twell%d.%s" % (i, stat) in dens:
            out.append(dens["twell%d.%s" % (i, stat)])
            i += 1
        return out

    def twell_block_unions(self, stream=None):
        """The measured union fraction of each TwELL pack's blocks of 64
        rows after the last run (twell<i>.block_neurons out of Nb * F), in
        pack order; only a program compiled with twell-consumer=tensor-cores
        has them (else []). What sgpu-sparsify-ffn's `unions` option and the
        profile's "block_unions" take."""
        return self._per_pack("block_neurons", stream)

    def write_twell_profile(self, path, stream=None, densities=None, block_unions=None):
        """Writes the calibration profile {"densities": [...]} that
        sgpu-sparsify-ffn's `profile=` option reads: `densities` when given
        (e.g. averaged over several sample runs), else twell_densities()
        after the last run; with "block_unions" too when given or measured
        (a tensor-core build: twell_block_unions()), from which the compiler
        also predicts the tensor-core consumer. Returns the densities
        written."""
        values = list(densities) if densities is not None else self.twell_densities(stream)
        unions = (list(block_unions) if block_unions is not None
                  else self.twell_block_unions(stream))
        profile = {"densities": values}
        if unions:
            profile["block_unions"] = unions
        with open(path, "w") as f:
            json.dump(profile, f)
            f.write("\n")
        return values

    @property
    def comm(self):
        """The Communicator the program's all-reduces run on (None: none)."""
        return self._comm

    @comm.setter
    def comm(self, communicator):
        if not self._handle:
            raise ValueError("the program is closed")
        _check(self._lib.sparseopt_program_set_comm(
            self._handle, communicator._handle if communicator is not None else None))
        self._comm = communicator  # kept alive while the program uses it

    def run(self, inputs, outputs, stream=None):
        """Enqueues the program on raw device pointers (ints) and a raw
        stream handle (None: the legacy default stream). No checks beyond
        the runtime's; a program with params must be bound."""
        if not self._handle:
            raise ValueError("the program is closed")
        ins = (_u64 * len(inputs))(*inputs)
        outs = (_u64 * len(outputs))(*outputs)
        _check(self._lib.sparseopt_program_run(self._handle, ins, outs, _raw_stream(stream)))

    def _split(self, args):
        """(params, inputs) of the function's arguments, by signature.json."""
        sig = self.signature
        return [args[i] for i in sig.params], [args[i] for i in sig.input_positions]

    @staticmethod
    def _param_key(a):
        """What identifies a param argument for rebinding: its pointer, and
        for a non-contiguous torch tensor (copied before binding) its strides."""
        if a.contiguous:
            return a.ptr
        return (a.ptr, tuple(a.obj.stride()))

    def _inputs_only(self, count):
        """Whether a call with `count` arguments passes the inputs only (the
        params bound by name); raises SignatureError for such a call while
        they are not."""
        sig = self.signature
        n_in = len(sig.input_positions)
        if not sig.params or count != n_in:
            return False
        if not self._by_name:
            raise SignatureError("the program takes %d inputs, got %d: its %d params are not bound by name "
                                 "(bind_module(model) or bind_state({name: tensor}) binds them; then pass the "
                                 "%d other inputs)" % (len(sig.inputs), count, len(sig.params), n_in))
        return True

    def __call__(self, *args, outputs=None, stream=None):
        """Runs on CUDA tensors, all the function's arguments in signature
        order (params included), or, once bind_module/bind_state bound the
        params, the inputs only; returns the output tensor (a tuple when
        there are several). With outputs=None they are allocated with torch;
        otherwise they are written and returned. Params passed to the call
        are bound first when their pointers differ from the last bind's."""
        described = [describe(x) for x in args]
        if self._inputs_only(len(described)):
            check_arguments(self.signature.input_specs, described, "input", self.device)
            params, ins, key, rebind = [], described, None, False
        else:
            check_arguments(self.signature.inputs, described, "input", self.device)
            params, ins = self._split(described)
            key = tuple(self._param_key(a) for a in params)
            rebind = bool(params) and key != self._bound_key
        outs = None
        if outputs is not None:
            outputs = list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]
            outs = [describe(o) for o in outputs]
            check_arguments(self.signature.outputs, outs, "output", self.device)
        if outs is not None and not any(a.is_torch for a in described + outs):
            # No torch involved: run on the caller's pointers as they are.
            if rebind:
                self._bind([a.ptr for a in params], stream, key, ())
            self.run([a.ptr for a in ins], [a.ptr for a in outs], stream)
            return outputs[0] if len(outputs) == 1 else tuple(outputs)

        torch = _import_torch("allocating outputs (or pass outputs=...) and torch tensors")
        ts = _torch_stream(torch, stream, self.device)
        with torch.cuda.device(self.device), torch.cuda.stream(ts):
            # Copies and outputs are made on the stream the program runs on.
            if rebind:
                copies = tuple(_usable_copy(a.obj) for a in params if not a.contiguous)
                it = iter(copies)
                ptrs = [a.ptr if a.contiguous else next(it).data_ptr() for a in params]
                self._bind(ptrs, ts.cuda_stream, key, copies)
            ins = [a if a.contiguous else describe(_usable_copy(a.obj)) for a in ins]
            if outs is None:
                outputs = [torch.empty(s.shape, dtype=getattr(torch, TORCH_DTYPES[s.dtype]),
                                       device="cuda:%d" % self.device)
                           for s in self.signature.outputs]
                outs = [describe(o) for o in outputs]
            self.run([a.ptr for a in ins], [a.ptr for a in outs], ts.cuda_stream)
        return outputs[0] if len(outputs) == 1 else tuple(outputs)

    def __repr__(self):
        return "Program(%r, %s)" % (str(self.artifact.directory), self.signature)


def load(artifact_dir, device=0, comm=None):
    """Initializes the runtime on `device` and loads the artifact directory:
    uploads constants and loads the kernels. Returns a callable Program.
    A program with all-reduces needs a Communicator: `comm`, or set
    `program.comm` later. A bucketed artifact (buckets.json, see
    sparse_opt.buckets) loads as a BucketedProgram taking any token count
    up to its largest bucket."""
    from . import buckets
    if buckets.is_bucketed(artifact_dir):
        _, names, _, _ = buckets.read_manifest(artifact_dir)
        programs = {}
        try:
            for m, name in names.items():
                programs[m] = load(os.path.join(os.fspath(artifact_dir), name), device)
        except Exception:
            for p in programs.values():
                p.close()
            raise
        program = buckets.BucketedProgram(artifact_dir, programs)
    else:
        artifact = Artifact(artifact_dir)
        artifact.signature  # a missing or malformed signature fails before the GPU
        parse(artifact_dir).close()  # so does a corrupt program (not "no driver")
        init(device)
        handle = _p()
        _check(_lib().sparseopt_program_load(os.fspath(artifact_dir).encode(),
                                             ctypes.byref(handle)))
        program = Program(handle, artifact, device, loaded=True)
    if comm is not None:
        program.comm = comm
    return program


def parse(artifact_dir):
    """Reads and checks the artifact without a GPU; the Program answers
    queries and checks arguments but cannot run."""
    artifact = Artifact(artifact_dir)
    artifact.signature
    handle = _p()
    _check(_lib().sparseopt_program_parse(os.fspath(artifact_dir).encode(), ctypes.byref(handle)))
    return Program(handle, artifact, 0, loaded=False)
