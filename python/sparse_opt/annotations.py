"""Model-level annotations: structured sparsity of weights, ladder-residual
training and TwELL options.

Weight sparsity is given to the importers as `sparsity={"<parameter>":
"n:m"}`; they check each weight (the first violating row and group is
reported) and put `#sgpu.nm<n:m>` on its type. The model-level options become
module attributes that the `sgpu` dialect verifies:

- `sgpu.ladder_layers = K`: the model was trained (or adapted) in ladder
  form; `sgpu-ladder-residual` may rewrite its last K layers. This changes
  what the model computes, so it is only ever set on request.
- `sgpu.twell = #sgpu.twell<tile = T, compression = C>`: TwELL packing
  options for `sgpu-sparsify-ffn`.
"""
import re
from dataclasses import dataclass
from typing import Dict, Optional

from .importers.emitter import AnnotationError, parse_pattern


@dataclass
class Annotations:
    sparsity: Optional[Dict[str, str]] = None
    ladder_layers: Optional[int] = None
    twell_tile: Optional[int] = None
    twell_compression: Optional[int] = None

    def validate(self):
        for name, pattern in (self.sparsity or {}).items():
            try:
                parse_pattern(pattern)
            except AnnotationError as e:
                raise AnnotationError("weight '%s': %s" % (name, e)) from None
        if self.ladder_layers is not None and (not isinstance(self.ladder_layers, int) or self.ladder_layers <= 0):
            raise AnnotationError("ladder layers must be a positive integer, got %r" % (self.ladder_layers,))
        if (self.twell_tile is None) != (self.twell_compression is None):
            raise AnnotationError("TwELL options need both a tile width and a compression factor")
        if self.twell_tile is not None:
            t, c = self.twell_tile, self.twell_compression
            if not isinstance(t, int) or t < 16 or t > 65536 or t & (t - 1):
                raise AnnotationError("TwELL tile width must be a power of two in [16, 65536], got %r" % (t,))
            if c not in (2, 4, 8):
                raise AnnotationError("TwELL compression factor must be 2, 4 or 8, got %r" % (c,))
        return self

    def module_attributes(self) -> Dict[str, str]:
        attrs = {}
        if self.ladder_layers is not None:
            attrs["sgpu.ladder_layers"] = "%d : i64" % self.ladder_layers
        if self.twell_tile is not None:
            attrs["sgpu.twell"] = "#sgpu.twell<tile = %d, compression = %d>" % (self.twell_tile, self.twell_compression)
        return attrs


def parse_sparsity_args(items) -> Dict[str, str]:
    """['fc1.weight=2:4', ...] -> {'fc1.weight': '2:4'} (command-line form)."""
    out = {}
    for item in items or []:
        name, sep, pattern = item.partition("=")
        if not sep or not name:
            raise AnnotationError("sparsity annotation %r is not of the form <weight>=<n:m>" % item)
        parse_pattern(pattern)
        out[name] = pattern
    return out


_MODULE_RE = re.compile(r"^module(?: attributes \{(.*?)\})? \{", re.M)


def add_module_attributes(mlir: str, attrs: Dict[str, str]) -> str:
    """Adds (or replaces) attributes on the top-level `module` of imported IR."""
    if not attrs:
        return mlir
    m = _MODULE_RE.search(mlir)
    if not m:
        return _wrap_implicit_module(mlir, attrs)
    existing = {}
    if m.group(1):
        for part in re.split(r",\s*(?=[\w.]+\s*=)", m.group(1)):
            key, _, value = part.partition("=")
            existing[key.strip()] = value.strip()
    existing.update(attrs)
    text = "module attributes {%s} {" % ", ".join("%s = %s" % kv for kv in sorted(existing.items()))
    return mlir[:m.start()] + text + mlir[m.end():]


def _wrap_implicit_module(mlir: str, attrs: Dict[str, str]) -> str:
    """IR without an explicit `module`: wraps its operations (not the alias
    definitions in front, nor a trailing resource block) in an annotated one."""
    body, sep, resources = mlir.partition("\n{-#")
    lines = body.split("\n")
    first = next((i for i, l in enumerate(lines)
                  if l.strip() and not l.lstrip().startswith(("#", "!", "//"))), None)
    if first is None:
        raise AnnotationError("the IR has no operations to annotate")
    head = "module attributes {%s} {" % ", ".join("%s = %s" % kv for kv in sorted(attrs.items()))
    out = lines[:first] + [head] + lines[first:] + ["}"]
    return "\n".join(out) + (sep + resources if sep else "\n")
