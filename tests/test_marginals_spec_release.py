"""Releases that carry their spec: `aim.raw.synthesize` on one ledger (spec charges first, total
within budget), readable synthetic rows in the original types, the file round trip, and strict
checks of the new header fields."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

from aim import AIM, Release, ReleaseFormatError
from aim.raw import SPEC_SHARE, THRESHOLD_DELTA_SHARE, aim_epsilon, synthesize
from ddssp import AIMSynth
from marginals import Discretizer, cdp_rho
from marginals.privacy import BUDGET_RTOL, cdp_eps

pytestmark = pytest.mark.filterwarnings("ignore::marginals.randomness.InsecureSeedWarning",
                                        "ignore::aim.release.NotPrivateWarning")
FAST = {"rounds": 8, "max_iters": 10, "final_iters": 50}


def raw_table(n: int = 3000, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    age = rng.integers(18, 80, n)
    job = np.where(age > 50, rng.choice(["boss", "clerk"], n), rng.choice(["clerk", "nurse", "?"], n))
    job[0] = "astronaut"  # unique: must never reach the spec
    return pd.DataFrame({"age": age, "job": job, "score": rng.normal(50, 10, n).round(2),
                         "paid": np.where(age + rng.normal(0, 10, n) > 45, "yes", "no")})


@pytest.fixture(scope="module")
def inferred():
    return synthesize(raw_table(), epsilon=4.0, delta=1e-6, insecure_seed=3, sample_seed=1, **FAST)


def test_one_ledger_spec_charges_first_and_within_budget(inferred):
    release, _ = inferred
    ledger = release.ledger
    threshold_delta = 1e-6 * THRESHOLD_DELTA_SHARE
    assert ledger.delta == pytest.approx(1e-6 - threshold_delta, rel=1e-12)
    assert ledger.rho == cdp_rho(4.0, ledger.delta)
    assert ledger.spent <= ledger.rho * (1 + BUDGET_RTOL)
    spec_charges = [c for c in ledger.charges if c.label.startswith("spec ")]
    assert ledger.charges[: len(spec_charges)] == tuple(spec_charges) and len(spec_charges) >= 8
    assert [c.label for c in spec_charges[:4]] == [f"spec {c}: type profile" for c in ("age", "job", "score", "paid")]
    assert sum(c.rho for c in spec_charges) <= SPEC_SHARE * ledger.rho * (1 + 1e-12)
    assert sum(c.params.get("delta", 0) for c in ledger.charges) <= threshold_delta
    split = release.spec_config()
    assert split.epsilon == release.epsilon == 4.0 and split.delta == release.delta == 1e-6
    assert split.threshold_delta == threshold_delta
    assert release.mechanism_config().epsilon == split.aim_epsilon and release.mechanism_config().delta == ledger.delta
    assert "thresholded histograms (DP spec)" in release.summary() and release.private is False


def test_the_unique_value_is_not_in_the_spec_and_rows_are_readable(inferred):
    release, synthetic = inferred
    spec = release.spec["columns"]
    assert "astronaut" not in spec["job"]["categories"]
    assert list(synthetic.columns) == ["age", "job", "score", "paid"] and len(synthetic) == round(release.total)
    assert isinstance(synthetic["job"].dtype, pd.CategoricalDtype)
    assert spec["job"]["unseen"] == "other" and spec["paid"]["unseen"] == "other"  # always: the astronaut is kept
    assert list(synthetic["job"].cat.categories) == spec["job"]["categories"] + ["<other>"]
    assert list(synthetic["paid"].cat.categories) == ["no", "yes", "<other>"]
    edges = spec["age"]["edges"]
    assert synthetic["age"].dtype == pd.Int64Dtype()  # integers, with a missing level (every inferred column has one)
    assert synthetic["age"].dropna().between(edges[0], edges[-1]).all()
    assert synthetic["score"].dtype == np.float64
    assert synthetic["job"].isna().any() == (spec["job"]["missing"] == "level")


def test_the_spec_survives_the_file_and_decoding_modes(inferred, tmp_path):
    release, _ = inferred
    release.save(tmp_path / "r.npz")
    loaded = Release.load(tmp_path / "r.npz")
    assert loaded.spec == release.spec and loaded.delta == release.delta
    pd.testing.assert_frame_equal(loaded.synthetic_data(200, rng=4), release.synthetic_data(200, rng=4))
    codes = loaded.synthetic_codes(200, rng=4)
    assert set(codes.dtypes.map(lambda d: d.kind)) <= {"i", "u"}
    disc = loaded.discretizer
    mid = loaded.synthetic_data(200, rng=4, numeric="midpoint")
    edges = np.array(release.spec["columns"]["age"]["edges"])
    assert set(mid["age"]) <= set((np.ceil(edges[:-1]) + np.append(np.ceil(edges[1:-1]) - 1, edges[-1])) // 2)
    intervals = loaded.synthetic_data(200, rng=4, numeric="interval")
    assert list(intervals["age"].cat.categories) == disc.labels("age")[:-1]  # the missing level decodes as NaN
    pd.testing.assert_frame_equal(disc.transform_df(loaded.synthetic_data(200, rng=4)), codes, check_dtype=False)


def test_releases_without_a_spec_behave_as_before():
    table = raw_table(800)
    disc = Discretizer.from_spec({"unseen": "other", "missing": "level", "missing_markers": ["?"], "columns": {
        "job": {"type": "categorical", "categories": ["boss", "clerk", "nurse"]},
        "paid": {"type": "categorical", "categories": ["no", "yes"], "unseen": "error", "missing": "error"}}})
    release = AIM(2.0, insecure_seed=1, **FAST).run(disc.transform(table, extra="drop"))
    rows = release.synthetic_data(50, rng=0)
    assert release.spec is None and set(rows.dtypes.map(lambda d: d.kind)) <= {"i", "u"}
    with pytest.raises(ValueError, match="decode=True needs a release with a spec"):
        release.synthetic_data(5, rng=0, decode=True)
    with pytest.raises(ValueError, match="differs from the release's"):
        release.with_spec({"columns": {"job": {"type": "categorical", "categories": ["a"]}}})
    labelled = release.with_spec(disc)
    assert labelled.synthetic_data(50, rng=0)["paid"].dtype == "category"
    AIMSynth(target="paid", task="logistic", random_state=0).fit(labelled)  # fitted on codes, not labels
    assert labelled.without(["job"]).synthetic_data(5, rng=0).columns.tolist() == ["paid"]


def test_a_complete_public_spec_costs_nothing_beyond_aim():
    schema = {"missing_markers": ["?"], "columns": {
        "age": {"type": "integer", "lo": 18, "hi": 80},
        "job": {"type": "categorical", "categories": ["boss", "clerk", "nurse"], "missing": "level"},
        "paid": {"type": "categorical", "categories": ["no", "yes"]}}}
    release, synthetic = synthesize(raw_table(800), epsilon=1.0, schema=schema, insecure_seed=2, **FAST)
    assert not any(c.label.startswith("spec ") for c in release.ledger.charges)
    assert release.ledger.delta == 1e-9 and release.spec_config() is None and set(release.config) == {"mechanism"}
    assert release.spec["columns"]["job"]["categories"] == ["boss", "clerk", "nurse"]
    assert list(synthetic.columns) == ["age", "job", "paid"]  # the schema's columns; score is left out


def test_aim_epsilon_fits_the_remaining_budget():
    for rho in (1e-4, 0.0137, 2.5):
        eps = aim_epsilon(rho, 1e-9)
        assert cdp_rho(eps, 1e-9) <= rho and eps <= cdp_eps(rho, 1e-9)


def test_synthesize_rejects_bad_arguments():
    table = raw_table(100)
    with pytest.raises(ValueError, match="spec_share must lie in"):
        synthesize(table, 1.0, spec_share=1.0)
    with pytest.raises(ValueError, match="not both"):
        synthesize(table, 1.0, spec={"columns": {}}, schema=["age"])
    with pytest.raises(TypeError, match="DataFrame of raw values"):
        synthesize(table.to_numpy(), 1.0)


# --- the file's new fields are checked like the rest ---------------------------------------------


def _flat_config(config: dict) -> dict:
    """The one flat config of format versions 2 and 3: AIM's fields (its name under "mechanism"),
    then a raw run's budget split, whose epsilon and delta (the whole run's) replace AIM's."""
    mechanism = {("mechanism" if k == "name" else k): v for k, v in config["mechanism"].items()}
    return {**mechanism, **config.get("spec", {})}


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda h: h["spec"]["columns"]["job"].update(categories=["only"]), "release spec describes"),
        (lambda h: h["spec"]["columns"]["age"].update(edges=[3, 1]), "release spec is invalid"),
        (lambda h: h.update(spec=[1, 2]), "release spec must be a JSON object"),
        (lambda h: h.update(version=2, config=_flat_config(h["config"])), "version 2 has no spec"),
        (lambda h: h["config"]["spec"].update(threshold_delta=1e-12), "more than the"),
        (lambda h: h["config"]["spec"].update(threshold_delta=-1.0), "threshold_delta must lie in"),
        (lambda h: h["config"]["spec"].update(delta=2e-6), "does not match the ledger's delta"),
        (lambda h: h["ledger"]["charges"][3]["params"].update(delta="x"), "delta must lie in"),
    ],
)
def test_tampered_spec_fields_are_refused(inferred, tmp_path, edit, message, rewrite_release):
    release, _ = inferred
    release.save(tmp_path / "r.npz")
    rewrite_release(tmp_path / "r.npz", tmp_path / "bad.npz", edit)
    with pytest.raises(ReleaseFormatError, match=message):
        Release.load(tmp_path / "bad.npz")


def test_version_2_files_without_a_spec_are_still_read(inferred, tmp_path, rewrite_release):
    release, _ = inferred
    dataclasses.replace(release, spec=None).save(tmp_path / "r.npz")

    def downgrade(h):
        h.update(version=2, config=_flat_config(h["config"]))
        del h["spec"]

    rewrite_release(tmp_path / "r.npz", tmp_path / "v2.npz", downgrade)
    loaded = Release.load(tmp_path / "v2.npz")
    assert loaded.spec is None and set(loaded.synthetic_data(10, rng=0).dtypes.map(lambda d: d.kind)) <= {"i", "u"}
    assert loaded.config == release.config  # the flat config read back in parts
