"""Person-level privacy (`marginals.units`, ``AIM(..., unit=, max_rows_per_unit=k)``,
``synthesize(unit=...)``, ``synth --unit``): contribution bounding keeps min(count, k) rows per
unit whatever the other units hold; every noisy quantity moves by at most the derived
sensitivity k when a whole unit is added (k adversarial rows in one cell), while the noise is k
times larger; the ledger, header, summary and report state the unit; the unit column is never
released; bad input fails clearly."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import aim.mechanism as aim_mechanism
from aim import AIM, AIMConfig, Release, synthesize
from aim.mechanism import _l1_distances
from aim.release_checks import ReleaseFormatError
from aim.report import guarantee
from aim.targets import needed_share, pair_sigmas, target_pairs
from aim.workload import candidates, normalize_workload
from ddssp.cli import main
from marginals import Accountant, Dataset, Domain
from marginals.dataset import DataError
from marginals.exact import noise_variance
from marginals.mechanisms import measure_counts, selection_probabilities
from marginals.randomness import InsecureRandom
from marginals.units import PrivacyUnit, bound_dataset, bound_rows, check_unit, unit_ids, unit_key

pytestmark = pytest.mark.filterwarnings("ignore::marginals.randomness.InsecureSeedWarning",
                                        "ignore::aim.release.NotPrivateWarning")
FAST = {"rounds": 12, "max_iters": 5, "final_iters": 10}
SIZES = {"a": 3, "b": 4, "c": 2}
DOMAIN = Domain.from_dict(SIZES)


def table(n: int = 600, units: int = 200, seed: int = 0) -> tuple[Dataset, np.ndarray]:
    rng = np.random.default_rng(seed)
    cols = {name: rng.integers(0, m, n) for name, m in SIZES.items()}
    return Dataset(pd.DataFrame(cols), DOMAIN), rng.integers(0, units, n)


def key(seed: int = 1) -> np.ndarray:
    return unit_key(InsecureRandom(seed, warn=False))


# --- contribution bounding --------------------------------------------------------------------------


@pytest.mark.parametrize("k", [1, 2, 4])
@pytest.mark.parametrize("as_text", [False, True])
def test_bounding_keeps_min_count_k_rows_per_unit(k, as_text):
    rng = np.random.default_rng(k)
    ids = rng.integers(0, 60, 1000)
    ids = np.array([f"u{i}" for i in ids], dtype=object) if as_text else ids
    keep = bound_rows(ids, k, key())
    counts = pd.Series(ids).value_counts()
    kept = pd.Series(ids[keep]).value_counts().reindex(counts.index, fill_value=0)
    np.testing.assert_array_equal(kept.to_numpy(), np.minimum(counts.to_numpy(), k))


def test_a_units_choice_does_not_depend_on_other_units():
    """Unit 7's kept rows (by occurrence index) are the same with other units added, removed or
    interleaved differently; only the key changes them."""
    rng = np.random.default_rng(0)
    mine = np.full(9, 7)

    def kept_occurrences(ids, k=3, kk=None):
        keep = bound_rows(ids, k, key() if kk is None else kk)
        return tuple(np.flatnonzero(keep[ids == 7]))

    alone = kept_occurrences(mine)
    for trial in range(5):
        others = rng.integers(100, 200, rng.integers(0, 400))
        ids = np.concatenate([others, mine])
        ids = ids[np.argsort(rng.random(len(ids)), kind="stable")]  # other units interleaved anywhere
        assert kept_occurrences(ids) == alone
    assert len(alone) == 3
    assert len({kept_occurrences(mine, kk=key(s)) for s in range(20)}) > 1  # the key decides, not the order


def test_bounded_neighbours_differ_by_the_units_rows_only():
    data, ids = table()
    unit = PrivacyUnit("pid", 4)
    extra = pd.DataFrame([{a: m - 1 for a, m in SIZES.items()}] * 7)  # a unit of 7 rows, all in one cell
    plus = Dataset(pd.concat([data.to_df(), extra], ignore_index=True), DOMAIN)
    plus_ids = np.concatenate([ids, np.full(7, 10_000)])
    small = bound_dataset(data, ids, unit, InsecureRandom(5, warn=False))
    big = bound_dataset(plus, plus_ids, unit, InsecureRandom(5, warn=False))
    for clique in [("a",), ("a", "b"), ("a", "b", "c")]:
        diff = big.marginal(clique) - small.marginal(clique)
        assert np.abs(diff).sum() == 4 and np.linalg.norm(diff) == 4  # L1 = L2 = k: all k rows in one cell
        assert diff[tuple(SIZES[a] - 1 for a in clique)] == 4


# --- the sensitivity of every mechanism -------------------------------------------------------------


def test_a_measurement_is_charged_for_k():
    ledger = Accountant(10.0)
    m = measure_counts(np.array([3, 4]), ("a",), 5.0, InsecureRandom(0, warn=False), ledger, sensitivity=4.0)
    variance = noise_variance(5.0)
    assert ledger.spent == pytest.approx(16 / (2 * float(variance)), rel=1e-12)
    assert ledger.charges[0].params["sensitivity"] == 4.0 and m.sigma == float(variance) ** 0.5
    with pytest.raises(ValueError, match="sensitivity"):
        measure_counts(np.array([3]), ("a",), 5.0, InsecureRandom(0, warn=False), ledger, sensitivity=0.5)


def test_target_budgets_scale_with_k():
    pairs = target_pairs(DOMAIN, ["c"])
    one, four = (pair_sigmas(DOMAIN, pairs, 0.5, 0.3, sensitivity=s) for s in (1.0, 4.0))
    np.testing.assert_allclose(four, 4 * np.array(one), rtol=1e-12)
    assert needed_share(DOMAIN, pairs, 0.5, 300.0, sensitivity=4.0) == pytest.approx(
        16 * needed_share(DOMAIN, pairs, 0.5, 300.0))


def test_selection_sensitivity_is_k_times_the_weight_and_bounds_the_scores(monkeypatch):
    """The exponential mechanism is run with sensitivity k max w; with the model held fixed (what
    the current round conditions on), adding a unit moves every score by at most k w_r."""
    seen = []
    real = aim_mechanism.exponential_mechanism

    def spy(scores, epsilon, sensitivity, rng, ledger, label):
        seen.append(sensitivity)
        return real(scores, epsilon, sensitivity, rng, ledger, label)

    monkeypatch.setattr(aim_mechanism, "exponential_mechanism", spy)
    data, ids = table()
    workload = [(("a", "b"), 2.0), (("b", "c"), 0.5)]
    release = AIM(1.0, unit="pid", max_rows_per_unit=3, workload=workload, insecure_seed=2, **FAST).run(data, units=ids)
    weights = candidates(DOMAIN, normalize_workload(DOMAIN, workload))  # every candidate passes the size filter here
    assert len(seen) == len(release.rounds) and all(s == 3 * max(weights.values()) for s in seen)
    extra = pd.DataFrame([{a: m - 1 for a, m in SIZES.items()}] * 3)
    plus = Dataset(pd.concat([data.to_df(), extra], ignore_index=True), DOMAIN)
    cliques = [c for c, _ in workload]
    estimates = release.model.marginals(cliques)  # any fixed model
    sizes = np.array([e.size for e in estimates])
    l1 = [_l1_distances(d.marginals(cliques), estimates, sizes) for d in (data, plus)]
    assert np.all(np.abs(l1[1] - l1[0]) <= 3 + 1e-9)



def test_the_selection_loss_on_whole_unit_neighbours_is_within_epsilon_at_k_max_w():
    """Adversarial estimates (one candidate's estimate far below the unit's cell, one far above):
    adding the unit's k rows moves the two scores by +k w and -k w; at sensitivity k max w the
    selection's privacy loss stays within eps, at max w (k forgotten) it exceeds it."""
    k, eps = 3, 1.0
    data, ids = table()
    extra = pd.DataFrame([{a: m - 1 for a, m in SIZES.items()}] * 5)
    plus = Dataset(pd.concat([data.to_df(), extra], ignore_index=True), DOMAIN)
    unit = PrivacyUnit("pid", k)
    bounded = [bound_dataset(d, u, unit, InsecureRandom(7, warn=False))
               for d, u in ((data, ids), (plus, np.r_[ids, np.full(5, -1)]))]
    cliques = [("a", "b"), ("b", "c")]
    weights = candidates(DOMAIN, normalize_workload(DOMAIN, [(cliques[0], 2.0), (cliques[1], 0.5)]))
    w = np.array([weights[c] for c in cliques])
    estimates = [m.astype(float) for m in bounded[0].marginals(cliques)]
    for est, clique, shift in zip(estimates, cliques, (-100.0, 100.0)):
        est[tuple(SIZES[a] - 1 for a in clique)] += shift
    sizes = np.array([e.size for e in estimates])
    scores = [w * (_l1_distances(d.marginals(cliques), estimates, sizes) - 0.5 * sizes) for d in bounded]
    np.testing.assert_allclose(scores[1] - scores[0], [k * w[0], -k * w[1]])
    loss = [np.max(np.abs(np.log(selection_probabilities(scores[0], eps, s) / selection_probabilities(scores[1], eps, s))))
            for s in (k * w.max(), w.max())]
    assert loss[0] <= eps + 1e-9 < loss[1]


