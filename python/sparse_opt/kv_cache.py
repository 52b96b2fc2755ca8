"""A static KV cache added to a cache-less causal decoder.

A plain `forward(ids) -> logits` model (full causal attention through
`F.scaled_dot_product_attention(q, k, v, is_causal=True)`, token positions
from `torch.arange(seq_len)`) recomputes every key at every step.
`add_kv_cache(model, max_batch, capacity)` wraps it into the form the
decoders take, `forward(ids, input_pos)` with one cache pair per attention
call, without touching the model's code:

- each causal attention call (in call order) writes its keys and values at
  `input_pos` into its own cache buffers (`cache_write`); in the "decode"
  mode it then attends over the cache (`cached_attention`), in "prefill"
  (sequences starting at position 0) over its own new keys, as the model
  wrote it;
- `torch.arange(seq_len)` (or `arange(0, seq_len)`) inside the model returns
  `input_pos`, so RoPE tables and position embeddings see the absolute
  positions of the new tokens.

`input_pos` is one vector of S positions for the whole batch (gpt-fast's
form): the sequences of a batch have equal lengths. Caches hold the heads
the attention call receives: a model that repeats its key/value heads
before attention (`repeat_kv`) caches the repeated heads; one that passes
`enable_gqa=True` caches the key/value heads only.

What cannot be seen from the calls is refused instead of guessed: an
attention that is not causal or has a mask, a model with no attention call
or no `torch.arange(seq_len)` (positions sliced from a table as `[:S]`
would stay 0..S-1 in a decode step), and, where the model has weights, a
check that a prefill followed by one decode step gives the logits of the
full forward pass (`check_cache`, run by `add_kv_cache` on a small cache of its own unless
`check=False`).
"""
import contextlib
import copy
import itertools

import torch
import torch.fx
import torch.nn.functional as F

from .markers import cache_write, cached_attention


class CacheError(ValueError):
    """A model that the cache cannot be added to, with the reason."""


# torch's fused attention (torch 2.0+); without it a prefill attends over
# the cache it has just written (the same result).
_TORCH_SDPA = getattr(torch._C._nn, "scaled_dot_product_attention", None)
_arange = torch.arange
_MISSING = object()


def _static(x):
    """A Python value for `x`: a proxy of the importer's tracer whose value
    the example inputs fix (`ids.shape[1]` while tracing) gives that value."""
    if isinstance(x, torch.fx.Proxy) and hasattr(x.tracer, "value"):
        return x.tracer.value(x.node)
    return x


def _is_seq_arange(args, kwargs, seq):
    """True for torch.arange(seq) and torch.arange(0, seq) (step 1)."""
    if _static(kwargs.get("step", 1)) != 1 or "end" in kwargs or "start" in kwargs:
        return False
    args = [_static(a) for a in args]
    if not all(isinstance(a, int) and not isinstance(a, bool) for a in args):
        return False
    return list(args) in ([seq], [0, seq], [0, seq, 1])


@contextlib.contextmanager
def _patched(sdpa, arange):
    """F.scaled_dot_product_attention and torch.arange replaced for the
    duration of one forward call (the model looks them up when it calls)."""
    saved = getattr(F, "scaled_dot_product_attention", _MISSING), torch.arange
    F.scaled_dot_product_attention, torch.arange = sdpa, arange
    try:
        yield
    finally:
        if saved[0] is _MISSING:
            del F.scaled_dot_product_attention
        else:
            F.scaled_dot_product_attention = saved[0]
        torch.arange = saved[1]


def _check_attention(attn_mask, dropout_p, is_causal):
    if attn_mask is not None or not is_causal:
        raise CacheError("add_kv_cache needs causal attention without a mask "
                         "(F.scaled_dot_product_attention(q, k, v, is_causal=True)); this call has %s"
                         % ("a mask" if attn_mask is not None else "is_causal=False"))
    if dropout_p:
        raise CacheError("add_kv_cache: attention with dropout (p=%s); put the model in eval mode" % dropout_p)


def _first_param(model):
    return next(iter(model.parameters()), None)


