"""Target-aware AIM (`aim.targets`, ``AIM(..., targets=[...])``): the target workload holds every
(feature, target) pair; a run measures each pair in its initialisation, charges it to the ledger
and stays within the budget; the release records its targets (save/load, old configs without the
key); bad targets fail before any row is read; ``synth --target``, ``inspect`` and
``synthesize(raw, targets=...)`` end to end."""

from __future__ import annotations

import itertools
import json
import math
import re

import numpy as np
import pandas as pd
import pytest

from aim import AIM, AIMConfig, Release, synthesize
from aim.targets import (
    MAX_TARGET_SHARE, NOISE_PER_CELL, default_share, needed_share, noisy_total, pair_sigmas, target_pairs, target_workload,
)
from ddssp.cli import main
from marginals import Dataset, Domain
from marginals.privacy import BUDGET_RTOL, cdp_rho

pytestmark = pytest.mark.filterwarnings("ignore::marginals.randomness.InsecureSeedWarning",
                                        "ignore::aim.release.NotPrivateWarning")
FAST = {"rounds": 12, "max_iters": 5, "final_iters": 10}
SIZES = {"a": 3, "b": 4, "y": 2, "c": 5, "z": 3}


def table(n: int = 2000, seed: int = 0) -> Dataset:
    rng = np.random.default_rng(seed)
    cols = {name: rng.integers(0, m, n) for name, m in SIZES.items()}
    cols["y"] = (cols["a"] + cols["b"] + rng.integers(0, 2, n) > 3).astype(int)
    return Dataset(pd.DataFrame(cols), Domain.from_dict(SIZES))


def test_target_workload_holds_every_feature_target_pair():
    domain = Domain.from_dict({**SIZES, "wide": 300})
    workload = dict(target_workload(domain, ["y", "z"], max_cells=100, target_weight=4.0, width_power=0.5))
    pairs = {tuple(sorted((a, t), key=domain.attrs.index)) for t in ("y", "z") for a in domain.attrs if a != t}
    assert pairs <= set(workload)  # ("wide", "z") has 900 cells > max_cells: still in
    assert set(target_pairs(domain, ["y", "z"])) == pairs and len(target_pairs(domain, ["y", "z"])) == len(pairs)
    assert all(workload[p] == 4.0 for p in pairs)
    features = [c for c in itertools.combinations(domain.attrs, 2) if c not in pairs and domain.size(c) <= 100]
    assert sorted(set(workload) - pairs) == sorted(features)  # feature pairs: the default's, capped at max_cells
    ff = np.array([workload[c] for c in features])
    assert math.isclose(ff.mean(), 1.0) and workload[("b", "c")] > workload[("a", "b")] > 0  # wider blocks weigh more
    assert list(workload) == [c for c in itertools.combinations(domain.attrs, 2) if c in workload]  # domain order
    plain = dict(target_workload(domain, ["y", "z"], max_cells=100))  # the defaults: equal weights
    assert set(plain) == set(workload) and set(plain.values()) == {1.0}


@pytest.mark.parametrize("power", [0.0, 0.5, 1.0])
def test_pair_budgets_add_up_to_the_share(power):
    domain = Domain.from_dict({**SIZES, "wide": 300})
    pairs = target_pairs(domain, ["y"])
    rhos = np.array([1 / (2 * s**2) for s in pair_sigmas(domain, pairs, 0.02, 0.3, power)])
    assert math.isclose(rhos.sum(), 0.3 * 0.02, rel_tol=1e-12)
    cells = np.array([domain.size(c) for c in pairs], dtype=float)
    np.testing.assert_allclose(rhos / rhos.sum(), cells**power / (cells**power).sum(), rtol=1e-12)


def test_the_needed_share_gives_the_noise_it_promises():
    domain = Domain.from_dict({**SIZES, "wide": 300})
    pairs = target_pairs(domain, ["y"])
    share = needed_share(domain, pairs, 0.5, 10_000.0)
    sigmas = pair_sigmas(domain, pairs, 0.5, share)
    ratios = [s / (NOISE_PER_CELL * 10_000.0 / domain.size(c)) for c, s in zip(pairs, sigmas)]
    assert max(ratios) == pytest.approx(1.0) and all(r <= 1 + 1e-12 for r in ratios)  # the largest pair decides
    assert needed_share(domain, pairs, 0.5, -3.0) == 1.0


def test_the_default_share():
    assert default_share(16, 17) == pytest.approx(2.5 * 16 / 136)  # one target among 17 attributes: 2.5 x 2/d
    assert default_share(8, 9) == MAX_TARGET_SHARE == default_share(27, 15)  # capped