def _adversarial_pair(rows: int = 6):
    data, ids = table()
    extra = pd.DataFrame([{a: m - 1 for a, m in SIZES.items()}] * rows)  # one unit, all rows in one cell
    plus = Dataset(pd.concat([data.to_df(), extra], ignore_index=True), DOMAIN)
    return (data, ids), (plus, np.concatenate([ids, np.full(rows, -1)]))


@pytest.mark.parametrize("k", [1, 4])
def test_neighbours_one_whole_unit_moves_each_noisy_count_by_at_most_k(k):
    """D and D plus one unit of 6 adversarial rows (all in one cell), the same seed: the 1-way and
    target-pair measurements (same key, same noise draws) differ by exactly min(6, k) in that cell,
    the charges do not depend on the rows, and every sigma is k times the row-level run's."""
    (data, ids), (plus, plus_ids) = _adversarial_pair()
    options = dict(targets=["c"], target_share=0.3, insecure_seed=11, **FAST)  # a given share: no noisy-total rule
    runs = [AIM(1.0, 1e-6, unit="pid", max_rows_per_unit=k, **options).run(d, units=u)
            for d, u in ((data, ids), (plus, plus_ids))]
    row_level = AIM(1.0, 1e-6, **options).run(data)
    init = len(SIZES) + len(target_pairs(DOMAIN, ["c"]))  # the 1-way and the target-pair measurements
    for i in range(init):
        m0, m1 = runs[0].measurements[i], runs[1].measurements[i]
        assert m0.clique == m1.clique and m0.sigma == m1.sigma
        moved = m1.noisy_counts - m0.noisy_counts
        expected = np.zeros_like(moved)
        expected[tuple(SIZES[a] - 1 for a in m0.clique)] = min(6, k)
        np.testing.assert_array_equal(moved, expected)  # L1 = L2 = k: the sensitivity charged
        assert m0.sigma == pytest.approx(k * row_level.measurements[i].sigma, rel=1e-6)
    init = [[(c.label, c.rho, c.params) for c in r.ledger.charges[:init]] for r in runs]
    assert init[0] == init[1] and all(p["sensitivity"] == k for _, _, p in init[0])
    for r in runs:
        assert r.ledger.spent <= r.ledger.rho * (1 + 1e-9)
        assert all(c.params.get("sensitivity", k) == k for c in r.ledger.charges)


