"""GPU timing shared by the benchmarks: medians of CUDA-event timed runs."""
import statistics

import torch


def median_events_us(fn, warmup=10, reps=50):
    """Median over `reps` calls of fn (after `warmup`), each timed with CUDA
    events on the current stream; includes any host work inside fn."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e) * 1000.0)
    return statistics.median(times)


def median_us(fn, warmup=10, reps=50):
    """GPU time of one call: fn is captured in a CUDA graph and the graph
    replayed, so host-side work (argument marshalling, library plan set-up)
    is not counted for anyone. Falls back to eager timing, which counts it,
    when the call cannot be captured. Returns (microseconds, method)."""
    try:
        fn()
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            fn()
        return median_events_us(graph.replay, warmup, reps), "cuda-graph"
    except Exception as exc:
        print("  (eager timing: %s)" % str(exc).splitlines()[0])
        torch.cuda.synchronize()
        return median_events_us(fn, warmup, reps), "eager"


def median_interleaved_us(fns, warmup=3, reps=10):
    """GPU times of several calls measured in turns: each fn captured in a
    CUDA graph, then the graphs replayed one after the other, `reps` rounds
    after `warmup`, each replay timed with CUDA events. Calls compared this
    way see the same clocks and temperature (a long run before one of them
    cannot favour the other). Returns the medians in microseconds, in the
    order of `fns`."""
    graphs = []
    for fn in fns:
        fn()
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            fn()
        graphs.append(graph)
    for _ in range(warmup):
        for graph in graphs:
            graph.replay()
    torch.cuda.synchronize()
    times = [[] for _ in graphs]
    for _ in range(reps):
        for graph, acc in zip(graphs, times):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            graph.replay()
            e.record()
            e.synchronize()
            acc.append(s.elapsed_time(e) * 1000.0)
    return [statistics.median(t) for t in times]


def kernel_profile(fn, steps=5, top=12):
    """GPU time per call of fn by kernel (the `top` largest, microseconds,
    kernel names cut to 120 characters) over `steps` eager calls, from
    torch's profiler (CUPTI sees the runtime's launches and library calls
    as well as torch's)."""
    from torch.profiler import ProfilerActivity, profile
    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(steps):
            fn()
        torch.cuda.synchronize()
    totals = {}
    spans = []
    for e in prof.events():
        if e.device_type.name == "CUDA" and e.device_time_total > 0:
            key = e.name[:120]
            totals[key] = totals.get(key, 0.0) + e.device_time_total / steps
            spans.append((e.time_range.start, e.time_range.end, key))
    rows = sorted(totals.items(), key=lambda kv: -kv[1])
    out = {"total_us": sum(totals.values()),
           "kernels": [{"kernel": k, "us": round(v, 2)} for k, v in rows[:top]]}
    out.update(idle_profile(spans, steps, top=8))
    return out


def idle_profile(spans, steps, top=8, call_gap_us=2000.0):
    """The GPU's idle time per call between consecutive device operations
    (spans: (start µs, end µs, name)), and the `top` operations it most
    waited for (idle time before each, summed by name). A gap longer than
    `call_gap_us` is taken to be between two calls (the host's
    synchronization), not within one."""
    spans = sorted(spans)
    idle, before, end = 0.0, {}, None
    for start, stop, name in spans:
        if end is not None and 0 < start - end < call_gap_us:
            gap = start - end
            idle += gap
            us, count = before.get(name, (0.0, 0))
            before[name] = (us + gap, count + 1)
        end = stop if end is None else max(end, stop)
    rows = sorted(before.items(), key=lambda kv: -kv[1][0])[:top]
    return {"idle_us": idle / steps,
            "idle_before": [{"kernel": k, "us": round(v[0] / steps, 1), "count": round(v[1] / steps, 1)}
                            for k, v in rows]}
