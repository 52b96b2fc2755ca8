"""The ONNX importer: torch exports and hand-made graphs to SparseOpt's input
IR, checked with build/bin/sparse-opt (parse + verify, compile) and, for
plain linalg models, numerically on the CPU (--sgpu-reference + mlir-runner).
Initializers import as params (the default) unless a test is about
constants; numerics feed the initializers to the params by name."""
import functools
import math
import re
import subprocess

import numpy as np
import onnx
import pytest

import onnx_models
from sparse_opt.importers.emitter import AnnotationError, ImportError_
from reference_runner import arguments, run_reference
from sparse_opt.importers.onnx_importer import OnnxImporter, import_onnx

@functools.lru_cache(maxsize=None)
def _exported_bytes(name, opset):
    return onnx_models.build(name, opset).SerializeToString()


def model(name, opset=17):
    """A fresh ModelProto (exports are cached as bytes: llama takes seconds)."""
    return onnx.load_from_string(_exported_bytes(name, opset))


@functools.lru_cache(maxsize=None)
def fuse_flag(build_dir):
    """The ReLU-into-spmm fusion pass (renamed -activation -> -epilogue)."""
    out = subprocess.run([str(build_dir / "bin" / "sparse-opt"), "--help"], capture_output=True, text=True).stdout
    return "--sgpu-fuse-epilogue" if "--sgpu-fuse-epilogue" in out else "--sgpu-fuse-activation"


def run_opt(build_dir, tmp_path, text, *args, name="in.mlir"):
    src = tmp_path / name
    src.write_text(text)
    return subprocess.run([str(build_dir / "bin" / "sparse-opt"), str(src), *args], capture_output=True, text=True)


def verifies(build_dir, tmp_path, text):
    r = run_opt(build_dir, tmp_path, text)
    assert r.returncode == 0, r.stderr[:4000]
    return r.stdout


def body(text):
    """The function body without the resource blobs."""
    return text.split("{-#")[0]


def initializers(mp):
    """{name: array} of a model's initializers (what its params bind to)."""
    return {t.name: onnx.numpy_helper.to_array(t) for t in mp.graph.initializer}


def params_of(text):
    """{initializer name: declared type text} of @forward's params."""
    return {name: t for t, name in arguments(text) if name is not None}


def resource(text, key):
    """The bytes of a dense_resource blob (after its 4-byte alignment)."""
    m = re.search(r"^\s*%s: \"0x([0-9A-F]+)\"" % re.escape(key), text, re.M)
    assert m, "no resource %s" % key
    return bytes.fromhex(m.group(1))[4:]


# --------------------------------------------------------------- the models
@pytest.mark.parametrize("opset", [14, 17])
@pytest.mark.parametrize("name", ["mlp", "mlp-3d", "gated-ffn", "sparse-linear-relu", "llama"])
def test_torch_exports_parse_and_verify(build_dir, tmp_path, name, opset):
    text = import_onnx(model(name, opset))
    assert "func.func @forward(" in text
    verifies(build_dir, tmp_path, text)


@pytest.mark.parametrize("opset", [14, 17])
def test_llama_structure(build_dir, tmp_path, opset):
    text = import_onnx(model("llama", opset))
    verifies(build_dir, tmp_path, text)
    ir = body(text)
    assert ir.count("sgpu.rms_norm") == 5
    assert ir.count("sgpu.attention") == 2
    # masked_fill(triu mask, -inf) is exactly the causal mask: no mask operand.
    for line in ir.splitlines():
        if "sgpu.attention" in line:
            assert "{causal, scale = 2.500000000e-01 : f32}" in line and "mask(" not in line
    # 7 linears per layer + the LM head, all on N x K weights with the (n, k) map.
    linears = [ln for ln in ir.splitlines() if "linalg.matmul" in ln]
    assert len(linears) == 15
    weights = []
    for ln in linears:
        assert "affine_map<(m, n, k) -> (n, k)>" in ln
        weights.append(re.search(r"ins\(%\S+, %\S+ : tensor<\S+>, tensor<(\d+x\d+)xf32>\)", ln).group(1))
    layer = ["64x64"] * 4 + ["128x64", "128x64", "64x128"]
    assert weights == layer * 2 + ["128x64"]
    # The weights are params named by their initializers; the K x N MatMul
    # initializers (torch's folded transposes) are transposed at run time.
    params = params_of(text)
    assert len(params) == 19 and params["embed.weight"] == "tensor<128x64xf32>" and "cos" in params
    assert ir.count("linalg.transpose ins(%onnx__MatMul_") == 15
    # Embedding and rotary embeddings are one op each.
    assert ir.count("sgpu.embedding %embed_weight, %ids : tensor<128x64xf32>, tensor<1x16xi64>") == 1
    assert ir.count("sgpu.rope ") == 4 and "tensor.concat" not in ir and "%neg" not in ir
    # SiLU recognized, decomposed norms and attention absorbed, shapes folded.
    assert ir.count("= linalg.generic") and len(re.findall(r"%silu[._]\d+ = linalg.generic", ir)) == 2
    for leftover in ("%sigmoid_", "%pow_", "%div_", "%erf_", "linalg.reduce", "linalg.softmax", "math.sqrt", "math.rsqrt",
                     "linalg.batch_matmul", "tensor.dim", "shape.", "tensor.from_elements", "xi64>"):
        if leftover == "xi64>":  # the ids: in the signature and the embedding
            assert ir.count(leftover) == 2, ir.count(leftover)
        else:
            assert leftover not in ir, leftover
    assert "tensor.extract " not in ir


