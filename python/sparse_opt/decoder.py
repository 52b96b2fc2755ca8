"""Decoders: a torch decoder compiled into programs that share weights and a
KV cache, used as a drop-in `prefill` / `decode` / `generate` on token ids.

The model. `forward(ids, positions)` takes token ids `B x S` and the
absolute position of every token (`B x S` integers; -1 marks padding) and
returns logits `B x S x vocab`. It keeps its KV cache in buffers of shape
`max_batch x kv_heads x capacity x head_dim`, written with
`sparse_opt.markers.cache_write` and read with
`sparse_opt.markers.cached_attention` (docs/models.md shows one). A model
with a `decoder_mode` attribute is told which program it is traced for
("prefill" or "decode"): a prefill may then attend over its new keys
directly (exact when every prompt starts at position 0), which is the fast
tensor-core attention; the decode attends over the cache.

    export(model, "out/llama", prefill=(1, 128), decode_batches=(1, 8))
    dec = load_decoder("out/llama", model)          # GPU; backend="reference": CPU
    tokens = dec.generate(ids, max_new_tokens=32)

`export` writes one program per shape (a directory each, with the imported
`model.mlir` beside it) and `decoder.json`. `load_decoder` binds the
module's parameters by qualified name to every program (one copy of each
dense weight on the GPU) and allocates the caches once, zeroed, as the
state every program is bound to, so a prefill's cache writes are what the
decode steps read. The programs have static shapes: a prompt batch is padded
to the prefill program's shape and a decode batch to the smallest decode
program that holds it, with positions of -1 for the padding, which writes
no cache entry and changes no real sequence's result.
"""
import json
import os
import pathlib

MANIFEST = "decoder.json"
FORMAT = 1


class DecoderError(ValueError):
    """A decoder directory, model or call that does not fit."""


# ---------------------------------------------------------------- export
def _program_text(module, batch, tokens, mode, dtype, sparsity, positions):
    """The imported IR of one program. `positions`: "per_sequence" (B x S),
    "shared" (S, gpt-fast's input_pos) or "auto" (per sequence when the
    model traces with them, else shared)."""
    import torch
    from .importers.emitter import ImportError_
    from .importers.fx import import_fx
    if hasattr(module, "decoder_mode"):
        module.decoder_mode = mode
    ids = torch.zeros(batch, tokens, dtype=torch.long)
    shared = torch.arange(tokens, dtype=torch.long)
    if positions == "shared":
        return import_fx(module, (ids, shared), dtype=dtype, sparsity=sparsity)
    try:
        return import_fx(module, (ids, shared[None].expand(batch, tokens).contiguous()), dtype=dtype,
                         sparsity=sparsity)
    except ImportError_ as first:
        if positions == "per_sequence":
            raise
        try:
            return import_fx(module, (ids, shared), dtype=dtype, sparsity=sparsity)
        except ImportError_:
            raise first  # the model's error in the primary (per-sequence) form


def _with_cache(module, cache, export=False):
    """`module` with a KV cache added (sparse_opt.kv_cache) when `cache`
    ({"max_batch": B, "capacity": T}) is given, else `module`; the caches on
    the meta device (the runtime allocates its own). For export, the model
    is checked with its weights (where it has them) and traced as a meta
    copy, so an export allocates no cache and runs nothing large."""
    if not cache:
        return module
    from .kv_cache import CacheError, add_kv_cache, meta_copy
    if set(cache) != {"max_batch", "capacity"}:
        raise DecoderError("cache takes max_batch and capacity, got %s" % sorted(cache))
    try:
        wrapped = add_kv_cache(module, cache["max_batch"], cache["capacity"], device="meta", check=export)
        if export:
            wrapped.model = meta_copy(module)
        return wrapped
    except CacheError as e:
        raise DecoderError(str(e))


