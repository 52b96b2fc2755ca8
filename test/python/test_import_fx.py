"""The torch.fx importer: structure of the emitted IR, its verification by
sparse-opt, the sparse path end to end, errors, and numerics (the imported
function called from a generated @main, lowered with --sgpu-reference and run
by mlir-runner, against torch). Models import with their weights as params
(the default) unless a test is about constants; numerics feed the model's
parameters and buffers to the params by name."""
import glob
import math
import re
import shutil
import subprocess

import numpy as np
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import models
from reference_runner import arguments
from sparse_opt.importers.emitter import AnnotationError, ImportError_
from sparse_opt.importers.fx import import_fx, supported_ops, tensor_bytes
from sparse_opt.importers.fx_forms import MLIR_TO_TORCH, mlir_dtype

NK_MAP = ("affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, "
          "affine_map<(m, n, k) -> (m, n)>")


def run_opt(build_dir, text, *args):
    return subprocess.run([str(build_dir / "bin" / "sparse-opt"), "-", *args], input=text,
                          capture_output=True, text=True)


def verify(build_dir, text):
    r = run_opt(build_dir, text)
    assert r.returncode == 0 and r.stderr == "", r.stderr[:4000]
    return r.stdout


def _shape_dtype(type_text):
    dims, dt = re.match(r"tensor<([0-9x]*)([a-z0-9]+)", type_text).groups()
    return tuple(int(d) for d in dims.split("x") if d), dt


def signature(text):
    """(inputs, results) of @forward as (shape, dtype): the arguments that are not params."""
    m = re.search(r"func\.func @forward\((.*)\) -> \((.*)\) \{", text)
    args = [_shape_dtype(t) for t, name in arguments(text) if name is None]
    return args, [_shape_dtype(t) for t in re.findall(r"tensor<[0-9x]*[a-z0-9]+>", m.group(2))]


def params_of(text):
    """{qualified name: declared type text} of @forward's params."""
    return {name: t for t, name in arguments(text) if name is not None}


def state(model):
    """A module's parameters and buffers by qualified name (what the params bind to)."""
    return dict(list(model.named_parameters()) + list(model.named_buffers()))


def torch_sig(tensors):
    return [(tuple(t.shape), mlir_dtype(t.dtype)) for t in tensors]


# ------------------------------------------------------------- numerics
def _llvm_tools():
    runner = shutil.which("mlir-runner") or next(iter(sorted(glob.glob("/usr/lib/llvm-*/bin/mlir-runner"))), None)
    if not runner:
        return None, None
    libdir = runner.rsplit("/bin/", 1)[0] + "/lib"
    libs = [libdir + "/libmlir_runner_utils.so", libdir + "/libmlir_c_runner_utils.so"]
    return runner, ",".join(libs)


def _ttype(t):
    return "tensor<%s%s>" % ("".join("%dx" % d for d in t.shape), mlir_dtype(t.dtype))


def _inline_i1(text):
    """mlir-runner cannot translate i1 dense_resource globals to LLVM IR
    ('no known conversion for innermost element type'): inline them."""
    blobs = dict(re.findall(r'^\s+(\w+): "0x([0-9A-F]+)"', text, re.M))

    def rep(m):
        key, dims = m.group(1), m.group(2)
        shape = [int(d) for d in dims.split("x") if d]
        data = torch.tensor(list(bytes.fromhex(blobs[key])[4:]), dtype=torch.bool).reshape(shape)
        return "arith.constant dense<%s> : tensor<%si1>" % (
            str(data.tolist()).replace("True", "true").replace("False", "false"), dims)
    return re.sub(r"arith.constant dense_resource<(\w+)> : tensor<([0-9x]*)i1>", rep, text)


def _param_literal(t, type_text):
    """A param's tensor as a constant of its declared type (cast to the
    declared element type, as the binder casts it)."""
    shape, dt = _shape_dtype(type_text)
    assert tuple(t.shape) == shape, (type_text, list(t.shape))
    t = t.detach().to(MLIR_TO_TORCH[dt])
    if dt == "i1":
        return "dense<%s>" % str(t.tolist()).replace("True", "true").replace("False", "false")
    return 'dense<"0x%s">' % tensor_bytes(t).hex().upper()