def test_every_op_has_a_location():
    text = body(import_onnx(model("llama")))
    for line in text.splitlines():
        top = line.startswith("  %") or line.startswith("  } ->")
        if top and not line.rstrip().endswith("{") and "linalg.reduce" not in line:
            assert ' loc("' in line, line
    assert 'loc("/layers.1/attn/MatMul_1")' in text  # the attention, at its last node
    assert 'loc("/layers.0/mlp/up/MatMul")' in text


@pytest.mark.parametrize("name,key,shape,attr", [
    ("mlp", "fc1.weight", (128, 64), "fc1"),        # Gemm (transB): initializer already N x K
    ("mlp-3d", "fc1.weight", (128, 64), "fc1"),     # MatMul on a K x N initializer: transposed back
])
def test_weights_are_stored_in_torch_layout(name, key, shape, attr):
    module, _, _ = onnx_models.torch_model(name)
    mp = model(name)
    text = import_onnx(mp, sparsity=None, weights="constants")
    want = getattr(module, attr).weight.detach().numpy()
    # the constant is named after the initializer; find the one holding fc1's data
    blobs = {m.group(1) for m in re.finditer(r"dense_resource<(\w+)> : tensor<128x64xf32>", text)}
    assert len(blobs) == 1
    got = np.frombuffer(resource(text, blobs.pop()), dtype="<f4").reshape(shape)
    np.testing.assert_array_equal(got, want)
    assert "fc1_bias" in text  # the bias keeps its name, folded into the linear


def test_gemm_relu():
    text = import_onnx(onnx_models.handmade("gemm-relu"))
    ir = body(text)
    # Gemm(transB=1): the N x K initializer is the param as stored.
    assert params_of(text) == {"fc.weight": "tensor<16x32xf32>", "fc.bias": "tensor<16xf32>"}
    assert "dense_resource" not in text and "linalg.transpose" not in ir
    assert "dense_resource<fc_weight> : tensor<16x32xf32>" in import_onnx(onnx_models.handmade("gemm-relu"),
                                                                          weights="constants")
    assert "affine_map<(m, n, k) -> (n, k)>" in ir and 'loc("/fc/Gemm")' in ir
    assert "arith.maximumf" in ir and 'loc("/relu/Relu")' in ir


def test_layer_norm_from_torch(build_dir, tmp_path):
    text = import_onnx(model("layer-norm", 17))
    verifies(build_dir, tmp_path, text)
    assert body(text).count("sgpu.layer_norm") == 1
    assert re.search(r"sgpu.layer_norm %[\w.]+, %\w*_1_weight(?:[._]\d+)?, %\w*_1_bias(?:[._]\d+)? "
                     r"\{epsilon = 9.999999747e-06 : f32\}", text)


@pytest.mark.parametrize("opset", [14, 17])
def test_gelu_from_torch(build_dir, tmp_path, opset):
    text = import_onnx(model("gelu-mlp", opset))
    verifies(build_dir, tmp_path, text)
    ir = body(text)
    assert len(re.findall(r"%gelu[._]\d+ = linalg.generic", ir)) == 1
    assert ir.count("math.erf") == 1  # inside the gelu body only
    assert ir.count("= linalg.generic") == 3  # the gelu and the two bias adds


def test_all_reduce_marker(build_dir, tmp_path):
    text = import_onnx(onnx_models.handmade("all-reduce"))
    verifies(build_dir, tmp_path, text)
    assert re.search(r"sgpu.all_reduce %linear[._]\d+ : tensor<8x64xf32> loc\(\"/o_proj/AllReduce\"\)", text)


def test_attention_with_a_runtime_where_mask(build_dir, tmp_path):
    text = import_onnx(onnx_models.handmade("attention-where"))
    verifies(build_dir, tmp_path, text)
    ir = body(text)
    # Where(mask, -inf, s) drops where mask is true; sgpu.attention keeps: negated.
    m = re.search(r"sgpu.attention %q, %k, %v mask\((%[\w.]+) : tensor<1x1x16x16xi1>\) \{scale = 1.767766983e-01", ir)
    assert m
    neg = ir.split(m.group(1) + " = linalg.generic", 1)[1].split("linalg.yield", 1)[0]
    assert "ins(%mask" in neg and "arith.xori" in neg and "arith.constant true" in neg
    assert "linalg.softmax" not in ir and "linalg.transpose" not in ir
    assert import_onnx(onnx_models.handmade("attention-where")) == text  # deterministic


def test_attention_with_an_additive_mask(build_dir, tmp_path):
    text = import_onnx(onnx_models.handmade("attention-add"))
    verifies(build_dir, tmp_path, text)
    assert "sgpu.attention %q, %k, %v mask(%mask : tensor<1x1x16x16xf32>)" in text


def test_near_patterns_fall_back_to_plain_ops(build_dir, tmp_path):
    """Softmax over a non-key axis is no attention: every node emitted as is."""
    mp = onnx_models.handmade("attention-add")
    for n in mp.graph.node:
        if n.op_type == "Softmax":
            n.attribute[0].i = 2
    text = import_onnx(mp)
    verifies(build_dir, tmp_path, text)
    ir = body(text)
    assert "sgpu.attention" not in ir
    assert "linalg.softmax dimension(2)" in ir and ir.count("linalg.batch_matmul") == 2
    assert "(b, n, k)" in ir  # q . k^T still folds the transpose into the matmul


