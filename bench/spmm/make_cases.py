#!/usr/bin/env python3
"""Compiles every benchmark case with sparse-opt into bench/artifacts/<case>/.

Each case is a function taking the activations and the already-compressed
weight (values + metadata, as sgpu.assemble documents; for 6:8 the weight
decomposed over the lifted K'), so one artifact serves any weight of that
shape: the benchmark decomposes and compresses torch's pruned weight with the
same C utility the compiler uses for constants.
With --policy auto a case is first written as an imported layer would be
(a linalg.matmul whose [N, K] weight argument declares its #sgpu.nm
pattern) and given to sgpu-slide-sparse: where the compiler's cost model
keeps it dense, the artifact is that program (one cuBLASLt `gemm` line
taking X and the dense pruned weight) and choice.txt says "dense";
otherwise the sparse case above is compiled and choice.txt says "sparse".
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


def source(variant, dtype, m, n, k, tile_groups=0):
    """X [M, K] in; for (2N-2):2N the program lifts it to K' itself (a
    gather kernel, or inside the GEMM for the tiled order) and the weight
    parts describe the decomposed N x K' weight."""
    kl = cases.lifted_k(k, variant, tile_groups)
    pn, pk = padded(n, kl)
    w = "!sgpu.compressed<%dx%dx%s, #sgpu.nm<2:4>>" % (n, kl, dtype)
    lift = ""
    xin = "%x"
    if variant != "2:4":
        order = ", tile_groups = %d" % tile_groups if tile_groups else ""
        lift = "  %%xl = sgpu.lift %%x {pattern = #sgpu.nm<%s>%s} : tensor<%dx%dx%s> -> tensor<%dx%dx%s>\n" % (
            variant, order, m, k, dtype, m, kl, dtype)
        xin = "%xl"
    return f"""func.func @spmm(%x: tensor<{m}x{k}x{dtype}>, %v: tensor<{pn}x{pk // 2}x{dtype}>, %e: tensor<{pn * pk // 32}xi32>) -> tensor<{m}x{n}x{dtype}> {{
{lift}  %w = sgpu.assemble %v, %e : tensor<{pn}x{pk // 2}x{dtype}>, tensor<{pn * pk // 32}xi32> -> {w}
  %y = sgpu.spmm {xin}, %w : tensor<{m}x{kl}x{dtype}>, {w} -> tensor<{m}x{n}x{dtype}>
  return %y : tensor<{m}x{n}x{dtype}>
}}
"""


def linear_source(variant, dtype, m, n, k):
    """The layer as an importer writes it: Y = X . W^T on a weight argument
    that declares its pattern."""
    w = "tensor<%dx%dx%s, #sgpu.nm<%s>>" % (n, k, dtype, variant)
    return f"""func.func @linear(%x: tensor<{m}x{k}x{dtype}>, %w: {w}) -> tensor<{m}x{n}x{dtype}> {{
  %z = arith.constant 0.0 : {dtype}
  %e = tensor.empty() : tensor<{m}x{n}x{dtype}>
  %acc = linalg.fill ins(%z : {dtype}) outs(%e : tensor<{m}x{n}x{dtype}>) -> tensor<{m}x{n}x{dtype}>
  %y = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>,
                                      affine_map<(m, n, k) -> (n, k)>,
                                      affine_map<(m, n, k) -> (m, n)>]
      ins(%x, %w : tensor<{m}x{k}x{dtype}>, {w})
      outs(%acc : tensor<{m}x{n}x{dtype}>) -> tensor<{m}x{n}x{dtype}>
  return %y : tensor<{m}x{n}x{dtype}>
}}
"""


def compiler_keeps_dense(d, variant, dtype, m, n, k):
    """Whether sgpu-slide-sparse (policy=auto, sm_90a) keeps the layer
    dense; writes the layer to d/linear.mlir."""
    (d / "linear.mlir").write_text(linear_source(variant, dtype, m, n, k))
    out = subprocess.run([str(SPARSE_OPT), str(d / "linear.mlir"),
                          "--sgpu-slide-sparse=chip=sm_90a policy=auto"],
                         check=True, capture_output=True, text=True).stdout
    return "sgpu.matmul" in out


def compile_case(args, variant, dtype, m, n, k):
    d = pathlib.Path(args.out) / cases.name(variant, dtype, m, n, k)
    d.mkdir(parents=True, exist_ok=True)
    if args.policy == "auto":
        dense = compiler_keeps_dense(d, variant, dtype, m, n, k)
        (d / "choice.txt").write_text("dense\n" if dense else "sparse\n")
        if dense:
            subprocess.run([str(SPARSE_OPT), str(d / "linear.mlir"),
                            "--sgpu-compile=chip=sm_90a output-dir=%s" % d,
                            "-o", str(d / "compiled.mlir")], check=True)
            return
    tg = cases.tile_groups(variant, args.lift, m)
    (d / "model.mlir").write_text(source(variant, dtype, m, n, k, tg))
    # The window order the weight must be decomposed in (run_spmm.py).
    (d / "tile_groups.txt").write_text("%d\n" % tg)
    opts = "chip=sm_90a kernel=%s lift=%s output-dir=%s" % (args.kernel, args.lift, d)
    if args.options:
        opts += " " + args.options
    subprocess.run([str(SPARSE_OPT), str(d / "model.mlir"), "--sgpu-compile=" + opts,
                    "-o", str(d / "compiled.mlir")], check=True)


def main():
    import argparse
    from concurrent.futures import ThreadPoolExecutor
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--kernel", default="wgmma", choices=["mma", "wgmma"],
                    help="spmm kernel of convert-sgpu-to-gpu (default wgmma)")
    ap.add_argument("--set", default="issue", choices=cases.SETS, help="case set (default issue)")
    ap.add_argument("--options", default="",
                    help="more sgpu-compile options, e.g. 'tile-n=128 stages=4' (a tile sweep)")
    ap.add_argument("--policy", default="sparse", choices=["sparse", "auto"],
                    help="sparse: the sparse kernel for every case (default); auto: the "
                         "compiler's sparse-or-dense choice (choice.txt in each case)")
    ap.add_argument("--lift", default="auto", choices=["auto", "fused", "split", "separate"],
                    help="the sgpu-compile lift option: auto (6:8 in the tiled window "
                         "order, the lift inside the GEMM up to 16 tokens, split above; "
                         "default), fused (inside the GEMM at every M), split (a kernel "
                         "copies the shared windows, the GEMM loads them beside X) or "
                         "separate (the plain order and the gather kernel)")
    ap.add_argument("--out", default=str(OUT), help="artifact folder (default bench/artifacts)")
    ap.add_argument("-j", type=int, default=2, help="parallel compiles")
    args = ap.parse_args()
    todo = [(v, d, m, n, k) for v, d, _, m, n, k in cases.cases(args.set)]
    with ThreadPoolExecutor(args.j) as pool:
        list(pool.map(lambda c: compile_case(args, *c), todo))
    print("compiled %d cases (%s kernel%s, policy %s) into %s" % (
        len(todo), args.kernel, ", " + args.options if args.options else "", args.policy,
        args.out))


if __name__ == "__main__":
    main()
