"""A run-time guard between a TwELL program and the dense program of the same
model.

The density of a ReLU FFN's activations is known only after its gate GEMM,
and a calibration profile (docs/design.md, TwELL) only predicts it. A
TwELL program reports each layer's measured density as a program stat
(`twell<i>.active_neurons`, out of M*F) and carries the layer's break-even
density (the stat's limit, from the compiler's cost model). TwellGuard runs
the TwELL program and, every `check_every` runs, compares the measured
densities with the limits; when a layer is denser than its limit, the
following calls run the dense program instead, and every `retry_every`
dense calls the TwELL program runs once more to measure again.

Every call is correct whichever program runs (rows over a tile's capacity
take TwELL's dense fallback). Reading the stats waits for the stream, so
the check is made only every few runs; a call that is being captured into
a CUDA graph must not be a checking one (use check_every=0 to only switch
by hand, with `use()`).

    twell = runtime.load("out_twell")      # compile(..., twell=True or a profile)
    dense = runtime.load("out_dense")      # compile(..., twell=False)
    ffn = TwellGuard(twell, dense)
    y = ffn(x, wg, wu, wd)
"""


class TwellGuard:
    """Calls `twell` (a Program with TwELL stats) or `dense` (the same
    function compiled without TwELL), as the measured densities say.
    `using` is "twell" or "dense": the program the next call runs;
    `last_densities` the TwELL densities of the last check ({stat name:
    fraction}); `switches` counts the changes of program."""

    def __init__(self, twell, dense, check_every=64, retry_every=1024):
        if twell.signature.inputs != dense.signature.inputs or \
                twell.signature.outputs != dense.signature.outputs:
            raise ValueError("the TwELL and dense programs must compile the same function: "
                             "%s vs %s" % (twell.signature, dense.signature))
        if not twell.stat_limits:
            raise ValueError("the TwELL program has no stat with a limit (no TwELL layer, "
                             "or compiled before the limits existed)")
        if check_every < 0 or retry_every < 0:
            raise ValueError("check_every and retry_every must be >= 0")
        self.twell, self.dense = twell, dense
        self.check_every, self.retry_every = check_every, retry_every
        self.using = "twell"
        self.last_densities = {}
        self.switches = 0
        # Runs since the last check (TwELL) or since the switch (dense); the
        # first TwELL run is checked.
        self._since = -1

    def use(self, which):
        """Chooses the program of the next calls by hand: "twell" or "dense"."""
        if which not in ("twell", "dense"):
            raise ValueError("use 'twell' or 'dense', got %r" % (which,))
        if which != self.using:
            self.switches += 1
        self.using, self._since = which, -1 if which == "twell" else 0

    def __call__(self, *args, outputs=None, stream=None):
        prog = self.twell if self.using == "twell" else self.dense
        out = prog(*args, outputs=outputs, stream=stream)
        self._since += 1
        if self.using == "twell":
            if self.check_every and self._since % self.check_every == 0:
                self._check(stream)
        elif self.retry_every and self._since >= self.retry_every:
            self.use("twell")
        return out

    def _check(self, stream):
        densities = self.twell.densities(stream)
        self.last_densities = {name: densities[name] for name in self.twell.stat_limits
                               if name in densities}
        if any(self.last_densities[name] > limit
               for name, limit in self.twell.stat_limits.items() if name in self.last_densities):
            self.use("dense")
        self._since = 0

    def __repr__(self):
        return "TwellGuard(using %s, densities %s, limits %s)" % (
            self.using, self.last_densities, self.twell.stat_limits)