def test_gelu_pattern(build_dir, tmp_path):
    text = import_onnx(onnx_models.handmade("gelu-erf"))
    verifies(build_dir, tmp_path, text)
    ir = body(text)
    assert ir.count("= linalg.generic") == 1 and re.search(r"%gelu[._]\d+ = linalg.generic", ir)


def test_shape_computations_fold(build_dir, tmp_path):
    text = import_onnx(onnx_models.handmade("shape-arith"))
    verifies(build_dir, tmp_path, text)
    ir = body(text)
    assert "tensor.collapse_shape %x [[0], [1, 2]] : tensor<2x4x8xf32> into tensor<2x32xf32>" in ir
    assert "dense<1.000000000e+00> : tensor<2x32xf32>" in ir  # ConstantOfShape + Expand
    assert re.search(r"tensor.extract_slice %add[._]\d+\[0, 0\] \[2, 16\] \[1, 1\]", ir)
    assert "i64" not in ir


def test_dtype_override(build_dir, tmp_path):
    text = import_onnx(model("gated-ffn"), dtype="bf16")
    verifies(build_dir, tmp_path, text)
    assert "func.func @forward(%x: tensor<2x8x64xbf16>, " in text and " -> (tensor<2x8x64xbf16>)" in text
    assert set(params_of(text).values()) == {"tensor<64x256xbf16>", "tensor<256x64xbf16>"}
    assert "xf32>" not in body(text) and body(text).count("x64xbf16>") >= 3


# ------------------------------------------------------------------ sparsity
def test_sparse_linear_relu_compiles_end_to_end(build_dir, tmp_path):
    text = import_onnx(model("sparse-linear-relu"), sparsity={"fc.weight": "2:4"}, dtype="f16",
                       weights="constants")
    assert "tensor<512x256xf16, #sgpu.nm<2:4>>" in text
    out = tmp_path / "art"
    out.mkdir()
    r = run_opt(build_dir, tmp_path, text, "--sgpu-compile=output-dir=%s" % out, "-o", str(tmp_path / "c.mlir"))
    assert r.returncode == 0, r.stderr[:4000]
    summary = (out / "summary.txt").read_text()
    assert re.search(r"kernel sgpu_spmm_\d+: \d+ sparse MMA instructions", summary), summary


def test_sparse_linear_relu_slides_and_fuses(build_dir, tmp_path):
    mp = model("sparse-linear-relu")
    init = [n for n in mp.graph.node if n.op_type == "MatMul"][0].input[1]
    # the initializer's own name works as well as the torch-style weight name
    text = import_onnx(mp, sparsity={init: "2:4"}, dtype="f16", weights="constants")
    r = run_opt(build_dir, tmp_path, text, "--sgpu-slide-sparse", fuse_flag(build_dir))
    assert r.returncode == 0, r.stderr[:4000]
    assert re.search(r"sgpu.spmm %[\w.]+, %[\w.]+ \{activation = #sgpu.activation<relu>\}", r.stdout)


def test_sparse_params_need_the_n_x_k_layout(build_dir, tmp_path):
    # As a param, a weight is bound as stored: a K x N MatMul initializer
    # cannot carry N:M sparsity (it is transposed at run time) ...
    mp = model("sparse-linear-relu")
    init = [n for n in mp.graph.node if n.op_type == "MatMul"][0].input[1]
    with pytest.raises(AnnotationError, match=r"weight '%s' \(annotated as 'fc\.weight'\) is a K x N MatMul "
                                              r"initializer: .* import with weights='constants'" % re.escape(init)):
        import_onnx(mp, sparsity={"fc.weight": "2:4"}, dtype="f16")
    # ... while an N x K one (Gemm transB=1) is the sparse param itself, its
    # pattern checked when bound, not now (the weight here is dense).
    text = import_onnx(model("mlp"), sparsity={"fc1.weight": "6:8"}, dtype="f16")
    assert params_of(text)["fc1.weight"] == "tensor<128x64xf16, #sgpu.nm<6:8>>"
    verifies(build_dir, tmp_path, text)


@pytest.mark.parametrize("weights", ["params", "constants"])
def test_f32_sparse_weight_is_an_import_error(weights):
    with pytest.raises(AnnotationError, match=r"weight 'fc1\.weight' is f32, but structured sparsity runs on "
                                              r"f16/bf16 only: use dtype=f16 or bf16"):
        import_onnx(model("mlp"), sparsity={"fc1.weight": "2:4"}, weights=weights)


def test_weights_option_is_checked():
    with pytest.raises(ImportError_, match=r"weights='blobs': expected 'params' or 'constants'"):
        import_onnx(model("mlp"), weights="blobs")


def test_unknown_annotation_name():
    with pytest.raises(AnnotationError, match=r"'layers\.9\.mlp\.up\.weight'.*neither an initializer"):
        import_onnx(model("mlp"), sparsity={"layers.9.mlp.up.weight": "2:4"})


def test_annotation_on_a_non_linear_initializer():
    with pytest.raises(AnnotationError, match=r"'fc1\.bias'.*not the constant 2-D weight of a linear"):
        import_onnx(model("mlp"), sparsity={"fc1.bias": "2:4"})


