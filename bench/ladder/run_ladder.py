#!/usr/bin/env python3
"""Runs the ladder benchmark's block stacks (make_stack.py) on the GPU(s).

One process per rank (plain `python3` for one GPU, `torchrun
--nproc-per-node=TP` for several). Per token count M it runs, in the same
process and on the same weights:

  ours standard / ours ladder   the compiled programs, all-reduces on our
                                communicator, eager and as a CUDA graph
  torch standard / torch ladder the same equations in PyTorch (cuBLAS
                                matmuls, torch.distributed all-reduces, the
                                ladder with async_op handles), eager and as
                                a CUDA graph

and checks each output against the torch reference of its own equations.
Times are the median over `--trials` of the mean of `--iters` back-to-back
runs (after warm-up), CUDA events on the rank's stream, max over ranks.
With --overlap it also records, for our eager programs at the largest M, a
kernel timeline (torch.profiler/CUPTI) and reports how long work on the
communication stream overlaps compute. Rank 0 writes the JSON records.

  python3 bench/ladder/run_ladder.py --artifacts DIR --out results.json
"""
import argparse
import json
import os
import pathlib
import socket
import statistics
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

from sparse_opt import runtime  # noqa: E402

TORCH_DTYPE = {"bf16": torch.bfloat16, "f16": torch.float16}


def parse_stack(directory):
    fields = dict(kv.split("=") for kv in (directory / "stack.txt").read_text().split())
    return {k: (v if k == "dtype" else int(v)) for k, v in fields.items()}


def blocks(cfg):
    out = []
    for i in range(cfg["layers"]):
        out.append(("attn%d" % i, 2 * cfg["d"]))
        out.append(("mlp%d" % i, cfg["ffn"]))
    return out


def make_weights(cfg, rank, tp, dtype):
    """Every rank draws the full weights from one seed and keeps its shard:
    W1 column-parallel (rows), W2 row-parallel (columns)."""
    gen = torch.Generator(device="cuda").manual_seed(1234)
    d = cfg["d"]
    params = []
    for name, h in blocks(cfg):
        g = (1 + 0.1 * torch.randn(d, generator=gen, device="cuda")).to(dtype)
        w1 = (torch.randn(h, d, generator=gen, device="cuda") / d ** 0.5).to(dtype)
        w2 = (torch.randn(d, h, generator=gen, device="cuda") * (2.0 / h) ** 0.5).to(dtype)
        s = h // tp
        params.append((g, w1[rank * s:(rank + 1) * s].contiguous(),
                       w2[:, rank * s:(rank + 1) * s].contiguous()))
    g_final = (1 + 0.1 * torch.randn(d, generator=gen, device="cuda")).to(dtype)
    return params, g_final


def rms_norm(x, g, eps=1e-5):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * g.float()).to(x.dtype)


def block(x, p):
    g, w1, w2 = p
    return torch.relu(rms_norm(x, g) @ w1.t()) @ w2.t()


def torch_standard(x, params, g_final):
    for p in params:
        y = block(x, p)
        dist.all_reduce(y)
        x = x + y
    return rms_norm(x, g_final)


def torch_ladder(x, params, g_final):
    """x_i = x_{i-1} + AllReduce(f_i(norm(x_{i-2}))): block i reads the
    stream without block i-1's contribution, whose reduction runs
    (async_op) while block i computes."""
    acc, pending = x, None
    for p in params:
        y = block(acc, p)
        handle = dist.all_reduce(y, async_op=True)
        if pending is not None:
            pending[1].wait()
            acc = acc + pending[0]
        pending = (y, handle)
    pending[1].wait()
    return rms_norm(acc + pending[0], g_final)


def time_fn(fn, stream, iters, trials, warmup=3):
    """Median over trials of the mean time (us) of `iters` calls of fn."""
    with torch.cuda.stream(stream):
        for _ in range(warmup):
            fn()
        stream.synchronize()
        times = []
        for _ in range(trials):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record(stream)
            for _ in range(iters):
                fn()
            end.record(stream)
            end.synchronize()
            times.append(start.elapsed_time(end) * 1000.0 / iters)
    return statistics.median(times)


def graphed(fn, stream):
    """A CUDA graph of one call of fn (captured on a side stream), and a
    callable replaying it."""
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.stream(stream):
        fn()  # warm up outside the capture (cuBLAS handles, NCCL setup)
    stream.synchronize()
    with torch.cuda.graph(graph, stream=stream):
        fn()
    return graph.replay


def max_over_ranks(value):
    t = torch.tensor([value], device="cuda", dtype=torch.float64)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return t.item()


def rel_err(ours, ref):
    return ((ours.float() - ref.float()).abs().max() / ref.float().abs().max().clamp_min(1e-30)).item()


