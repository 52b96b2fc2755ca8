#!/usr/bin/env python3
"""The importers' export fixtures (test/python/fixtures/export/*.mlir: an
MLP, a gated FFN, a Llama decoder, a 2:4 linear layer and the op zoo, each
as torch.export and as its core-ATen form) compiled for sm_90a and run on
the GPU against the outputs torch computed when the fixtures were written
(data.npz). This is the GPU check of every op family the importers emit,
including the kernels no model of bench/model/ reaches: slices, concats,
reductions outside the recognized blocks, f32 GEMMs, masks.

  # development machine
  python3 bench/model/check_fixtures.py compile --out DIR
  # GPU machine
  python3 bench/model/check_fixtures.py run --dir DIR --json OUT.json

Tolerance: max|ours - torch| <= 1e-4 * max|torch| + 1e-5 per output (the
fixtures are f32). Exit status 1 when any output fails.
"""
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))
from cli import provenance, write_records  # noqa: E402
FIXTURES = ROOT / "test" / "python" / "fixtures" / "export"
RTOL, ATOL = 1e-4, 1e-5


def cmd_compile(args):
    from sparse_opt.compiler import Compiler
    out = pathlib.Path(args.out)
    with Compiler() as c:
        for path in sorted(FIXTURES.glob("*.mlir")):
            c.parse_file(path).compile(out / path.stem, chip="sm_90a")
            print("compiled", path.stem)
    return 0


def cmd_run(args):
    import numpy as np
    import torch
    from sparse_opt import runtime
    data = np.load(FIXTURES / "data.npz")
    records, ok_all, _comm = [], True, None
    for d in sorted(pathlib.Path(args.dir).iterdir()):
        name = d.name
        comm = None
        if "allreduce " in (d / "program.txt").read_text():
            # The Llama fixtures mark tensor-parallel all-reduces: run them
            # through the runtime's NCCL path at tensor parallelism 1.
            if _comm is None:
                sys.path.insert(0, str(ROOT / "bench" / "model"))
                from run_prefill import single_rank_comm
                _comm = single_rank_comm(runtime)
            comm = _comm
        prog = runtime.load(d, comm=comm)
        state = {k.split("/", 2)[2]: torch.from_numpy(data[k]).cuda()
                 for k in data.files if k.startswith(name + "/state/")}
        if prog.signature.params:
            prog.bind_state(state)
        ins = [torch.from_numpy(data["%s/in%d" % (name, i)]).cuda()
               for i in range(len(prog.signature.input_positions))]
        got = prog(*ins)
        got = got if isinstance(got, tuple) else (got,)
        torch.cuda.synchronize()
        errs = []
        for i, g in enumerate(got):
            want = data["%s/out%d" % (name, i)]
            err = float(np.abs(g.float().cpu().numpy() - want).max())
            bound = RTOL * float(np.abs(want).max()) + ATOL
            errs.append({"output": i, "max_abs_err": err, "bound": bound, "ok": err <= bound})
        ok = all(e["ok"] for e in errs)
        ok_all &= ok
        print("%-24s %s %s" % (name, "ok" if ok else "FAIL",
                               ", ".join("out%d %.1e (<= %.1e)" % (e["output"], e["max_abs_err"], e["bound"])
                                         for e in errs)))
        records.append({"bench": "fixture", "variant": name, "outputs": errs, "correct": ok,
                        **provenance("python3 bench/model/check_fixtures.py run --dir DIR --json OUT")})
    return write_records(records, args.json, ok_all)


def main():
    from cli import compile_or_run
    return compile_or_run(__doc__, cmd_compile, cmd_run)


if __name__ == "__main__":
    sys.exit(main())
