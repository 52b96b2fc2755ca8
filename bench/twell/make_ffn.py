#!/usr/bin/env python3
"""Compiles the TwELL benchmark FFNs: a gated bf16 ReLU FFN
y = (relu(x·Wgᵀ) ⊙ (x·Wuᵀ))·Wdᵀ as the importers write it, through
sgpu-sparsify-ffn (TwELL pack after the gate GEMM, sparse consumer) into
DIR/gated_bf16_m<M>_d<d>_f<F>/, and without it (our dense program: three
cuBLASLt GEMMs) into .../dense/, and with --fused also with the fused
TwELL producer (twell-producer=fused: the gate GEMM a generated wgmma
kernel whose epilogue packs) into .../fused/ (with --fused-cluster also in
clusters of two sharing W's tile, cluster=2, into .../fused_cluster/), and
with --tensor-cores with the tensor-core consumer (twell-consumer=
tensor-cores: wgmma over blocks of 64 rows) into .../tensor_cores/, with
--passes P,... with the CUDA-core consumer in P passes over the neurons
(twell-passes=P) into .../passes<P>/, and with --pack-consumer with the
pack fused into the consumer (twell-pack=consumer) into
.../pack_consumer/. choice.json records, for each benchmark density, what
the compiler's cost model picks when that density is the calibration
(`densities=p`): "twell" or "dense". The dense baseline of the same
process is torch itself (run_ffn.py).

  python3 bench/twell/make_ffn.py --out DIR [--d 2048] [--ffn 5632] [--tokens 2048,16384]
      [--fused] [--fused-cluster] [--tensor-cores] [--passes 1,2,3] [--pack-consumer]
"""
import argparse
import json
import pathlib
import subprocess

ROOT = pathlib.Path(__file__).resolve().parents[2]
SPARSE_OPT = ROOT / "build" / "bin" / "sparse-opt"

