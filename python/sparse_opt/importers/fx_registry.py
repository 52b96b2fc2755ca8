"""The torch.fx importer's registry: what each traced form of an op is
called, and what emits each kind of call.

An FX node reaches the importer as a torch callable (`torch.add`,
`operator.add`, `F.linear`), a Tensor method (`x.add`), or an ATen overload
in a `torch.export` graph (`aten.add.Tensor`). Each form is registered here
under a *kind* ("add", "linear", ...) with the names its arguments take,
and each kind has one handler that emits it, whatever form it came in:

- `FUNCTIONS` and `METHODS` (filled by fx_forms.py): callable or method name
  -> (kind, signature);
- `ATEN` (filled by fx_aten.py): "aten::<op>.<overload>" -> (kind, convert
  the schema's bound arguments to the kind's, info);
- `HANDLERS` (filled by fx_ops.py and fx_cache.py): kind -> handler(ctx,
  call) returning the emitted value.

Nothing here imports the modules that fill it, so they can all read it.
"""
from __future__ import annotations

from typing import Callable, Optional

FUNCTIONS: dict = {}  # callable -> (kind, signature)
METHODS: dict = {}    # method name -> (kind, signature)
ATEN: dict = {}       # "aten::op.overload" -> (kind, convert, info)
HANDLERS: dict = {}   # kind -> handler(ctx, call)


def register_forms(kind, sig, fns=(), methods=(), method_sig=None):
    """Registers torch callables `fns` (None entries, absent from this
    torch, are skipped) and Tensor methods `methods` as `kind`, their
    arguments bound by `sig` (`method_sig` for the methods when it
    differs)."""
    for f in fns:
        if f is not None:
            FUNCTIONS[f] = (kind, sig)
    for m in methods:
        METHODS[m] = (kind, method_sig or sig)


def register_aten(keys: str, kind, convert=None, **info):
    """Maps "op:overload,overload op ..." ("default" when none is named) to
    `kind` (None: the op's name); `convert` turns the schema's bound
    arguments into the kind's. `info`: results=N for an op returning N
    tensors (the first is computed), bitwise=True (bitwise_not)."""
    for k in keys.split():
        name, _, overloads = k.partition(":")
        for ov in (overloads.split(",") if overloads else ["default"]):
            ATEN["aten::%s.%s" % (name, ov)] = (kind, convert, info)


def register_handlers(table: dict):
    """Adds the handlers of `table` (kind -> handler); a kind has one."""
    twice = set(table) & set(HANDLERS)
    if twice:
        raise ValueError("handlers registered twice: %s" % ", ".join(sorted(twice)))
    HANDLERS.update(table)


def handler(kind: str) -> Optional[Callable]:
    """The handler of `kind`, or None when no module registered one."""
    return HANDLERS.get(kind)