@pytest.mark.parametrize("epsilon", [0.1, 1.0, 10.0])
def test_target_pairs_are_measured_charged_and_the_budget_holds(epsilon):
    data = table()
    release = AIM(epsilon, 1e-6, targets=["y"], insecure_seed=3, **FAST).run(data)
    rho = cdp_rho(epsilon, 1e-6)
    pairs = target_pairs(data.domain, ["y"])
    measured = [m.clique for m in release.measurements]
    assert measured[: len(SIZES) + len(pairs)] == [(a,) for a in data.domain.attrs] + pairs  # 1-ways, then the pairs
    charges = {c.label: c for c in release.ledger.charges}
    share = release.mechanism_config().target_share  # the share the run used: the default, or what sufficed
    assert 0 < share <= default_share(len(pairs), len(SIZES))
    total = noisy_total(release.measurements[: len(SIZES)])
    assert share == min(default_share(len(pairs), len(SIZES)), needed_share(data.domain, pairs, rho, total))
    for pair, sigma in zip(pairs, pair_sigmas(data.domain, pairs, rho, share)):
        charge = charges["init target pair " + ",".join(pair)]
        assert charge.params["sensitivity"] == 1 and charge.params["sigma"] >= sigma
        assert math.isclose(charge.rho, 1 / (2 * charge.params["sigma"] ** 2), rel_tol=1e-12)
    init_rho = math.fsum(charges["init target pair " + ",".join(p)].rho for p in pairs)
    assert init_rho <= share * rho and math.isclose(init_rho, share * rho, rel_tol=1e-6)
    spent = math.fsum(c.rho for c in release.ledger.charges)
    assert spent <= rho * (1 + BUDGET_RTOL) and math.isclose(spent, rho, rel_tol=1e-6)  # all of it, no more
    assert release.mechanism_config().targets == ("y",) and len(release.rounds) >= 1


def test_a_given_share_is_spent():
    data = table()
    release = AIM(1.0, 1e-6, targets=["y"], target_share=0.2, insecure_seed=3, **FAST).run(data)
    init_rho = math.fsum(c.rho for c in release.ledger.charges if c.label.startswith("init target pair"))
    assert math.isclose(init_rho, 0.2 * cdp_rho(1.0, 1e-6), rel_tol=1e-6) and release.mechanism_config().target_share == 0.2


def test_without_targets_the_run_is_unchanged():
    data = table()
    plain = AIM(1.0, 1e-6, insecure_seed=5, **FAST).run(data)
    assert all(not c.label.startswith("init target") for c in plain.ledger.charges)
    assert "targets" not in plain.config["mechanism"] and "target_share" not in plain.config["mechanism"]
    assert plain.mechanism_config().targets is None  # as a release of the versions before targets reads


def test_a_given_workload_combines_with_targets():
    data = table()
    workload = [(("a", "c"), 1.0), (("b", "c"), 2.0)]
    release = AIM(1.0, 1e-6, targets=["y"], workload=workload, insecure_seed=5, **FAST).run(data)
    rounds = {tuple(r["clique"]) for r in release.rounds}
    assert rounds <= {("a", "c"), ("b", "c"), ("a",), ("b",), ("c",)}  # the rounds use the user's workload
    assert set(target_pairs(data.domain, ["y"])) <= {m.clique for m in release.measurements}


def test_targets_round_trip_through_the_release_file(tmp_path):
    release = AIM(1.0, 1e-6, targets=["z", "y"], insecure_seed=5, **FAST).run(table())
    release.save(tmp_path / "r.npz")
    loaded = Release.load(tmp_path / "r.npz")
    assert loaded.config["mechanism"]["targets"] == ["z", "y"] and loaded.config["mechanism"]["target_share"] == 0.5
    config = loaded.mechanism_config()
    assert config.targets == ("z", "y") and config == release.mechanism_config()
    assert AIMConfig.from_dict(json.loads(json.dumps(config.to_dict()))) == config
    old = {k: v for k, v in config.to_dict().items() if k not in ("targets", "target_share")}  # before targets existed
    assert AIMConfig.from_dict(old).targets is None
    assert "targets: z, y" in loaded.summary()


@pytest.mark.parametrize("targets, error, match", [
    ([], ValueError, "empty"),
    (["y", "y"], ValueError, "more than once"),
    ("y", TypeError, "string"),
    ([""], TypeError, "non-empty"),
    ([3], TypeError, "attribute names"),
    ({"y"}, TypeError, "list of attribute names"),
])  # fmt: skip
def test_bad_targets_are_refused_when_built(targets, error, match):
    with pytest.raises(error, match=match):
        AIM(1.0, targets=targets)
    with pytest.raises(ValueError, match="target_share"):
        AIM(1.0, targets=["y"], target_share=1.0)


