"""AIM end to end: workload_error, progress output, estimator options and input validation."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from aim import AIM, workload_error
from marginals import Dataset, Domain
from marginals.datasets import demo_dataset
from pgm.model import Model

AB = Domain(("a", "b"), (2, 2))
TRUE = Dataset(pd.DataFrame({"a": [0, 0, 1, 1], "b": [0, 1, 1, 1]}), AB)
SYNTH = pd.DataFrame({"a": [0, 0, 0, 1, 1], "b": [0, 0, 1, 0, 1]})
# true a: [.5, .5] vs [.6, .4] -> 0.2;  b: [.25, .75] vs [.6, .4] -> 0.7;
# ab: [.25, .25, 0, .5] vs [.4, .2, .2, .2] -> .15 + .05 + .2 + .3 = 0.7
WORKLOAD = [(("a",), 1.0), (("b",), 2.0), (("a", "b"), 0.5)]


@pytest.fixture(scope="module")
def small_release():
    return AIM(1.0, max_iters=10, final_iters=10, insecure_seed=0).run(demo_dataset(n=1500))


# --- workload_error ------------------------------------------------------------------------------


def test_workload_error_hand_computed():
    assert workload_error(TRUE, SYNTH, WORKLOAD) == pytest.approx((0.2 + 0.7 + 0.7) / 3, abs=1e-14)
    assert workload_error(TRUE, SYNTH, WORKLOAD, weighted=True) == pytest.approx((0.2 + 1.4 + 0.35) / 3, abs=1e-14)
    assert workload_error(TRUE, SYNTH, [("b",), ("a", "b")]) == pytest.approx(0.7, abs=1e-14)  # bare cliques
    assert workload_error(TRUE, SYNTH, [("b", "a")]) == pytest.approx(0.7, abs=1e-14)  # axis order irrelevant


def test_workload_error_zero_for_the_data_itself(small_release):
    data = demo_dataset(n=1500)
    pairs = [tuple(c) for c, _ in small_release.config["mechanism"]["workload"]]
    assert workload_error(data, data, pairs) == 0.0
    assert workload_error(data, data.to_df(), pairs) == 0.0
    shuffled = data.to_df().sample(frac=1.0, random_state=0).reset_index(drop=True)
    assert workload_error(data, shuffled, pairs) == 0.0
    assert workload_error(TRUE, TRUE, WORKLOAD, weighted=True) == 0.0


def test_workload_error_input_types_agree():
    synth_ds = Dataset(SYNTH, AB)
    counts = synth_ds.marginal(("a", "b")).astype(float)  # all four cells positive
    model = Model(AB, [("a", "b")], [np.log(counts)], total=float(counts.sum()))
    by_df = workload_error(TRUE, SYNTH, WORKLOAD)
    assert workload_error(TRUE, synth_ds, WORKLOAD) == by_df
    assert workload_error(TRUE, model, WORKLOAD) == pytest.approx(by_df, abs=1e-12)
    assert workload_error(TRUE, model, WORKLOAD, weighted=True) == pytest.approx(0.65, abs=1e-12)


def test_workload_error_of_a_model_matches_its_marginals(small_release):
    data = demo_dataset(n=1500)
    cliques = [("age", "income"), ("sector",), ("hours", "region", "income")]
    expected = np.mean(
        [
            np.abs(t / t.sum() - e / e.sum()).sum()
            for t, e in zip(data.marginals(cliques), small_release.model.marginals(cliques))
        ]
    )
    assert workload_error(data, small_release.model, cliques) == pytest.approx(expected, rel=1e-12)
    assert 0 < expected < 2


def test_workload_error_empty_workload():
    with pytest.raises(ValueError, match="empty"):
        workload_error(TRUE, SYNTH, [])


# --- progress ------------------------------------------------------------------------------------


def test_progress_lines_on_stderr(capsys):
    release = AIM(1.0, max_iters=5, final_iters=5, insecure_seed=1, progress=True).run(demo_dataset(n=1000))
    out, err = capsys.readouterr()
    assert out == ""
    lines = err.strip().splitlines()
    assert lines[0].startswith("AIM: eps=1")
    assert lines[-1].startswith(f"AIM done: {len(release.rounds)} rounds")
    round_lines = [ln for ln in lines if ln.startswith("round")]
    assert len(round_lines) == len(release.rounds)
    for ln, entry in zip(round_lines, release.rounds):
        assert ",".join(entry["clique"]) in ln
        assert ("(anneal)" in ln) == entry["annealed"]
    assert "100.0%" in round_lines[-1]


def test_no_progress_prints_nothing(capsys):
    AIM(1.0, max_iters=5, final_iters=5, insecure_seed=1).run(demo_dataset(n=1000))
    assert capsys.readouterr() == ("", "")


# --- bad input -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tiny():
    return demo_dataset(n=200)


@pytest.mark.parametrize("epsilon", [0.0, -1.0, float("nan"), float("inf")])
def test_bad_epsilon(tiny, epsilon):
    with pytest.raises(ValueError, match="epsilon"):
        AIM(epsilon).run(tiny)


@pytest.mark.parametrize("delta", [0.0, 1.0, -1e-9, 1.5, float("nan")])
def test_bad_delta(tiny, delta):
    with pytest.raises(ValueError, match="delta"):
        AIM(1.0, delta).run(tiny)


@pytest.mark.parametrize("size", [0.0, -5.0, float("nan")])
def test_bad_max_model_size(tiny, size):
    with pytest.raises(ValueError, match="max_model_size"):
        AIM(1.0, max_model_size=size).run(tiny)


def test_non_dataset_input(tiny):
    with pytest.raises(TypeError, match="marginals.Dataset.*DataFrame"):
        AIM(1.0).run(tiny.to_df())
    with pytest.raises(TypeError, match="marginals.Dataset"):
        AIM(1.0).run(tiny.to_df().to_numpy())


def test_weighted_dataset_is_refused(tiny):
    # row weights scale the counts: a Gaussian charge with sensitivity 1 would understate the privacy loss
    weighted = Dataset(tiny.to_df(), tiny.domain, weights=np.full(len(tiny), 1000.0))
    with pytest.raises(ValueError, match="weights"):
        AIM(1.0, max_iters=5, final_iters=5, insecure_seed=0).run(weighted)


def test_unknown_estimator_option_is_refused(tiny):
    with pytest.raises(ValueError, match=r"estimator_options: unknown key\(s\) \['iters'\]"):
        AIM(1.0, estimator_options={"iters": 5}).run(tiny)


def test_estimator_options_reach_every_fit(tiny, monkeypatch):
    import aim.mechanism as mechanism

    seen = []
    real = mechanism.estimate

    def spy(*args, **kwargs):
        seen.append(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(mechanism, "estimate", spy)
    options = {"momentum": 0.0, "step_growth": 1.01, "resume_stepsize": False}
    release = AIM(1.0, max_iters=5, final_iters=5, estimator_options=options, insecure_seed=0).run(tiny)
    assert len(seen) >= len(release.rounds) >= 1  # initial fit, round fits, final fit
    assert all({k: kw.get(k) for k in options} == options for kw in seen)
    assert release.config["mechanism"]["estimator_options"] == dict(sorted(options.items()))
