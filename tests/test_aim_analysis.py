"""A release made for its regression (``AIM(...).run(rows, analysis=estimator)``: `marginals.gradients`,
`aim.analysis`, `ddssp.newton`): the derived sensitivities hold over every row of a small domain (brute
force), the statistics equal their definitions, neighbouring tables move each measured statistic by at
most its sensitivity with identical prices, the ledger stays within the budget, the Newton step is exact
for least squares with an exact Hessian, the record survives save/load and bad files are refused, a
different regression ignores the record, and the analysis runs on every kind of release (coded, raw with
a spec, raw inferred, person-level)."""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import pandas as pd
import pytest

from aim import AIM, Release, synthesize
from aim.analysis import DEFAULT_SHARE, AnalysisRecord, run_analysis, step_budgets
from aim.release_checks import ReleaseFormatError
from ddssp import DDSSPLinearRegression, DDSSPLogisticRegression
from ddssp.newton import AnalysisMismatchWarning, penalised_fit, refined_fit, regression_spec
from marginals import Dataset, Domain
from marginals import gradients as G
from marginals.privacy import BUDGET_RTOL, Accountant
from marginals.randomness import InsecureRandom

pytestmark = pytest.mark.filterwarnings("ignore::marginals.randomness.InsecureSeedWarning",
                                        "ignore::aim.release.NotPrivateWarning")
FAST = {"rounds": 12, "max_iters": 5, "final_iters": 10}
SIZES = {"a": 3, "b": 4, "c": 5, "y": 4, "t": 2}


def table(n: int = 3000, seed: int = 0) -> Dataset:
    rng = np.random.default_rng(seed)
    cols = {name: rng.integers(0, m, n) for name, m in SIZES.items()}
    cols["y"] = np.clip(cols["a"] + (cols["c"] > 2) + rng.integers(0, 2, n) - 1, 0, 3)
    cols["t"] = (cols["a"] + cols["b"] + rng.integers(0, 3, n) > 4).astype(int)
    return Dataset(pd.DataFrame(cols), Domain.from_dict(SIZES))


def small_spec(kind: str, rng: np.random.Generator) -> G.RegressionSpec:
    """One one-hot, one numeric and one mixed-width attribute; random matrices."""
    features = (("a", np.eye(3)[1:]), ("b", rng.uniform(-1, 1, (1, 4))), ("c", rng.normal(0, 1, (2, 5))))
    values = np.array([-1.0, 1.0]) if kind == "logistic" else rng.uniform(-1, 1, 4)
    return G.RegressionSpec(kind, "t" if kind == "logistic" else "y", features, values, True)


def every_row(spec: G.RegressionSpec) -> dict[str, np.ndarray]:
    levels = [m.shape[1] for _, m in spec.features] + [spec.target_values.size]
    grid = np.array(list(itertools.product(*[range(m) for m in levels])))
    return dict(zip(spec.attrs, grid.T))


@pytest.mark.parametrize("kind", ["linear", "logistic"])
@pytest.mark.parametrize("seed", range(5))
def test_sensitivities_bound_every_row_of_the_domain(kind, seed):
    rng = np.random.default_rng(seed)
    spec = small_spec(kind, rng)
    rows = every_row(spec)
    X, y = spec.design(rows)
    z = X @ (theta := rng.normal(0, 2, spec.width))
    lo, hi = spec.score_range(theta)
    assert math.isclose(lo, z.min(), abs_tol=1e-12) and math.isclose(hi, z.max(), abs_tol=1e-12)  # exact range
    assert math.isclose(spec.max_norm(), np.linalg.norm(X, axis=1).max(), rel_tol=1e-12)
    factor = z - y if kind == "linear" else 1 / (1 + np.exp(-z)) - (y + 1) / 2
    terms = np.linalg.norm(X * factor[:, None], axis=1)  # one row's move of the gradient
    assert terms.max() <= G.gradient_sensitivity(spec, theta) * (1 + 1e-12)
    assert terms.max() >= 0.3 * G.gradient_sensitivity(spec, theta)  # the bound is not vacuous here
    other = theta + rng.normal(0, 0.3, spec.width)
    link = (lambda v: v) if kind == "linear" else (lambda v: 1 / (1 + np.exp(-v)))
    moves = np.linalg.norm(X * (link(X @ other) - link(z))[:, None], axis=1)
    assert moves.max() <= G.difference_sensitivity(spec, theta, other) * (1 + 1e-12)
    assert G.difference_sensitivity(spec, theta, other, rows_per_unit=3) == pytest.approx(3 * G.difference_sensitivity(spec, theta, other))