def test_dense_weight_annotated_6_8_reports_row_and_group():
    with pytest.raises(AnnotationError, match=r"weight 'fc1\.weight' is not 6:8 sparse: row 0, group 0 "
                                              r"\(columns 0\.\.7\) has 8 nonzeros") as e:
        import_onnx(model("mlp"), sparsity={"fc1.weight": "6:8"}, dtype="f16", weights="constants")
    assert "/fc1/Gemm" in str(e.value)


def test_bad_pattern():
    with pytest.raises(AnnotationError, match="unsupported structured sparsity 3:5"):
        import_onnx(model("mlp"), sparsity={"fc1.weight": "3:5"})


# -------------------------------------------------------------------- errors
def test_unsupported_op_names_op_node_and_outputs(tmp_path):
    with pytest.raises(ImportError_, match=r"unsupported ONNX op 'Conv' in node '/stem/conv/Conv' \(outputs: 'c'\) "
                                          r"of the ONNX model of graph 'g'"):
        import_onnx(onnx_models.handmade("conv"))
    path = tmp_path / "conv.onnx"
    onnx.save(onnx_models.handmade("conv"), str(path))
    with pytest.raises(ImportError_, match=r"in node '/stem/conv/Conv' \(outputs: 'c'\) of '.*conv\.onnx'"):
        import_onnx(path)


def test_other_domains_are_unsupported():
    with pytest.raises(ImportError_, match=r"'FastGelu' of domain 'com.microsoft' in node '/act/FastGelu'"):
        import_onnx(onnx_models.handmade("com-microsoft"))


def test_random_bytes_file(tmp_path):
    path = tmp_path / "noise.onnx"
    path.write_bytes(np.random.default_rng(0).integers(0, 256, 4096, dtype=np.uint8).tobytes())
    with pytest.raises(ImportError_, match=r"noise\.onnx' cannot be read: .*not an ONNX file") as e:
        import_onnx(path)
    assert e.value.__cause__ is None and e.value.__suppress_context__


