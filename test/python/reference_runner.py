"""Runs imported or emitted IR on the CPU through the reference pipeline.

`run_reference(mlir_text, inputs)` appends a `@main` that feeds `inputs`
(numpy arrays, as constants) to `@forward`, lowers everything with
`sparse-opt --sgpu-reference`, runs it with `mlir-runner` and returns the
f32 results (printed with printMemrefF32) as numpy arrays."""
import os
import pathlib
import re
import subprocess

import numpy as np

LLVM = pathlib.Path("/usr/lib/llvm-22")
ROOT = pathlib.Path(__file__).resolve().parents[2]
BUILD = pathlib.Path(os.environ.get("SPARSEOPT_BUILD_DIR", ROOT / "build"))

_DT = {np.dtype(np.float32): "f32", np.dtype(np.float16): "f16", np.dtype(np.int64): "i64",
       np.dtype(np.int32): "i32", np.dtype(np.bool_): "i1"}


def _type(shape, dt):
    return "tensor<%s%s>" % ("".join("%dx" % d for d in shape), dt)


def _literal(a):
    if a.dtype == np.bool_:
        return "dense<%s>" % np.array2string(a.astype(int), separator=", ", threshold=1 << 30).replace("1", "true").replace("0", "false")
    if a.dtype.kind == "f":
        return 'dense<"0x%s">' % a.astype(a.dtype.newbyteorder("<")).tobytes().hex().upper()
    return 'dense<"0x%s">' % a.astype(a.dtype.newbyteorder("<")).tobytes().hex().upper()


def _signature(text):
    m = re.search(r"func\.func @forward\((.*?)\) -> \((.*?)\)", text)
    if not m:
        raise ValueError("no @forward function")
    results = re.findall(r"tensor<[^>]*>", m.group(2))
    return results


def run_reference(text, inputs, timeout=600):
    results = _signature(text)
    for r in results:
        if not r.endswith("xf32>") and r != "tensor<f32>":
            raise ValueError("reference runner prints f32 results only, got %s" % r)
    lines = ["func.func private @printMemrefF32(memref<*xf32>)", "func.func @main() {"]
    args = []
    for i, a in enumerate(inputs):
        a = np.ascontiguousarray(a)
        t = _type(a.shape, _DT[a.dtype])
        lines.append("  %%in%d = arith.constant %s : %s" % (i, _literal(a), t))
        args.append(("%%in%d" % i, t))
    outs = ", ".join("%%out%d" % i for i in range(len(results)))
    lines.append("  %s = func.call @forward(%s) : (%s) -> (%s)" % (
        outs, ", ".join(a for a, _ in args), ", ".join(t for _, t in args), ", ".join(results)))
    for i, r in enumerate(results):
        shape = r[len("tensor<"):-len("xf32>")]
        mt = "memref<%sxf32>" % shape
        lines.append("  %%m%d = bufferization.to_buffer %%out%d : %s to %s" % (i, i, r, mt))
        lines.append("  %%u%d = memref.cast %%m%d : %s to memref<*xf32>" % (i, i, mt))
        lines.append("  func.call @printMemrefF32(%%u%d) : (memref<*xf32>) -> ()" % i)
    lines += ["  return", "}"]
    # Insert @main into the module: before the closing brace of the module
    # (the resources block, if any, follows it).
    head, sep, tail = text.partition("\n{-#")
    idx = head.rstrip().rfind("}")
    module = head[:idx] + "\n".join(lines) + "\n}\n" + (sep + tail if sep else "")
    lowered = subprocess.run([str(BUILD / "bin" / "sparse-opt"), "-", "--sgpu-reference"], input=module,
                             capture_output=True, text=True, timeout=timeout)
    if lowered.returncode:
        raise RuntimeError("sparse-opt --sgpu-reference failed:\n" + lowered.stderr[-4000:])
    libs = ",".join(str(LLVM / "lib" / l) for l in ("libmlir_runner_utils.so", "libmlir_c_runner_utils.so"))
    run = subprocess.run([str(LLVM / "bin" / "mlir-runner"), "-e", "main", "-entry-point-result=void",
                          "-shared-libs=" + libs], input=lowered.stdout, capture_output=True, text=True,
                         timeout=timeout)
    if run.returncode:
        raise RuntimeError("mlir-runner failed:\n" + run.stderr[-4000:])
    arrays = []
    for block in run.stdout.split("Unranked Memref")[1:]:
        sizes = [int(s) for s in re.search(r"sizes = \[([^\]]*)\]", block).group(1).split(",") if s.strip()]
        data = block.split("data =", 1)[1]
        nums = [float(x) for x in re.findall(r"-?(?:nan|inf|\d+(?:\.\d*)?(?:e[-+]?\d+)?)", data)]
        arrays.append(np.array(nums, dtype=np.float32).reshape(sizes))
    return arrays
