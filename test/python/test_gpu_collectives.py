"""Tensor-parallel collectives through NCCL at world size 1 (GPU machines).

A program's all-reduces run on a Communicator's stream: the tests compare a
compiled block stack, standard and ladder form, with torch's evaluation of
the same equations, replay a run captured in a CUDA graph, and read a
kernel timeline to show the ladder's all-reduces overlapping compute (the
standard chain's cannot). Skipped without a GPU or torch with CUDA.

The GPU machine has no compiler: there, SPARSEOPT_GPU_COLLECTIVE_ARTIFACTS
names a folder compiled elsewhere with

  python3 test/python/test_gpu_collectives.py --compile DIR
"""
import json
import os
import pathlib
import sys

import pytest

from sparse_opt import runtime

PRECOMPILED = os.environ.get("SPARSEOPT_GPU_COLLECTIVE_ARTIFACTS")

# (name, d, ffn, layers, tokens): a small stack for numerics and graphs, and
# one large enough that its all-reduces and blocks show on a timeline.
# The timeline's all-reduces (16 MiB, one rank: a device copy of several
# microseconds) are long enough to be seen running beside the next block.
STACKS = {"small": (256, 512, 2, 32), "timeline": (4096, 4096, 2, 2048)}
# Relative to max|reference|: bf16 rounding of the residual stream and of
# each block's output, a few ulps of bf16 (2^-8) over 4 blocks.
TOLERANCE = 2e-2


def stack_mlir(d, ffn, layers, m):
    """Pre-norm blocks x = x + all_reduce(W2 relu(W1 rms_norm(x))), widths
    2d and ffn alternating, a final norm; every tensor an argument."""
    t = lambda *s: "tensor<%sxbf16>" % "x".join(map(str, s))
    args, body, x = ["%%x0: %s" % t(m, d)], [], "%x0"
    for i in range(2 * layers):
        h = 2 * d if i % 2 == 0 else ffn
        args += ["%%g%d: %s" % (i, t(d)), "%%a%d: %s" % (i, t(h, d)), "%%b%d: %s" % (i, t(d, h))]
        body += ["%%n%d = sgpu.rms_norm %s, %%g%d {epsilon = 1.0e-05 : f32} : %s, %s -> %s"
                 % (i, x, i, t(m, d), t(d), t(m, d)),
                 "%%h%d = sgpu.matmul %%n%d, %%a%d {activation = #sgpu.activation<relu>} : %s, %s -> %s"
                 % (i, i, i, t(m, d), t(h, d), t(m, h)),
                 "%%p%d = sgpu.matmul %%h%d, %%b%d : %s, %s -> %s" % (i, i, i, t(m, h), t(d, h), t(m, d)),
                 "%%r%d = sgpu.all_reduce %%p%d : %s" % (i, i, t(m, d)),
                 "%%x%d = arith.addf %s, %%r%d : %s" % (i + 1, x, i, t(m, d))]
        x = "%%x%d" % (i + 1)
    args.append("%%gf: %s" % t(d))
    body += ["%%y = sgpu.rms_norm %s, %%gf {epsilon = 1.0e-05 : f32} : %s, %s -> %s"
             % (x, t(m, d), t(d), t(m, d)), "return %%y : %s" % t(m, d)]
    return "func.func @stack(%s) -> %s {\n  %s\n}\n" % (", ".join(args), t(m, d), "\n  ".join(body))


def compile_all(directory):
    import sparse_opt
    directory = pathlib.Path(directory)
    for name, (d, ffn, layers, m) in STACKS.items():
        for ladder in (False, True):
            out = directory / ("%s_%s" % (name, "ladder" if ladder else "standard"))
            out.mkdir(parents=True, exist_ok=True)
            with sparse_opt.Compiler() as c:
                c.parse(stack_mlir(d, ffn, layers, m)).compile(out, ladder=ladder)
    # The small ladder stack for any token count up to 32, in two buckets.
    from sparse_opt.buckets import compile_buckets
    d, ffn, layers, _ = STACKS["small"]
    compile_buckets(lambda m: stack_mlir(d, ffn, layers, m), [8, 32], directory / "buckets",
                    ladder=True)


