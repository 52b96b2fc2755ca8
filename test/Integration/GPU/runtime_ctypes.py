"""The runtime library through ctypes, for the GPU check scripts beside this
file (numpy only, no torch, no sparse_opt package): load it, and run a
compiled program on numpy inputs."""
import ctypes
import pathlib
import sys

import numpy as np

u64, p = ctypes.c_uint64, ctypes.c_void_p


def load_runtime(libdir):
    """libsparseopt_runtime.so from `libdir`, with the signatures the
    scripts call."""
    rt = ctypes.CDLL(str(pathlib.Path(libdir) / "libsparseopt_runtime.so"))
    rt.sparseopt_last_error.restype = ctypes.c_char_p
    rt.sparseopt_malloc.argtypes = [ctypes.c_size_t, ctypes.POINTER(u64)]
    rt.sparseopt_free.argtypes = [u64]
    rt.sparseopt_memcpy_htod.argtypes = [u64, p, ctypes.c_size_t]
    rt.sparseopt_memcpy_dtoh.argtypes = [p, u64, ctypes.c_size_t]
    rt.sparseopt_program_load.argtypes = [ctypes.c_char_p, ctypes.POINTER(p)]
    rt.sparseopt_program_run.argtypes = [p, ctypes.POINTER(u64), ctypes.POINTER(u64), p]
    rt.sparseopt_program_destroy.argtypes = [p]
    for f in ("num_inputs", "num_outputs", "num_params"):
        getattr(rt, "sparseopt_program_" + f).argtypes = [p]
    for f in ("input_bytes", "output_bytes"):
        getattr(rt, "sparseopt_program_" + f).argtypes = [p, ctypes.c_int]
        getattr(rt, "sparseopt_program_" + f).restype = ctypes.c_size_t
    return rt


def checker(rt):
    """A function that exits with the runtime's message on a failed status."""
    def check(status):
        if status != 0:
            sys.exit("runtime error: " + rt.sparseopt_last_error().decode())
    return check


def run_program(rt, artifact_dir, inputs, out, runs=1):
    """Loads the program in `artifact_dir` (inputs only: no params, one
    output), uploads the numpy `inputs`, runs it `runs` times into `out`'s
    device copy and downloads the result into `out`. Exits with a message
    when the program's sizes differ from the arrays'."""
    check = checker(rt)
    check(rt.sparseopt_init(0))
    prog = p()
    check(rt.sparseopt_program_load(str(artifact_dir).encode(), ctypes.byref(prog)))
    counts = (rt.sparseopt_program_num_inputs(prog), rt.sparseopt_program_num_outputs(prog),
              rt.sparseopt_program_num_params(prog))
    if counts != (len(inputs), 1, 0):
        sys.exit("expected a program of %d inputs, 1 output and no params, got %s"
                 % (len(inputs), counts))
    dev = []
    for i, a in enumerate(inputs):
        if rt.sparseopt_program_input_bytes(prog, i) != a.nbytes:
            sys.exit("input %d: the program expects %d bytes, numpy has %d"
                     % (i, rt.sparseopt_program_input_bytes(prog, i), a.nbytes))
        d = u64()
        check(rt.sparseopt_malloc(a.nbytes, ctypes.byref(d)))
        check(rt.sparseopt_memcpy_htod(d, np.ascontiguousarray(a).ctypes.data, a.nbytes))
        dev.append(d.value)
    if rt.sparseopt_program_output_bytes(prog, 0) != out.nbytes:
        sys.exit("the output: the program writes %d bytes, numpy has %d"
                 % (rt.sparseopt_program_output_bytes(prog, 0), out.nbytes))
    dout = u64()
    check(rt.sparseopt_malloc(out.nbytes, ctypes.byref(dout)))
    for _ in range(runs):
        check(rt.sparseopt_program_run(prog, (u64 * len(dev))(*dev), (u64 * 1)(dout.value), None))
    check(rt.sparseopt_synchronize())
    check(rt.sparseopt_memcpy_dtoh(out.ctypes.data, dout, out.nbytes))
    check(rt.sparseopt_program_destroy(prog))
    for d in dev + [dout.value]:
        check(rt.sparseopt_free(d))
    return out