def _discover(model):
    """(heads, head dim, dtype) of the keys of each causal attention call of
    one forward pass over one token, and the vocabulary (the logits' last
    dimension)."""
    param = _first_param(model)
    device = param.device if param is not None else torch.device("cpu")
    calls = []

    def sdpa(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
        _check_attention(attn_mask, dropout_p, is_causal)
        calls.append((k.shape[1], k.shape[3], v.shape[1], v.shape[3], k.dtype))
        return q.new_zeros(q.shape[:-1] + (v.shape[-1],))  # shapes are what this pass needs

    with torch.no_grad(), _patched(sdpa, _arange):
        vocab = model(torch.zeros(1, 1, dtype=torch.long, device=device)).shape[-1]
    if not calls:
        raise CacheError("add_kv_cache found no attention call: the model must attend with "
                         "F.scaled_dot_product_attention(q, k, v, is_causal=True)")
    for kh, kd, vh, vd, _ in calls:
        if (kh, kd) != (vh, vd):
            raise CacheError("add_kv_cache: keys %dx%d and values %dx%d (heads x head dim) differ"
                             % (kh, kd, vh, vd))
    return [(kh, kd, dt) for kh, kd, _, _, dt in calls], vocab


class CachedDecoder(torch.nn.Module):
    """`model` with a KV cache: forward(ids, input_pos) -> logits, where
    `input_pos` holds the absolute positions of the S new tokens (the same
    for every sequence). `decoder_mode` is "prefill" (the new tokens start
    at position 0 and attend over themselves) or "decode" (attention over
    the cache). Cache buffers `k_cache_<i>` / `v_cache_<i>`, one pair per
    attention call, `max_batch x heads x capacity x head_dim`."""

    def __init__(self, model, max_batch, capacity, calls, vocab, device=None, dtype=None):
        super().__init__()
        self.model, self.vocab = model, vocab
        self.max_batch, self.capacity = int(max_batch), int(capacity)
        self.decoder_mode = "decode"
        self.layers = len(calls)
        for i, (heads, hd, dt) in enumerate(calls):
            shape = (self.max_batch, heads, self.capacity, hd)
            for kind in ("k", "v"):
                self.register_buffer("%s_cache_%d" % (kind, i),
                                     torch.zeros(shape, dtype=dtype or dt, device=device), persistent=False)

    def forward(self, ids, input_pos):
        b, s = ids.shape
        b, s = _static(b), _static(s)  # ints also while the importer traces (static shapes)
        if isinstance(b, int) and b > self.max_batch:
            raise CacheError("%d sequences do not fit a cache of %d" % (b, self.max_batch))
        positions = input_pos[None].expand(b, s)
        mode, counter = self.decoder_mode, iter(range(self.layers))
        seen = 0         # aranges substituted
        inside = False   # in our attention, whose own aranges are not the model's

        def sdpa(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
            nonlocal inside
            _check_attention(attn_mask, dropout_p, is_causal)
            i = next(counter, None)
            if i is None:
                raise CacheError("the model makes more attention calls than when the cache was added (%d)"
                                 % self.layers)
            inside = True
            try:
                kc = cache_write(getattr(self, "k_cache_%d" % i), k, positions)
                vc = cache_write(getattr(self, "v_cache_%d" % i), v, positions)
                if mode == "decode" or _TORCH_SDPA is None:
                    return cached_attention(q, kc, vc, positions, scale)
                kw = {"enable_gqa": True} if enable_gqa else {}
                return _TORCH_SDPA(q, k, v, is_causal=True, scale=scale, **kw)
            finally:
                inside = False

        def arange(*args, **kwargs):
            nonlocal seen
            if not inside and _is_seq_arange(args, kwargs, s):
                seen += 1
                dtype = kwargs.get("dtype")
                return input_pos if dtype in (None, torch.long) else input_pos.to(dtype)
            return _arange(*args, **kwargs)

        with _patched(sdpa, arange):
            out = self.model(ids)
        if not seen:
            raise CacheError("add_kv_cache found no torch.arange(seq_len) in the model to take token "
                             "positions from: compute positions with torch.arange (a table sliced [:seq_len] "
                             "would give a decode step position 0)")
        return out


def check_cache(decoder, tokens=4, atol=None):
    """Runs a prefill of `tokens` - 1 tokens and one decode step through
    `decoder` (a CachedDecoder with weights) and compares the step's logits
    with the wrapped model's full forward pass over the `tokens` tokens.
    Raises CacheError on a mismatch; restores the mode and zeroes the
    caches."""
    model = decoder.model
    param = _first_param(model)
    if param is None or param.is_meta:
        return
    device = param.device
    g = torch.Generator(device="cpu").manual_seed(0)
    ids = torch.randint(0, decoder.vocab, (1, tokens), generator=g).to(device)
    mode = decoder.decoder_mode
    try:
        with torch.no_grad():
            want = model(ids)[0, -1].float()
            decoder.decoder_mode = "prefill"
            decoder(ids[:, :-1], _arange(tokens - 1, device=device))
            decoder.decoder_mode = "decode"
            got = decoder(ids[:, -1:], _arange(tokens - 1, tokens, device=device))[0, -1].float()
    finally:
        decoder.decoder_mode = mode
        for name, buf in decoder.named_buffers():
            if "_cache_" in name:
                buf.zero_()
    err = (got - want).abs().max().item()
    bar = atol if atol is not None else 1e-3 * max(1.0, want.abs().max().item()) * (
        1 if param.dtype == torch.float32 else 30)
    if not err <= bar:
        raise CacheError("with the cache added, a decode step's logits differ from the full forward pass by "
                         "%.3g (bar %.3g): the model's positions or attention do not follow torch.arange and "
                         "causal F.scaled_dot_product_attention (docs/models.md)" % (err, bar))


def meta_copy(module):
    """A copy of `module` with every parameter and buffer on the meta device
    (shapes only: nothing is copied or allocated; tied tensors stay tied)."""
    memo = {}
    for t in itertools.chain(module.parameters(), module.buffers()):
        if id(t) not in memo:
            m = torch.empty_like(t, device="meta")
            memo[id(t)] = torch.nn.Parameter(m, t.requires_grad) if isinstance(t, torch.nn.Parameter) else m
    return copy.deepcopy(module, memo)


def add_kv_cache(model, max_batch, capacity, device=None, dtype=None, check=True):
    """A CachedDecoder around `model` (module docs). `device` of the caches:
    the model's (default), or "meta" for shapes only (export, or a
    decoder whose caches the runtime allocates). `dtype`: the caches'
    element type (default the keys'). `check`: run check_cache where the
    model has weights."""
    if max_batch < 1 or capacity < 1:
        raise CacheError("max_batch and capacity must be positive, got %s and %s" % (max_batch, capacity))
    calls, vocab = _discover(model)
    param = _first_param(model)
    weights = param.device if param is not None else None
    if check:  # on a small cache of its own, beside the weights (the caches asked for may be meta)
        check_cache(CachedDecoder(model, 1, 8, calls, vocab, device=weights))
    return CachedDecoder(model, max_batch, capacity, calls, vocab, device=device or weights, dtype=dtype)
