#!/usr/bin/env python3
"""Prints the MLIR that the ONNX importer makes of a test model (lit driver).

    onnx_models.py <model-name> [--opset N] [--dtype f16] [--sparsity name=pattern ...]
                   [--input-shape name=1x16 ...] [--file raw|truncated] [--weights params|constants]

Model names are those of test/python/onnx_models.py. `--file` writes the
model to a temporary .onnx file first (`truncated`: its first half, `raw`:
bytes that are no ONNX model at all) and imports that path. An import error
prints `error: <message>` and exits 1.
"""
import argparse
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
# This script shares its name with test/python/onnx_models.py: import that one.
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != HERE]
sys.path[:0] = [os.path.join(ROOT, "python"), os.path.join(ROOT, "test", "python")]

import onnx_models  # noqa: E402
from sparse_opt.importers.emitter import ImportError_  # noqa: E402
from sparse_opt.importers.onnx_importer import import_onnx  # noqa: E402


def pairs(items, what):
    out = {}
    for item in items or ():
        key, sep, value = item.rpartition("=")
        if not sep or not key:
            sys.exit("error: %s wants name=value, got %r" % (what, item))
        out[key] = value
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model", choices=onnx_models.NAMES)
    ap.add_argument("--opset", type=int, default=17)
    ap.add_argument("--dtype")
    ap.add_argument("--sparsity", action="append")
    ap.add_argument("--input-shape", action="append")
    ap.add_argument("--file", choices=("model", "truncated", "raw"))
    ap.add_argument("--weights", default="params")
    a = ap.parse_args()
    model = onnx_models.build(a.model, a.opset)
    shapes = {k: tuple(int(d) for d in v.split("x")) for k, v in pairs(a.input_shape, "--input-shape").items()}
    kwargs = dict(sparsity=pairs(a.sparsity, "--sparsity") or None, input_shapes=shapes or None, dtype=a.dtype,
                  weights=a.weights)
    try:
        if a.file:
            data = model.SerializeToString()
            data = {"model": data, "truncated": data[:len(data) // 2],
                    "raw": b"\x0fnot an onnx model\xff" * 16}[a.file]
            with tempfile.TemporaryDirectory() as tmp:
                path = os.path.join(tmp, "%s.onnx" % a.model)
                with open(path, "wb") as f:
                    f.write(data)
                text = import_onnx(path, **kwargs)
        else:
            text = import_onnx(model, **kwargs)
    except ImportError_ as err:
        print("error: %s: %s" % (type(err).__name__, err), file=sys.stderr)
        return 1
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