def test_truncated_file(tmp_path):
    data = model("mlp").SerializeToString()
    path = tmp_path / "cut.onnx"
    path.write_bytes(data[: len(data) * 2 // 3])
    with pytest.raises(ImportError_, match=r"cut\.onnx' cannot be read: .*truncated"):
        import_onnx(str(path))


def test_model_without_graph_and_missing_file(tmp_path):
    with pytest.raises(ImportError_, match="has no graph"):
        import_onnx(onnx.ModelProto(ir_version=8))
    with pytest.raises(ImportError_, match=r"'.*missing\.onnx' does not exist"):
        import_onnx(tmp_path / "missing.onnx")


def test_initializer_with_missing_data():
    mp = model("mlp")
    w = [t for t in mp.graph.initializer if t.name == "fc2.weight"][0]
    w.raw_data = w.raw_data[:100]
    with pytest.raises(ImportError_, match=r"initializer 'fc2\.weight'.*100 bytes of data.*truncated"):
        import_onnx(mp)


def test_undefined_value():
    mp = model("mlp")
    del mp.graph.initializer[:]
    with pytest.raises(ImportError_, match=r"node '/fc1/Gemm' \(Gemm\) uses 'fc1\.weight', which no node"):
        import_onnx(mp)


def test_symbolic_dim_needs_input_shapes(build_dir, tmp_path):
    with pytest.raises(ImportError_, match=r"input 'x' has a symbolic dimension 'batch' \(dim 0\).*input_shapes"):
        import_onnx(onnx_models.handmade("symbolic"))
    text = import_onnx(onnx_models.handmade("symbolic"), input_shapes={"x": (4, 16)})
    assert "%x: tensor<4x16xf32>" in text
    verifies(build_dir, tmp_path, text)
    with pytest.raises(ImportError_, match=r"input_shapes names ids"):
        import_onnx(onnx_models.handmade("symbolic"), input_shapes={"ids": (4, 16)})
    with pytest.raises(ImportError_, match=r"size 3 in dim 1, the model says 16"):
        import_onnx(onnx_models.handmade("symbolic"), input_shapes={"x": (4, 3)})
    for bad in ((-4, 16), (0, 16), (4.5, 16), 4, ("4", 16)):
        with pytest.raises(ImportError_, match=r"input_shapes gives input 'x' the shape .*: sizes must be positive"):
            import_onnx(onnx_models.handmade("symbolic"), input_shapes={"x": bad})


def test_from_a_path_and_the_class(tmp_path):
    path = tmp_path / "m.onnx"
    onnx.save(model("gated-ffn"), str(path))
    a = import_onnx(str(path), name="ffn")
    b = OnnxImporter(model("gated-ffn"), name="ffn").run()
    c = import_onnx(model("gated-ffn").SerializeToString(), name="ffn")
    assert a == b == c and "func.func @ffn(" in a


def test_marker_domain_matches_sparse_opt_markers():
    from sparse_opt.importers import onnx_ops
    from sparse_opt.markers import ONNX_DOMAIN
    assert onnx_ops.ONNX_DOMAIN == ONNX_DOMAIN == onnx_models.SPARSEOPT_DOMAIN


# ------------------------------------------------------------------ numerics
# (test_import_numerics.py runs the torch models at opset 14; these are opset
# 17 exports and the hand-made graphs, through the same CPU reference runner)
@pytest.mark.parametrize("name", ["mlp-3d", "llama", "layer-norm", "gelu-mlp"])
def test_torch_models_compute_what_torch_computes(build_dir, name):
    module, args, _ = onnx_models.torch_model(name)
    with torch_no_grad():
        want = module(*args).numpy()
    mp = model(name, 17)
    (got,) = run_reference(import_onnx(mp), [a.numpy() for a in args], params=initializers(mp))
    np.testing.assert_allclose(got, want, rtol=2e-4, atol=2e-5)
    (got,) = run_reference(import_onnx(mp, weights="constants"), [a.numpy() for a in args])
    np.testing.assert_allclose(got, want, rtol=2e-4, atol=2e-5)


def torch_no_grad():
    import torch
    return torch.no_grad()


def _softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


CAUSAL_KEEP = np.tril(np.ones((16, 16), bool))[None, None]


@pytest.mark.parametrize("variant", ["where", "add", "fallback", "const-where", "causal-where", "causal-add"])
def test_attention_computes_what_numpy_computes(build_dir, tmp_path, variant):
    rng = np.random.default_rng(7)
    q, k, v = (rng.standard_normal((1, 4, 16, 32)).astype(np.float32) for _ in range(3))
    scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(32)
    drop = rng.random((1, 1, 16, 16)) < 0.3
    drop[..., 0] = False  # every row keeps a key
    bias = rng.standard_normal((1, 1, 16, 16)).astype(np.float32)
    kind, constant, inputs, ir = {
        "where": ("where", None, [drop], "xori"),
        "add": ("add", None, [bias], "mask(%mask : tensor<1x1x16x16xf32>)"),
        "fallback": ("add", None, [bias], "linalg.softmax dimension(2)"),
        "const-where": ("where", drop, [], "mask(%mask_keep"),
        "causal-where": ("where", ~CAUSAL_KEEP, [], "{causal, scale = 1.767766983e-01 : f32}"),
        "causal-add": ("add", np.where(CAUSAL_KEEP, 0, -np.inf).astype(np.float32), [],
                       "{causal, scale = 1.767766983e-01 : f32}"),
    }[variant]
    mp = onnx_models.attention(kind, constant=constant)
    axis = -1
    if variant == "fallback":
        next(n for n in mp.graph.node if n.op_type == "Softmax").attribute[0].i = 2
        axis = 2
    if kind == "where":
        mask = drop if constant is None else constant
        want = _softmax(np.where(mask, -np.inf, scores), axis) @ v
    else:
        want = _softmax(scores + (bias if constant is None else constant), axis) @ v
    text = import_onnx(mp)
    verifies(build_dir, tmp_path, text)
    assert ir in body(text)
    assert ("sgpu.attention" in text) == (variant != "fallback")
    if variant == "const-where":  # the dropped positions, negated at import time
        lit = re.search(r"%mask_keep[._]\d+ = arith.constant dense<(.*?)> : tensor<1x1x16x16xi1>", text).group(1)
        keep = np.array(re.findall(r"true|false", lit)) == "true"
        np.testing.assert_array_equal(keep.reshape(drop.shape), ~drop)
    (got,) = run_reference(text, [q, k, v] + inputs)
    np.testing.assert_allclose(got, want, rtol=2e-4, atol=2e-5)


def test_handmade_graphs_compute_what_numpy_computes(build_dir):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 4, 8)).astype(np.float32)
    (got,) = run_reference(import_onnx(onnx_models.handmade("shape-arith")), [x])
    np.testing.assert_allclose(got, (x.reshape(2, 32) + 1)[:, :16], rtol=1e-5, atol=1e-6)

    x = rng.standard_normal((4, 32)).astype(np.float32)
    mp = onnx_models.handmade("gemm-relu")
    w, b = (onnx.numpy_helper.to_array(t) for t in mp.graph.initializer)
    (got,) = run_reference(import_onnx(mp), [x], params=initializers(mp))
    np.testing.assert_allclose(got, np.maximum(x @ w.T + b, 0), rtol=1e-5, atol=1e-5)
    (got,) = run_reference(import_onnx(mp, weights="constants"), [x])
    np.testing.assert_allclose(got, np.maximum(x @ w.T + b, 0), rtol=1e-5, atol=1e-5)


def test_gelu_computes_what_numpy_computes(build_dir):
    x = np.random.default_rng(6).standard_normal((4, 32)).astype(np.float32)
    erf = np.vectorize(math.erf)
    (got,) = run_reference(import_onnx(onnx_models.handmade("gelu-erf")), [x])
    np.testing.assert_allclose(got, x * 0.5 * (1 + erf(x / math.sqrt(2))), rtol=1e-5, atol=1e-6)


# ------------------------------------------------------------ op by op
N = onnx_models.node
C = onnx_models.const
R = np.random.default_rng(11)


def f32(*shape, positive=False):
    a = R.standard_normal(shape).astype(np.float32)
    return np.abs(a) + 0.5 if positive else a


def i64(a):
    return np.asarray(a, dtype=np.int64)


def _rms(x, w, eps):
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * w


def _rope(x, cos, sin):
    h = x.shape[-1] // 2
    return x * cos + np.concatenate([-x[..., h:], x[..., :h]], axis=-1) * sin


