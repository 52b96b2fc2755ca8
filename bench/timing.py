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
