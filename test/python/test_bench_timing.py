"""bench/timing.py's idle profile: the GPU's idle time between the device
operations of a profiled call, by the operation that waited."""
import pathlib
import sys

import pytest

pytest.importorskip("torch")
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "bench"))

from timing import idle_profile  # noqa: E402


def test_idle_between_operations_by_the_one_that_waited():
    # Two calls of three operations (µs); the 4970 µs between the calls is
    # the host's synchronization, not idle time within a call.
    spans = [(0, 10, "gemm"), (12, 20, "norm"), (25, 30, "gemm"),
             (5000, 5010, "gemm"), (5011, 5020, "norm"), (5020, 5030, "gemm")]
    out = idle_profile(spans, steps=2)
    assert out["idle_us"] == pytest.approx((2 + 5 + 1 + 0) / 2)
    assert out["idle_before"] == [{"kernel": "gemm", "us": 2.5, "count": 0.5},
                                  {"kernel": "norm", "us": 1.5, "count": 1.0}]


def test_overlapping_operations_are_not_idle():
    # A memset inside a kernel's span (another stream) leaves no gap, and
    # the next kernel waits from the later end.
    spans = [(0, 100, "gemm"), (10, 20, "memset"), (103, 110, "norm")]
    out = idle_profile(spans, steps=1)
    assert out["idle_us"] == pytest.approx(3)
    assert out["idle_before"] == [{"kernel": "norm", "us": 3.0, "count": 1.0}]


def test_no_operations():
    assert idle_profile([], steps=1) == {"idle_us": 0.0, "idle_before": []}