GATED = """#mk = affine_map<(m, n, k) -> (m, k)>
#nk = affine_map<(m, n, k) -> (n, k)>
#mn = affine_map<(m, n, k) -> (m, n)>
#id = affine_map<(i, j) -> (i, j)>
func.func @ffn(%x: tensor<{m}x{d}xbf16>, %wg: tensor<{f}x{d}xbf16>, %wu: tensor<{f}x{d}xbf16>,
               %wd: tensor<{d}x{f}xbf16>) -> tensor<{m}x{d}xbf16> {{
  %z = arith.constant 0.0 : bf16
  %e0 = tensor.empty() : tensor<{m}x{f}xbf16>
  %a0 = linalg.fill ins(%z : bf16) outs(%e0 : tensor<{m}x{f}xbf16>) -> tensor<{m}x{f}xbf16>
  %g = linalg.matmul indexing_maps = [#mk, #nk, #mn] ins(%x, %wg : tensor<{m}x{d}xbf16>, tensor<{f}x{d}xbf16>) outs(%a0 : tensor<{m}x{f}xbf16>) -> tensor<{m}x{f}xbf16>
  %e1 = tensor.empty() : tensor<{m}x{f}xbf16>
  %h = linalg.generic {{indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}}
      ins(%g : tensor<{m}x{f}xbf16>) outs(%e1 : tensor<{m}x{f}xbf16>) {{
  ^bb0(%a: bf16, %o: bf16):
    %r = arith.maximumf %a, %z : bf16
    linalg.yield %r : bf16
  }} -> tensor<{m}x{f}xbf16>
  %u = linalg.matmul indexing_maps = [#mk, #nk, #mn] ins(%x, %wu : tensor<{m}x{d}xbf16>, tensor<{f}x{d}xbf16>) outs(%a0 : tensor<{m}x{f}xbf16>) -> tensor<{m}x{f}xbf16>
  %e3 = tensor.empty() : tensor<{m}x{f}xbf16>
  %hu = linalg.generic {{indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}}
      ins(%h, %u : tensor<{m}x{f}xbf16>, tensor<{m}x{f}xbf16>) outs(%e3 : tensor<{m}x{f}xbf16>) {{
  ^bb0(%a: bf16, %b: bf16, %o: bf16):
    %r = arith.mulf %a, %b : bf16
    linalg.yield %r : bf16
  }} -> tensor<{m}x{f}xbf16>
  %e2 = tensor.empty() : tensor<{m}x{d}xbf16>
  %a2 = linalg.fill ins(%z : bf16) outs(%e2 : tensor<{m}x{d}xbf16>) -> tensor<{m}x{d}xbf16>
  %y = linalg.matmul indexing_maps = [#mk, #nk, #mn] ins(%hu, %wd : tensor<{m}x{f}xbf16>, tensor<{d}x{f}xbf16>) outs(%a2 : tensor<{m}x{d}xbf16>) -> tensor<{m}x{d}xbf16>
  return %y : tensor<{m}x{d}xbf16>
}}
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, type=pathlib.Path)
    ap.add_argument("--d", type=int, default=2048)
    ap.add_argument("--ffn", type=int, default=5632)
    ap.add_argument("--tokens", default="2048,16384")
    ap.add_argument("--tile", type=int, default=256)
    ap.add_argument("--compression", type=int, default=4)
    ap.add_argument("--fractions", default="0.005,0.02,0.05,0.12,0.3")
    ap.add_argument("--fused", action="store_true",
                    help="also compile the TwELL program with twell-producer=fused into fused/")
    ap.add_argument("--fused-cluster", action="store_true",
                    help="also compile it with twell-producer=fused cluster=2 into fused_cluster/")
    ap.add_argument("--tensor-cores", action="store_true",
                    help="also compile it with twell-consumer=tensor-cores into tensor_cores/")
    ap.add_argument("--tensor-cores-tma", action="store_true",
                    help="also compile it with twell-consumer=tensor-cores twell-gather=tma "
                         "into tensor_cores_tma/")
    ap.add_argument("--pack-consumer", action="store_true",
                    help="also compile it with twell-pack=consumer (the pack fused into the "
                         "CUDA-core consumer, which reads H) into pack_consumer/")
    ap.add_argument("--passes", default="",
                    help="also compile the TwELL program with twell-passes=P for each P of "
                         "this list (e.g. 1,2,3) into passes<P>/")
    args = ap.parse_args()
    passes = [int(v) for v in args.passes.split(",") if v]
    for m in (int(v) for v in args.tokens.split(",")):
        name = "gated_bf16_m%d_d%d_f%d" % (m, args.d, args.ffn)
        out = args.out / name
        out.mkdir(parents=True, exist_ok=True)
        src = out / "model.mlir"
        src.write_text(GATED.format(m=m, d=args.d, f=args.ffn))
        sparsify = "--sgpu-sparsify-ffn=tile=%d compression=%d" % (args.tile, args.compression)
        subprocess.run([str(SPARSE_OPT), str(src), sparsify,
                        "--sgpu-compile=output-dir=%s" % out, "-o", "/dev/null"], check=True)
        subprocess.run([str(SPARSE_OPT), str(src),
                        "--sgpu-compile=output-dir=%s" % (out / "dense"), "-o", "/dev/null"],
                       check=True)
        for sub, options, wanted in (("fused", "twell-producer=fused", args.fused),
                                     ("fused_cluster", "twell-producer=fused cluster=2",
                                      args.fused_cluster),
                                     ("tensor_cores", "twell-consumer=tensor-cores",
                                      args.tensor_cores),
                                     ("tensor_cores_tma",
                                      "twell-consumer=tensor-cores twell-gather=tma",
                                      args.tensor_cores_tma),
                                     ("pack_consumer", "twell-pack=consumer",
                                      args.pack_consumer)) + tuple(
                                         ("passes%d" % p, "twell-passes=%d" % p, True)
                                         for p in passes):
            if wanted:
                subprocess.run([str(SPARSE_OPT), str(src), sparsify,
                                "--sgpu-compile=%s output-dir=%s" % (options, out / sub),
                                "-o", "/dev/null"], check=True)
        choice = {}
        for p in args.fractions.split(","):
            ir = subprocess.run([str(SPARSE_OPT), str(src), sparsify + " densities=" + p],
                                check=True, capture_output=True, text=True).stdout
            choice[p] = "twell" if "sgpu.twell_ffn" in ir else "dense"
        (out / "choice.json").write_text(json.dumps(choice) + "\n")
        print(name, choice)


if __name__ == "__main__":
    main()