def test_removing_a_unit_with_fewer_rows_than_k():
    (data, ids), (plus, plus_ids) = _adversarial_pair(rows=2)
    runs = [AIM(1.0, unit="pid", max_rows_per_unit=4, insecure_seed=3, **FAST).run(d, units=u)
            for d, u in ((plus, plus_ids), (data, ids))]
    moved = runs[0].measurements[0].noisy_counts - runs[1].measurements[0].noisy_counts
    np.testing.assert_array_equal(moved, [0, 0, 2])


def test_targets_with_a_unit_are_k_times_noisier():
    data, ids = table()
    options = dict(targets=["c"], target_share=0.3, insecure_seed=4, **FAST)
    unit = AIM(1.0, unit="pid", max_rows_per_unit=2, **options).run(data, units=ids)
    rows = AIM(1.0, **options).run(data)
    n = len(SIZES) + len(target_pairs(DOMAIN, ["c"]))
    for a, b in zip(unit.measurements[:n], rows.measurements[:n]):
        assert a.clique == b.clique and a.sigma == pytest.approx(2 * b.sigma, rel=1e-6)


# --- what the release says, and what it never holds ----------------------------------------------------


def test_ledger_header_summary_and_report_state_the_unit(tmp_path):
    data, ids = table()
    release = AIM(1.0, unit="person_id", max_rows_per_unit=4, insecure_seed=1, **FAST).run(data, units=ids)
    path = tmp_path / "r.npz"
    release.save(path)
    with np.load(path) as npz:
        header = json.loads(str(npz["header"]))
    assert header["version"] == 5 and header["ledger"]["unit"] == {"column": "person_id", "max_rows": 4}
    assert header["config"]["mechanism"]["unit"] == "person_id" and header["config"]["mechanism"]["max_rows_per_unit"] == 4
    again = Release.load(path)
    assert again.privacy_unit == PrivacyUnit("person_id", 4) == again.mechanism_config().privacy_unit
    text = again.summary()
    assert "privacy unit: one person_id (all rows with one value of column 'person_id'), up to 4 rows each" in text
    html = guarantee.render(again)
    assert "Privacy unit: one person_id" in html and "priced for sensitivity 4" in html and "one row</strong>" not in html
    for name in ("person_id",):
        assert name not in again.domain.attrs and name not in again.synthetic_data(50, rng=0).columns


