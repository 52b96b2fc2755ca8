#!/usr/bin/env python3
"""Compiles every benchmark case with sparse-opt into bench/artifacts/<case>/.

Each case is a function taking the activations and the already-compressed
weight (values + metadata, as sgpu.assemble documents; for 6:8 the weight
decomposed over the lifted K'), so one artifact serves any weight of that
shape: the benchmark decomposes and compresses torch's pruned weight with the
same C utility the compiler uses for constants.
Run here (the compiler needs libMLIR): python3 bench/spmm/make_cases.py
"""
import pathlib
import subprocess
import sys

sys.path.insert(0, str(pathlib.Path(__file__).parent))
import cases  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]
OUT = ROOT / "bench" / "artifacts"
SPARSE_OPT = ROOT / "build" / "bin" / "sparse-opt"


def padded(n, k):
    pn, pk = (n + 15) // 16 * 16, (k + 31) // 32 * 32
    return pn, pk


def source(variant, dtype, m, n, k):
    """X [M, K] in; for 6:8 the program lifts it to K' itself (a gather
    kernel) and the weight parts describe the decomposed N x K' weight."""
    kl = cases.lifted_k(k, variant)
    pn, pk = padded(n, kl)
    w = "!sgpu.compressed<%dx%dx%s, #sgpu.nm<2:4>>" % (n, kl, dtype)
    lift = ""
    xin = "%x"
    if variant != "2:4":
        lift = "  %%xl = sgpu.lift %%x {pattern = #sgpu.nm<%s>} : tensor<%dx%dx%s> -> tensor<%dx%dx%s>\n" % (
            variant, m, k, dtype, m, kl, dtype)
        xin = "%xl"
    return f"""func.func @spmm(%x: tensor<{m}x{k}x{dtype}>, %v: tensor<{pn}x{pk // 2}x{dtype}>, %e: tensor<{pn * pk // 32}xi32>) -> tensor<{m}x{n}x{dtype}> {{
{lift}  %w = sgpu.assemble %v, %e : tensor<{pn}x{pk // 2}x{dtype}>, tensor<{pn * pk // 32}xi32> -> {w}
  %y = sgpu.spmm {xin}, %w : tensor<{m}x{kl}x{dtype}>, {w} -> tensor<{m}x{n}x{dtype}>
  return %y : tensor<{m}x{n}x{dtype}>
}}
"""


def main():
    import argparse
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--kernel", default="mma", choices=["mma", "wgmma"],
                    help="spmm kernel of convert-sgpu-to-gpu (default mma)")
    ap.add_argument("--out", default=str(OUT), help="artifact folder (default bench/artifacts)")
    args = ap.parse_args()
    out_root = pathlib.Path(args.out)
    out_root.mkdir(parents=True, exist_ok=True)
    for variant, dtype, _, m, n, k in cases.cases():
        d = out_root / cases.name(variant, dtype, m, n, k)
        d.mkdir(exist_ok=True)
        (d / "model.mlir").write_text(source(variant, dtype, m, n, k))
        subprocess.run([str(SPARSE_OPT), str(d / "model.mlir"),
                        "--sgpu-compile=chip=sm_90a kernel=%s output-dir=%s" % (args.kernel, d),
                        "-o", str(d / "compiled.mlir")],
                       check=True)
    print("compiled %d cases (%s kernel) into %s" % (len(list(cases.cases())), args.kernel, out_root))


if __name__ == "__main__":
    main()