def _rope_nodes(commuted=False, swapped=False):
    """torch.onnx.export's rotary embedding of x [1, 2, 4, 8]: Slice the
    halves of the last axis, Neg the upper, Concat, then the two Muls and
    the Add (`commuted`: every operand order flipped; `swapped`:
    cat(x[..., D/2:], -x[..., :D/2]), which is no rotation)."""
    hi, lo = ("lo", "hi") if swapped else ("hi", "lo")
    cat = ["n", "b"] if not swapped else ["b", "n"]
    mul = (lambda a, b, out: N("Mul", [b, a], out)) if commuted else (lambda a, b, out: N("Mul", [a, b], out))
    return [N("Slice", ["x", "s_" + hi, "e_" + hi, "axis"], "a"), N("Neg", ["a"], "n"),
            N("Slice", ["x", "s_" + lo, "e_" + lo, "axis"], "b"), N("Concat", cat, "r", axis=-1),
            mul("x", "cos", "xc"), mul("r", "sin", "rs"),
            N("Add", ["rs", "xc"] if commuted else ["xc", "rs"], "y")]


X3, Y4, P3 = f32(2, 3, 4), f32(4), f32(2, 3, 4, positive=True)
A4, B4, B3 = f32(2, 3, 4, 5), f32(2, 3, 5, 6), f32(3, 6, 5)
M56, M53, W54 = f32(5, 6), f32(5, 3), f32(5, 4)
GW, GC, GW2, GC2 = f32(6, 5), f32(6), f32(6, 2), f32(3, 2)
X48, SQ = f32(4, 8), f32(8, 8) / 3
Q4, K4, V4 = f32(1, 2, 8, 16), f32(1, 2, 8, 16), f32(1, 2, 8, 16)
TABLE = f32(10, 4)
IDS = i64([[1, 9, 3], [0, 0, 7]])
NORM_W = f32(4, positive=True)
ROPE_X, ROPE_COS, ROPE_SIN = f32(1, 2, 4, 8), f32(1, 1, 4, 8), f32(1, 1, 4, 8)
ROPE_TABLES = {"cos": ROPE_COS, "sin": ROPE_SIN}
ROPE_SLICES = {"s_hi": i64([4]), "e_hi": i64([9223372036854775807]), "s_lo": i64([0]), "e_lo": i64([4]),
               "axis": i64([3])}