def test_a_row_level_release_is_unchanged(tmp_path):
    data, _ = table()
    release = AIM(1.0, insecure_seed=1, **FAST).run(data)
    release.save(tmp_path / "r.npz")
    with np.load(tmp_path / "r.npz") as npz:
        header = json.loads(str(npz["header"]))
    assert header["version"] == 4 and "unit" not in header["ledger"] and "unit" not in header["config"]["mechanism"]
    assert release.privacy_unit is None and "privacy unit" not in release.summary()
    assert "Privacy unit: one row" in guarantee.render(release)
    assert all(c.params.get("sensitivity", 1.0) == 1.0 for c in release.ledger.charges)


def test_a_file_claiming_a_unit_its_noise_was_not_priced_for_is_refused(tmp_path):
    data, _ = table()
    AIM(1.0, insecure_seed=1, **FAST).run(data).save(tmp_path / "r.npz")
    with np.load(tmp_path / "r.npz") as npz:
        arrays = {k: npz[k] for k in npz.files}
    header = json.loads(str(arrays["header"]))
    header.update(version=5)
    header["ledger"]["unit"] = {"column": "pid", "max_rows": 4}
    header["config"]["mechanism"].update(unit="pid", max_rows_per_unit=4)
    arrays["header"] = np.array(json.dumps(header))
    np.savez_compressed(tmp_path / "bad.npz", **arrays)
    with pytest.raises(ReleaseFormatError, match="priced for sensitivity 1.0"):
        Release.load(tmp_path / "bad.npz")
    header["config"]["mechanism"].update(max_rows_per_unit=2)
    arrays["header"] = np.array(json.dumps(header))
    np.savez_compressed(tmp_path / "bad2.npz", **arrays)
    with pytest.raises(ReleaseFormatError, match="differs from the ledger"):
        Release.load(tmp_path / "bad2.npz")


