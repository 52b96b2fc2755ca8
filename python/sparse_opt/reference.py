"""Runs imported or emitted IR on the CPU through the reference lowering:
the semantics every GPU program is checked against, and the CPU backend of
`sparse_opt.decoder` (no GPU needed).

`run_reference(mlir_text, inputs, params=None, states=None)` appends a
`@main` that feeds `inputs` (numpy arrays, as constants) to `@forward`,
followed by its params (the arguments the importers name with
`sgpu.param`, also as constants in @main), lowers everything with the
compiler's `sgpu-reference` pipeline, runs it with `mlir-runner` (from
LLVM 22: `$SPARSEOPT_MLIR_RUNNER`, `/usr/lib/llvm-22/bin` or the PATH) and
returns the f32 results as numpy arrays. `params` is a mapping {qualified
name: array} (a torch module's state, an ONNX model's initializers; extra
names are ignored) or a list in the order of the params; each array is
converted to the declared element type (bf16 included) and passed with the
declared type (its #sgpu.nm encoding included).

State params (`sgpu.state`: the KV caches a program updates in place) take
their values from `states` ({name: f32 array}); each gets a buffer of its
own in @main, which is printed after the call, and `run_reference(...,
states=...)` then returns `(results, updated_states)`: a step of a decoder
on the CPU.
"""
import os
import pathlib
import re
import subprocess

import numpy as np

import shutil

LLVM = pathlib.Path("/usr/lib/llvm-22")


def _runner():
    """mlir-runner and the folder of its runtime libraries."""
    for cand in (os.environ.get("SPARSEOPT_MLIR_RUNNER"), str(LLVM / "bin" / "mlir-runner"),
                 shutil.which("mlir-runner"), shutil.which("mlir-runner-22")):
        if cand and os.path.isfile(cand):
            lib = pathlib.Path(cand).resolve().parents[1] / "lib"
            return cand, lib
    raise FileNotFoundError("mlir-runner (LLVM 22) was not found: install mlir-22-tools or set "
                            "SPARSEOPT_MLIR_RUNNER")

_DT = {np.dtype(np.float32): "f32", np.dtype(np.float16): "f16", np.dtype(np.int64): "i64",
       np.dtype(np.int32): "i32", np.dtype(np.bool_): "i1"}
_NP = {"f32": np.float32, "f16": np.float16, "f64": np.float64, "i64": np.int64, "i32": np.int32,
       "i16": np.int16, "i8": np.int8, "i1": np.bool_}


def _type(shape, dt):
    return "tensor<%s%s>" % ("".join("%dx" % d for d in shape), dt)


def _literal(a):
    if a.dtype == np.bool_:
        return "dense<%s>" % np.array2string(a.astype(int), separator=", ", threshold=1 << 30).replace("1", "true").replace("0", "false")
    return 'dense<"0x%s">' % a.astype(a.dtype.newbyteorder("<")).tobytes().hex().upper()


def _bf16_literal(a):
    """Round-to-nearest-even bf16 bits of `a` as a hex dense literal."""
    bits = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32)
    bits = ((bits + (((bits >> 16) & 1) + 0x7FFF)) >> 16).astype("<u2")
    return 'dense<"0x%s">' % bits.tobytes().hex().upper()


def _split_top(text):
    """`text` split at the commas outside <>, (), {} and strings."""
    parts, depth, quoted, cur, prev = [], 0, False, [], ""
    for ch in text:
        if quoted:
            quoted = not (ch == '"' and prev != "\\")
        elif ch == '"':
            quoted = True
        elif ch in "<({[":
            depth += 1
        elif ch in ">)}]":
            depth -= 1
        if ch == "," and depth == 0 and not quoted:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
        prev = ch
    if "".join(cur).strip():
        parts.append("".join(cur))
    return [p.strip() for p in parts]


