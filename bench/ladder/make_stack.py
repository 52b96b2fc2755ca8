#!/usr/bin/env python3
"""Writes and compiles the tensor-parallel block stack of the ladder benchmark.

The stack is what one rank of a tensor-parallel decoder runs without the
attention core: `layers` pairs of blocks, an attention-sized block (a
column-parallel d -> 2d/tp matmul, ReLU, a row-parallel 2d/tp -> d matmul:
the 4d^2 multiply-adds per token of a QKV and an output projection) and an
MLP-sized block (d -> F/tp, ReLU, F/tp -> d), each pre-norm (RMSNorm) with
its all-reduce and residual add, then a final RMSNorm:

    x_i = x_{i-1} + all_reduce(W2_i relu(W1_i rms_norm(x_{i-1}, g_i)))

Weights, norm scales and the tokens are function arguments (run-time
inputs: each rank passes its own shards). Two programs per shape:
`standard` (the chain as written) and `ladder` (sgpu-ladder-residual: each
block reads the stream one block stale, so its all-reduce overlaps the next
block). Both go through sgpu-async-collectives and sgpu-compile.

  python3 bench/ladder/make_stack.py --out DIR [--d 4096] [--ffn 14336]
      [--layers 4] [--tp 1] [--tokens 1,4,16,64,2048] [--dtype bf16]

writes DIR/<variant>_m<M>/ (program, PTX, signature.json) and
DIR/<variant>_m<M>.mlir. Run here (the compiler needs libMLIR).
"""
import argparse
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
SPARSE_OPT = ROOT / "build" / "bin" / "sparse-opt"


def blocks(d, ffn, layers, tp):
    """(name, hidden width per rank) of every block, in order."""
    out = []
    for i in range(layers):
        out.append(("attn%d" % i, 2 * d // tp))
        out.append(("mlp%d" % i, ffn // tp))
    return out


def stack_mlir(m, d, ffn, layers, tp, dtype):
    """The standard (pre-norm) stack as MLIR text."""
    t = lambda *shape: "tensor<%sx%s>" % ("x".join(str(s) for s in shape), dtype)
    args = ["%%x0: %s" % t(m, d)]
    body = []
    x = "%x0"
    for i, (name, h) in enumerate(blocks(d, ffn, layers, tp)):
        args += ["%%g_%s: %s" % (name, t(d)), "%%w1_%s: %s" % (name, t(h, d)),
                 "%%w2_%s: %s" % (name, t(d, h))]
        body += [
            "  %%n%d = sgpu.rms_norm %s, %%g_%s {epsilon = 1.0e-05 : f32} : %s, %s -> %s"
            % (i, x, name, t(m, d), t(d), t(m, d)),
            "  %%h%d = sgpu.matmul %%n%d, %%w1_%s {activation = #sgpu.activation<relu>} : %s, %s -> %s"
            % (i, i, name, t(m, d), t(h, d), t(m, h)),
            "  %%p%d = sgpu.matmul %%h%d, %%w2_%s : %s, %s -> %s"
            % (i, i, name, t(m, h), t(d, h), t(m, d)),
            "  %%r%d = sgpu.all_reduce %%p%d : %s" % (i, i, t(m, d)),
            "  %%x%d = arith.addf %s, %%r%d : %s" % (i + 1, x, i, t(m, d)),
        ]
        x = "%%x%d" % (i + 1)
    args.append("%%g_final: %s" % t(d))
    body += ["  %%y = sgpu.rms_norm %s, %%g_final {epsilon = 1.0e-05 : f32} : %s, %s -> %s"
             % (x, t(m, d), t(d), t(m, d)),
             "  return %%y : %s" % t(m, d)]
    return ("// %d-layer tensor-parallel block stack, tp=%d, %d tokens\n"
            "func.func @stack(%s) -> %s {\n%s\n}\n"
            % (layers, tp, m, ", ".join(args), t(m, d), "\n".join(body)))


def compile_stack(out, variant, m, args):
    name = "%s_m%d" % (variant, m)
    src = out / (name + ".mlir")
    src.write_text(stack_mlir(m, args.d, args.ffn, args.layers, args.tp, args.dtype))
    passes = (["--sgpu-ladder-residual"] if variant == "ladder" else []) + \
        ["--sgpu-async-collectives",
         "--sgpu-compile=output-dir=%s %s" % (out / name, args.options)]
    (out / name).mkdir(parents=True, exist_ok=True)
    cmd = [str(SPARSE_OPT), str(src), *passes, "-o", "/dev/null"]
    subprocess.run(cmd, check=True)
    return name


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True, type=pathlib.Path)
    p.add_argument("--d", type=int, default=4096)
    p.add_argument("--ffn", type=int, default=14336)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--tp", type=int, default=1)
    p.add_argument("--tokens", default="1,4,16,64,2048")
    p.add_argument("--dtype", default="bf16", choices=["bf16", "f16"])
    p.add_argument("--options", default="", help="extra sgpu-compile options")
    args = p.parse_args()
    if (2 * args.d) % args.tp or args.ffn % args.tp:
        sys.exit("tp must divide 2d and ffn")
    args.out.mkdir(parents=True, exist_ok=True)
    for m in (int(v) for v in args.tokens.split(",")):
        for variant in ("standard", "ladder"):
            print(compile_stack(args.out, variant, m, args))
    (args.out / "stack.txt").write_text(
        "d=%d ffn=%d layers=%d tp=%d dtype=%s\n"
        % (args.d, args.ffn, args.layers, args.tp, args.dtype))


if __name__ == "__main__":
    main()