def export(module, directory, prefill=(1, 128), decode_batches=(1,), dtype=None, sparsity=None,
           chip="sm_90a", compile=True, positions="auto", cache=None, **compile_options):
    """Imports `module` once per program shape and compiles each: a prefill
    program of `prefill = (batch, tokens)` and one decode program per batch
    in `decode_batches`. `dtype`/`sparsity` are import_fx's; with
    compile=False only the imported IR is written (enough for the CPU
    reference backend). `positions`: the form forward(ids, positions)
    takes, "per_sequence" (B x S), "shared" (S) or "auto" (per sequence
    when the model traces with it). `cache` = {"max_batch": B,
    "capacity": T} adds a KV cache to a cache-less causal `forward(ids)`
    model (sparse_opt.kv_cache: its positions are then shared by the
    batch); `load_decoder` adds it again from decoder.json. Returns the
    manifest written to decoder.json."""
    if positions not in ("auto", "per_sequence", "shared"):
        raise DecoderError("positions must be auto, per_sequence or shared, got %r" % (positions,))
    added = dict(cache) if cache else None
    if added:
        module, positions = _with_cache(module, added, export=True), "shared"
    from .compiler import Compiler
    from .reference import arguments, state_buffer_names
    directory = pathlib.Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    pb, ps = (int(x) for x in prefill)
    batches = sorted({int(b) for b in decode_batches})
    if pb < 1 or ps < 1 or not batches or batches[0] < 1:
        raise DecoderError("prefill (batch, tokens) and decode batches must be positive, got %s and %s"
                           % (prefill, decode_batches))
    shapes = [("prefill", pb, ps, "prefill")] + [("decode_b%d" % b, b, 1, "decode") for b in batches]
    programs, states, vocab = {}, None, None
    for name, batch, tokens, mode in shapes:
        if states:
            cache = _shape(next(iter(states.values())))
            if batch > cache[0] or tokens > cache[2]:
                raise DecoderError("program %s (%d x %d tokens) does not fit the model's cache of %d sequences x "
                                   "%d positions" % (name, batch, tokens, cache[0], cache[2]))
        text = _program_text(module, batch, tokens, mode, dtype, sparsity, positions)
        sub = directory / name
        sub.mkdir(exist_ok=True)
        (sub / "model.mlir").write_text(text)
        names = state_buffer_names(text)
        if not names:
            raise DecoderError("the model keeps no KV cache: write it with sparse_opt.markers.cache_write "
                               "into buffers of the model (docs/models.md)")
        args = arguments(text)
        types = {n: t for t, n in args if n in names}
        if states is None:
            states = types
        elif types != states:
            raise DecoderError("program %s keeps other state than the first program: %s vs %s"
                               % (name, sorted(types.items()), sorted(states.items())))
        pos_rank = len(_shape(args[1][0])) if len(args) > 1 else 0
        if pos_rank not in (1, 2):
            raise DecoderError("the model must take forward(ids, positions): positions B x S (one per "
                               "token) or S (the same for every sequence)")
        result = _result_type(text)
        if vocab is None:
            vocab = result[-1]
        if result != (batch, tokens, vocab):
            raise DecoderError("program %s returns %s, expected logits %dx%dx%d (batch x tokens x vocab)"
                               % (name, "x".join(map(str, result)), batch, tokens, vocab))
        if compile:
            c = Compiler()
            try:
                c.parse(text, filename=str(sub / "model.mlir")).compile(str(sub), chip=chip, **compile_options)
            finally:
                c.close()
        programs[name] = {"batch": batch, "tokens": tokens, "mode": mode, "compiled": bool(compile),
                          "positions": "per_sequence" if pos_rank == 2 else "shared"}
    shape = _shape(next(iter(states.values())))
    manifest = {"format": FORMAT, "programs": programs, "vocab": vocab,
                "max_batch": shape[0], "capacity": shape[2],
                "state": {n: {"type": t} for n, t in states.items()}}
    if added:
        manifest["added_cache"] = {k: int(v) for k, v in added.items()}
    (directory / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")
    return manifest


def _shape(type_text):
    import re
    return tuple(int(d) for d in re.findall(r"(\d+)x", type_text))


def _result_type(text):
    import re
    m = re.search(r"func\.func @forward\(.*?\) -> \((tensor<[^>]*>)\)", text)
    if not m:
        raise DecoderError("the model must return one tensor (the logits)")
    return _shape(m.group(1))


def read_manifest(directory):
    path = pathlib.Path(directory) / MANIFEST
    if not path.is_file():
        raise DecoderError("%s is not a decoder directory (no %s; sparse_opt.decoder.export writes it)"
                           % (directory, MANIFEST))
    try:
        m = json.loads(path.read_text())
    except ValueError as e:
        raise DecoderError("%s: %s" % (path, e))
    if m.get("format") != FORMAT:
        raise DecoderError("%s: format %r, this version reads %d" % (path, m.get("format"), FORMAT))
    return m


# -------------------------------------------------------------- backends
class _CudaBackend:
    """The compiled programs on the GPU, bound to the module's weights and to
    caches allocated here."""

    def __init__(self, directory, manifest, module, device, cuda_graphs=False):
        import torch
        from . import runtime
        self.torch, self.device = torch, device
        # Decode steps replayed from CUDA graphs: name -> (graph, static
        # ids, static positions, static logits); None: eager runs.
        self.graphs = {} if cuda_graphs else None
        self.dev = torch.device("cuda", device)
        dtypes = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
        self.caches = {}
        for name, spec in manifest["state"].items():
            dt = spec["type"].rsplit("x", 1)[1].rstrip(">")
            self.caches[name] = torch.zeros(_shape(spec["type"]), dtype=dtypes[dt], device=self.dev)
        state = runtime.module_state(module)
        state.update(self.caches)
        # The prefill program prepares (compresses) the sparse weights; every
        # other program uses its prepared buffers where its prepare stage is
        # the same (p.donor says which did), so a weight is compressed once.
        self.programs = {}
        donor = None
        for name in ["prefill"] + sorted(n for n in manifest["programs"] if n != "prefill"):
            p = runtime.load(os.path.join(directory, name), device)
            p.bind_state(state, donor=donor if donor is not None and donor.param_bytes else None)
            donor = donor or p
            self.programs[name] = p

    def tensor(self, x, dtype):
        return self.torch.as_tensor(x, dtype=dtype).to(self.dev)

    def run(self, name, ids, positions):
        if self.graphs is None or not name.startswith("decode"):
            return self.programs[name](ids, positions)
        torch = self.torch
        if name not in self.graphs:
            # The first call runs eagerly (warming the libraries up; its
            # cache writes are the ones the replay makes again, with the
            # same inputs), then the step is captured on static buffers.
            prog = self.programs[name]
            out = prog(ids, positions)
            static = (ids.clone(), positions.clone(), torch.empty_like(out))
            torch.cuda.synchronize(self.device)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.device(self.device), torch.cuda.graph(graph):
                prog.run([static[0].data_ptr(), static[1].data_ptr()], [static[2].data_ptr()],
                         torch.cuda.current_stream().cuda_stream)
            self.graphs[name] = (graph,) + static
            return out
        graph, sids, spos, sout = self.graphs[name]
        sids.copy_(ids)
        spos.copy_(positions)
        graph.replay()
        return sout.clone()

    def reset(self):
        for c in self.caches.values():
            c.zero_()


class _ReferenceBackend:
    """The imported IR on the CPU through the reference lowering (f32 models):
    the same programs' semantics, caches kept as numpy arrays between calls."""

    def __init__(self, directory, manifest, module):
        import numpy as np
        import torch
        from .runtime import module_state
        self.torch, self.np = torch, np
        self.dev = torch.device("cpu")
        self.texts = {n: (pathlib.Path(directory) / n / "model.mlir").read_text() for n in manifest["programs"]}
        self.params = {k: v.detach().float().numpy() for k, v in module_state(module).items()
                       if k not in manifest["state"]}
        self.shapes = {n: _shape(s["type"]) for n, s in manifest["state"].items()}
        self.reset()

    def tensor(self, x, dtype):
        return self.torch.as_tensor(x, dtype=dtype)

    def run(self, name, ids, positions):
        from .reference import run_reference
        (logits,), self.caches = run_reference(self.texts[name], [ids.numpy(), positions.numpy()],
                                               self.params, states=self.caches)
        return self.torch.from_numpy(logits)

    def reset(self):
        self.caches = {n: self.np.zeros(s, dtype=self.np.float32) for n, s in self.shapes.items()}


# --------------------------------------------------------------- decoder
class Decoder:
    """Prefill, decode and generate over the programs of one directory.
    Sequence b of a batch lives in cache row b; `lengths[b]` is how many of
    its tokens the cache holds."""

    def __init__(self, directory, manifest, backend):
        self.directory, self.manifest, self.backend = directory, manifest, backend
        self.capacity, self.max_batch = manifest["capacity"], manifest["max_batch"]
        progs = manifest["programs"]
        self.prefill_batch, self.prefill_tokens = progs["prefill"]["batch"], progs["prefill"]["tokens"]
        self.decode_batches = sorted(p["batch"] for p in progs.values() if p["mode"] == "decode")
        self.lengths = []

    # The inputs of one program run: ids and positions padded to its shape.
    # A model that takes one set of positions for the whole batch (S, as
    # gpt-fast's input_pos) runs sequences of equal lengths only: their
    # padding tokens then sit past every real one, are written to cache
    # positions that later steps overwrite before reading, and are never
    # attended to by a real token.
    def _inputs(self, name, rows, batch, tokens):
        torch = self.backend.torch
        ids = torch.zeros(batch, tokens, dtype=torch.long)
        pos = torch.full((batch, tokens), -1, dtype=torch.long)
        for b, (toks, start) in enumerate(rows):
            ids[b, :len(toks)] = toks
            pos[b, :len(toks)] = torch.arange(start, start + len(toks))
        if self.manifest["programs"][name].get("positions") == "shared":
            if len({(len(t), s) for t, s in rows}) != 1:
                raise DecoderError("this model takes one set of positions for the whole batch: its sequences "
                                   "must have equal lengths")
            start = rows[0][1]
            pos = torch.arange(start, start + tokens, dtype=torch.long)
        return self.backend.tensor(ids, torch.long), self.backend.tensor(pos, torch.long)

    def prefill(self, ids, lengths=None, all_logits=False):
        """Starts len(ids) sequences (a B x S id tensor; `lengths[b]` real
        tokens in row b, default S) from position 0, replacing whatever the
        cache held. Returns the logits of each sequence's last prompt token
        (B x vocab, f32), or with all_logits those of every position (B x S
        x vocab; rows past a sequence's length are padding)."""
        torch = self.backend.torch
        ids = torch.as_tensor(ids).cpu().long()
        if ids.dim() == 1:
            ids = ids[None]
        b, s = ids.shape
        lengths = [s] * b if lengths is None else [int(x) for x in torch.as_tensor(lengths).cpu().tolist()]
        if len(lengths) != b or any(l < 1 or l > s for l in lengths):
            raise DecoderError("lengths %s must give 1..%d tokens for each of the %d sequences" % (lengths, s, b))
        if b > self.prefill_batch or s > self.prefill_tokens:
            raise DecoderError("a prompt batch of %dx%d does not fit the prefill program (%dx%d); export a "
                               "larger one" % (b, s, self.prefill_batch, self.prefill_tokens))
        if max(lengths) >= self.capacity:
            raise DecoderError("a prompt of %d tokens leaves no room in a cache of %d positions"
                               % (max(lengths), self.capacity))
        rows = [(ids[i, :lengths[i]], 0) for i in range(b)]
        x, p = self._inputs("prefill", rows, self.prefill_batch, self.prefill_tokens)
        logits = self.backend.run("prefill", x, p)
        self.lengths = list(lengths)
        if all_logits:
            return logits[:b, :s].float()
        last = torch.as_tensor([l - 1 for l in lengths], device=logits.device)
        return logits[torch.arange(b, device=logits.device), last].float()

    def decode(self, tokens, program_batch=None):
        """Appends one token to each running sequence (a tensor of B ids, B
        the prefill's batch) and returns the next logits (B x vocab, f32).
        The smallest decode program that holds B runs, or the one of
        `program_batch`."""
        torch = self.backend.torch
        tokens = torch.as_tensor(tokens).reshape(-1).cpu().long()
        b = len(self.lengths)
        if b == 0:
            raise DecoderError("decode before prefill: no sequence is running")
        if tokens.numel() != b:
            raise DecoderError("decode takes one token for each of the %d sequences, got %d" % (b, tokens.numel()))
        if max(self.lengths) >= self.capacity:
            raise DecoderError("the KV cache is full (%d positions)" % self.capacity)
        fit = [x for x in self.decode_batches if x >= b and (program_batch is None or x == program_batch)]
        if program_batch is not None and not fit:
            raise DecoderError("no decode program of batch %d holds %d sequences (programs: %s)"
                               % (program_batch, b, self.decode_batches))
        if not fit:
            raise DecoderError("%d sequences exceed the largest decode program (batch %d)"
                               % (b, self.decode_batches[-1]))
        rows = [(tokens[i:i + 1], self.lengths[i]) for i in range(b)]
        name = "decode_b%d" % fit[0]
        x, p = self._inputs(name, rows, fit[0], 1)
        logits = self.backend.run(name, x, p)
        self.lengths = [l + 1 for l in self.lengths]
        return logits[:b, 0].float()

    def generate(self, ids, max_new_tokens, lengths=None, temperature=0.0, top_k=None, top_p=None,
                 eos_token_id=None, generator=None):
        """Prefill, then up to `max_new_tokens` decode steps. Greedy (the
        argmax, on the backend's device) at temperature 0, else sampling
        from softmax(logits / temperature) cut to the `top_k` largest and
        the smallest set of probability `top_p`. A sequence that produced
        `eos_token_id` keeps producing it. Returns the new tokens, B x
        max_new_tokens (fewer when every sequence ended early)."""
        torch = self.backend.torch
        prompt = torch.as_tensor(ids)
        longest = prompt.shape[-1] if lengths is None else max(int(x) for x in torch.as_tensor(lengths).tolist())
        if longest + int(max_new_tokens) - 1 > self.capacity:
            raise DecoderError("a prompt of %d tokens and %d new ones need %d cache positions; the cache has %d"
                               % (longest, max_new_tokens, longest + int(max_new_tokens) - 1, self.capacity))
        logits = self.prefill(ids, lengths)
        b = logits.shape[0]
        done = torch.zeros(b, dtype=torch.bool, device=logits.device)
        out = []
        for step in range(int(max_new_tokens)):
            nxt = _pick(torch, logits, temperature, top_k, top_p, generator)
            if eos_token_id is not None:
                nxt = torch.where(done, torch.full_like(nxt, eos_token_id), nxt)
                done |= nxt == eos_token_id
            out.append(nxt)
            if step + 1 == max_new_tokens or (eos_token_id is not None and bool(done.all())):
                break
            logits = self.decode(nxt)
        return torch.stack(out, dim=1) if out else torch.zeros(b, 0, dtype=torch.long)


def _pick(torch, logits, temperature, top_k, top_p, generator):
    if not temperature:
        return logits.argmax(dim=-1)
    logits = logits / float(temperature)
    if top_k:
        kth = torch.topk(logits, min(int(top_k), logits.shape[-1]), dim=-1).values[:, -1:]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    if top_p is not None and top_p < 1.0:
        sorted_logits, order = torch.sort(logits, descending=True, dim=-1)
        probs = torch.softmax(sorted_logits, dim=-1)
        # Cut a token when the tokens before it already reach top_p.
        cut = probs.cumsum(dim=-1) - probs > float(top_p)
        sorted_logits = sorted_logits.masked_fill(cut, float("-inf"))
        logits = torch.full_like(logits, float("-inf")).scatter(-1, order, sorted_logits)
    probs = torch.softmax(logits, dim=-1)
    return torch.multinomial(probs, 1, generator=generator).reshape(-1)


def load_decoder(directory, module, backend="cuda", device=0, cuda_graphs=False):
    """The Decoder of an exported directory with `module`'s weights bound by
    qualified name: backend "cuda" runs the compiled programs (the module's
    weights on that GPU are used in place when they have the programs'
    dtype; otherwise each program binds a cast copy), "reference" the
    imported IR on the CPU (f32 models; for tests and checks).
    `cuda_graphs` (cuda): each decode program is captured in a CUDA graph
    at its first step and replayed after (less launch overhead per step)."""
    directory = os.fspath(directory)
    manifest = read_manifest(directory)
    # A model exported with an added cache binds through the same wrapper
    # (its parameters are named model.<name> in the programs).
    module = _with_cache(module, manifest.get("added_cache"))
    if backend == "cuda":
        missing = [n for n, p in manifest["programs"].items() if not p["compiled"]]
        if missing:
            raise DecoderError("programs %s were exported without compiling (compile=False)" % missing)
        impl = _CudaBackend(directory, manifest, module, device, cuda_graphs)
    elif backend == "reference":
        if cuda_graphs:
            raise DecoderError("cuda_graphs applies to the cuda backend")
        impl = _ReferenceBackend(directory, manifest, module)
    else:
        raise DecoderError("backend must be 'cuda' or 'reference', got %r" % (backend,))
    return Decoder(directory, manifest, impl)