def _argument_parts(text, function):
    """[(type text, param name or None, is state)] of @function's arguments."""
    m = re.search(r"func\.func @%s\((.*?)\) -> " % re.escape(function), text)
    if not m:
        raise ValueError("no @%s function" % function)
    out = []
    for arg in _split_top(m.group(1)):
        am = re.fullmatch(r'%[\w.$-]+: (tensor<.*?>)(?: \{(.*)\})?', arg)
        if not am:
            raise ValueError("cannot read argument %r" % arg)
        attrs = am.group(2) or ""
        pm = re.search(r'sgpu\.param = "((?:[^"\\]|\\.)*)"', attrs)
        name = pm.group(1).replace('\\"', '"').replace("\\\\", "\\") if pm else None
        out.append((am.group(1), name, bool(pm) and bool(re.search(r"\bsgpu\.state\b", attrs))))
    return out


def arguments(text, function="forward"):
    """[(type text, param name or None)] of the arguments of @function."""
    return [(t, n) for t, n, _ in _argument_parts(text, function)]


def param_names(text, function="forward"):
    """The qualified names of @function's params, in order."""
    return [name for _, name in arguments(text, function) if name is not None]


def _signature(text):
    m = re.search(r"func\.func @forward\(.*?\) -> \((.*?)\)", text)
    if not m:
        raise ValueError("no @forward function")
    return re.findall(r"tensor<[^>]*>", m.group(1))


def _param_arrays(args, params):
    """The arrays of the params of `args` in order, from a mapping or a list."""
    names = [n for _, n in args if n is not None]
    if params is None:
        params = {}
    if isinstance(params, dict):
        missing = [n for n in names if n not in params]
        if missing:
            raise ValueError("no value for the params %s" % ", ".join(missing))
        return [params[n] for n in names]
    params = list(params)
    if len(params) != len(names):
        raise ValueError("@forward takes %d params, %d given" % (len(names), len(params)))
    return params


def _as_numpy(a):
    if hasattr(a, "detach"):  # a torch tensor
        a = a.detach().cpu()
        a = a.float() if str(a.dtype) == "torch.bfloat16" else a
        a = a.numpy()
    return np.ascontiguousarray(a)


def _param_constant(a, type_text):
    """A dense literal of array `a` converted to the element type of `type_text`."""
    dt = re.match(r"tensor<(?:\d+x)*([a-z0-9]+)", type_text).group(1)
    shape = tuple(int(d) for d in re.findall(r"(\d+)x", type_text.split(",")[0]))
    a = _as_numpy(a)
    if a.shape != shape:
        raise ValueError("a param of type %s given shape %s" % (type_text, list(a.shape)))
    if dt == "bf16":
        return _bf16_literal(a.astype(np.float32))
    return _literal(a.astype(_NP[dt]))


def state_buffer_names(text, function="forward"):
    """The qualified names of @function's state params (sgpu.state)."""
    return [n for _, n, state in _argument_parts(text, function) if state]


def _lower(module):
    """`module` through the compiler's sgpu-reference pipeline, as text."""
    from .compiler import Compiler
    c = Compiler()
    try:
        return c.parse(module, filename="reference.mlir").run("sgpu-reference").print()
    finally:
        c.close()


def _print_f32(lines, i, value, type_text):
    shape = type_text[len("tensor<"):-len("xf32>")] if type_text != "tensor<f32>" else ""
    mt = "memref<%sxf32>" % shape if shape else "memref<f32>"
    lines.append("  %%m%d = bufferization.to_buffer %s : %s to %s" % (i, value, type_text, mt))
    lines.append("  %%u%d = memref.cast %%m%d : %s to memref<*xf32>" % (i, i, mt))
    lines.append("  func.call @printMemrefF32(%%u%d) : (memref<*xf32>) -> ()" % i)