def overlap(trace):
    """(comm busy us, comm us overlapping compute) from a chrome trace: the
    communication stream is the one that runs NCCL's kernels or copies."""
    events = [e for e in trace.get("traceEvents", [])
              if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    comm_streams = {e["args"].get("stream") for e in events
                    if "nccl" in e["name"].lower() or "DtoD" in e["name"]}
    comm = [(e["ts"], e["ts"] + e["dur"]) for e in events if e["args"].get("stream") in comm_streams]
    compute = sorted((e["ts"], e["ts"] + e["dur"]) for e in events
                     if e["args"].get("stream") not in comm_streams)
    merged = []
    for s, t in compute:
        if merged and s <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], t)
        else:
            merged.append([s, t])
    busy = sum(t - s for s, t in comm)
    both = sum(max(0.0, min(t, ct) - max(s, cs)) for s, t in comm for cs, ct in merged)
    return busy, both


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--artifacts", required=True, type=pathlib.Path)
    ap.add_argument("--out", type=pathlib.Path)
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--trials", type=int, default=15)
    ap.add_argument("--overlap", action="store_true")
    ap.add_argument("--no-torch-graph", action="store_true")
    ap.add_argument("--label", default="")
    args = ap.parse_args()

    if "WORLD_SIZE" not in os.environ:  # one GPU: a one-rank group
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        os.environ.update(RANK="0", WORLD_SIZE="1", LOCAL_RANK="0",
                          MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    local = int(os.environ.get("LOCAL_RANK", "0"))
    torch.cuda.set_device(local)
    dist.init_process_group("nccl", device_id=torch.device("cuda", local))
    rank, tp = dist.get_rank(), dist.get_world_size()
    comm = runtime.Communicator.from_env(timeout_ms=120000, device=local)

    cfg = parse_stack(args.artifacts)
    if cfg["tp"] != tp:
        sys.exit("artifacts are for tp=%d, running %d ranks" % (cfg["tp"], tp))
    dtype = TORCH_DTYPE[cfg["dtype"]]
    params, g_final = make_weights(cfg, rank, tp, dtype)
    stream = torch.cuda.Stream()
    p2p = os.environ.get("NCCL_P2P_DISABLE", "0") != "1"
    records = []
    tokens = sorted({int(p.name.split("_m")[1]) for p in args.artifacts.glob("standard_m*")
                     if p.is_dir()})
    for m in tokens:
        gen = torch.Generator(device="cuda").manual_seed(99 + m)
        x = torch.randn(m, cfg["d"], generator=gen, device="cuda").to(dtype)
        flat = [x] + [t for p in params for t in p] + [g_final]
        refs = {"standard": torch_standard(x, params, g_final),
                "ladder": torch_ladder(x, params, g_final)}
        times, errors = {}, {}
        for variant in ("standard", "ladder"):
            prog = runtime.load(args.artifacts / ("%s_m%d" % (variant, m)), device=local, comm=comm)
            out = torch.empty(m, cfg["d"], dtype=dtype, device="cuda")
            ins = [t.data_ptr() for t in flat]
            run = lambda: prog.run(ins, [out.data_ptr()], torch.cuda.current_stream().cuda_stream)
            with torch.cuda.stream(stream):
                run()
            comm.synchronize(stream, 120000)
            errors[variant] = max_over_ranks(rel_err(out, refs[variant]))
            times["ours_" + variant] = max_over_ranks(time_fn(run, stream, args.iters, args.trials))
            replay = graphed(run, stream)
            times["ours_graph_" + variant] = max_over_ranks(time_fn(replay, stream, args.iters, args.trials))
            if args.overlap and m == tokens[-1]:
                from torch.profiler import profile, ProfilerActivity
                path = "/tmp/ladder_trace_%s_%d.json" % (variant, rank)
                # Start together: a rank that arrives late would show as NCCL
                # kernels of the other spinning (busy, not overlapping).
                torch.cuda.synchronize()
                dist.barrier()
                with profile(activities=[ProfilerActivity.CUDA]) as prof:
                    with torch.cuda.stream(stream):
                        for _ in range(3):
                            run()
                    comm.synchronize(stream, 120000)
                prof.export_chrome_trace(path)
                busy, both = overlap(json.load(open(path)))
                times["comm_busy_us_" + variant] = busy / 3
                times["comm_overlap_us_" + variant] = both / 3
            prog.close()
        for variant, fn in (("standard", torch_standard), ("ladder", torch_ladder)):
            call = lambda: fn(x, params, g_final)
            times["torch_" + variant] = max_over_ranks(time_fn(call, stream, args.iters, args.trials))
            if not args.no_torch_graph:
                try:
                    replay = graphed(call, stream)
                    times["torch_graph_" + variant] = max_over_ranks(
                        time_fn(replay, stream, args.iters, args.trials))
                except Exception as e:  # noqa: BLE001 - reported, not fatal
                    times["torch_graph_" + variant] = None
                    if rank == 0:
                        print("torch graph capture failed: %s" % e, file=sys.stderr)
        if rank == 0:
            shape = {"d": cfg["d"], "ffn": cfg["ffn"], "layers": cfg["layers"], "tp": tp,
                     "batch": m, "p2p": p2p, "dtype": cfg["dtype"]}
            for variant in ("standard", "ladder"):
                rec = {"bench": "ladder", "variant": variant, "dtype": cfg["dtype"],
                       "shape": shape, "label": args.label,
                       "time_us": times["ours_graph_" + variant],
                       "time_us_eager": times["ours_" + variant],
                       "max_rel_err": errors[variant],
                       "baselines": {"standard": times["ours_graph_standard"],
                                     "standard_eager": times["ours_standard"],
                                     "torch_" + variant: times["torch_" + variant],
                                     "torch_graph_" + variant: times.get("torch_graph_" + variant),
                                     "torch_ladder": times["torch_ladder"],
                                     "torch_standard": times["torch_standard"]}}
                for k in ("comm_busy_us_", "comm_overlap_us_"):
                    if k + variant in times:
                        rec[k.rstrip("_")] = times[k + variant]
                records.append(rec)
            print("M=%-5d %s" % (m, "  ".join("%s=%s" % (k, "%.1f" % v if isinstance(v, float) else v)
                                               for k, v in sorted(times.items()))))
            print("        rel err: standard %.2e ladder %.2e" % (errors["standard"], errors["ladder"]))
            sys.stdout.flush()
    if rank == 0 and args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(records, indent=1) + "\n")
    comm.close()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