@pytest.mark.parametrize("kind", ["linear", "logistic"])
def test_statistics_equal_their_definitions_in_any_chunking(kind, monkeypatch):
    rng = np.random.default_rng(7)
    spec = small_spec(kind, rng)
    codes = {a: rng.integers(0, m.shape[1], 1000) for a, m in spec.features}
    codes[spec.target] = rng.integers(0, spec.target_values.size, 1000)
    theta, other = rng.normal(0, 1, spec.width), rng.normal(0, 1, spec.width)
    X, y = spec.design(codes)
    if kind == "linear":
        want = sum(x * (x @ theta - v) for x, v in zip(X, y))
    else:
        want = sum(x * (1 / (1 + np.exp(-x @ theta)) - (v + 1) / 2) for x, v in zip(X, y))
    np.testing.assert_allclose(G.gradient(spec, codes, theta), want, rtol=1e-10, atol=1e-9)
    whole = G.gradient_difference(spec, codes, theta, other)
    monkeypatch.setattr(G, "CHUNK_ROWS", 97)
    np.testing.assert_allclose(G.gradient(spec, codes, theta), want, rtol=1e-10, atol=1e-9)
    np.testing.assert_allclose(G.gradient_difference(spec, codes, theta, other), whole, rtol=1e-10, atol=1e-9)
    np.testing.assert_allclose(whole, G.gradient(spec, codes, other) - G.gradient(spec, codes, theta), rtol=1e-8, atol=1e-8)


def test_logistic_rows_outside_the_classes_count_for_nothing():
    spec = G.RegressionSpec("logistic", "y", (("a", np.eye(3)),), np.array([-1.0, 1.0, np.nan]), False)
    codes = {"a": np.array([0, 1, 2, 2]), "y": np.array([0, 1, 2, 2])}
    theta = np.array([0.5, -0.5, 3.0])
    assert G.gradient(spec, codes, theta)[2] == 0.0  # both rows of level 2 have the excluded target level
    assert G.gradient_difference(spec, codes, theta, theta + 1)[2] == 0.0


class FixedPlan:
    """A plan with public points fixed in advance (the neighbouring test compares one mechanism)."""

    def __init__(self, spec, points):
        self.spec, self.points = spec, points

    def analysis_plan(self, release):
        return self.spec, len(self.points), 0.7

    def analysis_point(self, release, spec, points, stats):
        return self.points[len(points)]


@pytest.mark.parametrize("kind", ["linear", "logistic"])
def test_neighbouring_tables_move_each_statistic_by_at_most_its_sensitivity(kind):
    rng = np.random.default_rng(11)
    spec = small_spec(kind, rng)
    points = [rng.normal(0, 1, spec.width), rng.normal(0, 1, spec.width)]
    points[1] = points[0] + 0.3 * (points[1] - points[0])
    data = table()
    rows = every_row(spec)  # the adversarial row: the largest gradient term over the domain
    X, y = spec.design(rows)
    z = X @ points[0]
    factor = z - y if kind == "linear" else 1 / (1 + np.exp(-z)) - (y + 1) / 2
    terms = np.linalg.norm(X * factor[:, None], axis=1)
    worst = int(np.argmax(terms))
    extra = pd.DataFrame({a: [int(rows[a][worst])] if a in rows else [0] for a in data.domain.attrs})
    neighbour = Dataset(pd.concat([data.to_df(), extra], ignore_index=True), data.domain)
    out = []
    for d in (data, neighbour):
        ledger = Accountant(0.5)
        record = run_analysis(None, d, FixedPlan(spec, points), 0.4, InsecureRandom(5), ledger)
        out.append((record, ledger))
    (r0, l0), (r1, l1) = out
    assert [(c.label, c.rho, c.params) for c in l0.charges] == [(c.label, c.rho, c.params) for c in l1.charges]
    assert l0.spent <= 0.4 * 0.5 * (1 + BUDGET_RTOL)
    sens = [G.gradient_sensitivity(spec, points[0]), G.difference_sensitivity(spec, points[0], points[1])]
    for s0, s1, bound in zip(r0.statistics, r1.statistics, sens):
        assert s0.sensitivity == s1.sensitivity == pytest.approx(bound)
        # same seed: the same lattice noise, so the outputs differ by the rows' difference (up to the lattice step)
        assert np.linalg.norm(s1.values - s0.values) <= bound * (1 + 2.0**-10)
    moved = np.linalg.norm(r1.statistics[0].values - r0.statistics[0].values)
    assert moved == pytest.approx(terms.max(), rel=1e-3)  # exactly the added row's term (up to the lattice)


