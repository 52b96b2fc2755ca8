"""The runtime library through ctypes, for the GPU check scripts beside this
file (numpy only, no torch, no sparse_opt package): load it, and run a
compiled program on numpy inputs; and the command line and compile step the
scripts that compile their own cases share."""
import argparse
import ctypes
import json
import pathlib
import subprocess
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
    rt.sparseopt_program_bind.argtypes = [p, ctypes.POINTER(u64), ctypes.c_size_t, p]
    rt.sparseopt_program_destroy.argtypes = [p]
    for f in ("num_inputs", "num_outputs", "num_params", "num_stats"):
        getattr(rt, "sparseopt_program_" + f).argtypes = [p]
    rt.sparseopt_program_stat_name.argtypes = [p, ctypes.c_int]
    rt.sparseopt_program_stat_name.restype = ctypes.c_char_p
    rt.sparseopt_program_read_stat.argtypes = [p, ctypes.c_int, p, ctypes.POINTER(u64)]
    for f in ("input_bytes", "output_bytes", "param_bytes"):
        getattr(rt, "sparseopt_program_" + f).argtypes = [p, ctypes.c_int]
        getattr(rt, "sparseopt_program_" + f).restype = ctypes.c_size_t
    return rt


def checker(rt):
    """A function that exits with the runtime's message on a failed status."""
    def check(status):
        if status != 0:
            sys.exit("runtime error: " + rt.sparseopt_last_error().decode())
    return check


def run_program(rt, artifact_dir, args, out, runs=1, stats=None):
    """Loads the program in `artifact_dir` (one output), uploads the numpy
    `args` (the function's arguments in order), binds those that
    signature.json lists as params, runs it `runs` times on the others into
    `out`'s device copy and downloads the result into `out`; fills the dict
    `stats` (if given) with the program's stats after the last run. Exits
    with a message when the program's sizes differ from the arrays'."""
    check = checker(rt)
    check(rt.sparseopt_init(0))
    prog = p()
    check(rt.sparseopt_program_load(str(artifact_dir).encode(), ctypes.byref(prog)))
    params = json.loads((pathlib.Path(artifact_dir) / "signature.json").read_text()).get("params", [])
    inputs = [i for i in range(len(args)) if i not in params]
    counts = (rt.sparseopt_program_num_inputs(prog), rt.sparseopt_program_num_outputs(prog),
              rt.sparseopt_program_num_params(prog))
    if counts != (len(inputs), 1, len(params)):
        sys.exit("expected a program of %d inputs, 1 output and %d params, got %s"
                 % (len(inputs), len(params), counts))
    dev = []
    for i, a in enumerate(args):
        role, k = ("param", params.index(i)) if i in params else ("input", inputs.index(i))
        want = getattr(rt, "sparseopt_program_%s_bytes" % role)(prog, k)
        if want != a.nbytes:
            sys.exit("argument %d (%s %d): the program expects %d bytes, numpy has %d"
                     % (i, role, k, want, a.nbytes))
        d = u64()
        check(rt.sparseopt_malloc(a.nbytes, ctypes.byref(d)))
        check(rt.sparseopt_memcpy_htod(d, np.ascontiguousarray(a).ctypes.data, a.nbytes))
        dev.append(d.value)
    if params:
        check(rt.sparseopt_program_bind(prog, (u64 * len(params))(*[dev[i] for i in params]),
                                        len(params), None))
    if rt.sparseopt_program_output_bytes(prog, 0) != out.nbytes:
        sys.exit("the output: the program writes %d bytes, numpy has %d"
                 % (rt.sparseopt_program_output_bytes(prog, 0), out.nbytes))
    dout = u64()
    check(rt.sparseopt_malloc(out.nbytes, ctypes.byref(dout)))
    ins = [dev[i] for i in inputs]
    for _ in range(runs):
        check(rt.sparseopt_program_run(prog, (u64 * len(ins))(*ins), (u64 * 1)(dout.value), None))
    check(rt.sparseopt_synchronize())
    check(rt.sparseopt_memcpy_dtoh(out.ctypes.data, dout, out.nbytes))
    if stats is not None:
        for i in range(rt.sparseopt_program_num_stats(prog)):
            value = u64()
            check(rt.sparseopt_program_read_stat(prog, i, None, ctypes.byref(value)))
            stats[rt.sparseopt_program_stat_name(prog, i).decode()] = value.value
    check(rt.sparseopt_program_destroy(prog))
    for d in dev + [dout.value]:
        check(rt.sparseopt_free(d))
    return out


def case_arguments():
    """`<lib dir> <work dir> [--compile <sparse-opt>] [--no-run]`: with
    --compile each case is written into the work dir and compiled there
    (the lit test); without it the artifacts must already be there (a GPU
    machine without the compiler); --no-run only compiles."""
    ap = argparse.ArgumentParser()
    ap.add_argument("libdir")
    ap.add_argument("work", type=pathlib.Path)
    ap.add_argument("--compile", metavar="SPARSE_OPT")
    ap.add_argument("--no-run", action="store_true")
    return ap.parse_args()


def compile_function(sparse_opt, src, text, out_dir, options=""):
    """Writes the MLIR `text` to `src` and compiles it with --sgpu-compile
    (and `options`) into the artifact folder `out_dir`."""
    src.parent.mkdir(parents=True, exist_ok=True)
    src.write_text(text)
    subprocess.run([sparse_opt, str(src), "--sgpu-compile=output-dir=%s %s" % (out_dir, options),
                    "-o", "/dev/null"], check=True)
