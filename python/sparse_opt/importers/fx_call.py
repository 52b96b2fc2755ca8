"""The torch.fx importer's record of one call: what an FX node computes
(`Call`: a kind and its arguments bound to the parameter names of one
signature per kind), the parameters it names (`ParamRef`) and the results
the importer does not compute (`NoValue`). fx_forms classifies FX calls and
fx_aten ATen calls into it; the handlers and the pattern matchers read it.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import torch.nn as nn


@dataclass(frozen=True)
class ParamRef:
    """A parameter or buffer of the model by qualified name (a module's weight)."""
    name: str


@dataclass
class Call:
    kind: str
    args: dict
    module: Optional[nn.Module] = None
    extra: dict = field(default_factory=dict)


class NoValue:
    """A result of a multi-result ATen op that the importer does not compute
    (native_layer_norm's mean and rstd, an attention's logsumexp, ...)."""

    def __init__(self, what):
        self.what = what