def run_reference(build_dir, text, inputs, outs, params=None):
    """Calls @forward on constant inputs (and the params, by name from
    `params`) and prints, per result, the sum of result * a random probe;
    returns those numbers."""
    runner, libs = _llvm_tools()
    if runner is None:
        pytest.skip("mlir-runner not found")
    lines = ["func.func @main() {"]
    operands, it = [], iter(inputs)
    for i, (type_text, name) in enumerate(arguments(text)):
        if name is None:
            x = next(it)
            lines.append('  %%in%d = arith.constant dense<"0x%s"> : %s' % (i, tensor_bytes(x).hex().upper(),
                                                                           _ttype(x)))
            operands.append(("%%in%d" % i, _ttype(x)))
        else:
            lines.append("  %%in%d = arith.constant %s : %s" % (i, _param_literal(params[name], type_text),
                                                                type_text))
            operands.append(("%%in%d" % i, type_text))
    lines.append("  %s = call @forward(%s) : (%s) -> (%s)" % (
        ", ".join("%%r%d" % i for i in range(len(outs))), ", ".join(o for o, _ in operands),
        ", ".join(t for _, t in operands), ", ".join(_ttype(o) for o in outs)))
    g = torch.Generator().manual_seed(1)
    probes = []
    for i, o in enumerate(outs):
        p = torch.rand(o.shape, generator=g)
        probes.append(p)
        dims = ", ".join("d%d" % k for k in range(o.dim()))
        idm, red = "affine_map<(%s) -> (%s)>" % (dims, dims), "affine_map<(%s) -> ()>" % dims
        dt = mlir_dtype(o.dtype)
        ext = ("%%v = arith.extf %%a : %s to f32" % dt) if dt != "f32" else "%v = arith.addf %a, %zero : f32"
        lines += ['  %%p%d = arith.constant dense<"0x%s"> : %s' % (i, tensor_bytes(p).hex().upper(), _ttype(p)),
                  "  %%z%d = arith.constant dense<0.0> : tensor<f32>" % i,
                  "  %%s%d = linalg.generic {indexing_maps = [%s, %s, %s], iterator_types = [%s]} ins(%%r%d, %%p%d : "
                  "%s, %s) outs(%%z%d : tensor<f32>) {" % (i, idm, idm, red, ", ".join(['"reduction"'] * o.dim()),
                                                         i, i, _ttype(o), _ttype(p), i),
                  "  ^bb0(%%a: %s, %%b: f32, %%acc: f32):" % dt,
                  "    %zero = arith.constant 0.0 : f32", "    " + ext,
                  "    %m = arith.mulf %v, %b : f32", "    %n = arith.addf %m, %acc : f32",
                  "    linalg.yield %n : f32", "  } -> tensor<f32>",
                  "  %%e%d = tensor.extract %%s%d[] : tensor<f32>" % (i, i), "  vector.print %%e%d : f32" % i]
    lines.append("  return\n}")
    text = _inline_i1(text.replace("module {\n", "module {\n" + "\n".join(lines) + "\n", 1))
    low = run_opt(build_dir, text, "--sgpu-reference")
    assert low.returncode == 0, low.stderr[:4000]
    r = subprocess.run([runner, "-e", "main", "-entry-point-result=void", "-shared-libs=" + libs],
                       input=low.stdout, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[:4000]
    got = [float(v) for v in r.stdout.split()]
    want = [float((o.float() * p).sum()) for o, p in zip(outs, probes)]
    return got, want


def check_numerics(build_dir, model, inputs, rel=1e-4, **kw):
    text = import_fx(model, inputs, **kw)
    with torch.no_grad():
        out = model(*inputs)
    outs = list(out) if isinstance(out, (tuple, list)) else [out]
    got, want = run_reference(build_dir, text, inputs, outs, params=state(model))
    for g, w in zip(got, want):
        assert g == pytest.approx(w, rel=rel, abs=rel * 10), (got, want)
    return text


# ------------------------------------------------------------ the models
def test_mlp_imports_verifies_and_matches_torch_signature(build_dir):
    torch.manual_seed(0)
    model, x = models.MLP(), torch.randn(2, 8, 64)
    text = import_fx(model, (x,), weights="constants")
    verify(build_dir, text)
    args, res = signature(text)
    assert args == torch_sig([x]) and res == torch_sig([model(x)])
    assert text.count("linalg.matmul indexing_maps = [%s]" % NK_MAP) == 2
    assert "dense_resource<fc1_weight> : tensor<128x64xf32>" in text
    assert "dense_resource<fc2_weight> : tensor<32x128xf32>" in text
    assert "linalg.transpose" not in text and "sgpu." not in text
    assert 'loc("fc1"("models.py":' in text and 'loc("fc1.weight")' in text


def test_mlp_numerics(build_dir):
    torch.manual_seed(0)
    check_numerics(build_dir, models.MLP(), (torch.randn(2, 8, 64),))


def test_graph_module_input(build_dir):
    torch.manual_seed(0)
    gm = torch.fx.symbolic_trace(models.GatedFFN())
    x = torch.randn(4, 64)
    text = import_fx(gm, (x,))
    verify(build_dir, text)
    assert text.count("linalg.matmul indexing_maps = [%s]" % NK_MAP) == 3
    check_numerics(build_dir, gm, (x,))


def test_gated_ffn(build_dir):
    torch.manual_seed(0)
    x = torch.randn(2, 8, 64)
    text = check_numerics(build_dir, models.GatedFFN(), (x,))
    verify(build_dir, text)
    assert text.count("linalg.matmul indexing_maps = [%s]" % NK_MAP) == 3
    assert text.count("tensor.collapse_shape") == 3 and "arith.maximumf" in text
    assert "linalg.transpose" not in text


def _weights(text):
    """The SSA names of the weights: constants and params."""
    return set(re.findall(r"(%[\w.]+) = arith.constant dense_resource", text)) | \
        set(re.findall(r"(%[\w.]+): tensor<[^{]*\{sgpu\.param", text))


def test_llama_decoder_structure(build_dir):
    torch.manual_seed(0)
    model = models.LlamaDecoder(layers=2).eval()
    ids = torch.randint(0, 128, (2, 16))
    text = import_fx(model, (ids,))
    verify(build_dir, text)
    assert text.count("sgpu.embedding") == 1 and text.count("sgpu.rope") == 4
    assert "tensor.extract " not in text and "tensor.concat" not in text
    assert text.count("sgpu.rms_norm") == 5
    assert text.count("sgpu.attention") == 2
    assert text.count("sgpu.all_reduce") == 4
    assert text.count("{causal, scale = 2.500000000e-01 : f32}") == 2
    # 7 linears per layer and the LM head, all on N x K weights.
    assert text.count("linalg.matmul indexing_maps = [%s]" % NK_MAP) == 15
    assert "linalg.batch_matmul" not in text and "linalg.softmax" not in text
    assert "math.rsqrt" not in text and "dense_resource<mask>" not in text
    weights = _weights(text)
    for src in re.findall(r"linalg\.transpose ins\((%[\w.]+)", text):
        assert src not in weights, "a weight is transposed: %s" % src
    args, res = signature(text)
    assert args == torch_sig([ids]) and res == torch_sig([model(ids)])
    assert 'loc("layers.1.attn.q"("models.py":' in text
    assert re.search(r'sgpu\.all_reduce .* loc\("layers\.0/all_reduce"\("models\.py":\d+:0\)\)', text)


def test_llama_decoder_numerics(build_dir):
    torch.manual_seed(0)
    check_numerics(build_dir, models.LlamaDecoder(layers=2).eval(), (torch.randint(0, 128, (2, 16)),))


@pytest.mark.parametrize("weights", ["params", "constants"])
def test_sparse_linear_relu_compiles_end_to_end(build_dir, tmp_path, weights):
    torch.manual_seed(0)
    text = import_fx(models.SparseLinearReLU(), (torch.randn(128, 256),), sparsity={"fc.weight": "2:4"}, dtype="f16",
                     weights=weights)
    if weights == "constants":
        assert "dense_resource<fc_weight> : tensor<512x256xf16, #sgpu.nm<2:4>>" in text
    else:
        assert '%fc_weight: tensor<512x256xf16, #sgpu.nm<2:4>> {sgpu.param = "fc.weight"}' in text
    assert "tensor<512x256xf16, #sgpu.nm<2:4>>) outs(" in text
    verify(build_dir, text)
    rewritten = run_opt(build_dir, text, "--sgpu-slide-sparse", "--sgpu-fuse-epilogue")
    assert rewritten.returncode == 0, rewritten.stderr
    assert "activation = #sgpu.activation<relu>" in rewritten.stdout
    src, out = tmp_path / "model.mlir", tmp_path / "art"
    src.write_text(text)
    out.mkdir()
    r = subprocess.run([str(build_dir / "bin" / "sparse-opt"), str(src), "--sgpu-compile=output-dir=%s" % out,
                        "-o", str(tmp_path / "compiled.mlir")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[:4000]
    summary = (out / "summary.txt").read_text()
    # (a param is compressed by a prepare kernel when bound: no MMA there)
    counts = [int(n) for n in re.findall(r"kernel sgpu_spmm\w*: (\d+) sparse MMA instructions", summary)]
    assert counts and all(n > 0 for n in counts), summary


def test_fp16_model_imports_with_f16_types(build_dir):
    torch.manual_seed(0)
    model, x = models.MLP().half(), torch.randn(4, 64).half()
    text = import_fx(model, (x,))
    verify(build_dir, text)
    args, res = signature(text)
    assert args == [((4, 64), "f16")] and res == [((4, 32), "f16")]
    assert "tensor<128x64xf16>" in text and "xf32>" not in text


def test_dtype_option_casts_params_and_inputs(build_dir):
    torch.manual_seed(0)
    model = models.GatedFFN()
    text = import_fx(model, (torch.randn(4, 64),), dtype="bf16")
    verify(build_dir, text)
    assert signature(text) == ([((4, 64), "bf16")], [((4, 64), "bf16")])
    assert params_of(text) == {"gate.weight": "tensor<256x64xbf16>", "up.weight": "tensor<256x64xbf16>",
                               "down.weight": "tensor<64x256xbf16>"}
    assert "xf32>" not in text
    x = torch.randn(4, 64)
    got, want = run_reference(build_dir, text, [x.bfloat16()], [model(x).detach().bfloat16()], params=state(model))
    assert got[0] == pytest.approx(want[0], rel=0.05, abs=0.05)


# --------------------------------------------------------------- patterns
class HFRMSNorm(nn.Module):
    """Hugging Face's LlamaRMSNorm: casts in and out around the f32 math."""

    def __init__(self, d=16):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(d))

    def forward(self, h):
        dt = h.dtype
        h = h.to(torch.float32)
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-5)
        return self.weight * h.to(dt)


class NormVariants(nn.Module):
    def __init__(self):
        super().__init__()
        self.hf = HFRMSNorm()
        self.w = nn.Parameter(torch.randn(16))

    def forward(self, x):
        a = self.hf(x)
        b = self.w * (x / torch.sqrt((x * x).mean(dim=[-1], keepdim=True) + 1e-6))
        c = torch.rsqrt(1e-6 + torch.mean(x ** 2, -1, True)) * x
        return a + b + c


def test_rms_norm_variants(build_dir):
    torch.manual_seed(0)
    text = check_numerics(build_dir, NormVariants(), (torch.randn(2, 3, 16),))
    assert text.count("sgpu.rms_norm") == 3
    assert "math.rsqrt" not in text and "math.sqrt" not in text and "linalg.reduce" not in text
    assert "{epsilon = 1.000000000e-05 : f32}" in text


class SharedVariance(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(16))

    def forward(self, x):
        var = x.pow(2).mean(-1, keepdim=True)
        return x * torch.rsqrt(var + 1e-6) * self.w, var


def test_rms_norm_not_absorbed_when_an_intermediate_is_used(build_dir):
    torch.manual_seed(0)
    text = check_numerics(build_dir, SharedVariance(), (torch.randn(2, 16),))
    assert "sgpu.rms_norm" not in text and "math.rsqrt" in text


class Attn(nn.Module):
    def __init__(self, mode):
        super().__init__()
        self.mode = mode
        self.register_buffer("bmask", (torch.rand(1, 1, 8, 8) > 0.6) & ~torch.eye(8, dtype=torch.bool))
        self.register_buffer("fmask", torch.randn(1, 1, 8, 8))
        self.register_buffer("cmask", torch.triu(torch.full((8, 8), float("-inf")), 1))

    def forward(self, q, k, v):
        if self.mode == "float-mask":
            p = (q @ k.transpose(-1, -2) * 0.3 + self.fmask).softmax(-1)
        elif self.mode == "bool-mask":
            p = torch.softmax(torch.matmul(q, k.mT).masked_fill(self.bmask, float("-inf")) / 2.0, dim=-1)
        elif self.mode == "causal-float":
            p = F.softmax(q @ k.permute(0, 1, 3, 2) / math.sqrt(4) + self.cmask, dim=-1)
        elif self.mode == "shared-kt":
            kt = k.transpose(2, 3)
            return torch.softmax(q @ kt, dim=-1) @ v + kt.sum()
        elif self.mode == "causal-static":
            m = torch.ones(8, 8, dtype=torch.bool).triu(1)
            p = torch.softmax((q @ k.transpose(-2, -1)).masked_fill(m, float("-inf")) * 0.5, -1)
        elif self.mode == "gqa":
            return torch.softmax(q @ k[:, :1].transpose(-2, -1), -1) @ v[:, :1]
        return p @ v


@pytest.mark.parametrize("mode,expect", [
    ("float-mask", r"mask\(%fmask : tensor<1x1x8x8xf32>\) \{scale = 3\.000000000e-01 : f32\}"),
    ("bool-mask", r"mask\(%eq[._]\d+ : tensor<1x1x8x8xi1>\) \{scale = 5\.000000000e-01 : f32\}"),
    ("causal-float", r"%v \{causal, scale = 5\.000000000e-01 : f32\}"),
    ("shared-kt", r"%v \{scale = 1\.000000000e\+00 : f32\}"),
    ("causal-static", r"%v \{causal, scale = 5\.000000000e-01 : f32\}"),
    ("gqa", r"\{scale = 1\.000000000e\+00 : f32\} : tensor<2x3x8x4xf32>, tensor<2x1x8x4xf32>"),
])
def test_decomposed_attention(build_dir, mode, expect):
    torch.manual_seed(1)
    text = check_numerics(build_dir, Attn(mode), tuple(torch.randn(2, 3, 8, 4) for _ in range(3)))
    verify(build_dir, text)
    assert text.count("sgpu.attention") == 1 and "linalg.softmax" not in text
    line = next(l for l in text.splitlines() if "sgpu.attention" in l)
    assert re.search(expect, line), line
    if mode == "bool-mask":  # masked_fill's True-is-masked, negated into a keep-mask
        assert "arith.cmpi eq" in text
    if mode == "shared-kt":  # k^T is used elsewhere: transposed back for the attention
        assert text.count("linalg.transpose") == 2


class GPTBlock(nn.Module):
    """nanoGPT's block: tuple unpacking of sizes and of a split, the causal
    mask as a slice of a larger tril buffer compared with 0, exact scale."""

    def __init__(self, c=32, nh=4, block=16):
        super().__init__()
        self.ln_1, self.ln_2 = nn.LayerNorm(c), nn.LayerNorm(c)
        self.c_attn, self.c_proj = nn.Linear(c, 3 * c), nn.Linear(c, c)
        self.fc, self.proj = nn.Linear(c, 4 * c), nn.Linear(4 * c, c)
        self.nh, self.c = nh, c
        self.register_buffer("bias", torch.tril(torch.ones(block, block)).view(1, 1, block, block))

    def attn(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.c, dim=2)
        k = k.view(B, T, self.nh, C // self.nh).transpose(1, 2)
        q = q.view(B, T, self.nh, C // self.nh).transpose(1, 2)
        v = v.view(B, T, self.nh, C // self.nh).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = F.softmax(att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf")), dim=-1)
        return self.c_proj((att @ v).transpose(1, 2).contiguous().view(B, T, C))

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.proj(F.gelu(self.fc(self.ln_2(x)), approximate="tanh"))


def test_gpt_block(build_dir):
    torch.manual_seed(0)
    text = check_numerics(build_dir, GPTBlock().eval(), (torch.randn(2, 8, 32),))
    assert text.count("sgpu.layer_norm") == 2
    assert "{causal, scale = 3.535533906e-01 : f32} : tensor<2x4x8x8xf32>" in text
    assert "dense_resource<bias>" not in text


def test_matmul_with_transposed_operand_folds(build_dir):
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(torch.randn(8, 16))

        def forward(self, x, y):
            return x @ self.w.t(), torch.bmm(y, y.transpose(1, 2)), torch.matmul(y, self.w.T)
    torch.manual_seed(0)
    text = check_numerics(build_dir, M(), (torch.randn(3, 16), torch.randn(2, 5, 16)))
    assert "linalg.transpose" not in text
    assert text.count("linalg.matmul indexing_maps = [%s]" % NK_MAP) == 2
    assert "affine_map<(b, m, n, k) -> (b, n, k)>" in text


class OpZoo(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln = nn.LayerNorm(16)
        self.ln2 = nn.LayerNorm(16, elementwise_affine=False)
        self.register_buffer("scale", torch.tensor(0.5))
        self.emb = nn.Embedding(10, 16)
        self.act = nn.GELU(approximate="tanh")

    def forward(self, x, ids):
        a = self.ln(x) - x / 3.0
        b = F.gelu(a, approximate="tanh") + self.act(a) + torch.sigmoid(a) * torch.tanh(a) + F.silu(a)
        c = torch.where(a > 0, b, -b) + (2.0 - a) ** 2 + a.pow(3) * 0.01
        d = torch.exp(-a.abs()) + torch.sqrt(a * a + 1) + torch.rsqrt(a * a + 1)
        e = c.masked_fill(a < -0.5, 7.0) + d * self.scale
        f = torch.cat([e[..., :8], e[..., 8:] * 2], dim=-1)
        g = f[:, 1:3, None, ::2].squeeze(2)
        h = g.permute(0, 2, 1).contiguous().flatten(1)
        parts = torch.split(x, [4, 12], dim=-1)
        k = torch.chunk(x, 2, dim=1)[1]
        m = self.ln2(k).mean(dim=(1,), keepdim=True).sum(-1) + parts[0].sum() + parts[1].amax(-1).mean()
        n = F.softmax(h, dim=-1) + torch.softmax(h, 0) + h.softmax(-1)
        o = self.emb(ids).float().half().float()
        p = F.layer_norm(o, (16,)) + F.embedding(ids, self.emb.weight)
        q = (x[0] > 0) & ~(x[1] < 0.5) | (x[0] == 1)
        return n + m, p.clamp(min=-1.0, max=1.0), x[0].t(), torch.stack([h, h], 1), q.float()


def test_op_zoo_numerics(build_dir):
    torch.manual_seed(0)
    text = check_numerics(build_dir, OpZoo(), (torch.randn(2, 4, 16), torch.randint(0, 10, (3, 5))))
    verify(build_dir, text)
    assert text.count("sgpu.layer_norm") == 3 and "linalg.softmax dimension(1)" in text
    assert "dense_resource<scale>" not in text  # a 0-d buffer is a scalar


def test_sequential_parameter_names(build_dir):
    """Parameters named "0.weight": resource keys and SSA names must not
    start with a digit."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 4), nn.ReLU())
    text = check_numerics(build_dir, model, (torch.randn(2, 8),))
    assert '%p_0_weight: tensor<4x8xf32> {sgpu.param = "0.weight"}' in text
    text = check_numerics(build_dir, model, (torch.randn(2, 8),), weights="constants")
    assert 'dense_resource<_0_weight> : tensor<4x8xf32> loc("0.weight")' in text


def test_gelu_exact_and_dropout_eval(build_dir):
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.drop = nn.Dropout(0.1)

        def forward(self, x):
            return self.drop(F.gelu(x)) + F.dropout(x, 0.2, training=self.training)
    text = import_fx(M().eval(), (torch.randn(4, 8),))
    verify(build_dir, text)
    assert "math.erf" in text


@pytest.mark.skipif(not hasattr(F, "scaled_dot_product_attention"), reason="torch without SDPA")
def test_scaled_dot_product_attention(build_dir):
    class M(nn.Module):
        def forward(self, q, k, v):
            return (F.scaled_dot_product_attention(q, k, v, is_causal=True) +
                    F.scaled_dot_product_attention(q, k, v, scale=0.5))
    qkv = tuple(torch.randn(1, 2, 8, 4) for _ in range(3))
    text = check_numerics(build_dir, M(), qkv)
    assert text.count("sgpu.attention") == 2 and "{causal, scale = 5.000000000e-01 : f32}" in text


@pytest.mark.skipif(not hasattr(nn, "RMSNorm"), reason="torch without nn.RMSNorm")
def test_rms_norm_module(build_dir):
    torch.manual_seed(0)
    text = check_numerics(build_dir, nn.Sequential(nn.RMSNorm(16, eps=1e-5)), (torch.randn(2, 16),))
    assert "sgpu.rms_norm" in text


# ----------------------------------------------------------------- errors
class Unfold(nn.Module):
    def forward(self, x):
        return F.unfold(x, 2)


class Conv(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList([nn.Conv1d(4, 4, 3)])

    def forward(self, x):
        return self.blocks[0](x)


def test_unsupported_function_names_op_node_and_line():
    with pytest.raises(ImportError_) as err:
        import_fx(Unfold(), (torch.randn(1, 2, 4, 4),))
    msg = str(err.value)
    assert "call_function torch.nn.functional.unfold" in msg and "node 'unfold'" in msg
    assert "test_import_fx.py:" in msg and "F.unfold(x, 2)" in msg


def test_unsupported_module_names_module_path():
    with pytest.raises(ImportError_) as err:
        import_fx(Conv(), (torch.randn(2, 4, 8),))
    msg = str(err.value)
    assert "call_module blocks.0 (nn.Conv1d)" in msg and "node 'blocks_0'" in msg


def test_unknown_parameter_annotation():
    with pytest.raises(AnnotationError, match=r"'fc1\.wieght', which is not a parameter.*did you mean 'fc1\.weight'"):
        import_fx(models.MLP(), (torch.randn(2, 64),), sparsity={"fc1.wieght": "2:4"})


def test_dense_weight_breaks_the_pattern():
    torch.manual_seed(0)
    with pytest.raises(AnnotationError, match=r"weight 'fc1\.weight' is not 6:8 sparse: row 0, group 0 "
                                              r"\(columns 0\.\.7\) has 8 nonzeros"):
        import_fx(models.MLP(), (torch.randn(2, 64),), sparsity={"fc1.weight": "6:8"}, dtype="f16",
                  weights="constants")


def test_params_defer_the_pattern_check_to_the_bind():
    # As a param the weight's data is not read: the annotation is checked
    # for shape and type only, and the type carries it.
    torch.manual_seed(0)
    text = import_fx(models.MLP(), (torch.randn(2, 64),), sparsity={"fc1.weight": "6:8"}, dtype="f16")
    assert params_of(text)["fc1.weight"] == "tensor<128x64xf16, #sgpu.nm<6:8>>"
    assert "dense_resource" not in text


@pytest.mark.parametrize("weights", ["params", "constants"])
def test_f32_sparse_weight_is_an_import_error(weights):
    with pytest.raises(AnnotationError, match=r"weight 'fc\.weight' is f32, but structured sparsity runs on "
                                              r"f16/bf16 only: use dtype=f16 or bf16"):
        import_fx(models.SparseLinearReLU(), (torch.randn(8, 256),), sparsity={"fc.weight": "2:4"}, weights=weights)
    text = import_fx(models.SparseLinearReLU(), (torch.randn(8, 256),), sparsity={"fc.weight": "2:4"},
                     dtype="bf16", weights=weights)
    assert "tensor<512x256xbf16, #sgpu.nm<2:4>>" in text


def test_unsupported_pattern_rejected():
    with pytest.raises(AnnotationError, match=r"'fc\.weight'.*unsupported structured sparsity 3:4"):
        import_fx(models.SparseLinearReLU(), (torch.randn(8, 256),), sparsity={"fc.weight": "3:4"})


def test_sparse_weight_used_outside_a_linear():
    class Tied(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(8, 8, bias=False)
            with torch.no_grad():
                self.fc.weight[:, 2::4] = 0
                self.fc.weight[:, 3::4] = 0

        def forward(self, x):
            return self.fc(x) + self.fc.weight
    for weights in ("params", "constants"):
        with pytest.raises(AnnotationError, match=r"weight 'fc\.weight' is annotated 2:4 but add uses it"):
            import_fx(Tied(), (torch.randn(8, 8),), sparsity={"fc.weight": "2:4"}, dtype="f16", weights=weights)


def test_dropout_in_training_mode_is_an_error():
    with pytest.raises(ImportError_, match=r"nn\.Dropout.*model\.eval\(\)"):
        import_fx(nn.Sequential(nn.Dropout(0.5)).train(), (torch.randn(2, 4),))


def test_graph_module_errors_name_the_generated_line():
    # A GraphModule traced elsewhere has no user source (unless its trace
    # recorded stack traces, as torch 2.x's does): the error names its line
    # in the generated forward.
    gm = torch.fx.symbolic_trace(Unfold())
    with pytest.raises(ImportError_) as err:
        import_fx(gm, (torch.randn(1, 2, 4, 4),))
    msg = str(err.value)
    assert "call_function torch.nn.functional.unfold" in msg and "node 'unfold'" in msg
    assert re.search(r"\(<eval_with_key>\.\d+.*:\d+: unfold = torch\.nn\.functional\.unfold\(x, 2|"
                     r"\(.*test_import_fx\.py:\d+: return F\.unfold\(x, 2\)\)", msg), msg


class DataDependent(nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            return x
        return -x


def test_trace_errors_name_the_source_line():
    with pytest.raises(ImportError_) as err:
        import_fx(DataDependent(), (torch.randn(2, 4),))
    msg = str(err.value)
    assert "torch.fx could not trace DataDependent" in msg
    assert re.search(r"test_import_fx\.py:\d+: if x\.sum\(\) > 0:", msg), msg


def test_supported_ops_lists_every_handler():
    from sparse_opt.importers import fx_aten, fx_patterns, fx_registry
    ops = supported_ops()
    assert ops == sorted(set(ops)) and len(ops) > 40
    for name in ("linear", "embedding", "softmax", "matmul", "rms_norm", "attention", "all_reduce",
                 "rope", "cat", "neg", "getitem", "slice", "mul", "add"):  # rope and what it is written with
        assert name in ops, name
    # One registry: every kind a torch function, tensor method or ATen op is
    # registered as has a handler (the classification's renamings aside),
    # and every handler is reachable.
    renamed = {"cast_" + k for k in ("float", "half", "bfloat16", "double", "int", "long", "bool")} | {"max", "min"}
    forms = list(fx_registry.FUNCTIONS.values()) + list(fx_registry.METHODS.values())
    kinds = {k for k, _ in forms} - renamed
    kinds |= {k for k, _, _ in fx_registry.ATEN.values() if k is not None} | set(fx_aten.KIND_BY_NAME.values())
    handlers = set(fx_registry.HANDLERS)
    assert kinds <= handlers, kinds - handlers
    assert handlers - kinds <= {"amin_all"}, handlers - kinds
    # A kind has one handler.
    with pytest.raises(ValueError, match="registered twice: add"):
        fx_registry.register_handlers({"add": None})
    assert set(fx_patterns.BLOCKS) <= set(ops)


# ------------------------------------------------------- shape unpacking
class Unpack(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(16, 24)

    def forward(self, x):
        b, s, d = x.shape
        return self.fc(x).view(b, s, -1)


class UnpackForms(nn.Module):
    """Star unpacking, len(), indexing and iteration of shapes, of an input
    and of a linear layer's result."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(16, 24)

    def forward(self, x):
        *lead, d = x.shape
        h = self.fc(x)
        rank = len(h.shape)
        n, t, f = h.shape
        dims = [k for k in x.shape]
        y = h.view(*lead, 2, f // 2).reshape(dims[0], x.shape[1] * rank, -1)
        return y + len(x) + n * t


def test_shape_unpacking_imports():
    torch.manual_seed(0)
    text = import_fx(Unpack(), (torch.randn(2, 3, 16),))
    assert signature(text) == ([((2, 3, 16), "f32")], [((2, 3, 24), "f32")])
    text = import_fx(UnpackForms(), (torch.randn(2, 3, 16),))
    assert signature(text) == ([((2, 3, 16), "f32")], [((2, 9, 8), "f32")])
    assert "output_shape [2, 3, 2, 12]" in text


def test_shape_unpacking_matches_torch(build_dir):
    from reference_runner import run_reference as reference
    torch.manual_seed(0)
    model, x = Unpack(), torch.randn(2, 3, 16)
    (got,) = reference(import_fx(model, (x,)), [x.numpy()], params=state(model))
    np.testing.assert_allclose(got, model(x).detach().numpy(), rtol=1e-5, atol=1e-5)
    check_numerics(build_dir, UnpackForms(), (torch.randn(2, 3, 16),))


# -------------------------------------------------------- weights as params
def _forward_head(text):
    return re.search(r"func\.func @forward\((.*)\) -> ", text).group(1)


def test_weights_are_params_after_the_inputs():
    torch.manual_seed(0)
    model, x = models.MLP(), torch.randn(4, 64)
    text = import_fx(model, (x,))
    assert _forward_head(text) == (
        '%x: tensor<4x64xf32>, %fc1_weight: tensor<128x64xf32> {sgpu.param = "fc1.weight"}, '
        '%fc1_bias: tensor<128xf32> {sgpu.param = "fc1.bias"}, '
        '%fc2_weight: tensor<32x128xf32> {sgpu.param = "fc2.weight"}, '
        '%fc2_bias: tensor<32xf32> {sgpu.param = "fc2.bias"}')
    assert "dense_resource" not in text and "{-#" not in text
    constants = import_fx(model, (x,), weights="constants")
    assert "sgpu.param" not in constants and _forward_head(constants) == "%x: tensor<4x64xf32>"
    assert len(re.findall(r"= arith.constant dense_resource<", constants)) == 4
    with pytest.raises(ImportError_, match=r"weights='weights': expected 'params' or 'constants'"):
        import_fx(model, (x,), weights="weights")


class Named(nn.Module):
    """A buffer named like the input, a tensor computed in forward."""

    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(8))
        self.register_buffer("x", torch.randn(8))

    def forward(self, x):
        return x * self.w + self.x + torch.arange(8).float()


def test_params_keep_names_apart_and_computed_tensors_stay_constants(build_dir):
    torch.manual_seed(0)
    text = check_numerics(build_dir, Named(), (torch.randn(2, 8),))
    assert _forward_head(text) == ('%x: tensor<2x8xf32>, %w: tensor<8xf32> {sgpu.param = "w"}, '
                                   '%x_2: tensor<8xf32> {sgpu.param = "x"}')
    assert len(re.findall(r"= arith.constant dense_resource<", text)) == 1  # the arange


class MetaMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(64, 128, device="meta")
        self.fc2 = nn.Linear(128, 64, bias=False, device="meta")
        self.register_buffer("scale", torch.ones(64, device="meta"))

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x))) * self.scale


def test_meta_device_model_imports_as_params():
    text = import_fx(MetaMLP(), (torch.randn(4, 64),), sparsity={"fc1.weight": "2:4"}, dtype="f16")
    assert params_of(text) == {"fc1.weight": "tensor<128x64xf16, #sgpu.nm<2:4>>", "fc1.bias": "tensor<128xf16>",
                               "fc2.weight": "tensor<64x128xf16>", "scale": "tensor<64xf16>"}
    assert "dense_resource" not in text
    with pytest.raises(ImportError_, match=r"'fc1\.weight' is on the meta device \(it holds no data\), but "
                                          r"weights='constants' reads every parameter and buffer"):
        import_fx(MetaMLP(), (torch.randn(4, 64),), weights="constants")
    with pytest.raises(ImportError_, match=r"'fc1\.weight' is on the meta device .*checks the annotated weight"):
        import_fx(MetaMLP(), (torch.randn(4, 64),), sparsity={"fc1.weight": "2:4"}, dtype="f16",
                  weights="constants")


def test_meta_device_model_allocates_no_weight_memory():
    from conftest import run_python
    r = run_python(
        "import resource, torch, torch.nn as nn\n"
        "from sparse_opt.importers.fx import import_fx\n"
        "class Big(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.layers = nn.ModuleList([nn.Linear(16384, 16384, bias=False, device='meta')\n"
        "                                     for _ in range(4)])\n"
        "    def forward(self, x):\n"
        "        for layer in self.layers:\n"
        "            x = torch.relu(layer(x))\n"
        "        return x\n"
        "text = import_fx(Big(), (torch.randn(8, 16384),))\n"
        "print(text.count('sgpu.param'), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024)\n")
    assert r.returncode == 0, r.stderr[-4000:]
    count, peak_mb = map(int, r.stdout.split())
    assert count == 4
    assert peak_mb < 1536, "4 GiB of f32 weights on the meta device, %d MB peak" % peak_mb


def test_meta_tensors_the_importer_reads_are_errors():
    model = models.LlamaDecoder(layers=1).to("meta")
    with pytest.raises(ImportError_, match=r"'mask' is on the meta device \(it holds no data\), but the importer "
                                          r"reads it to tell whether the attention mask is causal"):
        import_fx(model, (torch.randint(0, 128, (1, 16)),))

    class Scaled(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("scale", torch.tensor(0.5, device="meta"))

        def forward(self, x):
            return x * self.scale
    with pytest.raises(ImportError_, match=r"'scale' is on the meta device .* a 0-d tensor is read as a number"):
        import_fx(Scaled(), (torch.randn(2, 4),))


# ------------------------------------------------------- embedding and RoPE
def test_embedding_is_one_op():
    torch.manual_seed(0)
    emb = nn.Embedding(10, 16)
    for dt in (torch.int64, torch.int32):
        text = import_fx(nn.Sequential(emb), (torch.randint(0, 10, (3, 5), dtype=dt),))
        want = ("sgpu.embedding %p_0_weight, %input_1_ : tensor<10x16xf32>, tensor<3x5x" + mlir_dtype(dt) +
                "> -> tensor<3x5x16xf32>")
        assert want in text, text
        assert "linalg.generic" not in text and "tensor.extract" not in text


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


class Rope(nn.Module):
    def __init__(self, form, s=8, d=16):
        super().__init__()
        self.form = form
        ang = torch.outer(torch.arange(s).float(), 1.0 / (100 ** (torch.arange(0, d, 2).float() / d)))
        emb = torch.cat((ang, ang), dim=-1)
        shape = (s, d) if form == "table-2d" else (1, 1, s, d)
        self.register_buffer("cos", emb.cos().reshape(shape))
        self.register_buffer("sin", emb.sin().reshape(shape))

    def forward(self, q):
        return self.rope(q, self.cos, self.sin)

    def rope(self, q, cos, sin):
        if self.form in ("llama", "table-2d", "inputs"):
            return q * cos + models.rotate_half(q) * sin
        if self.form == "commuted":
            return sin * rotate_half(q) + cos * q
        if self.form == "swapped-halves":  # not a rotation: cat(x1, -x2)
            half = q.size(-1) // 2
            return q * cos + torch.cat((q[..., :half], -q[..., half:]), dim=-1) * sin
        if self.form == "shared":  # the rotated half is used again: no block
            r = rotate_half(q)
            return q * cos + r * sin, r
        if self.form == "other-dim":  # halves of dim 2: no block
            half = q.size(2) // 2
            return q * cos + torch.cat((-q[:, :, half:], q[:, :, :half]), dim=2) * sin
        raise ValueError(self.form)


class RopeInputs(Rope):
    """cos and sin given as inputs (computed by the caller)."""

    def forward(self, q, cos, sin):
        return self.rope(q, cos, sin)


@pytest.mark.parametrize("form,ropes", [("llama", 1), ("commuted", 1), ("table-2d", 1), ("inputs", 1),
                                        ("swapped-halves", 0), ("shared", 0), ("other-dim", 0)])
def test_rope_recognized(build_dir, form, ropes):
    torch.manual_seed(0)
    model = (RopeInputs if form == "inputs" else Rope)(form)
    inputs = (torch.randn(2, 4, 8, 16),) + ((model.cos, model.sin) if form == "inputs" else ())
    if form == "other-dim":
        inputs = (torch.randn(2, 4, 8, 8),)
        model.cos, model.sin = model.cos[..., :8], model.sin[..., :8]
    text = import_fx(model, inputs)
    assert text.count("sgpu.rope") == ropes
    if ropes:
        line = next(l for l in text.splitlines() if "sgpu.rope" in l)
        assert re.search(r"sgpu\.rope %q, %[\w.]+, %[\w.]+ : tensor<2x4x8x16xf32>, tensor<1x1x8x16xf32>, "
                         r"tensor<1x1x8x16xf32> -> tensor<2x4x8x16xf32>", line), line
        assert "tensor.concat" not in text and "arith.negf" not in text
    else:
        assert "tensor.concat" in text
    check_numerics(build_dir, model, inputs)


class _InPlaceReLU(nn.Module):
    """A ReLU applied in place whose result the model discards: eager torch
    applies it to `y`, so the import must too."""

    def __init__(self, form):
        super().__init__()
        self.form = form
        self.fc = nn.Linear(8, 8)
        self.act = nn.ReLU(inplace=True)

    def forward(self, x):
        y = self.fc(x)
        before = y * 1.0  # read before the in-place op: the old values
        if self.form == "module":
            self.act(y)
        elif self.form == "functional":
            F.relu(y, inplace=True)
        else:
            y.relu_()
        return y * 2.0 + before


@pytest.mark.parametrize("form", ["module", "functional", "method"])
def test_in_place_relu_with_discarded_result(build_dir, form):
    torch.manual_seed(0)
    model = _InPlaceReLU(form).eval()
    x = torch.randn(4, 8)
    text = check_numerics(build_dir, model, (x,))
    assert "maximumf" in text or "max" in text


def test_in_place_op_on_a_view_is_an_error(build_dir):
    class OnView(nn.Module):
        def forward(self, x):
            h = x * 1.0
            F.relu(h[:, :2], inplace=True)
            return h

    with pytest.raises(ImportError_, match=r"in-place op on a view \(getitem of another tensor\)"):
        import_fx(OnView(), (torch.randn(4, 8),))