def artifact(tmp_path_factory, name):
    if PRECOMPILED:
        d = pathlib.Path(PRECOMPILED) / name
        if not d.is_dir():
            pytest.skip("%s has no %s" % (PRECOMPILED, name))
        return d
    root = tmp_path_factory.getbasetemp() / "collectives"
    if not (root / name).is_dir():
        try:
            compile_all(root)
        except Exception as e:  # no compiler library on this machine
            pytest.skip("cannot compile here: %s" % e)
    return root / name


@pytest.fixture(scope="module")
def comm(cuda_torch):
    c = runtime.Communicator.create(0, 1, runtime.unique_id(), timeout_ms=60000)
    yield c
    c.close()


def inputs(torch, d, ffn, layers, m, seed=0):
    gen = torch.Generator(device="cuda").manual_seed(seed)
    r = lambda *s, scale=1.0: (torch.randn(*s, generator=gen, device="cuda") * scale).bfloat16()
    xs = [r(m, d)]
    for i in range(2 * layers):
        h = 2 * d if i % 2 == 0 else ffn
        xs += [1 + r(d, scale=0.1), r(h, d, scale=d ** -0.5), r(d, h, scale=(2.0 / h) ** 0.5)]
    xs.append(1 + r(d, scale=0.1))
    return xs