def test_a_release_with_an_analysis_stays_within_its_budget_and_records_the_split():
    data = table()
    release = AIM(1.0, 1e-6, insecure_seed=3, **FAST).run(data, analysis=DDSSPLinearRegression("y"))
    ledger, record = release.ledger, release.analysis
    assert ledger.spent <= ledger.rho * (1 + BUDGET_RTOL)
    spent = math.fsum(c.rho for c in ledger.charges if c.label.startswith("analysis"))
    assert spent == pytest.approx(record.rho) and spent <= DEFAULT_SHARE * ledger.rho * (1 + 1e-9)
    assert spent >= 0.95 * DEFAULT_SHARE * ledger.rho  # the share is spent, not left over
    assert release.config["mechanism"]["analysis_share"] == DEFAULT_SHARE
    assert "analysis: linear regression of 'y' on 4 attributes (DDSSPLinearRegression), 2 private Newton" in release.summary()
    assert record.steps == 2 and step_budgets(1.0, 2, 0.8) == [0.8, pytest.approx(0.2)]
    assert all(c.params.get("rows_per_unit") == 1 for c in ledger.charges if c.label.startswith("analysis"))
    plain = AIM(1.0, 1e-6, insecure_seed=3, **FAST).run(data)
    assert "analysis_share" not in plain.config["mechanism"] and plain.analysis is None


def test_one_newton_step_with_the_exact_hessian_lands_on_the_estimand():
    data = table()
    est = DDSSPLinearRegression("y").fit(data)
    spec = regression_spec(est.encoding_, "linear", None)
    theta0 = np.random.default_rng(0).normal(0, 0.3, spec.width)
    codes = {a: data.column(a) for a in spec.attrs}
    stat = G.NoisyStatistic("analysis gradient", G.gradient(spec, codes, theta0), 1e-9, 1.0, 1.0)
    record = AnalysisRecord(spec, (theta0,), (stat,), 0.3, {})
    fit = refined_fit(record, data, est.encoding_)  # the exact marginals as the "model"
    np.testing.assert_allclose(fit.theta, penalised_fit(data, est.encoding_, "linear"), rtol=1e-9, atol=1e-9)


def test_logistic_steps_with_the_exact_hessian_converge_quadratically():
    data = table()
    est = DDSSPLogisticRegression("t").fit(data)
    spec = regression_spec(est.encoding_, "logistic", None)
    target = penalised_fit(data, est.encoding_, "logistic")
    codes = {a: data.column(a) for a in spec.attrs}
    theta, errors = target + 0.3, []
    import ddssp.newton as N

    for _ in range(5):  # Newton steps with the rows' own Hessian (a Dataset's rows stand for the model)
        x = est.encoding_.encode_features(data.to_df())
        p = 1 / (1 + np.exp(-x @ theta))
        h = (x * (p * (1 - p))[:, None]).T @ x + np.diag(N.penalty_vector(est.encoding_))
        g = G.gradient(spec, codes, theta) + N.penalty_vector(est.encoding_) * theta
        theta = theta - np.linalg.solve(h, g)
        errors.append(np.abs(theta - target).max())
    assert errors[1] < errors[0] ** 1.5 and errors[2] < errors[1] ** 1.5 and errors[4] < 1e-8


def test_refined_fit_intervals_and_the_record_survive_save_and_load(tmp_path):
    release = AIM(1.0, 1e-6, insecure_seed=4, **FAST).run(table(), analysis=DDSSPLinearRegression("y"))
    fit = DDSSPLinearRegression("y").fit(release)
    assert fit.analysis_ is not None and np.all(fit.conf_int()["lower"] < fit.coef_)
    assert np.all(fit.coef_ < fit.conf_int()["upper"]) and fit.coef_interval_.shape == (len(fit.coef_), 2)
    path = tmp_path / "r.npz"
    release.save(path)
    back = Release.load(path)
    assert back.analysis.steps == release.analysis.steps
    np.testing.assert_array_equal(DDSSPLinearRegression("y").fit(back).coef_, fit.coef_)
    import json
    import zipfile

    with zipfile.ZipFile(path) as z:
        header = json.loads(str(np.lib.format.read_array(z.open("header.npy"))))
    assert header["version"] == 6 and "analysis" in header
    # a crafted file: the analysis claims a wider encoding than its arrays hold
    header["analysis"]["widths"][0] += 1
    bad = tmp_path / "bad.npz"
    with zipfile.ZipFile(path) as z:
        arrays = {n[:-4]: np.lib.format.read_array(z.open(n)) for n in z.namelist()}
    arrays["header"] = np.array(json.dumps(header))
    np.savez(bad, **arrays)
    with pytest.raises(ReleaseFormatError, match="analysis_feature_0"):
        Release.load(bad)
    header["analysis"]["widths"][0] -= 1
    header["version"] = 4  # an older reader's version would drop the analysis: refused, not ignored
    arrays["header"] = np.array(json.dumps(header))
    np.savez(bad, **arrays)
    with pytest.raises(ReleaseFormatError, match="analysis in a version 4 file"):
        Release.load(bad)