def test_synthesize_with_a_unit_never_releases_the_column():
    rng = np.random.default_rng(0)
    raw = pd.DataFrame({"person_id": [f"p{i}" for i in rng.integers(0, 100, 400)], "sex": rng.choice(["F", "M"], 400),
                        "age": rng.integers(18, 80, 400)})
    schema = {"columns": {"sex": {"type": "categorical", "categories": ["F", "M"]},
                          "age": {"type": "numeric", "lo": 18, "hi": 80}}}
    release, synthetic = synthesize(raw, 1.0, schema=schema, unit="person_id", max_rows_per_unit=3, insecure_seed=3,
                                    **FAST)
    assert list(synthetic.columns) == ["sex", "age"] and "person_id" not in release.spec["columns"]
    assert release.privacy_unit == PrivacyUnit("person_id", 3)
    assert all(c.params.get("sensitivity", 3) == 3 for c in release.ledger.charges)
    with pytest.raises(ValueError, match="DP spec inference is priced for one row"):
        synthesize(raw, 1.0, unit="person_id", max_rows_per_unit=3, insecure_seed=3)
    with pytest.raises(ValueError, match="it would be released"):
        synthesize(raw, 1.0, schema={"columns": {**schema["columns"], "person_id": {"type": "categorical",
                   "categories": ["p1"]}}}, unit="person_id", max_rows_per_unit=3, insecure_seed=3)


# --- bad input --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("unit, k, error, match", [
    ("pid", None, ValueError, "needs max_rows_per_unit"), (None, 3, ValueError, "needs unit"),
    ("pid", 0, ValueError, ">= 1"), ("pid", 2.0, TypeError, "integer"), ("pid", True, TypeError, "integer"),
    ("", 2, TypeError, "column name"), (3, 2, TypeError, "column name"),
])  # fmt: skip
def test_bad_unit_settings(unit, k, error, match):
    with pytest.raises(error, match=match):
        check_unit(unit, k)
    with pytest.raises(error, match=match):
        AIMConfig(1.0, unit=unit, max_rows_per_unit=k)


def test_bad_units_for_a_run():
    data, ids = table()
    with pytest.raises(ValueError, match="units are required with unit='pid'"):
        AIM(1.0, unit="pid", max_rows_per_unit=2, insecure_seed=1).run(data)
    with pytest.raises(ValueError, match="no unit="):
        AIM(1.0, insecure_seed=1).run(data, units=ids)
    with pytest.raises(ValueError, match="expected one per row"):
        AIM(1.0, unit="pid", max_rows_per_unit=2, insecure_seed=1).run(data, units=ids[:-1])
    with pytest.raises(ValueError, match="is an attribute of the domain"):
        AIM(1.0, unit="a", max_rows_per_unit=2, insecure_seed=1).run(data, units=ids)
    with pytest.raises(ValueError, match="not a column"):
        AIM(1.0, unit="pid", max_rows_per_unit=2, insecure_seed=1).run(data, units=pd.DataFrame({"x": ids}))
    nan_ids = ids.astype(float)
    nan_ids[5] = np.nan
    with pytest.raises(DataError, match="missing unit id") as info:
        AIM(1.0, unit="pid", max_rows_per_unit=2, insecure_seed=1).run(data, units=nan_ids)
    assert "1 missing" not in str(info.value) and info.value.detail  # the count only in the private detail
    with pytest.raises(DataError, match="missing unit id"):
        unit_ids(pd.Series(["a", " ", "b"]), "pid")
    release = AIM(1.0, unit="pid", max_rows_per_unit=2, insecure_seed=1, **FAST).run(
        data, units=pd.DataFrame({"pid": ids}))  # a DataFrame holding the column is read too
    assert release.privacy_unit.max_rows == 2


# --- the command line --------------------------------------------------------------------------------------


