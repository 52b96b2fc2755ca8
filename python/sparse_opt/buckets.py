"""A dynamic token dimension through token buckets.

Compiled programs have static shapes. For serving, where the number of
tokens changes from call to call (decode batches, prompts), a *bucketed
artifact* holds one program per token count (a bucket) and a call runs the
smallest bucket that fits, the token inputs padded with zero rows and the
outputs cut back:

    out/buckets.json   {"tokens": [1, 4, 16, 64], "programs": {"1": "m1", ...},
                        "token_inputs": [0], "token_outputs": [0]}
    out/m1/ ...        one artifact per bucket

The token dimension is axis 0 of the token inputs and outputs (the
arguments and results whose leading size is the bucket's token count; the
others, such as weights, must be the same in every bucket). Padding is exact
for models whose every op treats token rows independently: linear layers,
norms over the features, element-wise ops and tensor-parallel all-reduces,
which is what the compiler lowers to the GPU today. A model that mixes tokens
(attention over the sequence) must not be bucketed this way.

    from sparse_opt.buckets import compile_buckets
    compile_buckets(lambda m: model_text(m), [1, 4, 16, 64], "out", ladder=True)
    prog = sparse_opt.runtime.load("out", comm=c)    # a BucketedProgram
    y = prog(x_with_7_tokens, *weights)               # runs bucket 16
"""
import bisect
import json
import pathlib

from .artifact import ArtifactError

MANIFEST = "buckets.json"


def choose_bucket(tokens, m):
    """The smallest bucket of the sorted list `tokens` that holds m tokens,
    or ValueError."""
    if m < 1:
        raise ValueError("a call needs at least one token, got %d" % m)
    i = bisect.bisect_left(tokens, m)
    if i == len(tokens):
        raise ValueError("%d tokens exceed the largest bucket (%d; buckets %s)"
                         % (m, tokens[-1], tokens))
    return tokens[i]


def _token_positions(specs_by_bucket, what):
    """Positions whose leading size is the bucket's token count in every
    bucket; checks the others are the same everywhere."""
    tokens = sorted(specs_by_bucket)
    first = specs_by_bucket[tokens[0]]
    positions = []
    for i, spec in enumerate(first):
        per = [specs_by_bucket[m][i] for m in tokens]
        if all(s.shape and s.shape[0] == m and s.shape[1:] == spec.shape[1:] and s.dtype == spec.dtype
               for s, m in zip(per, tokens)):
            positions.append(i)
        elif any(s != spec for s in per):
            raise ArtifactError("%s %d changes between buckets in another way than its leading "
                                "(token) size: %s" % (what, i, ", ".join(str(s) for s in per)))
    return positions


def compile_buckets(build, tokens, output_dir, **compile_options):
    """Compiles `build(m)` (MLIR text of the model for m tokens) for every m
    of `tokens` into output_dir/m<m>/ and writes buckets.json. Options go to
    Module.compile (chip, features, sparse_policy, ladder). Returns the
    sorted bucket list."""
    from .compiler import Compiler
    tokens = sorted(set(int(m) for m in tokens))
    if not tokens or tokens[0] < 1:
        raise ValueError("buckets must be positive token counts, got %r" % (tokens,))
    out = pathlib.Path(output_dir)
    out.mkdir(parents=True, exist_ok=True)
    inputs, outputs = {}, {}
    for m in tokens:
        with Compiler() as c:
            artifact = c.parse(build(m)).compile(out / ("m%d" % m), **compile_options)
        inputs[m], outputs[m] = artifact.signature.inputs, artifact.signature.outputs
    counts = {len(v) for v in inputs.values()}, {len(v) for v in outputs.values()}
    if len(counts[0]) != 1 or len(counts[1]) != 1:
        raise ArtifactError("the buckets' functions differ in their number of arguments or results")
    manifest = {"tokens": tokens, "programs": {str(m): "m%d" % m for m in tokens},
                "token_inputs": _token_positions(inputs, "argument"),
                "token_outputs": _token_positions(outputs, "result")}
    if not manifest["token_inputs"]:
        raise ArtifactError("no argument has the bucket's token count as its leading size")
    (out / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")
    return tokens


def is_bucketed(directory):
    return (pathlib.Path(directory) / MANIFEST).is_file()


def read_manifest(directory):
    path = pathlib.Path(directory) / MANIFEST
    try:
        data = json.loads(path.read_text())
        tokens = [int(m) for m in data["tokens"]]
        programs = {int(k): v for k, v in data["programs"].items()}
        token_inputs = [int(i) for i in data["token_inputs"]]
        token_outputs = [int(i) for i in data["token_outputs"]]
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise ArtifactError("%s: %s" % (path, e))
    if tokens != sorted(set(tokens)) or set(programs) != set(tokens) or not token_inputs:
        raise ArtifactError("%s: tokens must be sorted and unique, with one program each, and "
                            "token_inputs non-empty" % path)
    return tokens, programs, token_inputs, token_outputs


class BucketedProgram:
    """Programs of one model for several token counts; call it like a
    Program with any token count up to the largest bucket."""

    def __init__(self, directory, programs):
        self.directory = pathlib.Path(directory)
        self.tokens, _, self.token_inputs, self.token_outputs = read_manifest(directory)
        self.programs = programs  # {tokens: Program}
        self._staging = {}  # (bucket, input position) -> padded torch tensor
        self._comm = None

    @property
    def comm(self):
        return self._comm

    @comm.setter
    def comm(self, communicator):
        for p in self.programs.values():
            p.comm = communicator
        self._comm = communicator

    def program_for(self, m):
        """The Program that runs m tokens."""
        return self.programs[choose_bucket(self.tokens, m)]

    def __call__(self, *args, stream=None):
        first = args[self.token_inputs[0]]
        m = int(first.shape[0])
        bucket = choose_bucket(self.tokens, m)
        prog = self.programs[bucket]
        if bucket == m:
            return prog(*args, stream=stream)
        padded = list(args)
        for i in self.token_inputs:
            x = args[i]
            if int(x.shape[0]) != m:
                raise ValueError("token inputs disagree on the token count: argument %d has %d, "
                                 "argument %d has %d" % (self.token_inputs[0], m, i, x.shape[0]))
            key = (bucket, i)
            buf = self._staging.get(key)
            if buf is None or buf.dtype != x.dtype or buf.device != x.device:
                import torch
                buf = torch.zeros((bucket,) + tuple(x.shape[1:]), dtype=x.dtype, device=x.device)
                self._staging[key] = buf
            buf[:m].copy_(x)
            buf[m:].zero_()
            padded[i] = buf
        outs = prog(*padded, stream=stream)
        single = not isinstance(outs, tuple)
        outs = [outs] if single else list(outs)
        for i in self.token_outputs:
            outs[i] = outs[i][:m]
        return outs[0] if single else tuple(outs)

    def close(self):
        for p in self.programs.values():
            p.close()
        self.programs = {}

    def __repr__(self):
        return "BucketedProgram(%r, tokens=%s)" % (str(self.directory), self.tokens)