def test_another_regression_ignores_the_record_and_says_so():
    release = AIM(1.0, 1e-6, insecure_seed=4, **FAST).run(table(), analysis=DDSSPLinearRegression("y"))
    plain = DDSSPLinearRegression("y", analysis="ignore").fit(release)
    with pytest.warns(AnalysisMismatchWarning, match="another regression"):
        other = DDSSPLinearRegression("y", categorical=["a"]).fit(release)
    assert other.analysis_ is None
    refined = DDSSPLinearRegression("y").fit(release)
    assert not np.allclose(refined.coef_, plain.coef_)
    with pytest.raises(ValueError, match="leave interval=None"):
        DDSSPLinearRegression("y", interval="measurements").fit(release)
    with pytest.raises(ValueError, match="analysis must be"):
        DDSSPLinearRegression("y", analysis="yes").fit(release)


def test_an_analysis_needs_an_estimator_and_rows_in_memory():
    with pytest.raises(TypeError, match="DD-SSP estimator"):
        AIM(1.0, 1e-6, insecure_seed=1).run(table(), analysis="linear")
    with pytest.raises(ValueError, match="analysis_share"):
        AIM(1.0, 1e-6, analysis_share=1.0)
    for bad, match in ((DDSSPLinearRegression("nope"), "target 'nope'"),
                       (DDSSPLinearRegression("y", categorical=["zz"]), r"categorical attributes \['zz'\]")):
        with pytest.raises(ValueError, match=match):  # before any row is read: no budget is spent
            AIM(1.0, 1e-6, insecure_seed=1).run(table(), analysis=bad)


