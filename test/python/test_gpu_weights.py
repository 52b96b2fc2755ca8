"""Sparse weights given to a compiled model as arguments (GPU machines only).

The compiler turns such a weight into a param of the program: a generated
kernel compresses it on the GPU when it is bound (the first call binds), and
a weight that breaks its declared pattern fails the bind with WeightError
naming the row and group. Compared with torch's dense product of the same
weight. Skipped when the runtime finds no driver or device, or without torch
with CUDA.

An imported model (torch.fx, weights as params, a 2:4 layer) runs the same
way with its weights bound by name from the torch module (bind_module) and
only its input passed to calls.

The GPU machine has no compiler: there, SPARSEOPT_GPU_WEIGHT_ARTIFACTS names
a folder compiled elsewhere with

  python3 test/python/test_gpu_weights.py --compile DIR
"""
import os
import pathlib
import sys

import pytest

from sparse_opt import runtime

PRECOMPILED = os.environ.get("SPARSEOPT_GPU_WEIGHT_ARTIFACTS")

LINEAR = """
func.func @linear(%x: tensor<{m}x{k}x{t}>, %w: tensor<{n}x{k}x{t}, #sgpu.nm<{p}>>,
                  %b: tensor<{n}x{t}>) -> tensor<{m}x{n}x{t}> {{
  %z = arith.constant 0.0 : {t}
  %e = tensor.empty() : tensor<{m}x{n}x{t}>
  %acc = linalg.fill ins(%z : {t}) outs(%e : tensor<{m}x{n}x{t}>) -> tensor<{m}x{n}x{t}>
  %y = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>,
                                      affine_map<(m, n, k) -> (n, k)>,
                                      affine_map<(m, n, k) -> (m, n)>]
      ins(%x, %w : tensor<{m}x{k}x{t}>, tensor<{n}x{k}x{t}, #sgpu.nm<{p}>>)
      outs(%acc : tensor<{m}x{n}x{t}>) -> tensor<{m}x{n}x{t}>
  %eb = tensor.empty() : tensor<{m}x{n}x{t}>
  %yb = linalg.generic {{indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>,
                                         affine_map<(i, j) -> (i, j)>],
                        iterator_types = ["parallel", "parallel"]}}
      ins(%y, %b : tensor<{m}x{n}x{t}>, tensor<{n}x{t}>) outs(%eb : tensor<{m}x{n}x{t}>) {{
  ^bb0(%a: {t}, %c: {t}, %o: {t}):
    %s = arith.addf %a, %c : {t}
    linalg.yield %s : {t}
  }} -> tensor<{m}x{n}x{t}>
  return %yb : tensor<{m}x{n}x{t}>
}}
"""

# Relative to max|reference|: one rounding of the output dominates.
TOLERANCE = {"f16": 2e-3, "bf16": 1.6e-2}


