#!/usr/bin/env python3
"""The foundation's 2:4 layer, imported from a torch nn.Module on the GPU
machine (torch 2.x), compiled on the development machine, run back on the GPU
through `sparse_opt.runtime`, and compared with torch.

  # GPU machine (torch 2.x): import the module, save its input and outputs
  python3 bench/import/import_and_run.py import --out DIR
  # development machine (libMLIR): compile DIR/model.mlir
  python3 -m sparse_opt compile DIR/model.mlir -o DIR/artifacts
  # GPU machine: run through the runtime and compare
  python3 bench/import/import_and_run.py run --dir DIR --json results.json

Tolerance: max|ours - torch fp32| <= 2e-3 * max|torch fp32| (one fp16 rounding
of the output; the kernel accumulates in fp32 like the reference).
"""
import argparse
import datetime
import json
import os
import pathlib
import sys

import torch

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))
sys.path.insert(0, str(ROOT / "test" / "python"))
sys.path.insert(0, str(ROOT / "bench"))

TOLERANCE = 2e-3
TOKENS, K, N = 128, 256, 512


def make_module():
    import models
    torch.manual_seed(0)
    return models.SparseLinearReLU(K, N).half().eval()


def cmd_import(args):
    from sparse_opt.importers.fx import import_fx
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    m = make_module()
    x = torch.randn(TOKENS, K, generator=torch.Generator().manual_seed(1)).half()
    text = import_fx(m, (x,), sparsity={"fc.weight": "2:4"})
    (out / "model.mlir").write_text(text)
    with torch.no_grad():
        ref32 = torch.relu(x.float() @ m.fc.weight.float().t())
    torch.save({"x": x, "ref32": ref32, "torch": str(torch.__version__)}, out / "io.pt")
    print("imported with torch %s: %s (%d bytes)" % (torch.__version__, out / "model.mlir", len(text)))


def cmd_run(args):
    from sparse_opt import runtime
    d = pathlib.Path(args.dir)
    io = torch.load(d / "io.pt", weights_only=False)  # our own file
    x = io["x"].cuda()
    ref32 = io["ref32"].cuda()
    prog = runtime.load(d / "artifacts")
    y = prog(x)
    torch.cuda.synchronize()
    err = ((y.float() - ref32).abs().max() / ref32.abs().max()).item()
    m = make_module().cuda()
    with torch.no_grad():
        y_torch = m(x)
        err_torch = ((y_torch.float() - ref32).abs().max() / ref32.abs().max()).item()

    from timing import median_events_us
    ours = median_events_us(lambda: prog(x))
    with torch.no_grad():
        dense = median_events_us(lambda: m(x))
    ok = err <= TOLERANCE
    rec = [{
        "bench": "import", "variant": "2:4 linear+relu (torch.fx import)", "dtype": "f16",
        "shape": {"M": TOKENS, "N": N, "K": K},
        "ours_us": ours, "baselines": {"torch_eager": dense}, "speedup": dense / ours,
        "max_rel_err": err, "torch_max_rel_err": err_torch, "tolerance": TOLERANCE, "correct": ok,
        "import_torch_version": io["torch"], "run_torch_version": torch.__version__,
        "gpu": torch.cuda.get_device_name(0), "date": datetime.date.today().isoformat(),
        "commit": os.environ.get("SPARSEOPT_COMMIT", "unknown"),
        "timing": "eager calls (runtime program vs torch module), CUDA events, median of 50",
        "command": "python3 bench/import/import_and_run.py run --dir DIR --json bench/results/import_2to4_h200.json",
    }]
    pathlib.Path(args.json).write_text(json.dumps(rec, indent=1) + "\n")
    print("max_rel_err %.3e (torch fp16 itself: %.3e), %s; ours %.1f us, torch %.1f us"
          % (err, err_torch, "ok" if ok else "FAIL", ours, dense))
    return 0 if ok else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("import")
    a.add_argument("--out", required=True)
    r = sub.add_parser("run")
    r.add_argument("--dir", required=True)
    r.add_argument("--json", required=True)
    args = ap.parse_args()
    return cmd_import(args) if args.cmd == "import" else cmd_run(args)


if __name__ == "__main__":
    sys.exit(main())