def test_every_kind_of_release_carries_its_analysis():
    data = table(2000)
    raw = data.to_df().astype({"t": "int64"})
    raw["t"] = np.where(raw["t"] == 1, "yes", "no")
    spec = {"columns": {"a": {"type": "categorical", "categories": [0, 1, 2]},
                        "b": {"type": "categorical", "categories": [0, 1, 2, 3]},
                        "c": {"type": "numeric", "lo": 0, "hi": 5, "bins": 5},
                        "y": {"type": "numeric", "lo": 0, "hi": 4, "bins": 4},
                        "t": {"type": "categorical", "categories": ["no", "yes"]}}}  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        coded = AIM(1.0, 1e-6, insecure_seed=2, **FAST).run(data, analysis=DDSSPLogisticRegression("t"))
        with_spec, _ = synthesize(raw, 1.0, 1e-6, spec=spec, insecure_seed=2, analysis=DDSSPLogisticRegression("t"), **FAST)
        inferred, _ = synthesize(raw, 1.0, 1e-6, insecure_seed=2, analysis=DDSSPLinearRegression("y"), **FAST)
        units = np.repeat(np.arange(len(data) // 2), 2)
        person = AIM(1.0, 1e-6, insecure_seed=2, unit="pid", max_rows_per_unit=2, **FAST).run(
            data, units=units, analysis=DDSSPLinearRegression("y"))
    for release, est in ((coded, DDSSPLogisticRegression("t")), (with_spec, DDSSPLogisticRegression("t")),
                         (inferred, DDSSPLinearRegression("y")), (person, DDSSPLinearRegression("y"))):
        assert release.analysis is not None and release.ledger.spent <= release.ledger.rho * (1 + BUDGET_RTOL)
        with warnings.catch_warnings():
            warnings.simplefilter("error", AnalysisMismatchWarning)
            fit = est.fit(release)
        assert fit.analysis_ is not None and np.all(np.isfinite(fit.conf_int().to_numpy()))
    assert all(c.params["rows_per_unit"] == 2 for c in person.ledger.charges if c.label.startswith("analysis"))
    single = AIM(1.0, 1e-6, insecure_seed=2, **FAST).run(data, analysis=DDSSPLinearRegression("y"))
    assert person.analysis.statistics[0].sensitivity == pytest.approx(
        2 * G.gradient_sensitivity(person.analysis.spec, person.analysis.points[0]))
    assert single.analysis.statistics[0].sensitivity == pytest.approx(
        G.gradient_sensitivity(single.analysis.spec, single.analysis.points[0]))


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["linear", "logistic"])
def test_refined_intervals_cover_the_estimand_on_a_small_problem_with_all_its_features(kind):
    """40 releases at eps 1 of a 5-attribute table (every attribute a feature): coverage near nominal 90%."""
    data = table(5000, seed=1)
    est = DDSSPLinearRegression("y") if kind == "linear" else DDSSPLogisticRegression("t")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        truth = penalised_fit(data, est.fit(data).encoding_, kind)
        hits = []
        for r in range(40):
            release = AIM(1.0, 1e-6, insecure_seed=100 + r, **FAST).run(data, analysis=est)
            fit = type(est)(**est.get_params()).fit(release)
            lo_hi = fit.analysis_.interval(0.1)
            hits.append((lo_hi[:, 0] <= truth) & (truth <= lo_hi[:, 1]))
    coverage = float(np.mean(hits))
    assert 0.8 <= coverage <= 0.97, coverage


def test_each_step_measures_the_less_noisy_of_a_gradient_and_a_difference():
    rng = np.random.default_rng(3)
    spec = small_spec("linear", rng)
    theta0 = rng.normal(0, 1, spec.width)
    near, far = theta0 + 1e-3, theta0 + rng.normal(0, 5, spec.width)
    kinds = []
    for point in (near, far):
        record = run_analysis(None, table(), FixedPlan(spec, [theta0, point]), 0.4, InsecureRandom(2), Accountant(0.5))
        kinds.append([s.kind for s in record.statistics])
    assert kinds == [["gradient", "difference"], ["gradient", "gradient"]]


def test_coef_is_the_shrunk_point_and_the_intervals_centre_the_unbiased_step():
    release = AIM(1.0, 1e-6, insecure_seed=4, **FAST).run(table(), analysis=DDSSPLinearRegression("y"))
    fit = DDSSPLinearRegression("y").fit(release)
    assert not fit.encoding_.intercept  # the paper's encoding: the record's vectors are the coefficients
    np.testing.assert_array_equal(fit.coef_, release.analysis.points[-1])
    centre = fit.conf_int().mean(axis=1).to_numpy()
    np.testing.assert_allclose(centre, fit.analysis_.theta, rtol=1e-12, atol=1e-12)
    assert not np.allclose(fit.coef_, fit.analysis_.theta)


def test_synth_analysis_then_fit_on_the_command_line(tmp_path, capsys):
    from ddssp.cli import main

    data = table(2000)
    data.to_df().to_csv(tmp_path / "d.csv", index=False)
    (tmp_path / "dom.json").write_text(__import__("json").dumps(SIZES))
    base = ["synth", "--data", str(tmp_path / "d.csv"), "--domain", str(tmp_path / "dom.json"), "--epsilon", "1",
            "--delta", "1e-6", "--insecure-seed", "1", "--out", str(tmp_path / "s.csv"), "--quiet"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(base + ["--release", str(tmp_path / "r.npz"), "--target", "y", "--analysis", "linear",
                            "--categorical", "a,b"]) == 0
    assert Release.load(tmp_path / "r.npz").analysis is not None
    capsys.readouterr()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(["fit", "--release", str(tmp_path / "r.npz"), "--target", "y", "--categorical", "a,b"]) == 0
    out = capsys.readouterr().out
    assert "90% intervals" in out
    assert main(["inspect", str(tmp_path / "r.npz")]) == 0
    assert "analysis: linear regression of 'y'" in capsys.readouterr().out
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(["fit", "--release", str(tmp_path / "r.npz"), "--target", "y", "--categorical", "a"]) == 0
    captured = capsys.readouterr()
    assert "90% intervals" not in captured.out and "another regression" in captured.err
    assert main(base + ["--release", str(tmp_path / "r2.npz"), "--categorical", "a"]) == 2
    assert "--categorical is for --analysis" in capsys.readouterr().err
    assert main(base + ["--release", str(tmp_path / "r3.npz"), "--analysis", "linear"]) == 2
    assert "exactly one --target" in capsys.readouterr().err