def reference(torch, xs, ladder):
    """The standard chain, or the ladder: block i reads the stream without
    block i-1's output (all-reduce of one rank: the identity)."""
    def norm(x, g):
        xf = x.float()
        return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-5) * g.float()).bfloat16()
    x, params, gf = xs[0], [xs[1 + 3 * i:4 + 3 * i] for i in range((len(xs) - 2) // 3)], xs[-1]
    acc, pending = x, None
    for g, a, b in params:
        y = torch.relu(norm(acc, g) @ a.t()) @ b.t()
        if not ladder:
            acc = acc + y
            continue
        if pending is not None:
            acc = acc + pending
        pending = y
    if ladder:
        acc = acc + pending
    return norm(acc, gf)


@pytest.mark.parametrize("variant", ["standard", "ladder"])
def test_stack_matches_its_equations(cuda_torch, comm, tmp_path_factory, variant):
    torch = cuda_torch
    d = artifact(tmp_path_factory, "small_" + variant)
    text = (d / "program.txt").read_text()
    assert text.count("allreduce ") == 4 and text.count("wait slot=") == 4
    prog = runtime.load(d, comm=comm)
    assert prog.num_allreduces == 4
    xs = inputs(torch, *STACKS["small"])
    y = prog(*xs)
    torch.cuda.synchronize()
    ref = reference(torch, xs, variant == "ladder")
    err = ((y.float() - ref.float()).abs().max() / ref.float().abs().max()).item()
    assert err <= TOLERANCE, err
    # The two forms are different models: the other equations do not match.
    other = reference(torch, xs, variant != "ladder")
    assert ((y.float() - other.float()).abs().max() / other.float().abs().max()).item() > TOLERANCE
    prog.close()


def test_a_run_without_communicator_is_refused(cuda_torch, tmp_path_factory):
    torch = cuda_torch
    prog = runtime.load(artifact(tmp_path_factory, "small_ladder"))
    with pytest.raises(runtime.InvalidArgumentError) as info:
        prog(*inputs(torch, *STACKS["small"]))
    assert "allreduce line(s): give it a communicator first" in info.value.message
    prog.close()


def test_cuda_graph_replays_the_collectives(cuda_torch, comm, tmp_path_factory):
    torch = cuda_torch
    prog = runtime.load(artifact(tmp_path_factory, "small_ladder"), comm=comm)
    xs = inputs(torch, *STACKS["small"], seed=1)
    out = torch.empty_like(xs[0])
    stream = torch.cuda.Stream()
    run = lambda: prog.run([t.data_ptr() for t in xs], [out.data_ptr()],
                           torch.cuda.current_stream().cuda_stream)
    with torch.cuda.stream(stream):
        run()
    stream.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=stream):
        run()
    # New tokens in the captured buffer, then replay.
    xs[0].copy_(inputs(torch, *STACKS["small"], seed=2)[0])
    out.zero_()
    graph.replay()
    torch.cuda.synchronize()
    ref = reference(torch, xs, True)
    assert ((out.float() - ref.float()).abs().max() / ref.float().abs().max()).item() <= TOLERANCE
    comm.synchronize(None, 60000)
    prog.close()


def test_bucketed_program_takes_any_token_count(cuda_torch, comm, tmp_path_factory):
    torch = cuda_torch
    prog = runtime.load(artifact(tmp_path_factory, "buckets"), comm=comm)
    assert prog.tokens == [8, 32]
    d, ffn, layers, _ = STACKS["small"]
    for m in (5, 8, 32):
        xs = inputs(torch, d, ffn, layers, m, seed=m)
        y = prog(*xs)
        assert tuple(y.shape) == (m, d)
        torch.cuda.synchronize()
        ref = reference(torch, xs, True)
        assert ((y.float() - ref.float()).abs().max() / ref.float().abs().max()).item() <= TOLERANCE
    with pytest.raises(ValueError, match="33 tokens exceed the largest bucket"):
        prog(*inputs(torch, d, ffn, layers, 33))
    prog.close()


def comm_overlap(torch, prog, xs, comm):
    """(us the communication stream was busy, us of that overlapping other
    streams' kernels) over three eager runs, from a CUPTI timeline."""
    from torch.profiler import ProfilerActivity, profile
    out = torch.empty_like(xs[0])
    ptrs = [t.data_ptr() for t in xs]
    prog.run(ptrs, [out.data_ptr()])
    comm.synchronize(None, 60000)
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(3):
            prog.run(ptrs, [out.data_ptr()])
        comm.synchronize(None, 60000)
    path = pathlib.Path(os.environ.get("TMPDIR", "/tmp")) / ("sparseopt_trace_%d.json" % os.getpid())
    prof.export_chrome_trace(str(path))
    events = [e for e in json.loads(path.read_text())["traceEvents"]
              if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy")]
    path.unlink()
    comm_streams = {e["args"]["stream"] for e in events
                    if "nccl" in e["name"].lower() or "DtoD" in e["name"]}
    assert comm_streams, "no NCCL work on the timeline"
    comm_ev = [(e["ts"], e["ts"] + e["dur"]) for e in events if e["args"]["stream"] in comm_streams]
    other = [(e["ts"], e["ts"] + e["dur"]) for e in events if e["args"]["stream"] not in comm_streams]
    both = sum(max(0.0, min(t, ot) - max(s, os_)) for s, t in comm_ev for os_, ot in other)
    return sum(t - s for s, t in comm_ev), both


def test_ladder_overlaps_its_all_reduces_with_compute(cuda_torch, comm, tmp_path_factory):
    torch = cuda_torch
    xs = inputs(torch, *STACKS["timeline"])
    overlap = {}
    for variant in ("standard", "ladder"):
        prog = runtime.load(artifact(tmp_path_factory, "timeline_" + variant), comm=comm)
        overlap[variant] = comm_overlap(torch, prog, xs, comm)
        prog.close()
    busy, both = overlap["ladder"]
    print("communication stream busy / overlapping compute (us): %s" % overlap)
    # Ladder: block i+1 runs while block i's all-reduce is in flight (all
    # but the last of the four can overlap; 61% was measured on an H200 for
    # a stack of eight).
    assert busy > 0 and both >= 0.25 * busy, overlap
    # Standard: each all-reduce is awaited by the very next step.
    assert overlap["standard"][1] <= 0.1 * overlap["standard"][0], overlap


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--compile":
        compile_all(sys.argv[2])
        print("compiled into %s" % sys.argv[2])
    else:
        sys.exit("usage: %s --compile DIR" % sys.argv[0])
