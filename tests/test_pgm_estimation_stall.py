"""`estimate(stall=...)`: an absolute stopping rule for warm-started fits (issue 25). It stops exactly
when the loss fell by less than ``stall`` over the last `STALL_WINDOW` iterations, and fits that
stop early and resume (warm starts, as AIM's rounds do) reach the optimum of one long fit."""

from __future__ import annotations

import numpy as np
import pytest

from marginals.domain import Domain
from marginals.measurement import Measurement
from pgm import estimate
from pgm.estimation import STALL_WINDOW

DOM = Domain(tuple("abcd"), (3, 4, 2, 5))
CLIQUES = [("a", "b"), ("b", "c"), ("c", "d"), ("a", "d"), ("b",)]


def _measurements(seed: int, sigma: float = 3.0) -> list[Measurement]:
    rng = np.random.default_rng(seed)
    joint = rng.dirichlet(np.full(DOM.size(), 0.5)).reshape(DOM.shape) * 2000
    out = []
    for cl in CLIQUES:
        axes = tuple(i for i, a in enumerate(DOM.attrs) if a not in cl)
        table = joint.sum(axis=axes)
        out.append(Measurement(cl, table + rng.normal(0, sigma, table.shape), sigma))
    return out


def test_stall_stops_exactly_when_the_window_decrease_is_small():
    ms = _measurements(0)
    model = estimate(DOM, ms, iters=200, stall=np.inf)
    assert model.info["iterations"] == STALL_WINDOW  # any decrease is below infinity
    history = np.array(estimate(DOM, ms, iters=300).info["history"])
    for stall in (1.0, 10.0, 100.0):
        stopped = estimate(DOM, ms, iters=300, stall=stall).info["iterations"]
        drops = history[:-STALL_WINDOW] - history[STALL_WINDOW:]  # drop over the window ending at it
        first = int(np.argmax(drops <= stall)) + STALL_WINDOW if np.any(drops <= stall) else 300
        assert stopped == first


def test_no_stall_rule_runs_every_iteration():
    assert estimate(DOM, _measurements(1), iters=40).info["iterations"] == 40


@pytest.mark.parametrize("seed", range(2))
def test_early_stopped_warm_started_fits_reach_the_long_fits_optimum(seed):
    ms = _measurements(seed)
    long = estimate(DOM, ms, iters=3000)
    model, last = None, np.inf
    for _ in range(300):  # AIM-like: short fits that stop on the stall rule, each resuming the last
        model = estimate(DOM, ms, iters=25, stall=0.05, warm_start=model)
        if last - model.info["loss"] < 1e-6:
            break
        last = model.info["loss"]
    assert model.info["loss"] == pytest.approx(long.info["loss"], rel=1e-4, abs=1e-3)
    for cl in CLIQUES:
        np.testing.assert_allclose(model.project(cl).values, long.project(cl).values, atol=0.05, rtol=1e-3)


@pytest.mark.parametrize("bad", [-1.0, float("nan")])
def test_stall_must_be_non_negative(bad):
    with pytest.raises(ValueError, match="stall"):
        estimate(DOM, _measurements(0), iters=5, stall=bad)

