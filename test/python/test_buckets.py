"""Token buckets (sparse_opt.buckets): the bucket choice, the compiled
bucketed artifact and its manifest checks. Runs without a GPU; the GPU run
of a bucketed program is in test_gpu_collectives.py."""
import json

import pytest

from sparse_opt import buckets
from sparse_opt.artifact import ArtifactError

LINEAR = """
func.func @f(%x: tensor<{m}x64xbf16>, %w: tensor<32x64xbf16>) -> tensor<{m}x32xbf16> {{
  %y = sgpu.matmul %x, %w {{activation = #sgpu.activation<relu>}} : tensor<{m}x64xbf16>, tensor<32x64xbf16> -> tensor<{m}x32xbf16>
  return %y : tensor<{m}x32xbf16>
}}
"""


def test_choose_bucket():
    tokens = [1, 4, 16, 64]
    assert [buckets.choose_bucket(tokens, m) for m in (1, 2, 4, 5, 16, 17, 64)] == \
        [1, 4, 4, 16, 16, 64, 64]
    with pytest.raises(ValueError, match="65 tokens exceed the largest bucket \\(64"):
        buckets.choose_bucket(tokens, 65)
    with pytest.raises(ValueError, match="at least one token"):
        buckets.choose_bucket(tokens, 0)


def test_compile_buckets_writes_one_program_per_bucket(tmp_path):
    assert buckets.compile_buckets(lambda m: LINEAR.format(m=m), [16, 4, 4], tmp_path) == [4, 16]
    manifest = json.loads((tmp_path / "buckets.json").read_text())
    assert manifest == {"tokens": [4, 16], "programs": {"4": "m4", "16": "m16"},
                        "token_inputs": [0], "token_outputs": [0]}
    for m in (4, 16):
        text = (tmp_path / ("m%d" % m) / "program.txt").read_text()
        assert "gemm m=%d n=32 k=64 in=bf16 out=bf16" % m in text
    assert buckets.is_bucketed(tmp_path)
    assert buckets.read_manifest(tmp_path) == ([4, 16], {4: "m4", 16: "m16"}, [0], [0])


# A result whose trailing size also follows the token count.
SQUARE = """
func.func @f(%x: tensor<{m}x64xbf16>, %w: tensor<{m}x64xbf16>) -> tensor<{m}x{m}xbf16> {{
  %y = sgpu.matmul %x, %w : tensor<{m}x64xbf16>, tensor<{m}x64xbf16> -> tensor<{m}x{m}xbf16>
  return %y : tensor<{m}x{m}xbf16>
}}
"""


def test_only_the_leading_size_may_follow_the_tokens(tmp_path):
    with pytest.raises(ArtifactError, match="result 0 changes between buckets in another way"):
        buckets.compile_buckets(lambda m: SQUARE.format(m=m), [4, 8], tmp_path)


def test_buckets_need_positive_token_counts(tmp_path):
    with pytest.raises(ValueError, match="positive token counts"):
        buckets.compile_buckets(lambda m: "", [0, 4], tmp_path)


@pytest.mark.parametrize("manifest, why", [
    ("{", "Expecting"),
    ('{"tokens": [4, 1], "programs": {"4": "a", "1": "b"}, "token_inputs": [0], '
     '"token_outputs": [0]}', "sorted and unique"),
    ('{"tokens": [4], "programs": {"8": "a"}, "token_inputs": [0], "token_outputs": []}',
     "one program each"),
    ('{"tokens": [4], "programs": {"4": "a"}, "token_outputs": []}', "token_inputs"),
])
def test_malformed_manifest(tmp_path, manifest, why):
    (tmp_path / "buckets.json").write_text(manifest)
    with pytest.raises(ArtifactError, match=why):
        buckets.read_manifest(tmp_path)