@pytest.fixture()
def files(tmp_path):
    rng = np.random.default_rng(0)
    n = 300
    pd.DataFrame({"person_id": rng.integers(0, 80, n), "a": rng.integers(0, 3, n), "b": rng.integers(0, 2, n)}).to_csv(
        tmp_path / "codes.csv", index=False)
    (tmp_path / "domain.json").write_text(json.dumps({"a": 3, "b": 2}))
    raw = pd.DataFrame({"sex": rng.choice(["F", "M"], n), "person_id": [f"p{i}" for i in rng.integers(0, 80, n)],
                        "yes": rng.choice(["y", "n"], n)})
    raw.to_csv(tmp_path / "raw.csv", index=False)
    cat = {"type": "categorical"}
    spec = {"columns": {"sex": {**cat, "categories": ["F", "M"]}, "yes": {**cat, "categories": ["y", "n"]}}}
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    return tmp_path


@pytest.mark.parametrize("inputs", [["--domain", "domain.json"], ["--spec", "spec.json"]])
def test_cli_synth_unit_end_to_end(files, capsys, inputs):
    data = "codes.csv" if inputs[0] == "--domain" else "raw.csv"
    argv = ["synth", "--data", str(files / data), *[str(files / v) if v.endswith(".json") else v for v in inputs],
            "--unit", "person_id", "--max-rows-per-unit", "2", "--insecure-seed", "1", "--quiet",
            "--out", str(files / "s.csv"), "--release", str(files / "r.npz"), "--rows", "40"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "privacy unit: one person_id" in out and "up to 2 rows each" in out
    assert "person_id" not in pd.read_csv(files / "s.csv").columns
    assert Release.load(files / "r.npz").privacy_unit == PrivacyUnit("person_id", 2)


@pytest.mark.parametrize("flags, match", [
    (["--unit", "person_id"], "go together"), (["--max-rows-per-unit", "2"], "go together"),
    (["--unit", "pid", "--max-rows-per-unit", "2"], "not a column"),
    (["--unit", "person_id", "--max-rows-per-unit", "0"], "positive integer"),
])  # fmt: skip
def test_cli_synth_bad_unit_flags(files, capsys, flags, match):
    argv = ["synth", "--data", str(files / "codes.csv"), "--domain", str(files / "domain.json"), *flags,
            "--insecure-seed", "1", "--quiet", "--out", str(files / "s.csv"), "--release", str(files / "r.npz")]
    assert main(argv) == 2
    assert match in capsys.readouterr().err
    assert not (files / "r.npz").exists()


def test_cli_synth_unit_needs_a_public_spec_or_a_data_file(files, capsys):
    base = ["--unit", "person_id", "--max-rows-per-unit", "2", "--insecure-seed", "1", "--quiet",
            "--out", str(files / "s.csv"), "--release", str(files / "r.npz")]
    assert main(["synth", "--data", str(files / "raw.csv"), *base]) == 2
    assert "priced for one row" in capsys.readouterr().err
    assert main(["synth", *base]) == 2  # the shipped data set has no unit column
    assert "--unit needs --data" in capsys.readouterr().err


def test_cli_reads_unit_ids_as_text(files):
    """A codes CSV's unit column is read as text: '007' and '7' stay two units whatever other rows
    hold (pandas' type inference across rows would merge them only when no row is text)."""
    from ddssp.cli.app import build_parser
    from ddssp.cli.synth import load_unit_input

    (files / "ids.csv").write_text("person_id,a,b\n007,0,1\n7,1,0\n007,2,1\n")
    args = build_parser().parse_args(["synth", "--data", str(files / "ids.csv"), "--domain", str(files / "domain.json"),
                                      "--unit", "person_id", "--max-rows-per-unit", "1"])
    data, disc, ids = load_unit_input(args, "person_id")
    assert list(ids) == ["007", "7", "007"] and disc is None and data.domain.attrs == ("a", "b")


def test_the_default_secure_source_bounds_and_measures_too():
    data, ids = table()
    release = AIM(1.0, unit="pid", max_rows_per_unit=2, **FAST).run(data, units=ids)  # no seed: the OS's source
    assert release.private and release.privacy_unit == PrivacyUnit("pid", 2)
    assert all(c.params.get("sensitivity", 2) == 2 for c in release.ledger.charges)