FLOAT = onnx.TensorProto.FLOAT
CASES = {
    # name: (nodes, runtime inputs, initializers, expected, IR that must appear)
    "add-broadcast": ([N("Add", ["x", "b"], "y")], {"x": X3, "b": Y4}, {}, X3 + Y4, "arith.addf"),
    "sub-mul-div": ([C("c", 1.5), N("Sub", ["x", "c"], "s"), N("Mul", ["s", "x"], "m"), N("Div", ["m", "p"], "y")],
                    {"x": X3, "p": P3}, {}, (X3 - 1.5) * X3 / P3, "arith.divf"),
    "pow-sqrt-reciprocal": ([C("e", 3.0), N("Pow", ["p", "e"], "q"), N("Sqrt", ["q"], "r"),
                             N("Reciprocal", ["r"], "y")], {"p": P3}, {}, 1 / np.sqrt(P3 ** 3), "math.powf"),
    "neg-exp-tanh-sigmoid": ([N("Neg", ["x"], "n"), N("Exp", ["n"], "e"), N("Tanh", ["e"], "t"),
                              N("Sigmoid", ["x"], "s"), N("Add", ["t", "s"], "y")], {"x": X3}, {},
                             np.tanh(np.exp(-X3)) + 1 / (1 + np.exp(-X3)), "math.tanh"),
    "relu-softmax": ([N("Relu", ["x"], "r"), N("Softmax", ["r"], "y", axis=1)], {"x": X3}, {},
                     _softmax(np.maximum(X3, 0), 1), "linalg.softmax dimension(1)"),
    "where-compare-not-cast": ([C("z", 0.0), N("Greater", ["x", "z"], "g"), N("Where", ["g", "x", "z"], "w"),
                                N("Less", ["x", "p"], "l"), N("Not", ["l"], "nl"), N("Cast", ["nl"], "lf", to=FLOAT),
                                N("Add", ["w", "lf"], "y")], {"x": X3, "p": P3}, {},
                               np.where(X3 > 0, X3, 0) + (X3 >= P3), "arith.xori"),
    "cast-int": ([C("four", 4.0), N("Mul", ["x", "four"], "m"), N("Cast", ["m"], "i", to=onnx.TensorProto.INT32),
                  N("Cast", ["i"], "y", to=FLOAT)], {"x": X3}, {}, np.trunc(X3 * 4), "arith.fptosi"),
    "concat-slice": ([N("Concat", ["x", "x"], "c", axis=2),
                      N("Slice", ["c", "starts", "ends", "axes", "steps"], "y")], {"x": X3},
                     {"starts": i64([1, 1]), "ends": i64([2, 100]), "axes": i64([0, 2]), "steps": i64([1, 3])},
                     np.concatenate([X3, X3], 2)[1:2, :, 1::3], "tensor.concat dim(2)"),
    "split-sizes": ([N("Split", ["x", "sizes"], ["a", "b", "c"], axis=2),
                     N("Concat", ["c", "a", "b"], "y", axis=2)], {"x": X3}, {"sizes": i64([1, 2, 1])},
                    np.concatenate([X3[..., 3:], X3[..., :1], X3[..., 1:3]], 2), "tensor.extract_slice"),
    "split-equal": ([N("Split", ["x"], ["a", "b"], axis=2), N("Sub", ["a", "b"], "y")], {"x": X3}, {},
                    X3[..., :2] - X3[..., 2:], "arith.subf"),
    "reshape-flatten-transpose": ([N("Reshape", ["x", "shape"], "r"), N("Transpose", ["r"], "t", perm=[1, 0]),
                                   N("Flatten", ["a"], "f", axis=2), N("Transpose", ["f"], "ft"),
                                   N("Reshape", ["ft", "back"], "fb"), N("Identity", ["t"], "y")],
                                  {"x": X3, "a": A4}, {"shape": i64([0, -1]), "back": i64([-1])},
                                  X3.reshape(2, 12).T, "linalg.transpose"),
    "unsqueeze-squeeze-expand": ([N("Unsqueeze", ["b", "ax01"], "u"), N("Expand", ["u", "to"], "e"),
                                  N("Unsqueeze", ["b", "ax0"], "e1"), N("Squeeze", ["e1", "ax0"], "s"),
                                  N("Add", ["e", "s"], "y")], {"b": Y4},
                                 {"ax01": i64([0, 1]), "ax0": i64([0]), "to": i64([2, 3, 4])},
                                 np.broadcast_to(2 * Y4, (2, 3, 4)), "tensor.expand_shape"),
    "gather-embedding": ([N("Gather", ["table", "ids"], "y")], {"ids": IDS}, {"table": TABLE}, TABLE[IDS],
                         "sgpu.embedding %table, %ids : tensor<10x4xf32>, tensor<2x3xi64> -> tensor<2x3x4xf32>"),
    "gather-constant-index": ([C("idx", [4, 0, 1], np.int64), N("Gather", ["m", "idx"], "g", axis=0),
                               C("one", 1, np.int64), N("Gather", ["g", "one"], "y", axis=1)],
                              {"m": M56}, {}, M56[[4, 0, 1]][:, 1], "tensor.concat"),
    "reduce": ([N("ReduceMean", ["x"], "a", axes=[1], keepdims=1), N("ReduceSum", ["x", "ax"], "b", keepdims=0),
                N("ReduceMax", ["x"], "c", axes=[-1], keepdims=1), N("Add", ["a", "c"], "ac"),
                N("Unsqueeze", ["b", "ax"], "bu"), N("Add", ["ac", "bu"], "y")], {"x": X3}, {"ax": i64([2])},
               X3.mean(1, keepdims=True) + X3.max(-1, keepdims=True) + X3.sum(2, keepdims=True), "linalg.reduce"),
    "layer-norm-op": ([N("LayerNormalization", ["x", "w", "bias"], "y", epsilon=1e-5)], {"x": X3},
                      {"w": NORM_W, "bias": Y4},
                      (X3 - X3.mean(-1, keepdims=True)) / np.sqrt(X3.var(-1, keepdims=True) + 1e-5) * NORM_W + Y4,
                      "sgpu.layer_norm"),
    "dropout-identity": ([N("Dropout", ["x"], "d"), N("Identity", ["d"], "y")], {"x": X3}, {}, X3, None),
    "batched-matmul": ([N("MatMul", ["a", "b"], "y")], {"a": A4, "b": B4}, {}, A4 @ B4, "linalg.batch_matmul"),
    "matmul-broadcast-transposed": ([N("Transpose", ["b3"], "bt", perm=[0, 2, 1]), N("MatMul", ["a", "bt"], "y")],
                                    {"a": A4, "b3": B3}, {}, A4 @ B3.transpose(0, 2, 1), "(b, n, k)"),
    "matmul-constant-linear": ([N("MatMul", ["a", "w"], "y")], {"a": A4}, {"w": W54}, A4 @ W54,
                               "tensor<4x5xf32>"),
    # a square weight used directly and through a shared Transpose: one param
    # (two constants with weights="constants": see test_op_with_constants)
    "shared-transposed-weight": ([N("Transpose", ["w"], "wt", perm=[1, 0]), N("MatMul", ["x", "wt"], "a"),
                                  N("MatMul", ["a", "wt"], "b"), N("MatMul", ["b", "w"], "y")],
                                 {"x": X48}, {"w": SQ}, X48 @ SQ.T @ SQ.T @ SQ, '{sgpu.param = "w"}'),
    # scaled_dot_product_attention's export: sqrt(scale) on q and on k^T, no Div
    "attention-scaled-q-and-k": ([C("c", 0.42), N("Mul", ["q", "c"], "qs"), N("Transpose", ["k"], "kt", perm=[0, 1, 3, 2]),
                                  N("Mul", ["kt", "c"], "kts"), N("MatMul", ["qs", "kts"], "s"),
                                  N("Softmax", ["s"], "p", axis=-1), N("MatMul", ["p", "v"], "y")],
                                 {"q": Q4, "k": K4, "v": V4}, {},
                                 _softmax(Q4 @ K4.transpose(0, 1, 3, 2) * np.float32(0.42) ** 2, -1) @ V4,
                                 "sgpu.attention %q, %k, %v {scale = 1.76"),
    "gemm-variants": ([N("Gemm", ["m", "w", "c"], "g", transA=1, transB=1, alpha=0.5, beta=2.0),
                       N("Gemm", ["g", "w2", "c2"], "y")], {"m": M53}, {"w": GW, "c": GC, "w2": GW2, "c2": GC2},
                      (0.5 * M53.T @ GW.T + 2.0 * GC) @ GW2 + GC2, "tensor<2x6xf32>"),
    "min-max-clip": ([C("lo", -0.5), C("hi", 0.5), N("Clip", ["x", "lo", "hi"], "c"), N("Max", ["c", "p"], "m"),
                      N("Min", ["m", "x"], "y")], {"x": X3, "p": P3}, {},
                     np.minimum(np.maximum(np.clip(X3, -0.5, 0.5), P3), X3), "arith.minimumf"),
    "rms-norm-reciprocal": ([N("Mul", ["x", "x"], "sq"), N("ReduceMean", ["sq"], "ms", axes=[-1]),
                             C("eps", 1e-5), N("Add", ["eps", "ms"], "a"), N("Sqrt", ["a"], "s"),
                             N("Reciprocal", ["s"], "r"), N("Mul", ["r", "x"], "n"), N("Mul", ["w", "n"], "y")],
                            {"x": X3}, {"w": NORM_W}, _rms(X3, NORM_W, 1e-5), "sgpu.rms_norm"),
    "rms-norm-div-unweighted": ([C("two", 2.0), N("Pow", ["x", "two"], "sq"),
                                 N("ReduceMean", ["sq"], "ms", axes=[2], keepdims=1), C("eps", 1e-6),
                                 N("Add", ["ms", "eps"], "a"), N("Sqrt", ["a"], "s"), N("Div", ["x", "s"], "y")],
                                {"x": X3}, {}, _rms(X3, 1.0, 1e-6), "sgpu.rms_norm"),
    # rotary embeddings: x * cos + rotate_half(x) * sin in the exported form,
    # the operands of each Mul and of the Add in either order, tables of a
    # lower rank; swapped halves are no rotation (plain ops)
    "rope": (_rope_nodes(), {"x": ROPE_X}, dict(ROPE_TABLES, **ROPE_SLICES), _rope(ROPE_X, ROPE_COS, ROPE_SIN),
             "sgpu.rope %x, %cos, %sin : tensor<1x2x4x8xf32>, tensor<1x1x4x8xf32>, tensor<1x1x4x8xf32>"),
    "rope-commuted": (_rope_nodes(commuted=True), {"x": ROPE_X}, dict(ROPE_TABLES, **ROPE_SLICES),
                      _rope(ROPE_X, ROPE_COS, ROPE_SIN), "sgpu.rope %x, %cos, %sin"),
    "rope-2d-tables": (_rope_nodes(), {"x": ROPE_X}, dict({"cos": ROPE_COS[0, 0], "sin": ROPE_SIN[0, 0]},
                                                          **ROPE_SLICES),
                       _rope(ROPE_X, ROPE_COS, ROPE_SIN), "tensor<1x1x4x8xf32>, tensor<1x1x4x8xf32> ->"),
    "rope-swapped-halves": (_rope_nodes(swapped=True), {"x": ROPE_X}, dict(ROPE_TABLES, **ROPE_SLICES),
                            ROPE_X * ROPE_COS + np.concatenate([ROPE_X[..., 4:], -ROPE_X[..., :4]], -1) * ROPE_SIN,
                            "tensor.concat dim(3)"),
    "rms-norm-eps-is-an-input": ([N("Mul", ["x", "x"], "sq"), N("ReduceMean", ["sq"], "ms", axes=[-1]),
                                  N("Add", ["ms", "e"], "a"), N("Sqrt", ["a"], "s"), N("Div", ["x", "s"], "y")],
                                 {"x": X3, "e": np.full((1,), 1e-5, np.float32)}, {}, _rms(X3, 1.0, 1e-5),
                                 "linalg.reduce"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_op(build_dir, tmp_path, name):
    nodes, inputs, inits, want, needle = CASES[name]
    mp = onnx_models.op_model(nodes, inputs, inits, outputs=[("y", list(np.shape(want)))])
    text = import_onnx(mp)
    verifies(build_dir, tmp_path, text)
    if needle:
        assert needle in body(text)
    if name == "rms-norm-eps-is-an-input":  # a runtime eps: no block, plain ops
        assert "sgpu.rms_norm" not in text
    # The float initializers are params; the integer ones (shapes, axes) fold.
    assert set(params_of(text)) == {k for k, v in inits.items() if np.asarray(v).dtype.kind == "f"}
    (got,) = run_reference(text, list(inputs.values()), params=inits)
    np.testing.assert_allclose(got, want, rtol=2e-4, atol=2e-5)


@pytest.mark.parametrize("name", ["shared-transposed-weight", "gemm-variants", "matmul-constant-linear",
                                  "gather-embedding", "layer-norm-op"])
def test_op_with_constants(build_dir, tmp_path, name):
    nodes, inputs, inits, want, _ = CASES[name]
    mp = onnx_models.op_model(nodes, inputs, inits, outputs=[("y", list(np.shape(want)))])
    text = import_onnx(mp, weights="constants")
    verifies(build_dir, tmp_path, text)
    assert "sgpu.param" not in text
    if name == "shared-transposed-weight":  # the weight and its folded transpose
        assert "dense_resource<w_2>" in text
    (got,) = run_reference(text, list(inputs.values()))
    np.testing.assert_allclose(got, want, rtol=2e-4, atol=2e-5)


def test_standalone_erf_and_gelu_op(build_dir, tmp_path):
    x = {"x": X3}
    text = import_onnx(onnx_models.op_model([N("Erf", ["x"], "y")], x, outputs=[("y", [2, 3, 4])]))
    verifies(build_dir, tmp_path, text)
    assert "math.erf" in text
    text = import_onnx(onnx_models.op_model([N("Gelu", ["x"], "y", approximate="tanh")], x,
                                            outputs=[("y", [2, 3, 4])], opset=20))
    assert re.search(r"%gelu_tanh[._]\d+ = linalg.generic", text)
