"""sparse_opt.twell.TwellGuard without a GPU: fake programs that record
their calls and report the densities a test sets."""
import pytest

from sparse_opt.artifact import Signature, TensorSpec
from sparse_opt.twell import TwellGuard


def signature(d=64):
    spec = lambda shape: TensorSpec(tuple(shape), "bf16")
    return Signature("ffn", (spec([16, d]),), (spec([16, d]),), ())


class FakeProgram:
    def __init__(self, name, log, limits=None, d=64):
        self.name, self.log, self.signature = name, log, signature(d)
        self.stat_limits = dict(limits or {})
        self.density = {}

    def __call__(self, *args, outputs=None, stream=None):
        self.log.append(self.name)
        return self.name

    def densities(self, stream=None):
        self.log.append("check")
        return dict(self.density)


def make(check_every=4, retry_every=6):
    log = []
    twell = FakeProgram("twell", log, {"twell0.active_neurons": 0.01,
                                       "twell1.active_neurons": 0.02})
    dense = FakeProgram("dense", log)
    return TwellGuard(twell, dense, check_every, retry_every), twell, log


def test_stays_on_twell_below_the_limits():
    guard, twell, log = make()
    twell.density = {"twell0.active_neurons": 0.005, "twell1.active_neurons": 0.02,
                     "twell0.fallback_rows": 0.5}
    for _ in range(9):
        assert guard("x") == "twell"
    # Checked at the first run, then every 4 runs.
    assert log == ["twell", "check"] + (["twell"] * 4 + ["check"]) * 2
    assert guard.using == "twell" and guard.switches == 0
    assert guard.last_densities == {"twell0.active_neurons": 0.005, "twell1.active_neurons": 0.02}


def test_switches_to_dense_and_retries():
    guard, twell, log = make()
    twell.density = {"twell0.active_neurons": 0.005, "twell1.active_neurons": 0.03}
    assert guard("x") == "twell"
    assert guard.using == "dense" and guard.switches == 1
    outs = [guard("x") for _ in range(6)]
    assert outs == ["dense"] * 6
    # After retry_every dense calls, TwELL runs once more and is checked.
    assert guard.using == "twell"
    twell.density = {"twell0.active_neurons": 0.005, "twell1.active_neurons": 0.01}
    assert guard("x") == "twell"
    assert guard.using == "twell" and guard.switches == 2
    assert log == ["twell", "check"] + ["dense"] * 6 + ["twell", "check"]


def test_manual_choice_and_no_checks():
    guard, twell, log = make(check_every=0, retry_every=0)
    twell.density = {"twell0.active_neurons": 0.9}
    assert [guard("x") for _ in range(3)] == ["twell"] * 3
    assert "check" not in log
    guard.use("dense")
    assert [guard("x") for _ in range(10)] == ["dense"] * 10
    with pytest.raises(ValueError, match="use 'twell' or 'dense'"):
        guard.use("sparse")


def test_refuses_programs_that_do_not_match():
    log = []
    twell = FakeProgram("twell", log, {"twell0.active_neurons": 0.01})
    with pytest.raises(ValueError, match="must compile the same function"):
        TwellGuard(twell, FakeProgram("dense", log, d=128))
    with pytest.raises(ValueError, match="no stat with a limit"):
        TwellGuard(FakeProgram("twell", log), FakeProgram("dense", log))
    with pytest.raises(ValueError, match=">= 0"):
        TwellGuard(twell, FakeProgram("dense", log), check_every=-1)
