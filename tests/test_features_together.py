"""Issue 28's features on one release, as a data steward would combine them: a person-level unit, public
rules, a regression target and a spec in one `aim.synthesize` run (and the same through the CLI), then
conditional rows, rows that never break a rule, a release that survives save / load, and DD-SSP on it."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from aim import Release, synthesize
from ddssp import DDSSPLinearRegression
from ddssp.cli import main
from marginals.units import PrivacyUnit

MARITAL = ["Never-married", "Married", "Divorced"]
SPEC = {
    "columns": {
        "age": {"type": "numeric", "edges": [0, 16, 30, 50, 80], "integer": True},
        "marital": {"type": "categorical", "categories": MARITAL},
        "relationship": {"type": "categorical", "categories": ["Husband", "Wife", "Child", "Other"]},
        "sex": {"type": "categorical", "categories": ["Female", "Male"]},
        "hours": {"type": "numeric", "edges": [0, 20, 40, 60, 100]},
    },
    "rules": [
        {"if": {"age": "<16"}, "then": {"marital": ["Never-married"]}},
        {"forbid": {"relationship": "Husband", "sex": "Female"}, "name": "a husband is male"},
    ],
}
FAST = {"rounds": 12, "max_iters": 5, "final_iters": 10}


def _raw(n: int = 1500, seed: int = 0) -> pd.DataFrame:
    """Households of 1-5 rows that keep the rules (plus two rows that break them: the rules win)."""
    rng = np.random.default_rng(seed)
    person = np.repeat(np.arange(n), rng.integers(1, 6, n))[:n]
    age = rng.integers(0, 80, n)
    rel = rng.choice(["Husband", "Wife", "Child", "Other"], n)
    sex = np.where(rel == "Husband", "Male", np.where(rel == "Wife", "Female", rng.choice(["Female", "Male"], n)))
    marital = np.where(age < 16, "Never-married", rng.choice(MARITAL, n))
    sex[0], marital[1], age[1] = "Female", "Married", 10
    hours = np.clip(20 + 0.4 * age + rng.normal(0, 8, n), 0, 99)
    return pd.DataFrame({"person_id": [f"h{p}" for p in person], "age": age, "marital": marital, "relationship": rel,
                         "sex": sex, "hours": hours})


def _breaks(df: pd.DataFrame) -> int:
    """Rows breaking either rule, checked on the raw values."""
    young = df["age"].astype(float) < 16
    return int(((young & (df["marital"] != "Never-married")) | ((df["relationship"] == "Husband") & (df["sex"] == "Female"))).sum())


@pytest.fixture(scope="module")
def release() -> Release:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        release, rows = synthesize(_raw(), 2.0, spec=SPEC, unit="person_id", max_rows_per_unit=2, targets=["hours"],
                                   insecure_seed=11, sample_seed=1, rows=20_000, **FAST)  # fmt: skip
    assert _breaks(rows) == 0 and "person_id" not in rows.columns
    return release


def test_one_release_holds_unit_rules_and_targets(release, tmp_path):
    assert release.privacy_unit == PrivacyUnit("person_id", 2)
    assert len(release.constraints) == 2 and release.config["mechanism"]["targets"] == ["hours"]
    pairs = {frozenset(m.clique) for m in release.measurements if len(m.clique) == 2}
    assert {frozenset((a, "hours")) for a in ("age", "marital", "relationship", "sex")} <= pairs
    release.save(tmp_path / "r.npz")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a seeded release warns when read
        loaded = Release.load(tmp_path / "r.npz")
    assert loaded.privacy_unit == release.privacy_unit and loaded.constraints == release.constraints
    assert _breaks(loaded.synthetic_data(20_000, rng=2)) == 0


def test_conditional_rows_keep_the_rules_and_the_evidence(release):
    husbands = release.synthetic_data(5_000, given={"relationship": "Husband"}, rng=3)
    assert (husbands["relationship"] == "Husband").all() and (husbands["sex"] == "Male").all()
    young = release.synthetic_data(5_000, given={"age": (0, 15)}, rng=4)
    assert young["age"].between(0, 15).all() and (young["marital"] == "Never-married").all()
    with pytest.raises(ValueError):
        release.synthetic_data(10, given={"relationship": "Husband", "sex": "Female"}, rng=5)  # a rule forbids it
    given = pd.DataFrame({"age": [10, 40, np.nan], "relationship": ["Child", "Husband", "Wife"]})
    filled = release.synthetic_data(given=given, rng=6)
    assert len(filled) == 3 and filled.loc[1, "sex"] == "Male" and filled.loc[0, "marital"] == "Never-married"
    assert _breaks(filled) == 0 and filled["relationship"].tolist() == ["Child", "Husband", "Wife"]


def test_regression_on_the_combined_release(release):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = DDSSPLinearRegression("hours", categorical=["marital", "relationship", "sex"]).fit(release)
    assert np.all(np.isfinite(fit.coef_)) and fit.coef_.shape[0] == len(fit.encoded_feature_names_)


def test_mechanism_intervals_rerun_a_person_level_release_with_its_rules(release, monkeypatch):
    """The bootstrap reruns AIM with the release's unit (k-fold noise; each drawn row its own unit) and rules."""
    from aim import AIM

    seen = []
    run = AIM.run

    def spy(self, dataset, units=None):
        seen.append((self._config.max_rows_per_unit, None if units is None else len(np.unique(units)) == len(units),
                     len(self._config.constraints or ())))  # fmt: skip
        return run(self, dataset, units=units)

    monkeypatch.setattr(AIM, "run", spy)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = DDSSPLinearRegression("hours", categorical=["marital", "relationship", "sex"], interval="mechanism",
                                    n_boot=2, random_state=0, progress=False).fit(release)  # fmt: skip
    assert seen == [(2, True, 2)] * 2
    assert np.all(np.isfinite(fit.coef_interval_))


def test_cli_runs_the_same_combination(tmp_path, capsys):
    import json

    _raw(600, 1).to_csv(tmp_path / "raw.csv", index=False)
    (tmp_path / "spec.json").write_text(json.dumps(SPEC))
    argv = ["synth", "--data", str(tmp_path / "raw.csv"), "--spec", str(tmp_path / "spec.json"), "--unit", "person_id",
            "--max-rows-per-unit", "3", "--target", "hours", "--epsilon", "2", "--insecure-seed", "1", "--quiet",
            "--rows", "5000", "--out", str(tmp_path / "s.csv"), "--release", str(tmp_path / "r.npz")]  # fmt: skip
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "privacy unit: one person_id" in out
    rows = pd.read_csv(tmp_path / "s.csv")
    assert "person_id" not in rows.columns and _breaks(rows) == 0