def run_reference(text, inputs, params=None, states=None, timeout=600):
    results = _signature(text)
    for r in results:
        if not r.endswith("xf32>") and r != "tensor<f32>":
            raise ValueError("reference runner prints f32 results only, got %s" % r)
    args = arguments(text)
    state_names = set(state_buffer_names(text))
    if state_names and states is None:
        raise ValueError("@forward updates state (%s): pass states={name: array}" % ", ".join(sorted(state_names)))
    n_inputs = sum(1 for _, n in args if n is None)
    if len(inputs) != n_inputs:
        raise ValueError("@forward takes %d inputs, %d given" % (n_inputs, len(inputs)))
    lines = ["func.func private @printMemrefF32(memref<*xf32>)", "func.func @main() {"]
    plain_args = [(t, n) for t, n in args if n not in state_names]
    operands, ins, ps = [], iter(inputs), iter(_param_arrays(plain_args, params))
    printed_states = []
    for i, (type_text, name) in enumerate(args):
        if name is None:
            a = np.ascontiguousarray(next(ins))
            t = _type(a.shape, _DT[a.dtype])
            lines.append("  %%arg%d = arith.constant %s : %s" % (i, _literal(a), t))
        elif name in state_names:
            # A buffer of its own (a constant's would be read-only memory):
            # the program updates it in place, and it is printed afterwards.
            t = type_text
            if not t.endswith("xf32>"):
                raise ValueError("the reference backend keeps f32 state only, got %s for '%s'" % (t, name))
            if name not in states:
                raise ValueError("no value for the state '%s'" % name)
            lines.append("  %%init%d = arith.constant %s : %s" % (i, _param_constant(states[name], t), t))
            lines.append("  %%arg%d = bufferization.alloc_tensor() copy(%%init%d) : %s" % (i, i, t))
            printed_states.append((name, "%%arg%d" % i, t))
        else:
            t = type_text
            plain = re.sub(r", #sgpu\.nm<\d+:\d+>>$", ">", t)
            if plain == t:
                lines.append("  %%arg%d = arith.constant %s : %s" % (i, _param_constant(next(ps), t), t))
            else:
                # A constant of an encoded type would keep #sgpu.nm in the
                # lowered module; the encoding comes with a cast instead.
                lines.append("  %%plain%d = arith.constant %s : %s" % (i, _param_constant(next(ps), t), plain))
                lines.append("  %%arg%d = tensor.cast %%plain%d : %s to %s" % (i, i, plain, t))
        operands.append(("%%arg%d" % i, t))
    outs = ", ".join("%%out%d" % i for i in range(len(results)))
    lines.append("  %s = func.call @forward(%s) : (%s) -> (%s)" % (
        outs, ", ".join(a for a, _ in operands), ", ".join(t for _, t in operands), ", ".join(results)))
    for i, r in enumerate(results):
        _print_f32(lines, i, "%%out%d" % i, r)
    for j, (_, value, t) in enumerate(printed_states):
        _print_f32(lines, len(results) + j, value, t)
    lines += ["  return", "}"]
    # Insert @main into the module: before the closing brace of the module
    # (the resources block, if any, follows it).
    head, sep, tail = text.partition("\n{-#")
    idx = head.rstrip().rfind("}")
    module = head[:idx] + "\n".join(lines) + "\n}\n" + (sep + tail if sep else "")
    lowered = _lower(module)
    runner, libdir = _runner()
    libs = ",".join(str(libdir / l) for l in ("libmlir_runner_utils.so", "libmlir_c_runner_utils.so"))
    run = subprocess.run([runner, "-e", "main", "-entry-point-result=void",
                          "-shared-libs=" + libs], input=lowered, capture_output=True, text=True,
                         timeout=timeout)
    if run.returncode:
        raise RuntimeError("mlir-runner failed:\n" + run.stderr[-4000:])
    arrays = []
    for block in run.stdout.split("Unranked Memref")[1:]:
        sizes = [int(s) for s in re.search(r"sizes = \[([^\]]*)\]", block).group(1).split(",") if s.strip()]
        data = block.split("data =", 1)[1]
        nums = [float(x) for x in re.findall(r"-?(?:nan|inf|\d+(?:\.\d*)?(?:e[-+]?\d+)?)", data)]
        arrays.append(np.array(nums, dtype=np.float32).reshape(sizes))
    if states is None:
        return arrays
    updated = dict(states)
    for (name, _, _), a in zip(printed_states, arrays[len(results):]):
        updated[name] = a
    return arrays[:len(results)], updated