def test_unknown_targets_fail_before_any_row_is_read():
    data = table()

    def no_rows(*args, **kwargs):
        raise AssertionError("a row was read")

    data.marginals = no_rows
    with pytest.raises(ValueError, match=r"\['income'\] are not attributes"):
        AIM(1.0, targets=["y", "income"], insecure_seed=1, **FAST).run(data)
    raw = table().to_df().astype(str)
    with pytest.raises(ValueError, match=r"\['income'\] are not columns"):
        synthesize(raw, 1.0, targets=["income"], insecure_seed=1, **FAST)


def test_synthesize_raw_with_an_inferred_spec_and_targets():
    rng = np.random.default_rng(0)
    age = rng.integers(18, 80, 800)
    raw = pd.DataFrame({"age": age, "job": rng.choice(["clerk", "nurse", "boss"], 800),
                        "paid": np.where(age + rng.normal(0, 10, 800) > 45, "yes", "no")})
    release, synthetic = synthesize(raw, 2.0, 1e-6, targets=["paid"], insecure_seed=4, **FAST)
    assert release.spec is not None and list(synthetic.columns) == ["age", "job", "paid"]
    measured = {m.clique for m in release.measurements}
    assert set(target_pairs(release.domain, ["paid"])) <= measured
    assert release.mechanism_config().targets == ("paid",)
    assert release.ledger.spent <= release.ledger.rho * (1 + BUDGET_RTOL)


def test_cli_synth_target_and_inspect(tmp_path, capsys):
    argv = ["synth", "--epsilon", "0.3", "--max-model-size", "2", "--rows", "200", "--quiet", "--insecure-seed", "1",
            "--target", "income>50K", "--target", "sex,race", "--out", str(tmp_path / "s.csv"),
            "--release", str(tmp_path / "r.npz")]  # fmt: skip
    assert main(argv) == 0
    assert "targets: income>50K, sex, race" in capsys.readouterr().out  # the summary
    release = Release.load(tmp_path / "r.npz")
    assert release.mechanism_config().targets == ("income>50K", "sex", "race")
    assert set(target_pairs(release.domain, ["income>50K", "sex", "race"])) <= {m.clique for m in release.measurements}
    assert main(["inspect", str(tmp_path / "r.npz")]) == 0
    assert "targets: income>50K, sex, race" in capsys.readouterr().out
    assert main(["inspect", str(tmp_path / "r.npz"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["targets"] == ["income>50K", "sex", "race"]


@pytest.mark.parametrize("value, match", [("salary", r"--target: targets \['salary'\]"), ("sex,sex", "more than once"),
                                          ("sex,", "empty attribute name")])  # fmt: skip
def test_cli_synth_bad_target(tmp_path, capsys, value, match):
    argv = ["synth", "--epsilon", "0.3", "--target", value, "--out", str(tmp_path / "s.csv"),
            "--release", str(tmp_path / "r.npz")]
    assert main(argv) == 2
    assert re.search(match, capsys.readouterr().err)
    assert not (tmp_path / "r.npz").exists()


def test_neighbours_differ_in_the_target_pairs_by_one_count_only():
    """D and D plus one adversarial row (every attribute at its last level), same seed: the init phase
    charges the same sigmas, and each target pair's noisy table moves by exactly that row's cell (L2 1,
    the sensitivity charged); nothing but the noise hides it."""
    data = table(600, 4)
    row = pd.DataFrame([{a: m - 1 for a, m in SIZES.items()}])
    plus = Dataset(pd.concat([data.to_df(), row], ignore_index=True), data.domain)
    options = dict(targets=["y"], target_share=0.3, insecure_seed=11, **FAST)  # a given share: no noisy-total rule
    runs = [AIM(1.0, 1e-6, **options).run(d) for d in (data, plus)]
    pairs = target_pairs(data.domain, ["y"])
    first = len(SIZES) + len(pairs)
    for pair, (m0, m1) in zip(pairs, zip(*(r.measurements[len(SIZES):first] for r in runs))):
        assert m0.clique == m1.clique == pair and m0.sigma == m1.sigma
        moved = m1.noisy_counts - m0.noisy_counts  # same seed, same sigma: the same noise draws cancel
        cell = tuple(SIZES[a] - 1 for a in pair)
        expected = np.zeros_like(moved)
        expected[cell] = 1.0
        np.testing.assert_array_equal(moved, expected)
        assert np.linalg.norm(plus.marginal(pair) - data.marginal(pair)) == 1.0  # the L2 sensitivity charged
    charges = [[(c.label, c.rho) for c in r.ledger.charges[:first]] for r in runs]
    assert charges[0] == charges[1]  # the init phase's prices do not depend on the rows