def pruned(torch, n, k, m, dtype, gen):
    """A random N x K weight keeping the m-2 largest |w| of every group of m
    (m = 2N of an (2N-2):2N pattern) along K."""
    kp = (k + m - 1) // m * m
    w = torch.randn(n, kp, generator=gen, device="cuda")
    g = w.view(n, kp // m, m)
    keep = g.abs().topk(m - 2, dim=2).indices
    mask = torch.zeros_like(g, dtype=torch.bool).scatter_(2, keep, True)
    return (g * mask).view(n, kp)[:, :k].to(dtype).contiguous()


CASES = [
    ("2:4", "f16", 16, 128, 256),
    ("2:4", "bf16", 70, 200, 136),    # M, N and K off the tiles
    ("6:8", "f16", 33, 96, 200),      # K off the groups of 8
    ("4:6", "bf16", 8, 64, 96),
    ("8:10", "f16", 128, 256, 512),
]
BROKEN = ("6:8", "f16", 16, 64, 128)


def case_name(pattern, dtype, m, n, k):
    return "linear_%s_%s_m%d_n%d_k%d" % (pattern.replace(":", "to"), dtype, m, n, k)


def compile_case(directory, case):
    import sparse_opt
    pattern, dtype, m, n, k = case
    return sparse_opt.compile_mlir(LINEAR.format(m=m, n=n, k=k, t=dtype, p=pattern), directory)


def artifact(tmp_path, case, name=None, compile_it=None):
    """The compiled case: from SPARSEOPT_GPU_WEIGHT_ARTIFACTS, or compiled
    now (needs the compiler library)."""
    if PRECOMPILED:
        d = pathlib.Path(PRECOMPILED) / (name or case_name(*case))
        if not d.is_dir():
            pytest.skip("%s has no %s" % (PRECOMPILED, d.name))
        return d
    try:
        (compile_it or compile_case)(tmp_path, case)
    except Exception as e:  # no compiler library on this machine
        pytest.skip("cannot compile here: %s" % e)
    return tmp_path


# ------------------------------------------------------------ imported model
DECODER = "imported_decoder"


def decoder():
    """(model, ids): embedding, RMSNorm, attention with rotary embeddings and
    a causal mask, a SiLU-gated MLP whose gate is 2:4 sparse, the LM head;
    f32 weights on the CPU (bind_module casts and moves them)."""
    import torch
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
    import models

    class Decoder(torch.nn.Module):
        def __init__(self, vocab=128, d=64, heads=4, f=128, seq=16):
            super().__init__()
            full = models.LlamaDecoder(vocab, d, heads, f, layers=1, seq=seq)
            self.embed, self.norm, self.head = full.embed, full.norm, full.head
            self.attn_norm, self.attn = full.layers[0].attn_norm, full.layers[0].attn
            self.mlp = full.layers[0].mlp
            for k in ("cos", "sin", "mask"):
                self.register_buffer(k, getattr(full, k))

        def forward(self, ids):
            x = self.embed(ids)
            x = x + self.attn(self.attn_norm(x), self.cos, self.sin, self.mask)
            x = x + self.mlp(x)
            return self.head(self.norm(x))

    torch.manual_seed(3)
    model = Decoder().eval()
    with torch.no_grad():
        w = model.mlp.gate.weight.view(128, 16, 4)
        keep = w.abs().topk(2, dim=2).indices
        model.mlp.gate.weight.copy_((w * torch.zeros_like(w).scatter_(2, keep, 1.0)).view(128, 64))
    return model, torch.randint(0, 128, (1, 16))


def compile_decoder(directory, _case=None):
    import sparse_opt
    from sparse_opt.importers.fx import import_fx
    model, ids = decoder()
    text = import_fx(model, (ids,), sparsity={"mlp.gate.weight": "2:4"}, dtype="f16")
    return sparse_opt.compile_mlir(text, directory)


def test_imported_model_binds_its_weights_by_name(cuda_torch, tmp_path):
    torch = cuda_torch
    d = artifact(tmp_path, None, DECODER, compile_decoder)
    model, ids = decoder()
    prog = runtime.load(d)
    with prog:
        names = prog.signature.param_names
        assert "embed.weight" in names and "mlp.gate.weight" in names and "mask" not in names
        assert set(names) <= set(runtime.module_state(model))
        with pytest.raises(runtime.SignatureError, match="not bound by name"):
            prog(ids.cuda())
        prog.bind_module(model)
        y = prog(ids.cuda())
        torch.cuda.synchronize()
        with torch.no_grad():
            ref = model(ids)
        err = ((y.float().cpu() - ref).abs().max() / ref.abs().max()).item()
        assert y.dtype == torch.float16 and err <= 2e-2, err
        # A gate that breaks its declared 2:4 sparsity fails the bind, naming it.
        state = runtime.module_state(model)
        broken = dict(state, **{"mlp.gate.weight": torch.ones_like(state["mlp.gate.weight"])})
        with pytest.raises(runtime.WeightError, match="breaks its declared 2:4 sparsity"):
            prog.bind_state(broken)
        prog.bind_state(state)
        assert ((prog(ids.cuda()).float().cpu() - ref).abs().max() / ref.abs().max()).item() <= 2e-2


@pytest.mark.parametrize("pattern,dtype,m,n,k", CASES)
def test_argument_weight_matches_torch(cuda_torch, tmp_path, pattern, dtype, m, n, k):
    torch = cuda_torch
    tdt = {"f16": torch.float16, "bf16": torch.bfloat16}[dtype]
    d = artifact(tmp_path, (pattern, dtype, m, n, k))
    program_text = (d / "program.txt").read_text()
    assert "stage prepare" in program_text and "param 0" in program_text
    prog = runtime.load(d)
    assert prog.signature.params == (1,)
    gen = torch.Generator(device="cuda").manual_seed(1)
    x = torch.randn(m, k, generator=gen, device="cuda").to(tdt)
    w = pruned(torch, n, k, int(pattern.split(":")[1]), tdt, gen)
    b = torch.randn(n, generator=gen, device="cuda").to(tdt)
    y = prog(x, w, b)
    ref = x.float() @ w.float().t() + b.float()
    err = ((y.float() - ref).abs().max() / ref.abs().max()).item()
    assert err <= TOLERANCE[dtype], err
    # Same weight object: no rebind; new activations only.
    x2 = torch.randn(m, k, generator=gen, device="cuda").to(tdt)
    y2 = prog(x2, w, b)
    ref2 = x2.float() @ w.float().t() + b.float()
    assert ((y2.float() - ref2).abs().max() / ref2.abs().max()).item() <= TOLERANCE[dtype]
    # A new weight (another address) is bound and compressed again.
    w3 = pruned(torch, n, k, int(pattern.split(":")[1]), tdt, gen)
    y3 = prog(x, w3, b)
    ref3 = x.float() @ w3.float().t() + b.float()
    assert ((y3.float() - ref3).abs().max() / ref3.abs().max()).item() <= TOLERANCE[dtype]
    prog.close()


def test_broken_pattern_fails_the_bind(cuda_torch, tmp_path):
    torch = cuda_torch
    _, _, m, n, k = BROKEN
    prog = runtime.load(artifact(tmp_path, BROKEN))
    gen = torch.Generator(device="cuda").manual_seed(2)
    w = pruned(torch, n, k, 8, torch.float16, gen)
    # Row 37, group 5 (columns 40..47): 7 nonzeros; row 50, group 2 too.
    w[37, 40:47] = 1.0
    w[50, 16:24] = 1.0
    x = torch.randn(m, k, generator=gen, device="cuda").half()
    b = torch.zeros(n, device="cuda").half()
    with pytest.raises(runtime.WeightError) as info:
        prog(x, w, b)
    msg = str(info.value)
    assert "param 0 breaks its declared 6:8 sparsity: row 37, group 5 (columns 40..47)" in msg, msg
    # Fixed in place: the address did not change, so bind explicitly.
    w[37, 46:48] = 0.0
    w[50, 22:24] = 0.0
    prog.bind([w.data_ptr()], torch.cuda.current_stream().cuda_stream)
    y = prog(x, w, b)
    ref = x.float() @ w.float().t()
    assert ((y.float() - ref).abs().max() / ref.abs().max()).item() <= TOLERANCE["f16"]
    prog.close()


if __name__ == "__main__":
    # python3 test/python/test_gpu_weights.py --compile DIR
    if len(sys.argv) != 3 or sys.argv[1] != "--compile":
        sys.exit("usage: test_gpu_weights.py --compile DIR")
    for c in CASES + [BROKEN]:
        out = pathlib.Path(sys.argv[2]) / case_name(*c)
        out.mkdir(parents=True, exist_ok=True)
        compile_case(out, c)
    out = pathlib.Path(sys.argv[2]) / DECODER
    out.mkdir(parents=True, exist_ok=True)
    compile_decoder(out)
    print("compiled %d cases into %s" % (len(CASES) + 2, sys.argv[2]))
